"""Resume admission: whether a client's input may start a run, and with which answers.

The rules of SPEC section 3 that decide a ``RunAgentInput`` with a ``resume``, as functions of
what the thread holds (its open interrupts, its audit trail, its completed resumes) and the
facts the host hands in. Each either returns what the input binds or raises
:class:`~agui_core.errors.RemoteProtocolError` naming the rule; none changes anything, so a
rejected input leaves the thread exactly as it was. :class:`~agui_core.machine.thread.ThreadMachine`
calls them in order before it takes a transition, and :meth:`ClientMachine.resume
<agui_core.machine.client.ClientMachine.resume>` calls the same ones before it builds a resume,
so the client never builds a resume the agent side refuses, nor refuses one it accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

import orjson

from agui_core.errors import PayloadError, RemoteProtocolError, RunErrorCode
from agui_core.machine.expiry import read_expires_at
from agui_core.machine.facts import InterruptHome
from agui_core.machine.interrupts import (
    BoundAnswer,
    answer_fault,
    check_answer_payload,
    format_ids,
    make_bound_answer,
)
from agui_core.machine.record import CompletedResume, OpenInterrupt, ResolvedInterrupt, payload_digest
from agui_core.protocol.codec import MAX_RESUME_ENTRIES
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import JSON, ResumeEntry

__all__ = [
    "EXPIRED_MARK",
    "MAX_INTERRUPTS",
    "bind_answers",
    "check_entries",
    "check_entry_count",
    "find_replay",
    "find_retry",
    "fingerprint",
    "partition_open",
    "raised_elsewhere",
]


EXPIRED_MARK = "agui.expired"
"""The metadata key of an answer the host gave itself when an interrupt expired: the agent's own
declared answer (``ThreadMachine.interrupt(on_expiry=...)``), not a person's. Its value is the
answer's status, which the audit line (status ``expired``) keeps this way. A client's answer
may not carry it (``INVALID_RESUME``): only the host says an answer was its own."""

MAX_INTERRUPTS = MAX_RESUME_ENTRIES
"""How many interrupts a thread holds open at most, so how many entries one resume carries."""


def check_entry_count(entries: Sequence[ResumeEntry]) -> None:
    """At most :data:`MAX_INTERRUPTS` entries (``INVALID_RESUME``): no thread holds more open."""
    if len(entries) > MAX_INTERRUPTS:
        raise RemoteProtocolError(
            RunErrorCode.INVALID_RESUME,
            f"the resume carries {len(entries)} entries; a thread has at most {MAX_INTERRUPTS} open interrupts",
        )


def _canonical(value: JSON) -> str:
    """JSON text that is equal for equal JSON values (keys sorted; ``true`` is not ``1``)."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def fingerprint(entries: Iterable[ResumeEntry]) -> tuple[tuple[str, str, str], ...]:
    """A resume's identity for replay: (interrupt id, status, payload digest) per entry, by id."""
    return tuple(sorted((e.interrupt_id, e.status, payload_digest(_canonical(e.payload))) for e in entries))


def check_entries(entries: Sequence[ResumeEntry]) -> None:
    """Each entry well formed (``INVALID_RESUME``), no interrupt answered twice (``DUPLICATE_RESUME_ENTRY``)."""
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"resume[{index}] (interrupt {entry.interrupt_id!r})"
        fault = answer_fault(entry.status, entry.payload, entry.metadata)
        if fault is None and entry.metadata is not None and EXPIRED_MARK in entry.metadata:
            fault = f"metadata key {EXPIRED_MARK!r} is the host's: it marks the answer it gives an expired interrupt"
        if fault is not None:
            raise RemoteProtocolError(RunErrorCode.INVALID_RESUME, f"{where}: {fault}")
        if entry.interrupt_id in seen:
            raise RemoteProtocolError(
                RunErrorCode.DUPLICATE_RESUME_ENTRY,
                f"the resume answers interrupt {entry.interrupt_id!r} more than once",
            )
        seen.add(entry.interrupt_id)


def raised_elsewhere(
    interrupt_id: str,
    *,
    thread_id: str,
    homes: Mapping[str, InterruptHome],
    principal: str,
    known: Callable[[str], bool],
) -> bool:
    """Whether ``interrupt_id`` was raised on another thread of ``principal`` (rule 1).

    Only an id the thread ``thread_id`` never raised (``known``) can be another thread's; an
    id of another principal's thread is not a mismatch but unknown, so its error names nothing
    of it.
    """
    home = homes.get(interrupt_id)
    if home is None or home.thread_id == thread_id or home.owner != principal:
        return False
    return not known(interrupt_id)


def partition_open(
    open_interrupts: Iterable[OpenInterrupt], now: datetime
) -> tuple[list[OpenInterrupt], list[OpenInterrupt]]:
    """The open interrupts still answerable at ``now``, and those expired (the instant counts)."""
    live: list[OpenInterrupt] = []
    expired: list[OpenInterrupt] = []
    for item in open_interrupts:
        expires = item.interrupt.expires_at
        (expired if expires is not None and read_expires_at(expires) <= now else live).append(item)
    return live, expired


def find_retry(run_id: str, completed: Iterable[CompletedResume]) -> CompletedResume | None:
    """The run ``run_id`` if it ended and answered nothing: the client is retrying it."""
    for done in completed:
        if done.run_id == run_id and not done.answers:
            return done
    return None


def find_replay(
    entries: Sequence[ResumeEntry], resolved: Iterable[ResolvedInterrupt], completed: Iterable[CompletedResume]
) -> CompletedResume | None:
    """The completed resume ``entries`` repeat, if any (rule 5)."""
    # A resume may cancel interrupts that had expired; those entries bind nothing and are
    # not in the recorded identity, so they are left out here too, or the same resume,
    # whole, would not be recognised when it comes again.
    expired = {r.interrupt.id for r in resolved if r.status == "expired"}
    kept = [e for e in entries if not (e.status == "cancelled" and e.interrupt_id in expired)]
    if not kept:
        return None
    # Digests are computed only for a resume that answers the same interrupts as a kept one.
    ids = sorted(e.interrupt_id for e in kept)
    identity = None
    for done in completed:
        if len(done.answers) == len(ids) and [a[0] for a in done.answers] == ids:
            if identity is None:
                identity = fingerprint(kept)
            if done.answers == identity:
                return done
    return None


def bind_answers(
    entries: Sequence[ResumeEntry],
    *,
    thread_id: str,
    live: Sequence[OpenInterrupt],
    expired: Sequence[OpenInterrupt],
    resolved: Sequence[ResolvedInterrupt],
    validators: PayloadValidators,
    required: Sequence[str] | None = None,
) -> tuple[BoundAnswer, ...]:
    """Bind every entry to the live interrupt it answers, or refuse the resume.

    In order: an id no interrupt of the thread has (``UNKNOWN_INTERRUPT_ID``), an expired one
    answered rather than cancelled (``INTERRUPT_EXPIRED``), one already answered
    (``INTERRUPT_ALREADY_RESOLVED``), a live one left unanswered (``PARTIAL_RESUME``), a
    payload that fails its schema or edits not offered (``INVALID_PAYLOAD``, with the path).
    ``required`` names the live interrupts the resume must answer (default: every one; under
    a policy, those its principal is to decide: see :mod:`~agui_core.machine.quorum`).
    """
    live_by_id = {o.interrupt.id: o for o in live}
    expired_ids = {o.interrupt.id for o in expired} | {r.interrupt.id for r in resolved if r.status == "expired"}
    answered = {r.interrupt.id: r for r in resolved if r.status != "expired"}
    unknown, late, again = [], [], []
    for entry in entries:
        iid = entry.interrupt_id
        if iid in live_by_id:
            continue
        if iid in expired_ids:
            # Cancelling an interrupt that expired is how a client that saw it expire moves
            # on (the reference client tells its users to do exactly that); answering it is late.
            if entry.status != "cancelled":
                late.append(iid)
        elif iid in answered:
            again.append(iid)
        else:
            unknown.append(iid)
    if unknown:
        raise RemoteProtocolError(
            RunErrorCode.UNKNOWN_INTERRUPT_ID,
            f"no interrupt {format_ids(unknown)} is open on thread {thread_id!r}",
            interrupt_ids=unknown,
        )
    if late:
        raise RemoteProtocolError(
            RunErrorCode.INTERRUPT_EXPIRED,
            f"interrupt {format_ids(late)} expired before the resume arrived",
            interrupt_ids=late,
        )
    if again:
        runs = {answered[i].answered_in for i in again}
        raise RemoteProtocolError(
            RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
            f"interrupt {format_ids(again)} was already answered (in run {format_ids(r or '?' for r in runs)}); "
            "only the same resume, whole, can be sent again",
            interrupt_ids=again,
        )
    answered_ids = {e.interrupt_id for e in entries}
    missing = [i for i in (live_by_id if required is None else required) if i not in answered_ids]
    if missing:
        raise RemoteProtocolError(
            RunErrorCode.PARTIAL_RESUME,
            f"the resume leaves open interrupt {format_ids(missing)} unanswered; one resume answers them all",
            interrupt_ids=missing,
        )
    # Bound in the order the interrupts were raised, whatever the order of the entries, so
    # a failed run hands them back open exactly as they stood.
    by_id = {e.interrupt_id: e for e in entries}
    bound = []
    for item in live:
        given = by_id.get(item.interrupt.id)
        if given is None:
            continue  # left to other deciders (``required``)
        _check_payload(item, given, validators)
        bound.append(make_bound_answer(interrupt=item.interrupt, entry=given, raised_in=item.run_id))
    return tuple(bound)


def _check_payload(item: OpenInterrupt, entry: ResumeEntry, validators: PayloadValidators) -> None:
    if entry.status != "resolved":
        return
    # Edits are the one change a client may make to a proposal (SPEC section 9): they must
    # pass the tool's parameters as bound with the proposal.
    parameters = item.proposal.parameters if item.proposal is not None else None
    try:
        check_answer_payload(item.interrupt, entry.payload, validators, edit_parameters=parameters)
    except PayloadError as exc:
        refused = RemoteProtocolError(
            RunErrorCode.INVALID_PAYLOAD, exc.message, interrupt_ids=[item.interrupt.id], path=exc.path
        )
        # Set as well as raised ``from``: compiled (mypyc), ``raise ... from`` drops the cause.
        refused.__cause__ = exc
        raise refused from exc
