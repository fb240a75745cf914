"""Quorum (agui_core.machine.quorum): an approval that needs two deciders, answered in turns.

The machine alone: each earlier vote is kept with the open interrupt and answered by a run that
ends with the interrupt still open and its tally; the last one resumes the agent; a denial or a
cancel by either decides at once; the same vote again is a replay; a second, different vote of
the same decider, a vote on what is decided, and an approval with other edits are refused; the
votes survive the record, a failed run and an expiry; interrupts under rules no one principal
satisfies are answered in turns.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from agui_core.errors import LocalProtocolError, RunErrorCode
from agui_core.machine.effects import Effect, Emit, Persist, Reject, StartAgent
from agui_core.machine.policy import MAX_APPROVALS, policy_from_toml
from agui_core.machine.quorum import QUORUM_KEY
from agui_core.machine.record import record_from_dict, record_to_dict
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput
from tests.machine.driver import NOW, paying_bob

EDITS = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
    "required": ["approved"],
}
POLICY = policy_from_toml(
    {
        "tools": {"pay": {"roles": ["manager"], "owner": False, "approvals": 2}},
        "reasons": {"confirmation": {"roles": [], "owner": True}},
    }
)
MANAGER = frozenset({"manager"})
YES: dict[str, Any] = {"approved": True}
NO: dict[str, Any] = {"approved": False}


def waiting(*, expires_at: str | None = None, confirm: bool = False) -> ThreadMachine:
    """ann's thread, waiting for the approval of a payment (and, with ``confirm``, two
    confirmations that are hers to give)."""
    machine = paying_bob()
    interrupts = [
        Interrupt(id="pay", reason="tool_call", tool_call_id="c1", response_schema=EDITS, expires_at=expires_at)
    ]
    if confirm:
        interrupts += [Interrupt(id="ok", reason="confirmation"), Interrupt(id="ok2", reason="confirmation")]
    machine.interrupt(interrupts, now=NOW)
    return machine


def resume(run_id: str, *answers: tuple[str, str, Any]) -> RunAgentInput:
    entries = tuple(ResumeEntry(interrupt_id=i, status=s, payload=p) for i, s, p in answers)  # type: ignore[arg-type]
    return RunAgentInput(thread_id="t", run_id=run_id, resume=entries)


def vote(
    machine: ThreadMachine, principal: str, run_id: str, *answers: tuple[str, str, Any], **facts: Any
) -> list[Effect]:
    roles = frozenset() if principal == "ann" else MANAGER
    return machine.receive_input(
        resume(run_id, *answers), now=facts.pop("now", NOW), principal=principal, roles=roles, policy=POLICY, **facts
    )


def events(effects: list[Effect]) -> list[ev.Event]:
    return [e.event for e in effects if isinstance(e, Emit)]


def refusal(effects: list[Effect]) -> str:
    (reject,) = effects
    assert isinstance(reject, Reject)
    return reject.code.value


def tally(effects: list[Effect]) -> list[tuple[str, Any]]:
    finished = events(effects)[-1]
    assert isinstance(finished, ev.RunFinishedEvent) and finished.outcome is not None
    assert finished.outcome.type == "interrupt"
    return [(i.id, (i.metadata or {}).get(QUORUM_KEY)) for i in finished.outcome.interrupts]


def test_the_first_approval_is_kept_and_the_interrupt_stays_open_with_its_tally() -> None:
    machine = waiting()
    effects = vote(machine, "bob", "b1", ("pay", "resolved", YES))
    assert isinstance(effects[0], Persist) and not any(isinstance(e, StartAgent) for e in effects)
    assert [e.type for e in events(effects)] == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert tally(effects) == [("pay", {"approvals": 2, "approved": 1, "remaining": 1})]
    assert machine.state is ThreadState.INTERRUPTED
    (opened,) = machine.record().open_interrupts
    assert [(v.principal, v.roles, v.run_id) for v in opened.votes] == [("bob", ("manager",), "b1")]
    assert machine.resolved == ()  # nothing decided yet


def test_the_second_approval_resumes_the_agent_and_the_audit_keeps_both() -> None:
    machine = waiting()
    vote(machine, "bob", "b1", ("pay", "resolved", YES))
    effects = vote(machine, "dave", "d1", ("pay", "resolved", YES))
    start = effects[-1]
    assert isinstance(start, StartAgent)
    assert [(a.interrupt.id, a.entry.status, a.entry.payload) for a in start.answers] == [("pay", "resolved", YES)]
    machine.finish()
    (line,) = machine.resolved
    assert (line.decided_by, line.status, line.answered_in) == ("dave", "resolved", "d1")
    assert [(v.principal, v.payload) for v in line.votes] == [("bob", YES), ("dave", YES)]


@pytest.mark.parametrize(("status", "payload"), [("resolved", NO), ("cancelled", None)])
def test_a_denial_or_a_cancel_by_either_decides_at_once(status: str, payload: Any) -> None:
    machine = waiting()
    vote(machine, "bob", "b1", ("pay", "resolved", YES))
    start = vote(machine, "dave", "d1", ("pay", status, payload))[-1]
    assert isinstance(start, StartAgent) and start.answers[0].entry.status == status
    assert start.answers[0].entry.payload == payload
    # And as the first answer, too: no second decider is waited for.
    first = waiting()
    assert isinstance(vote(first, "bob", "b1", ("pay", status, payload))[-1], StartAgent)


def test_the_same_vote_again_is_a_replay_and_another_is_refused() -> None:
    machine = waiting()
    first = vote(machine, "bob", "b1", ("pay", "resolved", YES))
    before = machine.record()
    again = vote(machine, "bob", "b2", ("pay", "resolved", YES))
    assert not any(isinstance(e, Persist) for e in again)  # counted once
    assert tally(again) == tally(first) and machine.record() == before
    assert refusal(vote(machine, "bob", "b3", ("pay", "resolved", NO))) == "INTERRUPT_ALREADY_RESOLVED"
    assert machine.record() == before


def test_approvers_approve_the_same_edits() -> None:
    machine = waiting()
    vote(machine, "bob", "b1", ("pay", "resolved", {"approved": True, "editedArgs": {"amount": 100}}))
    other = vote(machine, "dave", "d1", ("pay", "resolved", {"approved": True, "editedArgs": {"amount": 90}}))
    assert refusal(other) == "INVALID_PAYLOAD"
    same = vote(machine, "dave", "d2", ("pay", "resolved", {"approved": True, "editedArgs": {"amount": 100}}))
    assert isinstance(same[-1], StartAgent)


def test_the_owner_may_not_vote_where_the_policy_keeps_it_from_the_owner() -> None:
    machine = waiting()
    assert refusal(vote(machine, "ann", "a2", ("pay", "resolved", YES))) == "FORBIDDEN"


def test_the_votes_survive_the_record() -> None:
    machine = waiting()
    vote(machine, "bob", "b1", ("pay", "resolved", YES))
    again = ThreadMachine.from_record(record_from_dict(record_to_dict(machine.record())))
    assert isinstance(vote(again, "dave", "d1", ("pay", "resolved", YES))[-1], StartAgent)


def test_a_failed_run_gives_the_interrupt_back_with_the_votes_before_it() -> None:
    machine = waiting()
    vote(machine, "bob", "b1", ("pay", "resolved", YES))
    vote(machine, "dave", "d1", ("pay", "resolved", YES))
    machine.fail("the tool's service is down")
    (opened,) = machine.record().open_interrupts
    assert [v.principal for v in opened.votes] == ["bob"]  # dave's went with the run
    assert isinstance(vote(machine, "dave", "d2", ("pay", "resolved", YES))[-1], StartAgent)


def test_the_resume_that_completed_a_quorum_is_replayed() -> None:
    machine = waiting()
    vote(machine, "bob", "b1", ("pay", "resolved", YES))
    vote(machine, "dave", "d1", ("pay", "resolved", YES))
    machine.finish({"paid": True})
    replayed = events(vote(machine, "dave", "d1", ("pay", "resolved", YES)))
    assert isinstance(replayed[-1], ev.RunFinishedEvent) and replayed[-1].result == {"paid": True}
    assert len(machine.resolved) == 1


def test_an_expiry_closes_the_interrupt_with_the_votes_it_had() -> None:
    machine = waiting(expires_at=(NOW + timedelta(minutes=5)).isoformat())
    vote(machine, "bob", "b1", ("pay", "resolved", YES))
    late = vote(machine, "dave", "d1", ("pay", "resolved", YES), now=NOW + timedelta(minutes=6))
    assert refusal(late) == "INTERRUPT_EXPIRED"
    machine.receive_input(RunAgentInput(thread_id="t", run_id="r9"), now=NOW + timedelta(minutes=6), principal="ann")
    (line,) = machine.resolved
    assert line.status == "expired" and [v.principal for v in line.votes] == ["bob"]


def test_interrupts_no_one_principal_may_decide_are_answered_in_turns() -> None:
    # Before, one resume had to answer every open interrupt, which nobody here could do.
    machine = waiting(confirm=True)
    # ann may confirm but not pay; her confirmations are kept, and the payment still waits.
    effects = vote(machine, "ann", "a2", ("ok", "resolved", True), ("ok2", "resolved", False))
    assert tally(effects) == [("pay", {"approvals": 2, "approved": 0, "remaining": 2})]
    # bob may decide the payment only: his resume answers that, and the payment waits for dave.
    assert tally(vote(machine, "bob", "b1", ("pay", "resolved", YES))) == [
        ("pay", {"approvals": 2, "approved": 1, "remaining": 1})
    ]
    start = vote(machine, "dave", "d1", ("pay", "resolved", YES))[-1]
    assert isinstance(start, StartAgent)
    assert [(a.interrupt.id, a.entry.payload) for a in start.answers] == [("pay", YES), ("ok", True), ("ok2", False)]
    machine.finish()
    assert [(r.interrupt.id, r.decided_by) for r in machine.resolved] == [
        ("pay", "dave"),
        ("ok", "ann"),
        ("ok2", "ann"),
    ]


def test_a_decider_answers_all_it_is_to_answer_and_nothing_decided() -> None:
    machine = waiting(confirm=True)
    partial = vote(machine, "ann", "a2", ("ok", "resolved", True))
    assert refusal(partial) == "PARTIAL_RESUME"
    vote(machine, "ann", "a3", ("ok", "resolved", True), ("ok2", "resolved", True))
    decided = vote(machine, "bob", "b1", ("pay", "resolved", YES), ("ok", "resolved", False))
    assert refusal(decided) == "FORBIDDEN"  # not bob's to confirm
    # A decided interrupt waits for the others: a further answer to it is refused.
    ann_again = machine.receive_input(
        resume("a4", ("ok", "resolved", False), ("ok2", "resolved", False)), now=NOW, principal="ann", policy=POLICY
    )
    assert refusal(ann_again) == "INTERRUPT_ALREADY_RESOLVED"


def test_the_policy_reads_approvals_and_refuses_odd_ones() -> None:
    assert POLICY.tools["pay"].approvals == 2 and POLICY.default.approvals == 1
    for odd in (0, MAX_APPROVALS + 1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="approvals is a whole number of deciders"):
            policy_from_toml({"default": {"approvals": odd}})


def test_the_owners_client_answers_its_part_and_follows_the_vote_run() -> None:
    from agui_core.machine.client import ClientMachine, resolve

    machine = ThreadMachine("t")
    client = ClientMachine("t")
    started = machine.receive_input(RunAgentInput(thread_id="t", run_id="r1"), now=NOW, principal="ann")
    raised = [
        *events(started),
        *events(machine.emit(ev.ToolCallStartEvent(tool_call_id="c1", tool_call_name="pay", parent_message_id="a1"))),
        *events(machine.emit(ev.ToolCallEndEvent(tool_call_id="c1"))),
        *events(
            machine.interrupt(
                [Interrupt(id="pay", reason="tool_call", tool_call_id="c1"), Interrupt(id="ok", reason="confirmation")],
                now=NOW,
            )
        ),
    ]
    for event in raised:
        client.receive_event(event, now=NOW)
    with pytest.raises(LocalProtocolError) as refused:
        client.resume({"ok": resolve(True)}, now=NOW, run_id="a2")
    assert refused.value.code is RunErrorCode.PARTIAL_RESUME
    mine = client.resume({"ok": resolve(True)}, now=NOW, run_id="a2", partial=True)
    effects = machine.receive_input(mine, now=NOW, principal="ann", policy=POLICY)
    for event in events(effects):
        client.receive_event(event, now=NOW)  # the vote run announces "pay" again, still open
    assert [i.id for i in client.open_interrupts] == ["pay"] and client.warnings == ()


def test_a_confirmations_no_decides_at_once() -> None:
    policy = policy_from_toml({"reasons": {"confirmation": {"roles": ["manager"], "approvals": 2}}})
    machine = ThreadMachine("t")
    machine.receive_input(RunAgentInput(thread_id="t", run_id="r1"), now=NOW, principal="ann")
    machine.interrupt([Interrupt(id="ok", reason="confirmation")], now=NOW)
    no = machine.receive_input(
        resume("b1", ("ok", "resolved", False)), now=NOW, principal="bob", roles=MANAGER, policy=policy
    )
    start = no[-1]
    assert isinstance(start, StartAgent) and start.answers[0].entry.payload is False


def test_a_quorum_lowered_by_a_policy_edit_resumes_on_the_next_input() -> None:
    three = policy_from_toml({"tools": {"pay": {"roles": ["manager"], "owner": False, "approvals": 3}}})
    machine = waiting()
    for principal, run_id in (("bob", "b1"), ("dave", "d1")):
        machine.receive_input(
            resume(run_id, ("pay", "resolved", YES)), now=NOW, principal=principal, roles=MANAGER, policy=three
        )
    assert machine.state is ThreadState.INTERRUPTED
    # The operator lowers the quorum to two: two approvals are in, so the thread goes on with the
    # next input, a voter's retry or the owner's own, and never sends an empty interrupt list.
    owners = machine.receive_input(RunAgentInput(thread_id="t", run_id="a9"), now=NOW, principal="ann", policy=POLICY)
    start = owners[-1]
    assert isinstance(start, StartAgent) and [a.entry.payload for a in start.answers] == [YES]
    machine.finish()
    assert [(r.decided_by, len(r.votes)) for r in machine.resolved] == [("dave", 2)]
    retry = waiting()
    for principal, run_id in (("bob", "b1"), ("dave", "d1")):
        retry.receive_input(
            resume(run_id, ("pay", "resolved", YES)), now=NOW, principal=principal, roles=MANAGER, policy=three
        )
    assert isinstance(vote(retry, "bob", "b1", ("pay", "resolved", YES))[-1], StartAgent)


def test_active_expiry_resumes_what_was_decided_once_the_rest_expires() -> None:
    machine = waiting(expires_at=(NOW + timedelta(minutes=5)).isoformat(), confirm=True)
    vote(machine, "ann", "a2", ("ok", "resolved", True), ("ok2", "resolved", True))
    later = NOW + timedelta(minutes=6)
    effects = machine.expire(later, run_id="expiry-1", lease_until=later + timedelta(minutes=1), policy=POLICY)
    start = effects[-1]
    assert isinstance(start, StartAgent) and [a.interrupt.id for a in start.answers] == ["ok", "ok2"]
    machine.finish()
    assert [(r.interrupt.id, r.status) for r in machine.resolved] == [
        ("pay", "expired"),
        ("ok", "resolved"),
        ("ok2", "resolved"),
    ]


def test_an_earlier_voters_retry_after_the_quorum_is_a_replay_not_a_refusal() -> None:
    machine = waiting()
    vote(machine, "bob", "b1", ("pay", "resolved", YES))
    vote(machine, "dave", "d1", ("pay", "resolved", YES))
    machine.finish({"paid": True})
    # The same answer as the one that completed the quorum: its outcome again, nothing run again
    # (before, bob, no longer able to read the thread, was told FORBIDDEN).
    again = vote(machine, "bob", "b1", ("pay", "resolved", YES))
    assert not any(isinstance(e, StartAgent | Reject) for e in again)
    finished = events(again)[-1]
    assert isinstance(finished, ev.RunFinishedEvent) and finished.result == {"paid": True}
    # A new input from him now finds nothing for him to decide: refused as any stranger's.
    assert refusal(vote(machine, "bob", "b2", ("pay", "resolved", NO))) == "FORBIDDEN"
