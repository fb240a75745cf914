"""What a host tells its watchers: a line for every thread record it saves.

The approval console's live inbox is fed from here: :meth:`ThreadChanges.watch` hands a stream
of :class:`ThreadChange` for one principal's threads, and the host publishes each save it makes
(:meth:`ThreadChanges.publish`), after the save. A change names the thread, not what changed:
a watcher that wants the details reads them from the store, once per change it cares about,
instead of asking the store over and over whether anything changed.

A host knows its own saves only. Hosts sharing a store (PostgreSQL) do not hear of each other's:
a watcher of one host learns of a thread another host interrupted the next time it reads the
store for any reason (the console reads its inbox again when its feed reconnects and every few
minutes).

Under a decision policy, approvers watch too: a watcher holding roles the policy names hears of
the saves of others' threads whose open, undecided interrupts a rule gives one of those roles to
decide, and of the next save of such a thread after that (the request decided, expired or
cancelled: gone from the approver's inbox). It hears of nothing else of others': a change names
only threads it is, or just was, asked about.

A watcher that does not keep up (``buffer`` changes waiting) is dropped: its stream ends, and
it is up to it to read the store afresh and watch again. Publishing never waits. So is the
oldest watcher of a principal who starts watching once more than its ``limit`` allows: what one
principal holds open is bounded, and never at the expense of another's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import anyio
import attrs
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from agui_core.machine.record import ThreadRecord

__all__ = ["ThreadChange", "ThreadChanges"]


@attrs.frozen(kw_only=True)
class ThreadChange:
    """A thread record saved: which thread, whose, its state and version after the save."""

    thread_id: str
    owner: str | None
    state: str
    """The thread machine's state after the save: ``idle``, ``running``, ``interrupted`` or ``resumed``."""
    version: int

    @classmethod
    def of(cls, record: ThreadRecord) -> ThreadChange:
        state = record.state.name.lower()
        return cls(thread_id=record.thread_id, owner=record.owner, state=state, version=record.version)


class ThreadChanges:
    """Hands each published change to the watchers of its thread's owner (see the module docstring)."""

    __slots__ = ("_asked", "_buffer", "_by_role", "_listeners", "_watchers")

    def __init__(self, buffer: int = 64) -> None:
        self._buffer = buffer
        # role -> the send sides of the watchers holding it, each with its principal.
        self._by_role: dict[str, dict[MemoryObjectSendStream[ThreadChange], str]] = {}
        # thread id -> the roles its last published save asked to decide (threads that ask any).
        self._asked: dict[str, frozenset[str]] = {}
        # principal -> the send sides of its watchers' streams, oldest first (a dict for its
        # order; values unused): a save costs one lookup when nobody watches its owner, however
        # many watch others.
        self._watchers: dict[str | None, dict[MemoryObjectSendStream[ThreadChange], None]] = {}
        self._listeners: list[Callable[[ThreadRecord], None]] = []

    def __len__(self) -> int:
        """How many watchers there are."""
        return sum(len(watching) for watching in self._watchers.values())

    def listen(self, listener: Callable[[ThreadRecord], None]) -> None:
        """Call ``listener`` with every record saved, whoever owns it (it must not block)."""
        self._listeners.append(listener)

    def unlisten(self, listener: Callable[[ThreadRecord], None]) -> None:
        self._listeners.remove(listener)

    def saved(self, record: ThreadRecord, *, asked: frozenset[str] = frozenset()) -> None:
        """Publish the save of ``record``, if anyone watches its owner's threads, or holds one of
        the roles its open interrupts ask to decide (``asked``) or asked at its last save."""
        for listener in self._listeners:
            listener(record)
        before = self._asked.pop(record.thread_id, frozenset())
        if asked:
            self._asked[record.thread_id] = asked
        roles = asked | before
        if record.owner in self._watchers or (roles and not roles.isdisjoint(self._by_role)):
            self.publish(ThreadChange.of(record), roles=roles)

    def publish(self, change: ThreadChange, *, roles: frozenset[str] = frozenset()) -> None:
        """Hand ``change`` to every watcher of ``change.owner`` and, once each, to every other
        watcher holding one of ``roles``; drop those that are full."""
        told: set[MemoryObjectSendStream[ThreadChange]] = set()
        targets = [(change.owner, send) for send in self._watchers.get(change.owner, ())]
        for role in roles:
            targets += [(who, send) for send, who in self._by_role.get(role, {}).items() if who != change.owner]
        for principal, send in targets:
            if send in told:
                continue
            told.add(send)
            try:
                send.send_nowait(change)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._drop(principal, send)

    def watching(self, principal: str) -> int:
        """How many watchers ``principal`` has."""
        return len(self._watchers.get(principal, ()))

    @contextmanager
    def watch(
        self, principal: str, *, limit: int | None = None, roles: frozenset[str] = frozenset()
    ) -> Iterator[MemoryObjectReceiveStream[ThreadChange]]:
        """The changes of ``principal``'s threads from now on, for as long as the block lasts,
        and of others' threads that ask (or just asked) one of ``roles`` to decide.

        With ``limit``, ``principal`` keeps that many watchers at most: the oldest are dropped
        (their streams end after what they already hold) to make room for this one.
        """
        if limit is not None and limit < 1:
            raise ValueError(f"a limit of watchers is 1 or more, not {limit}")
        send, receive = anyio.create_memory_object_stream[ThreadChange](self._buffer)
        watching = self._watchers.get(principal, {})
        while limit is not None and len(watching) >= limit:
            self._drop(principal, next(iter(watching)))  # the last one out takes the entry with it
        self._watchers.setdefault(principal, {})[send] = None
        for role in roles:
            self._by_role.setdefault(role, {})[send] = principal
        try:
            with receive:
                yield receive
        finally:
            self._drop(principal, send)

    def _drop(self, principal: str | None, send: MemoryObjectSendStream[ThreadChange]) -> None:
        watching = self._watchers.get(principal)
        if watching is not None:
            watching.pop(send, None)
            if not watching:
                del self._watchers[principal]
        for role in [r for r, holders in self._by_role.items() if send in holders]:
            holders = self._by_role[role]
            del holders[send]
            if not holders:
                del self._by_role[role]
        send.close()
