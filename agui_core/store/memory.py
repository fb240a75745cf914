"""MemoryThreadStore: threads held in this process's memory, for tests and single-process hosts.

The store holds the saved :class:`~agui_core.machine.record.ThreadRecord` objects themselves.
A record is immutable (and the JSON values inside it are never mutated in place), so handing
out the object that was saved is safe, and holding no copy keeps a suspended thread as small
as its record (the benchmarks report bytes per thread).
Nothing survives the process.

The store belongs to one event loop: a save checks and replaces the stored record with no
``await`` in between, which is what makes it a compare-and-set there.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Self

from anyio.lowlevel import checkpoint

from agui_core.machine.record import ResolvedInterrupt, ThreadRecord
from agui_core.machine.transitions import ThreadState
from agui_core.store.base import StoreError, VersionConflict, WaitingThread, extend_lease, newest_first

__all__ = ["MemoryThreadStore"]


class MemoryThreadStore:
    """A :class:`~agui_core.store.base.ThreadStore` in a dict: thread id to its last record."""

    __slots__ = ("_closed", "_interrupts", "_records")

    def __init__(self) -> None:
        self._records: dict[str, ThreadRecord] = {}
        # interrupt id -> thread id; keys and values are the very strings the records hold.
        self._interrupts: dict[str, str] = {}
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

    async def load(self, thread_id: str) -> ThreadRecord | None:
        """The last record saved for ``thread_id`` (the same object), or ``None``."""
        await checkpoint()
        self._check_open()
        return self._records.get(thread_id)

    async def save(self, record: ThreadRecord) -> None:
        """Keep ``record`` if the stored version is ``record.version - 1``; else ``VersionConflict``."""
        if record.version < 1:
            raise ValueError(
                f"thread {record.thread_id!r}: a saved record has version 1 or more, not {record.version}"
            )
        await checkpoint()
        self._check_open()
        thread_id = record.thread_id
        current = self._records.get(thread_id)
        found = None if current is None else current.version
        expected = record.version - 1
        if (found or 0) != expected:
            raise VersionConflict(thread_id, expected, found)
        held = None if current is None else current.active_run
        if held is not None and record.active_run is not None and held.run_id == record.active_run.run_id:
            record = extend_lease(record, held.lease_until)  # a renewal is never undone by a save
        self._records[thread_id] = record
        index = self._interrupts
        # setdefault: an id already known keeps the thread that raised it first (ids are unique
        # per thread, not across threads).
        for item in record.open_interrupts:
            index.setdefault(item.interrupt.id, thread_id)
        if record.active_run is not None:
            for answered, _, _ in record.active_run.answers:
                index.setdefault(answered.id, thread_id)
        for closed in record.resolved:
            index.setdefault(closed.interrupt.id, thread_id)

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        """Extend the lease of run ``run_id`` to ``until`` if it is the thread's run in progress."""
        if until.tzinfo is None:
            raise ValueError("a lease ends at an aware datetime")
        await checkpoint()
        self._check_open()
        record = self._records.get(thread_id)
        if record is None or record.active_run is None or record.active_run.run_id != run_id:
            return False
        self._records[thread_id] = extend_lease(record, until.isoformat())
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
        record = self._records.get(thread_id)
        return () if record is None else record.resolved

    async def waiting(self, owner: str, *, limit: int = 100) -> Sequence[WaitingThread]:
        """The threads of ``owner`` with open interrupts, newest first (a walk over every thread)."""
        await checkpoint()
        self._check_open()
        found = [
            WaitingThread(thread_id=r.thread_id, interrupts=r.open_interrupts)
            for r in self._records.values()
            if r.owner == owner and r.state is ThreadState.INTERRUPTED and r.open_interrupts
        ]
        return newest_first(found)[:limit]

    async def aclose(self) -> None:
        """Let go of every thread; any later call raises ``StoreError``."""
        self._closed = True
        self._records = {}
        self._interrupts = {}
