"""The interface every thread store implements, and the errors it raises.

A store keeps one :class:`~agui_core.machine.record.ThreadRecord` per thread. Saving is a
compare-and-set on the record's ``version``: a save succeeds only when the stored version is
exactly one less than the record's (or nothing is stored and the record's version is 1), so two
hosts, in two processes or on two machines, can never both move a thread on from the same
version: the loser gets :class:`VersionConflict` and must not emit what it was about to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agui_core.errors import AguiError, RunErrorCode
from agui_core.machine.record import ResolvedInterrupt, ThreadRecord

__all__ = ["StoreError", "ThreadStore", "VersionConflict"]


class StoreError(AguiError):
    """The store could not do what was asked (I/O failure, corrupt data)."""

    code = RunErrorCode.AGENT_ERROR


class VersionConflict(StoreError):
    """Another writer saved the thread first: ``expected`` was stored, not ``found``."""

    code = RunErrorCode.THREAD_BUSY

    def __init__(self, thread_id: str, expected: int, found: int | None) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.found = found
        super().__init__(
            f"thread {thread_id!r} was saved by someone else: expected version {expected}, found {found}"
        )


@runtime_checkable
class ThreadStore(Protocol):
    """Where threads live between runs."""

    async def load(self, thread_id: str) -> ThreadRecord | None:
        """The last record saved for ``thread_id``, or ``None`` for a thread never saved."""

    async def save(self, record: ThreadRecord) -> None:
        """Save ``record`` if the stored version is ``record.version - 1``; else ``VersionConflict``."""

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        """The thread that raised ``interrupt_id`` (open or closed), for ``THREAD_MISMATCH``."""

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        """The audit trail of ``thread_id``: every closed interrupt and how, in order."""

    async def aclose(self) -> None:
        """Release what the store holds (connections, files)."""
