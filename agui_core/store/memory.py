"""MemoryThreadStore: threads held in this process's memory, for tests and single-process hosts.

A thread is held in one of two forms. The threads used most recently (``recent`` of them, 32
by default: the ones with a run going on, or just suspended, as long as their messages come to
no more than ``recent_bytes``, 32 MiB by default, as the records count them, but always the
last one used) are held as their
:class:`~agui_core.machine.record.ThreadRecord` objects, the very ones saved: a record is
immutable (and the JSON values inside it are never mutated in place), so handing them out is
safe, and a run's saves and loads cost no copy. A thread that drops out of that set is kept as
its record's JSON (:func:`~agui_core.machine.record.record_to_dict`, as ``bytes``), about a
third of the objects' size, and decoded again when it is next loaded. The benchmarks report
bytes per suspended thread (``python -m benchmarks --only store_scale``).

A record that cannot be written as JSON (a value in its state that JSON has no form for) stays
an object: it costs more memory, but nothing is lost and loading it gives it back as saved.
Nothing survives the process.

The store belongs to one event loop: a save checks and replaces the stored record with no
``await`` in between, which is what makes it a compare-and-set there; so is a purge, which
removes a thread and everything of it at once.

Beside the records, the store keeps each thread's owner (so :meth:`MemoryThreadStore.owner_of`
decodes nothing) and, for the threads at rest, when they were last saved (so a purge walks
those only): a few dozen bytes a thread.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Self

import orjson
from anyio.lowlevel import checkpoint

from agui_core.machine.record import ANONYMOUS, ResolvedInterrupt, ThreadRecord, record_from_dict, record_to_dict
from agui_core.machine.transitions import ThreadState
from agui_core.store.base import (
    Purged,
    StoreError,
    VersionConflict,
    WaitingThread,
    audit_lines_since,
    check_claim,
    check_purge,
    extend_lease,
    newest_first,
    saved_instant,
)

__all__ = ["MemoryThreadStore"]

_RECENT_BYTES = 32 * 1024 * 1024


class MemoryThreadStore:
    """A :class:`~agui_core.store.base.ThreadStore` in a dict: thread id to its last record.

    ``recent`` is how many of the threads used last are held as record objects, and
    ``recent_bytes`` how many bytes of messages they may hold (a record's ``message_bytes``;
    the last one used is held so whatever its size); the others are held as JSON (``0``:
    every thread as JSON, the smallest and slowest form).
    """

    __slots__ = (
        "_at_rest",
        "_closed",
        "_deliveries",
        "_interrupts",
        "_owners",
        "_purged_audit",
        "_recent",
        "_recent_bytes",
        "_records",
        "_room",
        "_room_bytes",
    )

    def __init__(self, *, recent: int = 32, recent_bytes: int = _RECENT_BYTES) -> None:
        if recent < 0:
            raise ValueError(f"recent is a number of threads, 0 or more, not {recent}")
        if recent_bytes < 0:
            raise ValueError(f"recent_bytes is a number of bytes, 0 or more, not {recent_bytes}")
        # thread id -> its last record: the object for the threads in _recent, else its JSON.
        self._records: dict[str, ThreadRecord | bytes] = {}
        # The threads held as objects, least recently used first, with the bytes of their messages.
        self._recent: OrderedDict[str, int] = OrderedDict()
        self._room = recent
        self._room_bytes = recent_bytes
        self._recent_bytes = 0
        # interrupt id -> thread id; keys and values are the very strings the saved records held.
        self._interrupts: dict[str, str] = {}
        # thread id -> its owner; and, for the threads at rest saved with a time, that time.
        self._owners: dict[str, str | None] = {}
        self._at_rest: dict[str, datetime] = {}
        # The audit trails of purged threads kept longer than them: (thread id, owner, last save, trail).
        self._purged_audit: list[tuple[str, str | None, datetime, tuple[ResolvedInterrupt, ...]]] = []
        # delivery key -> (holder, claimed or waiting until, attempts, delivered).
        self._deliveries: dict[str, tuple[str | None, datetime, int, bool]] = {}
        self._closed = False

    def __len__(self) -> int:
        """How many threads are stored."""
        return len(self._records)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the thread store is closed")

    def _get(self, thread_id: str) -> ThreadRecord | None:
        """The thread's record as an object (decoded if it was held as JSON), now the most recent."""
        held = self._records.get(thread_id)
        if held is None:
            return None
        record = record_from_dict(orjson.loads(held)) if isinstance(held, bytes) else held
        self._hold(thread_id, record)
        return record

    def _hold(self, thread_id: str, record: ThreadRecord) -> None:
        """Hold ``record`` as an object, as the most recent thread; the least recent beyond ``recent`` go to JSON."""
        records = self._records
        recent = self._recent
        records[thread_id] = record
        self._recent_bytes -= recent.pop(thread_id, 0)
        recent[thread_id] = size = record.message_bytes or 0
        self._recent_bytes += size
        while len(recent) > self._room or (len(recent) > 1 and self._recent_bytes > self._room_bytes):
            (oldest, dropped) = recent.popitem(last=False)
            self._recent_bytes -= dropped
            held = records[oldest]
            if isinstance(held, ThreadRecord):
                try:
                    # A copy of orjson's output, which can sit in a buffer several times its length.
                    records[oldest] = bytes(memoryview(orjson.dumps(record_to_dict(held))))
                except TypeError:
                    pass  # not JSON (see the module's docstring): it stays the object it is

    async def load(self, thread_id: str) -> ThreadRecord | None:
        """The last record saved for ``thread_id`` (the same object, while it is recent), or ``None``."""
        await checkpoint()
        self._check_open()
        return self._get(thread_id)

    async def save(self, record: ThreadRecord) -> None:
        """Keep ``record`` if the stored version is ``record.version - 1``; else ``VersionConflict``."""
        if record.version < 1:
            raise ValueError(f"thread {record.thread_id!r}: a saved record has version 1 or more, not {record.version}")
        await checkpoint()
        self._check_open()
        thread_id = record.thread_id
        current = self._get(thread_id)
        found = None if current is None else current.version
        expected = record.version - 1
        if (found or 0) != expected:
            raise VersionConflict(thread_id, expected, found)
        held = None if current is None else current.active_run
        if held is not None and record.active_run is not None and held.run_id == record.active_run.run_id:
            record = extend_lease(record, held.lease_until)  # a renewal is never undone by a save
        saved_at = saved_instant(record)
        self._hold(thread_id, record)
        owner = record.owner
        self._owners[thread_id] = sys.intern(owner) if owner is not None else None  # a few principals, many threads
        if record.state is ThreadState.IDLE and saved_at is not None:
            self._at_rest[thread_id] = saved_at
        else:
            self._at_rest.pop(thread_id, None)
        index = self._interrupts
        # setdefault: an id already known keeps the thread that raised it first (ids are unique
        # per thread, not across threads).
        for item in record.open_interrupts:
            index.setdefault(item.interrupt.id, thread_id)
        if record.active_run is not None:
            for bound in record.active_run.answers:
                index.setdefault(bound.interrupt.id, thread_id)
        for closed in record.resolved:
            index.setdefault(closed.interrupt.id, thread_id)

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        """Extend the lease of run ``run_id`` to ``until`` if it is the thread's run in progress."""
        if until.tzinfo is None:
            raise ValueError("a lease ends at an aware datetime")
        await checkpoint()
        self._check_open()
        record = self._get(thread_id)
        if record is None or record.active_run is None or record.active_run.run_id != run_id:
            return False
        self._hold(thread_id, extend_lease(record, until.isoformat()))
        return True

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        """The thread that raised ``interrupt_id``, open or closed, or ``None``."""
        await checkpoint()
        self._check_open()
        return self._interrupts.get(interrupt_id)

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        """Every interrupt closed on ``thread_id`` and how, in the order they were closed."""
        await checkpoint()
        self._check_open()
        record = self._get(thread_id)
        return () if record is None else record.resolved

    async def waiting(self, owner: str, *, limit: int = 100) -> Sequence[WaitingThread]:
        """The threads of ``owner`` with open interrupts, newest first (a walk over every thread)."""
        await checkpoint()
        self._check_open()
        # Threads held as JSON are read, not made recent: a walk leaves the cache as it was.
        records = (
            held if isinstance(held, ThreadRecord) else record_from_dict(orjson.loads(held))
            for held in self._records.values()
        )
        found = [
            WaitingThread(thread_id=r.thread_id, interrupts=r.open_interrupts)
            for r in records
            if r.owner == owner and r.state is ThreadState.INTERRUPTED and r.open_interrupts
        ]
        return newest_first(found)[:limit]

    async def all_waiting(self, *, limit: int = 1000) -> Sequence[WaitingThread]:
        """Every principal's threads with open interrupts, newest first (a walk over every thread)."""
        await checkpoint()
        self._check_open()
        records = (
            held if isinstance(held, ThreadRecord) else record_from_dict(orjson.loads(held))
            for held in self._records.values()
        )
        found = [
            WaitingThread(
                thread_id=r.thread_id, interrupts=r.open_interrupts, owner=ANONYMOUS if r.owner is None else r.owner
            )
            for r in records
            if r.state is ThreadState.INTERRUPTED and r.open_interrupts
        ]
        return newest_first(found)[:limit]

    async def audit_since(self, since: datetime, *, limit: int = 10_000) -> Sequence[tuple[str, ResolvedInterrupt]]:
        """Every thread's audit lines closed at ``since`` or later, oldest first (a walk over every thread)."""
        await checkpoint()
        self._check_open()
        records = (
            held if isinstance(held, ThreadRecord) else record_from_dict(orjson.loads(held))
            for held in self._records.values()
        )
        return audit_lines_since(((r.thread_id, e) for r in records for e in r.resolved), since, limit)

    async def owner_of(self, thread_id: str) -> str | None:
        """The principal ``thread_id`` belongs to, or ``None`` for a thread never saved (one lookup)."""
        await checkpoint()
        self._check_open()
        if thread_id not in self._owners:
            return None
        owner = self._owners[thread_id]
        return ANONYMOUS if owner is None else owner

    async def purge(self, *, idle_before: datetime, audit_before: datetime | None = None, limit: int = 500) -> Purged:
        """Remove up to ``limit`` threads at rest last saved before ``idle_before`` (see
        :meth:`ThreadStore.purge <agui_core.store.base.ThreadStore.purge>`); at once, between
        two awaits, so no save comes in between."""
        check_purge(idle_before, audit_before, limit)
        await checkpoint()
        self._check_open()
        due = sorted((at, thread_id) for thread_id, at in self._at_rest.items() if at < idle_before)[:limit]
        for at, thread_id in due:
            held = self._records[thread_id]  # read, not made recent: a purge leaves the cache as it was
            record = held if isinstance(held, ThreadRecord) else record_from_dict(orjson.loads(held))
            if audit_before is not None and record.resolved:
                self._purged_audit.append((thread_id, record.owner, at, record.resolved))
            index = self._interrupts
            for closed in record.resolved:
                if index.get(closed.interrupt.id) == thread_id:
                    del index[closed.interrupt.id]
            del self._records[thread_id]
            self._recent_bytes -= self._recent.pop(thread_id, 0)
            del self._owners[thread_id]
            del self._at_rest[thread_id]
        trails = 0
        if audit_before is not None:
            kept = []
            for trail in self._purged_audit:
                if trail[2] < audit_before and trails < limit:
                    trails += 1
                else:
                    kept.append(trail)
            self._purged_audit = kept
        return Purged(threads=len(due), audit_trails=trails)

    async def open(self) -> None:
        """Nothing to open (as for the stores that connect to something, before first use)."""
        await checkpoint()
        self._check_open()

    async def claim_delivery(self, key: str, *, holder: str, now: datetime, until: datetime) -> int | None:
        """Take delivery ``key`` (see :class:`~agui_core.store.base.DeliveryLedger`); between two awaits."""
        check_claim(now, until)
        self._check_open()
        await checkpoint()
        found = self._deliveries.get(key)
        if found is not None and (found[3] or found[1] > now):
            return None
        attempts = 1 if found is None else found[2] + 1
        self._deliveries[key] = (holder, until, attempts, False)
        return attempts

    async def finish_delivery(
        self, key: str, *, holder: str, delivered: bool, retry_at: datetime | None = None
    ) -> None:
        """How ``holder``'s attempt at ``key`` ended (see :class:`~agui_core.store.base.DeliveryLedger`)."""
        self._check_open()
        await checkpoint()
        found = self._deliveries.get(key)
        if found is None or found[0] != holder or found[3]:
            return
        if delivered:
            self._deliveries[key] = (None, found[1], found[2], True)
        else:
            wait = retry_at if retry_at is not None else datetime.min.replace(tzinfo=UTC)
            self._deliveries[key] = (None, wait, found[2], False)

    async def aclose(self) -> None:
        """Let go of every thread; any later call raises ``StoreError``."""
        self._closed = True
        self._records = {}
        self._recent = OrderedDict()
        self._recent_bytes = 0
        self._interrupts = {}
        self._owners = {}
        self._at_rest = {}
        self._purged_audit = []
