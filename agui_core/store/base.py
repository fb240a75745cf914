"""The interface every thread store implements, and the errors it raises.

A store keeps one :class:`~agui_core.machine.record.ThreadRecord` per thread. Saving is a
compare-and-set on the record's ``version``: a save succeeds only when the stored version is
exactly one less than the record's (or nothing is stored and the record's version is 1), so two
hosts, in two processes or on two machines, can never both move a thread on from the same
version: the loser gets :class:`VersionConflict` and must not emit what it was about to.

Leases. A run in progress holds its thread until its lease runs out
(``record.active_run.lease_until``); the host carrying it renews the lease with
:meth:`ThreadStore.renew_lease`, one round trip, which changes nothing else: not the
record's version, so the renewals never race the run's own saves. A lease only grows for as
long as one run holds it: :meth:`~ThreadStore.load` hands back the latest one, and a save
made by that run with an earlier lease (the one its host's machine knew) does not shorten it.
A host that finds the lease run out takes the run's host for gone and closes the run.

Retention. Nothing is removed by a save. :meth:`ThreadStore.purge` removes the threads whose
last activity (the record's ``saved_at``: when a host last saved it, on that host's clock) is
older than a cutoff, and only those at rest: no open interrupt, no run in progress (state
``IDLE``). It is a compare-and-set too: a thread saved while a purge runs is either saved
before (and is no longer due: it stays) or after (its save finds nothing stored at the version
it expects, and gets :class:`VersionConflict`, as when another host saved first). A record
saved without ``saved_at`` is never purged. A purged thread's id is free again: an input on it
starts a new, empty thread, which may belong to anyone (clients should mint unguessable ids).
Its audit trail goes with it, or, when the caller keeps audit trails longer
(``audit_before``), waits apart from the thread (in the store, for its operator; no host
serves it) until the thread's last activity is older than that second cutoff.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any, Protocol, runtime_checkable

import attrs

from agui_core.errors import AguiError, RunErrorCode
from agui_core.machine.record import OpenInterrupt, ResolvedInterrupt, ThreadRecord, record_from_dict, record_to_dict

__all__ = [
    "AUDIT_MARGIN",
    "DeliveryLedger",
    "Purged",
    "StoreError",
    "ThreadStore",
    "VersionConflict",
    "WaitingThread",
    "audit_lines_since",
    "check_claim",
    "check_purge",
    "extend_lease",
    "newest_first",
    "saved_instant",
    "waiting_from_json",
]


class StoreError(AguiError):
    """The store could not do what was asked (I/O failure, corrupt data)."""

    code = RunErrorCode.AGENT_ERROR


class VersionConflict(StoreError):
    """Another writer saved the thread first: ``expected`` was stored, not ``found``.

    Its ``code`` says the thread is busy, as the error of a store call. What the input's sender
    hears is the thread machine's to decide, on what the store now holds
    (:mod:`agui_core.machine.occupancy`; a stranger hears ``FORBIDDEN``, anyone else
    ``THREAD_BUSY``).
    """

    code = RunErrorCode.THREAD_BUSY

    def __init__(self, thread_id: str, expected: int, found: int | None) -> None:
        self.thread_id = thread_id
        self.expected = expected
        self.found = found
        super().__init__(f"thread {thread_id!r} was saved by someone else: expected version {expected}, found {found}")


@attrs.frozen(kw_only=True)
class WaitingThread:
    """A thread waiting for its owner: its open interrupts, as :meth:`ThreadStore.waiting` finds it."""

    thread_id: str
    interrupts: tuple[OpenInterrupt, ...]
    owner: str | None = None
    """The principal the thread belongs to (filled by :meth:`ThreadStore.all_waiting`, which
    lists everyone's; :meth:`ThreadStore.waiting` lists one owner's and may leave it out)."""

    @property
    def raised_at(self) -> str | None:
        """When the run that raised the open interrupts raised the first of them (RFC 3339), if known."""
        return self.interrupts[0].raised_at if self.interrupts else None


@attrs.frozen(kw_only=True)
class Purged:
    """What one :meth:`ThreadStore.purge` did."""

    threads: int = 0
    """Threads removed, with their messages, leases, interrupt index rows and (unless kept) audit trails."""
    audit_trails: int = 0
    """Audit trails of threads purged before, removed now that they are past ``audit_before``."""
    swept: bool = True
    """``False``: another host was purging this store at that moment, so this call did nothing."""


@runtime_checkable
class ThreadStore(Protocol):
    """Where threads live between runs."""

    async def load(self, thread_id: str) -> ThreadRecord | None:
        """The last record saved for ``thread_id``, or ``None`` for a thread never saved.

        Its run in progress carries the latest lease: the later of the one saved with it and
        the last renewal.
        """

    async def save(self, record: ThreadRecord) -> None:
        """Save ``record`` if the stored version is ``record.version - 1``; else ``VersionConflict``.

        A record whose run in progress is the stored one's keeps the later of the two leases.
        """

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        """Extend the lease of run ``run_id`` on ``thread_id`` to ``until`` (never shorten it).

        ``True`` if the stored record's run in progress is ``run_id`` (and its lease now lasts
        at least until ``until``); ``False``, changing nothing, if the thread has no such run:
        it ended, or another host closed it. ``until`` is an aware datetime.
        """

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        """The thread that raised ``interrupt_id`` (open or closed), for ``THREAD_MISMATCH``."""

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        """The audit trail of ``thread_id``: every closed interrupt and how, in order."""

    async def waiting(self, owner: str, *, limit: int = 100) -> Sequence[WaitingThread]:
        """The threads of ``owner`` with open interrupts, newest first, ``limit`` at most.

        Newest is by when the first open interrupt was raised; interrupts whose ``expiresAt``
        has passed are still open here (a thread closes them at its next input).
        """

    async def all_waiting(self, *, limit: int = 1000) -> Sequence[WaitingThread]:
        """Every principal's threads with open interrupts, each with its owner, newest first,
        ``limit`` at most: the operator's view (``agui threads list``, the gauges of open
        interrupts of every host on the store), never a client's."""

    async def audit_since(self, since: datetime, *, limit: int = 10_000) -> Sequence[tuple[str, ResolvedInterrupt]]:
        """Every thread's audit lines closed at ``since`` or later (by ``answered_at``), as
        ``(thread id, line)``, oldest first, ``limit`` at most: the operator's export
        (``agui threads export-audit``). ``since`` is an aware datetime."""

    async def owner_of(self, thread_id: str) -> str | None:
        """The principal ``thread_id`` belongs to, or ``None`` for a thread never saved.

        As cheap for a thread that exists as for one that does not (it reads no conversation):
        what a host asks first when someone who may be a stranger wants to read a thread.
        A record saved before threads had owners belongs to :data:`~agui_core.machine.record.ANONYMOUS`.
        """

    async def purge(self, *, idle_before: datetime, audit_before: datetime | None = None, limit: int = 500) -> Purged:
        """Remove up to ``limit`` threads at rest last saved before ``idle_before``, oldest first.

        At rest: no open interrupt and no run in progress. Each goes whole: record, messages,
        lease, interrupt index rows; its audit trail too, unless ``audit_before`` is given
        (not after ``idle_before``): the trail is then kept apart until the thread's last save
        is before ``audit_before``, and up to ``limit`` trails kept by earlier purges that are
        now that old go too. A thread saved while this runs is not removed (see the module
        docstring). Where several hosts share the store, one purges at a time; a call that
        finds another purging returns at once, ``swept=False``. Times are aware datetimes.
        """

    async def aclose(self) -> None:
        """Release what the store holds (connections, files)."""


@runtime_checkable
class DeliveryLedger(Protocol):
    """What a store keeps of the notices a host sends out (webhooks), so that each is delivered
    by one host at a time, retried until it is, and never claimed again once it was.

    A delivery is named by a ``key`` its sender derives from what it tells (the same notice to
    the same receiver: the same key, on every host). A claim is a compare-and-set, as a save
    is: of two hosts claiming one key at the same moment, one gets it.
    """

    async def claim_delivery(self, key: str, *, holder: str, now: datetime, until: datetime) -> int | None:
        """Take delivery ``key`` for ``holder`` until ``until``: the number of this attempt (1
        for the first); ``None`` when it was delivered, or when a claim or a wait before the
        next attempt lasts past ``now``. ``now`` and ``until`` are aware datetimes."""

    async def finish_delivery(
        self, key: str, *, holder: str, delivered: bool, retry_at: datetime | None = None
    ) -> None:
        """How ``holder``'s attempt at ``key`` ended: delivered (never claimed again), or not
        (anyone may claim it again from ``retry_at``, at once when ``None``). Changes nothing
        when another holder has claimed it meanwhile (this holder's claim had run out)."""


def check_claim(now: datetime, until: datetime) -> None:
    """Raise ``ValueError`` for instants :meth:`DeliveryLedger.claim_delivery` does not take."""
    if now.tzinfo is None or until.tzinfo is None:
        raise ValueError("a delivery's claim is between aware datetimes")
    if until <= now:
        raise ValueError("a delivery's claim ends after now")


def extend_lease(record: ThreadRecord, until: str | None) -> ThreadRecord:
    """``record`` with its run's lease extended to ``until`` (RFC 3339), if that is later.

    ``record`` itself when it has no run in progress, ``until`` is ``None`` or not later: a
    store's one rule for merging a lease it holds with the one a record brings.
    """
    run = record.active_run
    if run is None or until is None:
        return record
    if run.lease_until is not None and datetime.fromisoformat(until) <= datetime.fromisoformat(run.lease_until):
        return record
    return attrs.evolve(record, active_run=attrs.evolve(run, lease_until=until))


def waiting_from_json(thread_id: str, open_interrupts: Sequence[Any], owner: str | None = None) -> WaitingThread:
    """A :class:`WaitingThread` from a record's ``open`` list as :func:`record_to_dict` writes it.

    The record reader stays the one reader of that JSON: the list is read inside an empty record's.
    """
    shell = record_to_dict(ThreadRecord(thread_id=thread_id))
    shell["open"] = list(open_interrupts)
    return WaitingThread(thread_id=thread_id, interrupts=record_from_dict(shell).open_interrupts, owner=owner)


def newest_first(threads: Sequence[WaitingThread]) -> list[WaitingThread]:
    """``threads`` newest first (by :attr:`WaitingThread.raised_at`; unknown times last)."""
    return sorted(threads, key=lambda w: (w.raised_at is not None, w.raised_at or "", w.thread_id), reverse=True)


def saved_instant(record: ThreadRecord) -> datetime | None:
    """When ``record`` was saved (its ``saved_at``), or ``None`` if it does not say.

    ``StoreError`` for a ``saved_at`` that is not an RFC 3339 instant with a time zone: a
    store never keeps a time it cannot compare.
    """
    text = record.saved_at
    if text is None:
        return None
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        instant = None
    if instant is None or instant.tzinfo is None:
        raise StoreError(f"thread {record.thread_id!r}: saved_at {text!r} is not an instant with a time zone")
    return instant


AUDIT_MARGIN = timedelta(days=1)
"""How much earlier than asked a store's own query for :meth:`ThreadStore.audit_since` reaches:
``answered_at`` is text as each host wrote it, whose offsets are within a day of UTC; the
lines found are then sorted and cut exactly by :func:`audit_lines_since`."""


def audit_lines_since(
    lines: Iterable[tuple[str, ResolvedInterrupt]], since: datetime, limit: int
) -> list[tuple[str, ResolvedInterrupt]]:
    """The ``lines`` closed at ``since`` or later, oldest first, ``limit`` at most."""
    if since.tzinfo is None:
        raise ValueError("audit_since takes an aware datetime")
    found: list[tuple[datetime, str, int, tuple[str, ResolvedInterrupt]]] = []
    for order, (thread_id, entry) in enumerate(lines):
        try:
            closed = datetime.fromisoformat(entry.answered_at) if entry.answered_at is not None else None
        except ValueError:
            closed = None
        if closed is not None and closed.tzinfo is not None and closed >= since:
            found.append((closed, thread_id, order, (thread_id, entry)))
    found.sort(key=lambda item: item[:3])
    return [item[3] for item in found[:limit]]


def check_purge(idle_before: datetime, audit_before: datetime | None, limit: int) -> None:
    """Raise ``ValueError`` for arguments :meth:`ThreadStore.purge` does not take."""
    if idle_before.tzinfo is None or (audit_before is not None and audit_before.tzinfo is None):
        raise ValueError("a purge's cutoffs are aware datetimes")
    if audit_before is not None and audit_before > idle_before:
        raise ValueError("audit trails are kept at least as long as their threads: audit_before <= idle_before")
    if limit < 1:
        raise ValueError(f"a purge removes 1 thread or more at a time, not {limit}")
