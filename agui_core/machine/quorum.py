"""Quorum: interrupts that need answers from several deciders (sans-IO).

A :class:`~agui_core.machine.policy.Rule` with ``approvals = N`` makes an interrupt wait for
N distinct deciders to approve it before the agent gets its answer. Each decider's answer is a
:class:`~agui_core.machine.record.Vote`, kept with the open interrupt (so in the thread's record,
through restarts and across hosts). An interrupt is **decided** when

- any decider denies it (a ``resolved`` payload ``false`` or with ``"approved": false``) or cancels it: that
  answer decides at once, whatever the others said; or
- N distinct deciders have approved it, all with the same payload (an approval with other edits
  than the first is refused: approvers approve one thing).

While some interrupt of the thread is undecided, a resume that adds votes is answered by a run of
the machine's own that ends as it began: ``RUN_FINISHED`` with the interrupt outcome, listing the
interrupts still undecided, each with ``metadata["agui.quorum"]`` saying how many approvals it
needs, has and still wants. The agent is not run. When the last one is decided, the run that
carried that vote resumes the agent with every answer, as one resume would have (the contract's
"cover all" holds for the agent). The audit line of each interrupt keeps all its votes, the
deciding one last; an expiry closes the interrupt with the votes it had.

Under a policy, a resume answers what its principal may decide and has not yet answered: the
interrupts other deciders are to answer stay open without it (so interrupts under rules no one
principal satisfies are answered in turns, each by whom the policy names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import orjson

from agui_core.errors import RemoteProtocolError, RunErrorCode
from agui_core.machine.interrupts import BoundAnswer, format_ids, make_bound_answer
from agui_core.machine.record import OpenInterrupt, Vote
from agui_core.protocol.types import JSON, Interrupt, ResumeEntry

__all__ = ["QUORUM_KEY", "Ballot", "approves", "cast", "deciding_vote", "repeats_votes", "with_tally"]

QUORUM_KEY = "agui.quorum"
"""The metadata key, on an interrupt a vote run re-sends, of its tally:
``{"approvals": N, "approved": k, "remaining": N - k}``."""


def approves(status: str, payload: JSON) -> bool:
    """Whether an answer approves: ``resolved``, and not a denial (``"approved": false``, or
    ``false`` itself: a confirmation's no)."""
    if status != "resolved" or payload is False:
        return False
    return not (isinstance(payload, Mapping) and payload.get("approved") is False)


def _same(a: JSON, b: JSON) -> bool:
    return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)


def deciding_vote(votes: Sequence[Vote], needed: int) -> Vote | None:
    """The vote that decided an interrupt (a denial, a cancel, or the ``needed``-th approval), if any."""
    approvals = 0
    for vote in votes:
        if not approves(vote.status, vote.payload):
            return vote
        approvals += 1
        if approvals >= needed:
            return vote
    return None


def with_tally(item: OpenInterrupt, needed: int) -> Interrupt:
    """The interrupt as a vote run re-sends it: its metadata tells how far its quorum is."""
    approved = sum(1 for v in item.votes if approves(v.status, v.payload))
    tally = {"approvals": needed, "approved": approved, "remaining": needed - approved}
    return attrs.evolve(item.interrupt, metadata={**(item.interrupt.metadata or {}), QUORUM_KEY: tally})


def repeats_votes(entries: Sequence[ResumeEntry], live: Sequence[OpenInterrupt], principal: str) -> bool:
    """Whether every entry is a vote ``principal`` already cast, the same again (a retry of its
    vote run: replayed, not counted twice)."""
    by_id = {o.interrupt.id: o for o in live}
    for entry in entries:
        item = by_id.get(entry.interrupt_id)
        mine = [] if item is None else [v for v in item.votes if v.principal == principal]
        if not mine or mine[0].status != entry.status or not _same(mine[0].payload, entry.payload):
            return False
    return bool(entries)


@attrs.frozen(kw_only=True)
class Ballot:
    """The open interrupts with the votes of one resume cast, and what that decided."""

    open: tuple[OpenInterrupt, ...]
    answers: tuple[BoundAnswer, ...] = ()
    """Every live interrupt's answer, in the order they were raised, once all are decided; else empty."""
    waiting: tuple[OpenInterrupt, ...] = ()
    """The live interrupts still undecided."""


def cast(
    bound: Sequence[BoundAnswer],
    *,
    open_interrupts: Sequence[OpenInterrupt],
    live: Sequence[OpenInterrupt],
    needed: Mapping[str, int],
    principal: str,
    roles: tuple[str, ...],
    keys: Mapping[str, str],
    run_id: str,
    at: str,
) -> Ballot:
    """Cast the votes ``bound`` carries (entries bound to live interrupts, payloads checked),
    or refuse the resume: a vote on an interrupt already decided, or a second vote of the same
    decider, is ``INTERRUPT_ALREADY_RESOLVED``; an approval with other edits than the
    approvals before it, ``INVALID_PAYLOAD``. ``needed``: each live interrupt's approvals."""
    by_id = {b.interrupt.id: b for b in bound}
    decided, again, unlike = [], [], []
    votes: dict[str, tuple[Vote, ...]] = {}
    for item in live:
        iid = item.interrupt.id
        answer = by_id.get(iid)
        if answer is None:
            continue
        entry = answer.entry
        if deciding_vote(item.votes, needed[iid]) is not None:
            decided.append(iid)
        elif any(v.principal == principal for v in item.votes):
            again.append(iid)
        elif approves(entry.status, entry.payload) and any(
            approves(v.status, v.payload) and not _same(v.payload, entry.payload) for v in item.votes
        ):
            unlike.append(iid)
        vote = Vote(
            principal=principal,
            roles=roles,
            key=keys.get(iid),
            status=entry.status,
            payload=entry.payload,
            metadata=entry.metadata,
            run_id=run_id,
            at=at,
        )
        votes[iid] = (*item.votes, vote)
    if decided:
        raise RemoteProtocolError(
            RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
            f"interrupt {format_ids(decided)} is already decided; it waits for the thread's other interrupts",
            interrupt_ids=decided,
        )
    if again:
        raise RemoteProtocolError(
            RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
            f"interrupt {format_ids(again)} already has this decider's answer; each decider answers once "
            "(only that same answer can be sent again)",
            interrupt_ids=again,
        )
    if unlike:
        raise RemoteProtocolError(
            RunErrorCode.INVALID_PAYLOAD,
            f"interrupt {format_ids(unlike)} was approved with another payload; approvers approve the same "
            "answer (approve it as it was approved, or deny it)",
            interrupt_ids=unlike,
        )
    now_open = tuple(
        attrs.evolve(o, votes=votes[o.interrupt.id]) if o.interrupt.id in votes else o for o in open_interrupts
    )
    live_ids = {o.interrupt.id for o in live}
    live_now = [o for o in now_open if o.interrupt.id in live_ids]
    waiting = tuple(o for o in live_now if deciding_vote(o.votes, needed[o.interrupt.id]) is None)
    if waiting:
        return Ballot(open=now_open, waiting=waiting)
    answers = []
    for item in live_now:
        decider = deciding_vote(item.votes, needed[item.interrupt.id])
        assert decider is not None
        entry = ResumeEntry(
            interrupt_id=item.interrupt.id, status=decider.status, payload=decider.payload, metadata=decider.metadata
        )
        answers.append(make_bound_answer(interrupt=item.interrupt, entry=entry, raised_in=item.run_id))
    return Ballot(open=now_open, answers=tuple(answers))
