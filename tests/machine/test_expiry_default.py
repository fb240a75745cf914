"""An answer the agent declares for when nobody answers in time (``on_expiry``): active expiry
resumes the agent with it, as a run of the host's, and the audit says the interrupt expired."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agui_core.errors import LocalProtocolError, RunErrorCode
from agui_core.machine.effects import Persist, Reject, StartAgent
from agui_core.machine.record import ExpiryDefault, record_from_dict, record_to_dict
from agui_core.machine.thread import EXPIRED_MARK, ThreadMachine
from agui_core.machine.transitions import ThreadState
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput
from tests.machine.driver import NOW

SCHEMA = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
DUE = NOW + timedelta(hours=1)


def asked(*interrupts: Interrupt, on_expiry: dict[str, ExpiryDefault]) -> ThreadMachine:
    machine = ThreadMachine("t")
    machine.receive_input(RunAgentInput(thread_id="t", run_id="r1"), now=NOW, principal="ann")
    machine.interrupt(interrupts, now=NOW, on_expiry=on_expiry)
    return machine


def question(iid: str, *, expires: bool = True) -> Interrupt:
    return Interrupt(
        id=iid, reason="input_required", response_schema=SCHEMA, expires_at=DUE.isoformat() if expires else None
    )


DENY = ExpiryDefault(status="resolved", payload={"approved": False})


def test_the_declared_answer_survives_the_record() -> None:
    machine = asked(question("i1"), on_expiry={"i1": DENY})
    again = ThreadMachine.from_record(record_from_dict(record_to_dict(machine.record())))
    assert again.record().open_interrupts[0].on_expiry == DENY


def test_at_expiry_the_agent_is_resumed_with_the_declared_answer_and_the_audit_says_expired() -> None:
    machine = asked(question("i1"), question("i2"), on_expiry={"i1": DENY})
    assert machine.expire(DUE - timedelta(seconds=1), run_id="r-exp") == []  # not yet
    effects = machine.expire(DUE, run_id="r-exp", lease_until=DUE + timedelta(seconds=30))
    assert [type(e).__name__ for e in effects] == ["Persist", "Emit", "StartAgent"]
    start = effects[-1]
    assert isinstance(start, StartAgent) and start.run_input.run_id == "r-exp"
    (answer,) = start.answers
    assert answer.interrupt.id == "i1"
    assert (answer.entry.status, answer.entry.payload, answer.entry.metadata) == (
        "resolved",
        {"approved": False},
        {EXPIRED_MARK: "resolved"},
    )
    assert machine.state is ThreadState.RESUMED and machine.record().owner == "ann"
    machine.finish({"sent": False})
    audit = {r.interrupt.id: (r.status, r.payload, r.answered_in) for r in machine.resolved}
    assert audit == {"i1": ("expired", {"approved": False}, "r-exp"), "i2": ("expired", None, None)}
    # A person's answer that comes late is still refused as late.
    late = RunAgentInput(
        thread_id="t",
        run_id="r-late",
        resume=(ResumeEntry(interrupt_id="i1", status="resolved", payload={"approved": True}),),
    )
    (refused,) = machine.receive_input(late, now=DUE + timedelta(minutes=5), principal="ann")
    assert isinstance(refused, Reject) and refused.code is RunErrorCode.INTERRUPT_EXPIRED


def test_without_a_run_id_it_only_closes() -> None:
    machine = asked(question("i1"), on_expiry={"i1": DENY})
    (persist,) = machine.expire(DUE)
    assert isinstance(persist, Persist) and machine.state is ThreadState.IDLE


LATER = Interrupt(
    id="i2", reason="input_required", response_schema=SCHEMA, expires_at=(DUE + timedelta(hours=1)).isoformat()
)


def test_with_a_live_interrupt_left_the_declared_one_waits_for_the_agents_next_run() -> None:
    # Closed now, it lost its declared answer; the agent got it only when no look came between.
    mixed = asked(question("i1"), question("i3"), LATER, on_expiry={"i1": DENY})
    (persist,) = mixed.expire(DUE, run_id="r-exp")  # i3 has no declared answer: it closes
    assert isinstance(persist, Persist) and mixed.state is ThreadState.INTERRUPTED
    assert [(r.interrupt.id, r.status) for r in mixed.resolved] == [("i3", "expired")]
    assert mixed.expire(DUE + timedelta(minutes=1), run_id="r-exp") == []  # i1 waits, nothing to save
    effects = mixed.expire(DUE + timedelta(hours=1), run_id="r-exp")
    start = effects[-1]
    assert isinstance(start, StartAgent)
    assert [(a.interrupt.id, a.entry.payload) for a in start.answers] == [("i1", {"approved": False})]
    assert [(r.interrupt.id, r.status) for r in mixed.resolved] == [("i3", "expired"), ("i2", "expired")]


def test_a_persons_resume_of_the_others_carries_the_declared_answer_of_the_expired_one() -> None:
    for cancels in (False, True):
        mixed = asked(question("i1"), LATER, on_expiry={"i1": DENY})
        entries = [ResumeEntry(interrupt_id="i2", status="resolved", payload={"approved": True})]
        if cancels:  # a client that saw it expire and moves on: no answer for it
            entries.append(ResumeEntry(interrupt_id="i1", status="cancelled"))
        resume = RunAgentInput(thread_id="t", run_id="r2", resume=tuple(entries))
        effects = mixed.receive_input(resume, now=DUE + timedelta(minutes=1), principal="ann")
        start = effects[-1]
        assert isinstance(start, StartAgent)
        answered = [(a.interrupt.id, a.entry.payload, a.entry.metadata) for a in start.answers]
        declared = ("i1", {"approved": False}, {EXPIRED_MARK: "resolved"})
        assert answered == [("i2", {"approved": True}, None)] if cancels else [declared, answered[1]], answered
        mixed.finish(None)
        audit = {r.interrupt.id: (r.status, r.payload) for r in mixed.resolved}
        assert audit["i1"] == (("expired", None) if cancels else ("expired", {"approved": False}))
        assert audit["i2"] == ("resolved", {"approved": True})


@pytest.mark.parametrize(
    ("interrupt", "default", "why"),
    [
        (question("i1", expires=False), DENY, "no expiresAt"),
        (question("i1"), ExpiryDefault(status="resolved", payload={"approved": "no"}), "fails its schema"),
        (question("i1"), ExpiryDefault(status="cancelled", payload={"approved": False}), "carries no payload"),
    ],
)
def test_a_declared_answer_the_interrupt_could_not_take_is_refused(
    interrupt: Interrupt, default: ExpiryDefault, why: str
) -> None:
    machine = ThreadMachine("t")
    machine.receive_input(RunAgentInput(thread_id="t", run_id="r1"), now=NOW, principal="ann")
    with pytest.raises(LocalProtocolError, match=why):
        machine.interrupt((interrupt,), now=NOW, on_expiry={"i1": default})
    with pytest.raises(LocalProtocolError, match="does not raise"):
        machine.interrupt((question("i1"),), now=NOW, on_expiry={"other": DENY})


def test_a_client_cannot_pass_its_answer_off_as_the_hosts() -> None:
    machine = asked(question("i1"), on_expiry={"i1": DENY})
    forged = RunAgentInput(
        thread_id="t",
        run_id="r2",
        resume=(
            ResumeEntry(
                interrupt_id="i1", status="resolved", payload={"approved": True}, metadata={EXPIRED_MARK: "resolved"}
            ),
        ),
    )
    (refused,) = machine.receive_input(forged, now=NOW, principal="ann")
    assert isinstance(refused, Reject) and refused.code is RunErrorCode.INVALID_RESUME
    assert EXPIRED_MARK in refused.message


def test_a_failed_resume_gives_the_declared_answer_back_and_a_failed_expiry_run_does_not_loop() -> None:
    machine = asked(question("i1"), on_expiry={"i1": DENY})
    person = RunAgentInput(
        thread_id="t",
        run_id="r2",
        resume=(ResumeEntry(interrupt_id="i1", status="resolved", payload={"approved": True}),),
    )
    machine.receive_input(person, now=NOW, principal="ann")
    machine.fail("the agent broke")
    again = ThreadMachine.from_record(record_from_dict(record_to_dict(machine.record())))
    assert again.record().open_interrupts[0].on_expiry == DENY  # still the agent's declared answer
    effects = again.expire(DUE, run_id="r-exp")
    assert isinstance(effects[-1], StartAgent)
    again.fail("the agent broke again")  # the host's own run failed: no second try at expiry
    assert again.record().open_interrupts[0].on_expiry is None
    (persist,) = again.expire(DUE, run_id="r-exp-2")
    assert isinstance(persist, Persist)
    assert [(r.interrupt.id, r.status, r.payload) for r in again.resolved] == [("i1", "expired", None)]


def test_a_late_answer_equal_to_the_declared_one_is_still_late() -> None:
    machine = asked(question("i1"), on_expiry={"i1": DENY})
    machine.expire(DUE, run_id="r-exp")
    machine.finish()
    same = RunAgentInput(
        thread_id="t",
        run_id="r-exp",
        resume=(ResumeEntry(interrupt_id="i1", status="resolved", payload={"approved": False}),),
    )
    (refused,) = machine.receive_input(same, now=DUE, principal="ann")
    assert isinstance(refused, Reject) and refused.code is RunErrorCode.INTERRUPT_EXPIRED
