"""Tests for agui_core.machine.thread: the ThreadMachine and the eight contract rules.

The four worked examples of the seed document are driven end to end and their exact events
compared (each interrupt ``RUN_FINISHED`` equal to the seed's JSON); then one test per
``RUN_ERROR`` code, replay, the agent-side rules, subagents, the interrupt boundary and
restoring a machine from its record at every step.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest

from agui_core.errors import (
    InvalidInputError,
    LocalProtocolError,
    ResponseSchemaError,
    RunErrorCode,
)
from agui_core.machine.effects import Answer, Effect, Emit, Persist, Reject, StartAgent
from agui_core.machine.record import ThreadRecord, record_from_dict, record_to_dict
from agui_core.machine.thread import RESUMES_KEPT, ThreadMachine
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.codec import MAX_DEPTH, decode_input
from agui_core.protocol.types import (
    PROTOCOL_VERSION,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    SubagentFinishedSuspendedOutcome,
)
from tests.machine.driver import (
    NOW,
    Act,
    cancel,
    drive,
    emit,
    fail,
    finish,
    interrupt,
    make_input,
    make_interrupt,
    receive,
    trace,
    wire,
)
from tests.seed import APPROVE_SCHEMA, SEED_RESUME_INPUTS, SEED_RUN_FINISHED

# ---------------------------------------------------------------------------------------------
# The seed's examples, as scripts of client inputs and agent acts.
# ---------------------------------------------------------------------------------------------


def seed_interrupts(example: str) -> list[dict[str, Any]]:
    """The interrupts of the seed example's ``RUN_FINISHED``, as printed."""
    interrupts: list[dict[str, Any]] = SEED_RUN_FINISHED[example]["outcome"]["interrupts"]
    return copy.deepcopy(interrupts)


def seed_resume(example: str, **changes: Any) -> dict[str, Any]:
    """The seed example's resume input, with the ``messages`` the wire schema requires."""
    doc = copy.deepcopy(SEED_RESUME_INPUTS[example])
    doc.setdefault("messages", [])
    doc.update(changes)
    return doc


def tool_call(call_id: str, name: str, args: str, *, parent: str) -> list[ev.Event]:
    return [
        ev.ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name, parent_message_id=parent),
        ev.ToolCallArgsEvent(tool_call_id=call_id, delta=args),
        ev.ToolCallEndEvent(tool_call_id=call_id),
    ]


def tool_result(message_id: str, call_id: str, content: str) -> ev.ToolCallResultEvent:
    return ev.ToolCallResultEvent(message_id=message_id, tool_call_id=call_id, content=content)


def assistant_call(call_id: str, name: str, args: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


# Example 1: minimal tool approval.
MINIMAL_USER = {"id": "msg-1", "role": "user", "content": "Say hi to Bob by e-mail."}
MINIMAL_ARGS = '{"to":"bob@example.com","subject":"Hi"}'


def minimal_approval() -> list[Act]:
    return [
        receive(make_input("thread-1", "run-1", messages=[MINIMAL_USER], state={"sent": 0})),
        emit(*tool_call("tc-001", "sendEmail", MINIMAL_ARGS, parent="msg-2")),
        interrupt(*seed_interrupts("minimal-tool-approval")),
        receive(seed_resume("minimal-tool-approval")),
        emit(
            tool_result("msg-3", "tc-001", '{"delivered":true}'),
            ev.StateDeltaEvent(delta=({"op": "replace", "path": "/sent", "value": 1},)),
        ),
        finish(),
    ]


# Example 2: approve with edits, and its audit trail.
EDIT_USER = {"id": "msg-1", "role": "user", "content": "Tell Bob I'm late."}
EDIT_ARGS = '{"to":"bob@example.com","subject":"Hi","body":"Running late."}'
# The seed's editedArgs.to arrived redacted by an e-mail obfuscator ("[email protected]"),
# which fails the schema's "format": "email"; the happy path uses a real address.
EDITED_ARGS = {"to": "bob@example.com", "subject": "Hi", "body": "Hi (revised per my note)"}


def edited_resume() -> dict[str, Any]:
    doc = seed_resume("approve-with-edits")
    doc["resume"][0]["payload"]["editedArgs"] = dict(EDITED_ARGS)
    return doc


def approve_with_edits() -> list[Act]:
    return [
        receive(make_input("thread-2", "run-10", messages=[EDIT_USER])),
        emit(*tool_call("tc-42", "sendEmail", EDIT_ARGS, parent="msg-2")),
        interrupt(*seed_interrupts("approve-with-edits")),
        receive(edited_resume()),
        emit(tool_result("msg-3", "tc-42", '{"messageId":"m-77"}')),
        finish({"sent": True}),
    ]


# Example 3: three parallel interrupts, one cancelled.
PARALLEL_USER = {"id": "msg-1", "role": "user", "content": "Mail the three reviewers."}
PARALLEL_ARGS = {
    call: f'{{"to":"{who}@example.com"}}' for call, who in (("tc-a", "ann"), ("tc-b", "ben"), ("tc-c", "cy"))
}


def parallel_interrupts() -> list[Act]:
    return [
        receive(make_input("thread-3", "run-20", messages=[PARALLEL_USER])),
        emit(*(e for call, args in PARALLEL_ARGS.items() for e in tool_call(call, "sendEmail", args, parent="msg-2"))),
        interrupt(*seed_interrupts("parallel-interrupts")),
        receive(seed_resume("parallel-interrupts")),
        emit(tool_result("msg-3", "tc-a", "sent"), tool_result("msg-4", "tc-b", "sent")),
        finish(),
    ]


# Example 4: the quarterly form, with expiresAt.
FORM_USER = {"id": "msg-1", "role": "user", "content": "File the quarterly report."}
FORM_EXPIRES = datetime(2026, 4, 20, 17, 0, 0, tzinfo=UTC)
FORM_PAYLOAD = {"quarter": "Q1", "year": 2026, "revenue": 4200000}


def quarterly_form_interrupted() -> list[Act]:
    return [
        receive(make_input("thread-4", "run-30", messages=[FORM_USER], state={"filings": []})),
        emit(
            ev.TextMessageStartEvent(message_id="msg-2", role="assistant"),
            ev.TextMessageContentEvent(message_id="msg-2", delta="I need the "),
            ev.TextMessageContentEvent(message_id="msg-2", delta="filing details."),
            ev.TextMessageEndEvent(message_id="msg-2"),
        ),
        interrupt(*seed_interrupts("non-tool-input-request")),
    ]


def quarterly_form() -> list[Act]:
    return [
        *quarterly_form_interrupted(),
        receive(seed_resume("non-tool-input-request"), now=FORM_EXPIRES - timedelta(seconds=1)),
        emit(ev.StateDeltaEvent(delta=({"op": "add", "path": "/filings/-", "value": FORM_PAYLOAD},))),
        finish({"filed": "Q1-2026"}),
    ]


EXAMPLES: dict[str, tuple[str, Callable[[], list[Act]]]] = {
    "minimal-tool-approval": ("thread-1", minimal_approval),
    "approve-with-edits": ("thread-2", approve_with_edits),
    "parallel-interrupts": ("thread-3", parallel_interrupts),
    "non-tool-input-request": ("thread-4", quarterly_form),
}


def run_script(thread_id: str, acts: Sequence[Act]) -> tuple[ThreadMachine, list[list[Effect]]]:
    machine = ThreadMachine(thread_id)
    return machine, [act(machine) for act in acts]


def run_started(thread_id: str, run_id: str) -> dict[str, Any]:
    # Our host declares the protocol version it speaks on every RUN_STARTED (spec 1.1).
    return {"type": "RUN_STARTED", "threadId": thread_id, "runId": run_id, "protocolVersion": PROTOCOL_VERSION}


def run_finished(thread_id: str, run_id: str, **rest: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": thread_id, "runId": run_id, **rest}


def tool_call_wire(call_id: str, name: str, args: str, *, parent: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "TOOL_CALL_START",
            "toolCallId": call_id,
            "toolCallName": name,
            "parentMessageId": parent,
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": args},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


INTERRUPT_END = ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "Persist", "RUN_FINISHED"]
"""How every interrupted run ends here: snapshots, then the record is saved, then the news."""
ACCEPTED = ["Persist", "RUN_STARTED", "StartAgent"]


# ---------------------------------------------------------------------------------------------
# 1. The four worked examples, exact events and effect order.
# ---------------------------------------------------------------------------------------------


def test_minimal_tool_approval() -> None:
    machine, steps = run_script("thread-1", minimal_approval())
    start1, calls, paused, start2, results, done = steps

    assert trace(start1) == ACCEPTED
    assert trace(calls + paused) == [
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        *INTERRUPT_END,
    ]
    assert wire(start1 + calls + paused) == [
        run_started("thread-1", "run-1"),
        *tool_call_wire("tc-001", "sendEmail", MINIMAL_ARGS, parent="msg-2"),
        {"type": "STATE_SNAPSHOT", "snapshot": {"sent": 0}},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                MINIMAL_USER,
                {
                    "id": "msg-2",
                    "role": "assistant",
                    "toolCalls": [assistant_call("tc-001", "sendEmail", MINIMAL_ARGS)],
                },
            ],
        },
        SEED_RUN_FINISHED["minimal-tool-approval"],
    ]
    # The record saved just before the interrupt is announced already holds it open.
    saved = paused[-2]
    assert isinstance(saved, Persist)
    assert saved.record.state is ThreadState.INTERRUPTED
    assert [o.interrupt.id for o in saved.record.open_interrupts] == ["int-abc123"]
    assert [o.run_id for o in saved.record.open_interrupts] == ["run-1"]

    assert trace(start2) == ACCEPTED
    agent = start2[-1]
    assert isinstance(agent, StartAgent)
    assert agent.run_input.run_id == "run-2"
    assert [(a.interrupt.id, a.entry.status, a.entry.payload, a.approved) for a in agent.answers] == [
        ("int-abc123", "resolved", {"approved": True}, True)
    ]
    assert trace(results + done) == ["TOOL_CALL_RESULT", "STATE_DELTA", "Persist", "RUN_FINISHED"]
    assert wire(start2 + results + done) == [
        run_started("thread-1", "run-2"),
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "msg-3",
            "toolCallId": "tc-001",
            "content": '{"delivered":true}',
        },
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/sent", "value": 1}]},
        run_finished("thread-1", "run-2", outcome={"type": "success"}),
    ]
    assert machine.state is ThreadState.IDLE
    assert machine.open_interrupts == ()
    assert machine.agent_state == {"sent": 1}
    (line,) = machine.resolved
    assert (line.interrupt.id, line.run_id, line.status, line.answered_in, line.outcome) == (
        "int-abc123",
        "run-1",
        "resolved",
        "run-2",
        "success",
    )


def test_approve_with_edits_and_its_audit_trail() -> None:
    machine, steps = run_script("thread-2", approve_with_edits())
    start10, calls, paused, start11, results, done = steps
    run10 = wire(start10 + calls + paused)
    run11 = wire(start11 + results + done)

    assert trace(start10 + calls + paused) == [
        *ACCEPTED,
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        *INTERRUPT_END,
    ]
    assert run10[-1] == SEED_RUN_FINISHED["approve-with-edits"]
    assert run10[:4] == [
        run_started("thread-2", "run-10"),
        *tool_call_wire("tc-42", "sendEmail", EDIT_ARGS, parent="msg-2"),
    ]

    agent = start11[-1]
    assert isinstance(agent, StartAgent)
    (answer,) = agent.answers
    assert answer.approved is True
    assert answer.entry.payload == {"approved": True, "editedArgs": EDITED_ARGS}
    assert answer.interrupt.metadata == {"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}}

    assert run11 == [
        run_started("thread-2", "run-11"),
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "msg-3",
            "toolCallId": "tc-42",
            "content": '{"messageId":"m-77"}',
        },
        run_finished("thread-2", "run-11", result={"sent": True}, outcome={"type": "success"}),
    ]

    # The audit trail of tc-42 spans the two runs: the proposal in run-10, the decision in the
    # resume of run-11, what happened in run-11.
    (line,) = machine.resolved
    assert line.interrupt.id == "int-email-edit"
    assert line.interrupt.tool_call_id == "tc-42"
    assert line.run_id == "run-10"
    assert line.answered_in == "run-11"
    assert line.status == "resolved"
    assert line.payload == {"approved": True, "editedArgs": EDITED_ARGS}
    assert line.answered_at == NOW.isoformat()
    proposal = [e for e in run10 if e["type"] == "TOOL_CALL_ARGS"]
    assert proposal == [{"type": "TOOL_CALL_ARGS", "toolCallId": "tc-42", "delta": EDIT_ARGS}]
    outcome = [e for e in run11 if e["type"] == "TOOL_CALL_RESULT"]
    assert [e["toolCallId"] for e in outcome] == ["tc-42"]
    # The resumed run does not re-emit the proposal.
    assert not [e for e in run11 if e["type"].startswith("TOOL_CALL_") and e["type"] != "TOOL_CALL_RESULT"]


def test_the_seed_resume_of_approve_with_edits_fails_the_email_format() -> None:
    # As printed, editedArgs.to is the obfuscator's "[email protected]": not an address.
    machine, _ = run_script("thread-2", approve_with_edits()[:3])
    message = assert_rejected(
        machine,
        seed_resume("approve-with-edits"),
        RunErrorCode.INVALID_PAYLOAD,
        "int-email-edit",
        "editedArgs.to",
    )
    assert "email" in message


def test_parallel_interrupts_one_cancelled() -> None:
    machine, steps = run_script("thread-3", parallel_interrupts()[:4])
    start20, calls, paused, start21 = steps
    assert trace(calls + paused) == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] * 3 + INTERRUPT_END
    run20 = wire(start20 + calls + paused)
    assert run20[-1] == SEED_RUN_FINISHED["parallel-interrupts"]
    assert run20[-2] == {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            PARALLEL_USER,
            {
                "id": "msg-2",
                "role": "assistant",
                "toolCalls": [assistant_call(call, "sendEmail", args) for call, args in PARALLEL_ARGS.items()],
            },
        ],
    }

    agent = start21[-1]
    assert isinstance(agent, StartAgent)
    assert [(a.interrupt.id, a.interrupt.tool_call_id, a.entry.status, a.approved) for a in agent.answers] == [
        ("i-1", "tc-a", "resolved", True),
        ("i-2", "tc-b", "resolved", True),
        ("i-3", "tc-c", "cancelled", None),
    ]
    results = machine.emit(tool_result("msg-3", "tc-a", "sent")) + machine.emit(tool_result("msg-4", "tc-b", "sent"))

    # A cancelled tool-bound interrupt: its tool call is not executed, so it has no result.
    before = machine.record()
    with pytest.raises(LocalProtocolError, match=r"'i-3' was cancelled.*'tc-c'"):
        machine.emit(tool_result("msg-5", "tc-c", "sent anyway"))
    # The resumed run does not re-open a tool call it answers.
    with pytest.raises(LocalProtocolError, match=r"TOOL_CALL_START.*'tc-a'.*'i-1'"):
        machine.emit(ev.ToolCallStartEvent(tool_call_id="tc-a", tool_call_name="sendEmail"))
    assert machine.record() == before

    done = machine.finish()
    assert wire(start21 + results + done) == [
        run_started("thread-3", "run-21"),
        {"type": "TOOL_CALL_RESULT", "messageId": "msg-3", "toolCallId": "tc-a", "content": "sent"},
        {"type": "TOOL_CALL_RESULT", "messageId": "msg-4", "toolCallId": "tc-b", "content": "sent"},
        run_finished("thread-3", "run-21", outcome={"type": "success"}),
    ]
    assert [(r.interrupt.id, r.status, r.payload, r.answered_in) for r in machine.resolved] == [
        ("i-1", "resolved", {"approved": True}, "run-21"),
        ("i-2", "resolved", {"approved": True}, "run-21"),
        ("i-3", "cancelled", None, "run-21"),
    ]


def test_quarterly_form_answered_in_time() -> None:
    machine, steps = run_script("thread-4", quarterly_form())
    start30, text, paused, start31, delta, done = steps
    assert wire(start30 + text + paused) == [
        run_started("thread-4", "run-30"),
        {"type": "TEXT_MESSAGE_START", "messageId": "msg-2", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-2", "delta": "I need the "},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg-2", "delta": "filing details."},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg-2"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"filings": []}},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                FORM_USER,
                {"id": "msg-2", "role": "assistant", "content": "I need the filing details."},
            ],
        },
        SEED_RUN_FINISHED["non-tool-input-request"],
    ]
    assert trace(paused) == INTERRUPT_END
    # Answered one second before expiresAt.
    assert trace(start31) == ACCEPTED
    assert wire(start31 + delta + done) == [
        run_started("thread-4", "run-31"),
        {
            "type": "STATE_DELTA",
            "delta": [{"op": "add", "path": "/filings/-", "value": FORM_PAYLOAD}],
        },
        run_finished("thread-4", "run-31", result={"filed": "Q1-2026"}, outcome={"type": "success"}),
    ]
    assert machine.agent_state == {"filings": [FORM_PAYLOAD]}
    (line,) = machine.resolved
    assert (line.status, line.payload, line.answered_in) == ("resolved", FORM_PAYLOAD, "run-31")


def form_machine() -> ThreadMachine:
    machine, _ = run_script("thread-4", quarterly_form_interrupted())
    return machine


def test_quarterly_form_at_the_expiry_instant_is_late() -> None:
    message = assert_rejected(
        form_machine(),
        seed_resume("non-tool-input-request"),
        RunErrorCode.INTERRUPT_EXPIRED,
        "int-form",
        now=FORM_EXPIRES,
    )
    assert "expired" in message


def test_quarterly_form_with_a_year_below_the_minimum() -> None:
    doc = seed_resume("non-tool-input-request")
    doc["resume"][0]["payload"]["year"] = 1999
    message = assert_rejected(form_machine(), doc, RunErrorCode.INVALID_PAYLOAD, "int-form", "payload.year")
    assert "2000" in message


def test_quarterly_form_expired_then_a_new_input_moves_on() -> None:
    machine = form_machine()
    effects = machine.receive_input(
        make_input("thread-4", "run-32", messages=[FORM_USER]),
        now=FORM_EXPIRES + timedelta(hours=1),
    )
    assert trace(effects) == ACCEPTED
    assert machine.state is ThreadState.RUNNING
    assert machine.open_interrupts == ()
    (line,) = machine.resolved
    assert (line.interrupt.id, line.run_id, line.status, line.answered_in, line.answered_at) == (
        "int-form",
        "run-30",
        "expired",
        None,
        "2026-04-20T17:00:00Z",
    )
    # The expired interrupt is recorded so in the saved record too.
    saved = effects[0]
    assert isinstance(saved, Persist)
    assert [r.status for r in saved.record.resolved] == ["expired"]
    # Answering it now is late; the run goes on.
    machine.finish()
    assert_rejected(
        machine,
        seed_resume("non-tool-input-request", runId="run-33"),
        RunErrorCode.INTERRUPT_EXPIRED,
        "int-form",
    )


# ---------------------------------------------------------------------------------------------
# 2. One test per RUN_ERROR code. A rejection is one RUN_ERROR and changes nothing.
# ---------------------------------------------------------------------------------------------


def assert_rejected(
    machine: ThreadMachine,
    run_input: RunAgentInput | dict[str, Any],
    code: RunErrorCode,
    *names: str,
    now: datetime = NOW,
) -> str:
    """``run_input`` is rejected with ``code``, a message naming ``names``, and no change."""
    before = machine.record()
    effects = receive(run_input, now=now)(machine)
    assert len(effects) == 1, trace(effects)
    (effect,) = effects
    assert isinstance(effect, Reject)
    assert effect.code is code
    error = effect.event
    assert isinstance(error, ev.RunErrorEvent)
    assert error.code == code.value
    for name in names:
        assert name in error.message, (name, error.message)
    assert machine.record() == before
    return error.message


def interrupted(*interrupts: dict[str, Any], thread_id: str = "t", run_id: str = "run-1") -> ThreadMachine:
    """A machine whose run ``run_id`` ended on ``interrupts`` (tool calls made for bound ones)."""
    machine = ThreadMachine(thread_id)
    acts: list[Act] = [
        receive(make_input(thread_id, run_id, messages=[{"id": "u-1", "role": "user", "content": "go"}]))
    ]
    for item in interrupts:
        if "toolCallId" in item:
            acts.append(emit(*tool_call(item["toolCallId"], "act", "{}", parent=f"m-{item['toolCallId']}")))
    acts.append(interrupt(*interrupts))
    drive(machine, acts)
    assert machine.state is ThreadState.INTERRUPTED
    return machine


def approval(iid: str, call: str | None = None, **rest: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": iid,
        "reason": "tool_call" if call else "input_required",
        "responseSchema": APPROVE_SCHEMA,
    }
    if call is not None:
        out["toolCallId"] = call
    out.update(rest)
    return out


def yes(iid: str) -> dict[str, Any]:
    return {"interruptId": iid, "status": "resolved", "payload": {"approved": True}}


def no(iid: str) -> dict[str, Any]:
    return {"interruptId": iid, "status": "resolved", "payload": {"approved": False}}


def resume(run_id: str, *entries: dict[str, Any], thread_id: str = "t") -> RunAgentInput:
    return make_input(thread_id, run_id, resume=entries)


def assert_still_answerable(machine: ThreadMachine, *entries: dict[str, Any]) -> None:
    effects = machine.receive_input(resume("run-ok", *entries), now=NOW)
    assert trace(effects) == ACCEPTED
    assert machine.state is ThreadState.RESUMED


def test_pending_interrupts() -> None:
    machine = interrupted(approval("int-1", "tc-1"), approval("int-2", "tc-2"))
    message = assert_rejected(
        machine,
        make_input("t", "run-2"),
        RunErrorCode.PENDING_INTERRUPTS,
        "'int-1'",
        "'int-2'",
        "'t'",
    )
    assert "resume" in message
    # An empty resume answers nothing either.
    assert_rejected(machine, make_input("t", "run-2", resume=[]), RunErrorCode.PENDING_INTERRUPTS, "'int-1'")
    assert_still_answerable(machine, yes("int-1"), yes("int-2"))


def test_partial_resume() -> None:
    machine = interrupted(approval("int-1", "tc-1"), approval("int-2", "tc-2"), approval("int-3", "tc-3"))
    message = assert_rejected(machine, resume("run-2", yes("int-2")), RunErrorCode.PARTIAL_RESUME, "'int-1'", "'int-3'")
    assert "'int-2'" not in message
    assert_still_answerable(machine, yes("int-1"), yes("int-2"), no("int-3"))


def test_unknown_interrupt_id() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    assert_rejected(
        machine,
        resume("run-2", yes("int-1"), yes("int-9")),
        RunErrorCode.UNKNOWN_INTERRUPT_ID,
        "'int-9'",
        "'t'",
    )
    assert_rejected(machine, resume("run-2", yes("int-9")), RunErrorCode.UNKNOWN_INTERRUPT_ID, "'int-9'")
    # On a thread with nothing open, any resume names an unknown interrupt.
    idle = ThreadMachine("t")
    assert_rejected(idle, resume("run-1", yes("int-1")), RunErrorCode.UNKNOWN_INTERRUPT_ID, "'int-1'")
    assert_still_answerable(machine, yes("int-1"))


def test_thread_mismatch() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    assert_rejected(
        machine,
        resume("run-2", yes("int-1"), thread_id="other"),
        RunErrorCode.THREAD_MISMATCH,
        "'other'",
        "'t'",
    )
    assert_rejected(
        ThreadMachine("t"),
        make_input("other", "run-1"),
        RunErrorCode.THREAD_MISMATCH,
        "'other'",
        "'t'",
    )
    assert_still_answerable(machine, yes("int-1"))


def test_duplicate_resume_entry() -> None:
    machine = interrupted(approval("int-1", "tc-1"), approval("int-2", "tc-2"))
    # The same answer twice is still a duplicate; so is a contradicting one.
    assert_rejected(
        machine,
        resume("run-2", yes("int-1"), yes("int-2"), yes("int-1")),
        RunErrorCode.DUPLICATE_RESUME_ENTRY,
        "'int-1'",
    )
    assert_rejected(
        machine,
        resume("run-2", yes("int-1"), no("int-1"), yes("int-2")),
        RunErrorCode.DUPLICATE_RESUME_ENTRY,
        "'int-1'",
    )
    assert_still_answerable(machine, yes("int-1"), yes("int-2"))


def by_hand(*entries: ResumeEntry) -> RunAgentInput:
    """An input the codec would refuse, built directly as a buggy in-process client would."""
    return RunAgentInput(thread_id="t", run_id="run-2", resume=entries)


def test_invalid_resume() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    assert_rejected(
        machine,
        by_hand(ResumeEntry(interrupt_id="int-1", status="cancelled", payload={"approved": False})),
        RunErrorCode.INVALID_RESUME,
        "'int-1'",
        "cancelled",
    )
    assert_rejected(
        machine,
        by_hand(ResumeEntry(interrupt_id="int-1", status="approved", payload={"approved": True})),  # type: ignore[arg-type]
        RunErrorCode.INVALID_RESUME,
        "'int-1'",
        "'approved'",
    )
    assert_rejected(
        machine,
        by_hand(ResumeEntry(interrupt_id="int-1", status="resolved", payload={"approved": True}, metadata=["x"])),  # type: ignore[arg-type]
        RunErrorCode.INVALID_RESUME,
        "'int-1'",
        "metadata",
    )
    assert_still_answerable(machine, {"interruptId": "int-1", "status": "cancelled"})


def test_invalid_payload_names_the_path() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    assert_rejected(
        machine,
        resume("run-2", {"interruptId": "int-1", "status": "resolved", "payload": {"approved": "yes"}}),
        RunErrorCode.INVALID_PAYLOAD,
        "'int-1'",
        "payload.approved",
    )
    # A missing payload where the schema requires one is a missing answer (rule 8).
    assert_rejected(
        machine,
        resume("run-2", {"interruptId": "int-1", "status": "resolved"}),
        RunErrorCode.INVALID_PAYLOAD,
        "'int-1'",
    )
    assert_still_answerable(machine, no("int-1"))


def test_confirmation_without_schema_needs_a_boolean() -> None:
    machine = interrupted({"id": "int-ok", "reason": "confirmation", "message": "Proceed?"})
    assert_rejected(machine, resume("run-2", yes("int-ok")), RunErrorCode.INVALID_PAYLOAD, "'int-ok'")
    assert_rejected(
        machine,
        resume("run-2", {"interruptId": "int-ok", "status": "resolved"}),
        RunErrorCode.INVALID_PAYLOAD,
        "'int-ok'",
    )
    assert_still_answerable(machine, {"interruptId": "int-ok", "status": "resolved", "payload": True})


def test_reasons_without_a_schema_accept_any_payload() -> None:
    machine = interrupted({"id": "int-x", "reason": "acme:review"}, {"id": "int-y", "reason": "input_required"})
    assert_still_answerable(
        machine,
        {"interruptId": "int-x", "status": "resolved", "payload": [1, "two", None]},
        {"interruptId": "int-y", "status": "resolved"},
    )


def test_interrupt_expired() -> None:
    machine = interrupted(
        approval("int-1", "tc-1", expiresAt="2026-04-20T12:00:00Z"),
        approval("int-2", "tc-2", expiresAt="2026-04-20T14:00:00+02:00"),  # the same instant
        approval("int-3", "tc-3"),
    )
    message = assert_rejected(
        machine,
        resume("run-2", yes("int-1"), yes("int-2"), yes("int-3")),
        RunErrorCode.INTERRUPT_EXPIRED,
        "'int-1'",
        "'int-2'",
    )
    assert "'int-3'" not in message
    # A microsecond earlier they were answerable.
    early = ThreadMachine.from_record(machine.record())
    effects = early.receive_input(
        resume("run-2", yes("int-1"), yes("int-2"), yes("int-3")),
        now=NOW - timedelta(microseconds=1),
    )
    assert trace(effects) == ACCEPTED
    # Cancelling the expired ones is how a client that saw them expire moves on; they are not
    # handed to the agent, and are recorded as expired.
    effects = machine.receive_input(
        resume(
            "run-2",
            {"interruptId": "int-1", "status": "cancelled"},
            {"interruptId": "int-2", "status": "cancelled"},
            yes("int-3"),
        ),
        now=NOW,
    )
    assert trace(effects) == ACCEPTED
    agent = effects[-1]
    assert isinstance(agent, StartAgent)
    assert [a.interrupt.id for a in agent.answers] == ["int-3"]
    assert [(r.interrupt.id, r.status) for r in machine.resolved] == [
        ("int-1", "expired"),
        ("int-2", "expired"),
    ]


def test_interrupt_already_resolved() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    drive(
        machine,
        [receive(resume("run-2", yes("int-1"))), emit(tool_result("r-1", "tc-1", "ok")), finish()],
    )
    assert_rejected(
        machine,
        resume("run-3", no("int-1")),
        RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
        "'int-1'",
        "'run-2'",
    )
    assert_rejected(
        machine,
        resume("run-3", {"interruptId": "int-1", "status": "cancelled"}),
        RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
        "'int-1'",
    )


def test_thread_busy() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-1"), now=NOW)
    assert_rejected(machine, make_input("t", "run-2"), RunErrorCode.THREAD_BUSY, "'t'", "'run-1'")
    # A resumed run is busy too, even for the resume that started it.
    machine = interrupted(approval("int-1", "tc-1"))
    machine.receive_input(resume("run-2", yes("int-1")), now=NOW)
    assert_rejected(machine, resume("run-3", yes("int-1")), RunErrorCode.THREAD_BUSY, "'run-2'")


@pytest.mark.parametrize(
    "data",
    [
        b"{not json",
        b"[]",
        b'{"threadId": "t", "runId": "r"}',
        b'{"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "robot"}]}',
    ],
)
def test_invalid_input_is_the_codecs(data: bytes) -> None:
    with pytest.raises(InvalidInputError) as info:
        decode_input(data)
    assert info.value.code is RunErrorCode.INVALID_INPUT
    assert info.value.code.value == "INVALID_INPUT"


@pytest.mark.parametrize(
    "entry",
    [
        {"interruptId": "i", "status": "maybe"},
        {"interruptId": "i", "status": "cancelled", "payload": {"approved": False}},
        {"interruptId": "i", "status": "resolved", "metadata": None},
    ],
)
def test_a_broken_resume_on_the_wire_is_the_codecs_invalid_resume(entry: dict[str, Any]) -> None:
    # The codec catches what it can before the machine sees it, with the resume's own code.
    with pytest.raises(InvalidInputError) as info:
        decode_input(orjson.dumps({"threadId": "t", "runId": "r", "messages": [], "resume": [entry]}))
    assert info.value.code is RunErrorCode.INVALID_RESUME
    assert info.value.path[:2] == ("resume", 0)


def test_agent_error_is_the_default_code_of_fail() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-1"), now=NOW)
    effects = machine.fail("the model provider timed out")
    assert trace(effects) == ["Persist", "RUN_ERROR"]
    assert wire(effects) == [{"type": "RUN_ERROR", "message": "the model provider timed out", "code": "AGENT_ERROR"}]
    assert machine.state is ThreadState.IDLE
    machine.receive_input(make_input("t", "run-2"), now=NOW)
    assert wire(machine.fail("quota", code=RunErrorCode.RATE_LIMITED)) == [
        {"type": "RUN_ERROR", "message": "quota", "code": "RATE_LIMITED"}
    ]


def test_every_run_error_code_has_a_test() -> None:
    from tests.adapters.test_langgraph_legacy import (
        test_an_ambiguous_legacy_resume_is_refused_and_changes_nothing as ambiguous_legacy_resume,
    )
    from tests.machine.test_history import (
        test_a_forged_copy_of_the_tool_call_is_refused_and_the_bound_proposal_stands,
        test_forbidden_names_nothing_and_comes_before_every_other_rule,
    )
    from tests.machine.test_policy import test_a_signed_rule_refuses_a_decision_the_host_found_no_signature_on
    from tests.machine.test_thread_limits import test_thread_too_large_past_the_message_limit
    from tests.transports.test_limits import (
        test_an_input_over_the_rate_limit_gets_rate_limited_and_a_client_that_keeps_on_is_closed as rate_limited,
    )

    tested = {
        RunErrorCode.AMBIGUOUS_LEGACY_RESUME: ambiguous_legacy_resume,  # the host's translator, before the machine
        RunErrorCode.FORBIDDEN: test_forbidden_names_nothing_and_comes_before_every_other_rule,
        RunErrorCode.INVALID_SIGNATURE: test_a_signed_rule_refuses_a_decision_the_host_found_no_signature_on,
        RunErrorCode.HISTORY_CONFLICT: test_a_forged_copy_of_the_tool_call_is_refused_and_the_bound_proposal_stands,
        RunErrorCode.PENDING_INTERRUPTS: test_pending_interrupts,
        RunErrorCode.PARTIAL_RESUME: test_partial_resume,
        RunErrorCode.UNKNOWN_INTERRUPT_ID: test_unknown_interrupt_id,
        RunErrorCode.THREAD_MISMATCH: test_thread_mismatch,
        RunErrorCode.DUPLICATE_RESUME_ENTRY: test_duplicate_resume_entry,
        RunErrorCode.INVALID_RESUME: test_invalid_resume,
        RunErrorCode.INVALID_PAYLOAD: test_invalid_payload_names_the_path,
        RunErrorCode.INTERRUPT_EXPIRED: test_interrupt_expired,
        RunErrorCode.INTERRUPT_ALREADY_RESOLVED: test_interrupt_already_resolved,
        RunErrorCode.THREAD_BUSY: test_thread_busy,
        RunErrorCode.INVALID_INPUT: test_invalid_input_is_the_codecs,
        RunErrorCode.RATE_LIMITED: rate_limited,  # a transport's code: the machine never sees the input
        RunErrorCode.THREAD_TOO_LARGE: test_thread_too_large_past_the_message_limit,
        RunErrorCode.AGENT_ERROR: test_agent_error_is_the_default_code_of_fail,
    }
    assert set(tested) == set(RunErrorCode)


def test_a_run_error_is_a_valid_first_event() -> None:
    # A rejection goes out on its own response stream: a lone RUN_ERROR is a valid stream.
    from agui_core.machine.ordering import StreamVerifier

    machine = interrupted(approval("int-1", "tc-1"))
    (effect,) = machine.receive_input(make_input("t", "run-2"), now=NOW)
    assert isinstance(effect, Reject)
    StreamVerifier().check(effect.event)


def test_now_must_be_aware() -> None:
    with pytest.raises(LocalProtocolError, match="aware"):
        ThreadMachine("t").receive_input(make_input("t", "run-1"), now=datetime(2026, 4, 20, 12))


# ---------------------------------------------------------------------------------------------
# 3. Replay (rule 5): the same resume again runs nothing and says the same.
# ---------------------------------------------------------------------------------------------


def finished_minimal() -> tuple[ThreadMachine, list[dict[str, Any]]]:
    machine, steps = run_script("thread-1", minimal_approval())
    return machine, wire([e for step in steps[3:] for e in step])


def test_replay_runs_nothing_and_resends_the_outcome() -> None:
    machine, first = finished_minimal()
    before = machine.record()
    effects = machine.receive_input(
        make_input("thread-1", "run-2b", resume=SEED_RESUME_INPUTS["minimal-tool-approval"]["resume"]),
        now=NOW,
    )
    assert all(isinstance(e, Emit) for e in effects)  # no StartAgent, no Persist
    assert wire(effects) == [
        run_started("thread-1", "run-2b"),
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "msg-3",
            "toolCallId": "tc-001",
            "content": '{"delivered":true}',
        },
        run_finished("thread-1", "run-2b", outcome={"type": "success"}),
    ]
    assert first[-1]["outcome"] == wire(effects)[-1]["outcome"]
    assert machine.record() == before
    # Replays are idempotent themselves.
    assert (
        machine.receive_input(
            make_input("thread-1", "run-2b", resume=SEED_RESUME_INPUTS["minimal-tool-approval"]["resume"]),
            now=NOW,
        )
        == effects
    )


def test_replay_with_a_result_and_entries_in_another_order() -> None:
    machine, steps = run_script("thread-3", parallel_interrupts())
    entries = list(reversed(SEED_RESUME_INPUTS["parallel-interrupts"]["resume"]))
    effects = machine.receive_input(make_input("thread-3", "run-21", resume=entries), now=NOW)
    # The same run id again is fine too: the replay answers with what run-21 said.
    assert wire(effects) == wire(steps[3] + steps[4] + steps[5])
    assert trace(effects) == ["RUN_STARTED", "TOOL_CALL_RESULT", "TOOL_CALL_RESULT", "RUN_FINISHED"]


def test_replay_ignores_metadata_and_keeps_the_recorded_result() -> None:
    machine, _ = run_script("thread-2", approve_with_edits())
    doc = edited_resume()
    doc["runId"] = "run-12"
    doc["resume"][0]["metadata"] = {"signature": "abc"}
    effects = machine.receive_input(make_input("thread-2", "run-12", resume=doc["resume"]), now=NOW)
    assert wire(effects)[-1] == run_finished("thread-2", "run-12", result={"sent": True}, outcome={"type": "success"})


def test_replay_after_expiry_is_still_a_replay() -> None:
    machine, _ = run_script("thread-4", quarterly_form())
    effects = machine.receive_input(
        seed_resume_input("non-tool-input-request", "run-40"), now=FORM_EXPIRES + timedelta(days=1)
    )
    assert trace(effects) == ["RUN_STARTED", "RUN_FINISHED"]
    assert wire(effects)[-1]["result"] == {"filed": "Q1-2026"}


def seed_resume_input(example: str, run_id: str) -> RunAgentInput:
    doc = seed_resume(example)
    return make_input(doc["threadId"], run_id, resume=doc["resume"])


def chain_acts() -> list[Act]:
    """run-1 interrupts A; resume A -> run-2 interrupts B; resume B -> run-3 succeeds."""
    return [
        receive(make_input("t", "run-1", messages=[{"id": "u-1", "role": "user", "content": "plan"}])),
        emit(*tool_call("tc-A", "book", "{}", parent="m-1")),
        interrupt(approval("A", "tc-A")),
        receive(resume("run-2", yes("A"))),
        emit(tool_result("r-A", "tc-A", "booked"), *tool_call("tc-B", "pay", "{}", parent="m-2")),
        interrupt(approval("B", "tc-B")),
        receive(resume("run-3", yes("B"))),
        emit(tool_result("r-B", "tc-B", "paid")),
        finish({"trip": "done"}),
    ]


def chain() -> tuple[ThreadMachine, list[list[Effect]]]:
    return run_script("t", chain_acts())


SCRIPTS = {**EXAMPLES, "chain": ("t", chain_acts)}
"""The seed's examples and the chain, for the record and restore tests."""


def test_replay_works_for_every_past_interrupt_of_the_thread() -> None:
    machine, steps = chain()
    before = machine.record()
    run2 = wire([e for step in steps[3:6] for e in step])
    run3 = wire([e for step in steps[6:] for e in step])

    # B's resume: the last one.
    again_b = machine.receive_input(resume("run-3x", yes("B")), now=NOW)
    assert wire(again_b) == [
        run_started("t", "run-3x"),
        run3[1],
        run_finished("t", "run-3x", result={"trip": "done"}, outcome={"type": "success"}),
    ]

    # A's resume: run-2 ended on interrupt B. The replay says what run-2 said (its tool
    # result and its interrupt outcome naming B), even though B has been answered since: a
    # replay re-sends the recorded outcome, it does not re-decide. The snapshots before it
    # are the thread's current ones (a record does not keep each run's own, which would keep
    # the conversation once per run), so they hold run-3's result too.
    again_a = machine.receive_input(resume("run-2x", yes("A")), now=NOW)
    assert trace(again_a) == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    replayed = wire(again_a)
    assert replayed[1] == run2[1]  # the TOOL_CALL_RESULT for tc-A
    assert replayed[2:4] == wire(
        [
            Emit(event=ev.StateSnapshotEvent(snapshot=machine.agent_state)),
            Emit(event=ev.MessagesSnapshotEvent(messages=machine.messages)),
        ]
    )
    assert replayed[3]["messages"][-1]["id"] == "r-B"
    assert replayed[-1] == {**run2[-1], "runId": "run-2x"}
    assert replayed[-1]["outcome"]["interrupts"][0]["id"] == "B"
    assert machine.record() == before

    # Answering a past interrupt differently is not a replay.
    assert_rejected(machine, resume("run-4", no("A")), RunErrorCode.INTERRUPT_ALREADY_RESOLVED, "'A'", "'run-2'")


def test_replay_while_a_later_interrupt_is_open() -> None:
    machine, _ = run_script("t", chain_acts()[:6])
    assert machine.state is ThreadState.INTERRUPTED
    before = machine.record()
    effects = machine.receive_input(resume("run-2x", yes("A")), now=NOW)
    assert trace(effects)[-1] == "RUN_FINISHED"
    assert machine.record() == before
    assert machine.state is ThreadState.INTERRUPTED
    assert_still_answerable(machine, yes("B"))


def test_replay_payload_equality_is_json_equality() -> None:
    machine = interrupted({"id": "int-1", "reason": "acme:pick"})
    drive(
        machine,
        [
            receive(
                resume(
                    "run-2",
                    {
                        "interruptId": "int-1",
                        "status": "resolved",
                        "payload": {"a": True, "b": [1, 2]},
                    },
                )
            ),
            finish(),
        ],
    )
    # Key order does not matter ...
    same = machine.receive_input(
        resume(
            "run-3",
            {"interruptId": "int-1", "status": "resolved", "payload": {"b": [1, 2], "a": True}},
        ),
        now=NOW,
    )
    assert trace(same) == ["RUN_STARTED", "RUN_FINISHED"]
    # ... but true is not 1, and list order does.
    assert_rejected(
        machine,
        resume(
            "run-3",
            {"interruptId": "int-1", "status": "resolved", "payload": {"a": 1, "b": [1, 2]}},
        ),
        RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
        "'int-1'",
    )
    assert_rejected(
        machine,
        resume(
            "run-3",
            {"interruptId": "int-1", "status": "resolved", "payload": {"a": True, "b": [2, 1]}},
        ),
        RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
        "'int-1'",
    )


def test_replay_of_a_resume_that_also_cancelled_expired_interrupts() -> None:
    machine = interrupted(approval("int-1", "tc-1", expiresAt="2026-04-20T12:00:00Z"), approval("int-2", "tc-2"))
    entries = ({"interruptId": "int-1", "status": "cancelled"}, yes("int-2"))
    drive(
        machine,
        [receive(resume("run-2", *entries)), emit(tool_result("r-2", "tc-2", "ok")), finish()],
    )
    before = machine.record()
    # The same resume, whole, is a replay, at any later time.
    effects = machine.receive_input(resume("run-3", *entries), now=NOW + timedelta(days=1))
    assert trace(effects) == ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert machine.record() == before
    # So is the part of it that bound an answer.
    assert trace(machine.receive_input(resume("run-4", yes("int-2")), now=NOW))[-1] == "RUN_FINISHED"
    # Answering the expired interrupt is still late, not a replay.
    assert_rejected(
        machine,
        resume("run-5", yes("int-1"), yes("int-2")),
        RunErrorCode.INTERRUPT_EXPIRED,
        "'int-1'",
    )


def test_a_failed_resume_is_not_replayed_but_answerable_again() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    drive(machine, [receive(resume("run-2", yes("int-1"))), fail("boom")])
    assert machine.state is ThreadState.INTERRUPTED
    effects = machine.receive_input(resume("run-3", no("int-1")), now=NOW)
    assert trace(effects) == ACCEPTED


def test_a_cancelled_resumed_run_replays_as_cancelled() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    drive(machine, [receive(resume("run-2", yes("int-1"))), cancel()])
    assert machine.state is ThreadState.IDLE
    assert wire(machine.receive_input(resume("run-3", yes("int-1")), now=NOW))[-1] == run_finished(
        "t", "run-3", outcome={"type": "cancelled"}
    )


# ---------------------------------------------------------------------------------------------
# 4. The agent's rules: LocalProtocolError at once, nothing changed; fail() then recovers.
# ---------------------------------------------------------------------------------------------


def running(*events: ev.Event) -> ThreadMachine:
    machine = ThreadMachine("t")
    drive(
        machine,
        [
            receive(make_input("t", "run-1", messages=[{"id": "u-1", "role": "user", "content": "go"}])),
            emit(*events),
        ],
    )
    return machine


def refused(machine: ThreadMachine, act: Act, *names: str) -> LocalProtocolError:
    before = machine.record()
    with pytest.raises(LocalProtocolError) as info:
        act(machine)
    for name in names:
        assert name in info.value.message, (name, info.value.message)
    assert machine.record() == before
    return info.value


def test_tool_call_interrupt_needs_a_tool_call_id() -> None:
    refused(running(), interrupt({"id": "int-1", "reason": "tool_call"}), "'int-1'", "toolCallId")


def test_tool_call_id_must_name_a_closed_tool_call_of_this_run() -> None:
    still_open = running(ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="x"))
    refused(still_open, interrupt(approval("int-1", "tc-1")), "'tc-1'")
    never = running(*tool_call("tc-1", "x", "{}", parent="m-1"))
    refused(never, interrupt(approval("int-1", "tc-9")), "'tc-9'", "'run-1'")
    # A tool call of an earlier run cannot gate an interrupt of this one.
    earlier = ThreadMachine("t")
    drive(
        earlier,
        [
            receive(make_input("t", "run-1")),
            emit(*tool_call("tc-1", "x", "{}", parent="m-1")),
            finish(),
            receive(make_input("t", "run-2")),
        ],
    )
    refused(earlier, interrupt(approval("int-1", "tc-1")), "'tc-1'", "'run-2'")
    # Any reason may name a closed tool call of this run.
    effects = never.interrupt([make_interrupt({"id": "int-2", "reason": "acme:audit", "toolCallId": "tc-1"})], now=NOW)
    assert trace(effects)[-1] == "RUN_FINISHED"


def test_reasons() -> None:
    refused(
        running(),
        interrupt({"id": "int-1", "reason": "core:approval"}),
        "'core:approval'",
        "reserved",
    )
    refused(running(), interrupt({"id": "int-1", "reason": ""}), "reason")
    effects = running().interrupt(
        [make_interrupt({"id": "int-1", "reason": "acme:thing", "message": "Look?"})], now=NOW
    )
    assert wire(effects)[-1]["outcome"]["interrupts"] == [{"id": "int-1", "reason": "acme:thing", "message": "Look?"}]


def test_interrupt_ids_are_unique_on_the_thread() -> None:
    refused(
        running(),
        interrupt({"id": "int-1", "reason": "confirmation"}, {"id": "int-1", "reason": "confirmation"}),
        "'int-1'",
        "unique",
    )
    refused(running(), interrupt({"id": "", "reason": "confirmation"}), "empty")
    refused(running(), lambda m: m.interrupt([], now=NOW), "at least one")
    # Against interrupts raised earlier on the thread: open, answered, or carried by this run.
    machine, _ = chain()
    machine.receive_input(make_input("t", "run-4"), now=NOW)
    refused(machine, interrupt({"id": "A", "reason": "confirmation"}), "'A'")
    machine = interrupted(approval("int-1", "tc-1"))
    machine.receive_input(resume("run-2", yes("int-1")), now=NOW)
    refused(machine, interrupt({"id": "int-1", "reason": "confirmation"}), "'int-1'")


def test_expires_at_needs_a_time_zone() -> None:
    refused(
        running(),
        interrupt({"id": "int-1", "reason": "confirmation", "expiresAt": "2026-04-20T17:00:00"}),
        "'int-1'",
        "time zone",
    )
    refused(
        running(),
        interrupt({"id": "int-1", "reason": "confirmation", "expiresAt": "next friday"}),
        "'int-1'",
        "next friday",
    )
    effects = running().interrupt(
        [make_interrupt({"id": "int-1", "reason": "confirmation", "expiresAt": "2026-04-20T17:00:00+09:00"})], now=NOW
    )
    assert trace(effects)[-1] == "RUN_FINISHED"


def test_a_broken_response_schema_is_the_agents_error() -> None:
    machine = running()
    before = machine.record()
    with pytest.raises(ResponseSchemaError, match="'int-1'"):
        machine.interrupt(
            [
                make_interrupt(
                    {
                        "id": "int-1",
                        "reason": "input_required",
                        "responseSchema": {"type": "no-such-type"},
                    }
                )
            ],
            now=NOW,
        )
    assert machine.record() == before


def test_no_interrupt_or_finish_with_a_text_message_open() -> None:
    machine = running(ev.TextMessageStartEvent(message_id="m-1", role="assistant"))
    refused(machine, interrupt({"id": "int-1", "reason": "confirmation"}), "RUNNING", "'m-1'")
    refused(machine, finish(), "RUNNING", "'m-1'")
    machine = running(ev.StepStartedEvent(step_name="plan"), ev.ReasoningStartEvent(message_id="r-1"))
    refused(machine, finish(), "'plan'", "'r-1'")


def test_run_events_and_chunks_are_not_the_agents() -> None:
    machine = running()
    refused(
        machine,
        emit(ev.RunFinishedEvent(thread_id="t", run_id="run-1")),
        "RUN_FINISHED",
        "finish()",
    )
    refused(machine, emit(ev.RunStartedEvent(thread_id="t", run_id="run-9")), "RUN_STARTED")
    refused(machine, emit(ev.RunErrorEvent(message="x")), "RUN_ERROR")
    refused(
        machine,
        emit(ev.TextMessageChunkEvent(message_id="m-1", delta="hi")),
        "TEXT_MESSAGE_CHUNK",
        "chunks",
    )
    refused(
        machine,
        emit(ev.ToolCallChunkEvent(tool_call_id="tc-1", tool_call_name="x")),
        "TOOL_CALL_CHUNK",
    )
    refused(
        machine,
        emit(ev.ReasoningMessageChunkEvent(message_id="r-1", delta="hm")),
        "REASONING_MESSAGE_CHUNK",
    )


def test_an_ordering_violation_names_the_state_and_the_event() -> None:
    machine = running()
    error = refused(
        machine,
        emit(ev.TextMessageContentEvent(message_id="m-9", delta="hi")),
        "RUNNING",
        "TEXT_MESSAGE_CONTENT",
        "'m-9'",
    )
    assert error.state is ThreadState.RUNNING
    assert isinstance(error.event, ev.TextMessageContentEvent)
    error = refused(machine, emit(ev.ToolCallEndEvent(tool_call_id="tc-9")), "TOOL_CALL_END", "'tc-9'")
    assert error.state is ThreadState.RUNNING


def test_a_state_delta_that_does_not_apply() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-1", state={"count": 1}), now=NOW)
    refused(
        machine,
        emit(ev.StateDeltaEvent(delta=({"op": "replace", "path": "/missing", "value": 2},))),
        "STATE_DELTA",
        "'/missing'",
    )
    refused(
        machine,
        emit(ev.StateDeltaEvent(delta=({"op": "test", "path": "/count", "value": 2},))),
        "STATE_DELTA",
    )
    # All or nothing: a patch whose second operation fails leaves the first undone too.
    refused(
        machine,
        emit(
            ev.StateDeltaEvent(
                delta=(
                    {"op": "replace", "path": "/count", "value": 5},
                    {"op": "remove", "path": "/nope"},
                )
            )
        ),
        "'/nope'",
    )
    assert machine.agent_state == {"count": 1}


def test_agent_acts_need_a_run() -> None:
    for act in (
        emit(ev.CustomEvent(name="x", value=1)),
        interrupt({"id": "i", "reason": "confirmation"}),
        finish(),
        fail(),
        cancel(),
    ):
        refused(ThreadMachine("t"), act, "IDLE")
        refused(interrupted(approval("int-1", "tc-1")), act, "INTERRUPTED")


def test_fail_after_a_local_error_puts_the_thread_back_where_it_stood() -> None:
    machine = interrupted(approval("int-1", "tc-1"), approval("int-2", "tc-2"), thread_id="t")
    open_before = machine.open_interrupts
    messages_before = machine.messages
    drive(
        machine,
        [
            receive(resume("run-2", no("int-2"), yes("int-1"))),
            emit(tool_result("r-1", "tc-1", "done")),
        ],
    )
    assert machine.state is ThreadState.RESUMED
    with pytest.raises(LocalProtocolError):
        machine.emit(ev.TextMessageContentEvent(message_id="m-9", delta="?"))
    effects = machine.fail("the agent broke a rule")
    assert trace(effects) == ["Persist", "RUN_ERROR"]
    assert wire(effects) == [{"type": "RUN_ERROR", "message": "the agent broke a rule", "code": "AGENT_ERROR"}]
    assert machine.state is ThreadState.INTERRUPTED
    assert machine.run_id is None
    assert machine.open_interrupts == open_before
    assert machine.messages == messages_before  # the tool result of the failed run is gone
    assert machine.resolved == ()
    assert_still_answerable(machine, yes("int-1"), yes("int-2"))


def test_the_machine_keeps_its_own_copy_of_the_state() -> None:
    # Agents edit the state they are handed, and the state they have just emitted, in place.
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-0", state={"items": []}), now=NOW)
    machine.finish()
    (_, _, agent) = machine.receive_input(make_input("t", "run-1", state={"items": ["x"]}), now=NOW)
    assert isinstance(agent, StartAgent)
    agent.run_input.state["items"].append("edited in place")
    assert machine.agent_state == {"items": ["x"]}
    live = {"items": ["a"]}
    machine.emit(ev.StateSnapshotEvent(snapshot=live))
    live["items"].append("b")
    machine.emit(ev.StateDeltaEvent(delta=({"op": "add", "path": "/items/-", "value": "b"},)))
    assert machine.agent_state == {"items": ["a", "b"]}
    # A failed run leaves the thread as it stood before its input: the state of run-0.
    machine.fail("x")
    assert machine.agent_state == {"items": []}


def test_a_failed_run_leaves_the_thread_as_it_stood_before_its_input() -> None:
    machine = ThreadMachine("t")
    first = [{"id": "u-1", "role": "user", "content": "hello"}]
    machine.receive_input(make_input("t", "run-0", messages=first, state={"n": 0}), now=NOW)
    machine.finish()
    before = machine.record()
    second = [*first, {"id": "u-2", "role": "user", "content": "and again"}]
    machine.receive_input(make_input("t", "run-1", messages=second, state={"n": 1}), now=NOW)
    assert [m.id for m in machine.messages] == ["u-1", "u-2"]
    restored = ThreadMachine.from_record(machine.record())
    assert restored.messages == machine.messages and restored.agent_state == {"n": 1}
    machine.fail("boom")
    after = machine.record()
    assert (after.messages, after.agent_state) == (before.messages, before.agent_state)


def test_fail_in_a_new_run_goes_back_to_idle() -> None:
    machine = ThreadMachine("t")
    drive(
        machine,
        [
            receive(make_input("t", "run-1", state={"n": 0})),
            emit(ev.StateDeltaEvent(delta=({"op": "replace", "path": "/n", "value": 1},))),
        ],
    )
    machine.fail("x")
    assert machine.state is ThreadState.IDLE
    assert machine.agent_state is None, "the thread had no state before the failed run's input"


# ---------------------------------------------------------------------------------------------
# 5. Subagents.
# ---------------------------------------------------------------------------------------------


def test_a_subagent_with_interrupts_is_suspended_before_run_finished() -> None:
    machine = running(
        ev.SubagentStartedEvent(subagent_run_id="sub-1", name="mailer"),
        ev.SubagentStartedEvent(subagent_run_id="sub-2", name="payer"),
        ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="send", subagent_run_id="sub-1"),
        ev.ToolCallEndEvent(tool_call_id="tc-1", subagent_run_id="sub-1"),
    )
    effects = machine.interrupt(
        [
            make_interrupt(
                {
                    "id": "int-1",
                    "reason": "tool_call",
                    "toolCallId": "tc-1",
                    "subagentRunId": "sub-1",
                }
            ),
            make_interrupt({"id": "int-2", "reason": "confirmation", "subagentRunId": "sub-1"}),
            make_interrupt({"id": "int-3", "reason": "confirmation", "subagentRunId": "sub-2"}),
            make_interrupt({"id": "int-4", "reason": "confirmation"}),
        ],
        now=NOW,
    )
    assert trace(effects) == ["SUBAGENT_FINISHED", "SUBAGENT_FINISHED", *INTERRUPT_END]
    out = wire(effects)
    assert out[:2] == [
        {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": "sub-1",
            "outcome": {"type": "suspended", "interruptIds": ["int-1", "int-2"]},
        },
        {
            "type": "SUBAGENT_FINISHED",
            "subagentRunId": "sub-2",
            "outcome": {"type": "suspended", "interruptIds": ["int-3"]},
        },
    ]
    assert [i["subagentRunId"] for i in out[-1]["outcome"]["interrupts"][:3]] == [
        "sub-1",
        "sub-1",
        "sub-2",
    ]
    assert "subagentRunId" not in out[-1]["outcome"]["interrupts"][3]


def test_a_running_subagent_without_interrupts_is_suspended_with_the_run() -> None:
    machine = running(ev.SubagentStartedEvent(subagent_run_id="sub-1", name="watcher"))
    effects = machine.interrupt([make_interrupt({"id": "int-1", "reason": "confirmation"})], now=NOW)
    closing = effects[0]
    assert isinstance(closing, Emit)
    assert closing.event == ev.SubagentFinishedEvent(
        subagent_run_id="sub-1", outcome=SubagentFinishedSuspendedOutcome()
    )


def test_an_interrupt_may_name_a_subagent_that_already_finished() -> None:
    machine = running(
        ev.SubagentStartedEvent(subagent_run_id="sub-1", name="mailer"),
        ev.SubagentFinishedEvent(
            subagent_run_id="sub-1",
            outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=("int-1",)),
        ),
    )
    effects = machine.interrupt(
        [make_interrupt({"id": "int-1", "reason": "confirmation", "subagentRunId": "sub-1"})], now=NOW
    )
    assert trace(effects) == INTERRUPT_END


@pytest.mark.parametrize("end", [finish, cancel])
def test_every_started_subagent_is_closed_before_run_finished(end: Callable[[], Act]) -> None:
    machine = running(
        ev.SubagentStartedEvent(subagent_run_id="sub-1", name="a"),
        ev.SubagentStartedEvent(subagent_run_id="sub-2", name="b", parent_subagent_run_id="sub-1"),
        ev.SubagentStartedEvent(subagent_run_id="sub-3", name="c"),
        ev.SubagentFinishedEvent(subagent_run_id="sub-3"),
    )
    effects = end()(machine)
    assert trace(effects) == ["SUBAGENT_FINISHED", "SUBAGENT_FINISHED", "Persist", "RUN_FINISHED"]
    assert {e["subagentRunId"] for e in wire(effects)[:2]} == {"sub-1", "sub-2"}
    assert all("outcome" not in e for e in wire(effects)[:2])


def test_a_resumed_run_may_continue_a_suspended_subagent() -> None:
    machine = running(ev.SubagentStartedEvent(subagent_run_id="sub-1", name="mailer"))
    machine.interrupt([make_interrupt({"id": "int-1", "reason": "confirmation", "subagentRunId": "sub-1"})], now=NOW)
    effects = drive(
        machine,
        [
            receive(resume("run-2", {"interruptId": "int-1", "status": "resolved", "payload": True})),
            emit(ev.SubagentStartedEvent(subagent_run_id="sub-1", name="mailer")),
            finish(),
        ],
    )
    assert trace(effects) == [
        *ACCEPTED,
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "Persist",
        "RUN_FINISHED",
    ]


# ---------------------------------------------------------------------------------------------
# 6. The interrupt boundary: snapshots before RUN_FINISHED, not duplicated when fresh.
# ---------------------------------------------------------------------------------------------

CONFIRM = {"id": "int-1", "reason": "confirmation"}


def test_fresh_snapshots_from_the_agent_are_not_duplicated() -> None:
    machine = running(
        ev.StateSnapshotEvent(snapshot={"step": 2}),
        ev.MessagesSnapshotEvent(messages=()),
    )
    effects = machine.interrupt([make_interrupt(CONFIRM)], now=NOW)
    assert trace(effects) == ["Persist", "RUN_FINISHED"]


def test_snapshots_made_stale_by_later_events_are_sent_again() -> None:
    machine = running(
        ev.StateSnapshotEvent(snapshot={"step": 2}),
        ev.MessagesSnapshotEvent(messages=()),
        ev.StateDeltaEvent(delta=({"op": "replace", "path": "/step", "value": 3},)),
    )
    effects = machine.interrupt([make_interrupt(CONFIRM)], now=NOW)
    assert trace(effects) == ["STATE_SNAPSHOT", "Persist", "RUN_FINISHED"]
    assert wire(effects)[0] == {"type": "STATE_SNAPSHOT", "snapshot": {"step": 3}}

    machine = running(
        ev.MessagesSnapshotEvent(messages=()),
        ev.StateSnapshotEvent(snapshot={"step": 2}),
        ev.TextMessageStartEvent(message_id="m-1"),
        ev.TextMessageEndEvent(message_id="m-1"),
    )
    effects = machine.interrupt([make_interrupt(CONFIRM)], now=NOW)
    assert trace(effects) == ["MESSAGES_SNAPSHOT", "Persist", "RUN_FINISHED"]


def test_the_messages_snapshot_reflects_what_was_streamed() -> None:
    machine = ThreadMachine("t")
    drive(
        machine,
        [
            receive(
                make_input(
                    "t",
                    "run-1",
                    messages=[{"id": "u-1", "role": "user", "content": "hi"}],
                    state={"items": [1]},
                )
            ),
            emit(
                ev.TextMessageStartEvent(message_id="a-1", role="assistant"),
                ev.TextMessageContentEvent(message_id="a-1", delta="Let me "),
                ev.TextMessageContentEvent(message_id="a-1", delta="check."),
                ev.TextMessageEndEvent(message_id="a-1"),
                ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="lookup", parent_message_id="a-1"),
                ev.ToolCallArgsEvent(tool_call_id="tc-1", delta='{"q":'),
                ev.ToolCallArgsEvent(tool_call_id="tc-1", delta='"x"}'),
                ev.ToolCallEndEvent(tool_call_id="tc-1"),
                tool_result("t-1", "tc-1", "found"),
                ev.ToolCallStartEvent(tool_call_id="tc-2", tool_call_name="delete"),
                ev.ToolCallEndEvent(tool_call_id="tc-2"),
                ev.ReasoningMessageStartEvent(message_id="r-1"),
                ev.ReasoningMessageContentEvent(message_id="r-1", delta="careful"),
                ev.ReasoningMessageEndEvent(message_id="r-1"),
                ev.ActivitySnapshotEvent(message_id="act-1", activity_type="progress", content={"done": 1}),
                ev.ActivityDeltaEvent(
                    message_id="act-1",
                    activity_type="progress",
                    patch=({"op": "replace", "path": "/done", "value": 2},),
                ),
                ev.StateDeltaEvent(delta=({"op": "add", "path": "/items/-", "value": 2},)),
            ),
        ],
    )
    effects = machine.interrupt([make_interrupt({"id": "int-1", "reason": "tool_call", "toolCallId": "tc-2"})], now=NOW)
    state, messages = wire(effects)[:2]
    assert state == {"type": "STATE_SNAPSHOT", "snapshot": {"items": [1, 2]}}
    assert messages == {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            {"id": "u-1", "role": "user", "content": "hi"},
            {
                "id": "a-1",
                "role": "assistant",
                "content": "Let me check.",
                "toolCalls": [assistant_call("tc-1", "lookup", '{"q":"x"}')],
            },
            {"id": "t-1", "role": "tool", "content": "found", "toolCallId": "tc-1"},
            {
                "id": "tc-2",
                "role": "assistant",
                "toolCalls": [assistant_call("tc-2", "delete", "")],
            },
            {"id": "r-1", "role": "reasoning", "content": "careful"},
            {"id": "act-1", "role": "activity", "activityType": "progress", "content": {"done": 2}},
        ],
    }


def test_interleaved_streams_each_get_their_own_text() -> None:
    machine = running(
        ev.TextMessageStartEvent(message_id="a-1", role="assistant"),
        ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="f", parent_message_id="a-1"),
        ev.TextMessageContentEvent(message_id="a-1", delta="one "),
        ev.ToolCallArgsEvent(tool_call_id="tc-1", delta='{"a":'),
        ev.ReasoningMessageStartEvent(message_id="r-1"),
        ev.ReasoningMessageContentEvent(message_id="r-1", delta="hm"),
        ev.TextMessageContentEvent(message_id="a-1", delta="two"),
        ev.ToolCallArgsEvent(tool_call_id="tc-1", delta="1}"),
        ev.ReasoningMessageContentEvent(message_id="r-1", delta="m"),
        ev.ToolCallEndEvent(tool_call_id="tc-1"),
        ev.ReasoningMessageEndEvent(message_id="r-1"),
    )
    # Read in the middle of the stream: what has arrived so far, and the stream goes on after.
    assert machine.messages[1].content == "one two"
    assert machine.proposed_tool_call("tc-1") == ("f", {"a": 1})
    machine.emit(ev.TextMessageContentEvent(message_id="a-1", delta="!"))
    machine.emit(ev.TextMessageEndEvent(message_id="a-1"))
    # A second message with the same id gets its own text, not the first one's.
    machine.emit(ev.TextMessageStartEvent(message_id="a-1", role="assistant"))
    machine.emit(ev.TextMessageContentEvent(message_id="a-1", delta="again"))
    machine.emit(ev.TextMessageEndEvent(message_id="a-1"))
    machine.finish()
    contents = [(m.id, m.content) for m in machine.record().messages]
    assert contents == [("u-1", "go"), ("a-1", "one two!"), ("r-1", "hmm"), ("a-1", "again")]
    assert machine.record().messages[1].tool_calls[0].function.arguments == '{"a":1}'


def test_a_failed_run_drops_what_it_streamed() -> None:
    machine = running(
        ev.TextMessageStartEvent(message_id="a-1", role="assistant"),
        ev.TextMessageContentEvent(message_id="a-1", delta="half"),
    )
    machine.fail("boom")
    machine.receive_input(make_input("t", "run-2"), now=NOW)
    machine.emit(ev.TextMessageStartEvent(message_id="a-2", role="assistant"))
    machine.emit(ev.TextMessageContentEvent(message_id="a-2", delta="whole"))
    machine.emit(ev.TextMessageEndEvent(message_id="a-2"))
    machine.finish()
    # The thread is back where it stood before run-1 (which brought u-1 along): nothing of "half".
    assert [(m.id, m.content) for m in machine.messages] == [("a-2", "whole")]


def test_a_record_taken_while_streaming_restores_the_text() -> None:
    machine = running(
        ev.TextMessageStartEvent(message_id="a-1", role="assistant"),
        ev.TextMessageContentEvent(message_id="a-1", delta="half"),
    )
    restored = ThreadMachine.from_record(machine.record())
    for m in (machine, restored):
        m.emit(ev.TextMessageContentEvent(message_id="a-1", delta=" and half"))
        m.emit(ev.TextMessageEndEvent(message_id="a-1"))
        m.finish()
    assert restored.record().messages == machine.record().messages
    assert machine.messages[-1].content == "half and half"


def test_snapshots_follow_the_input_of_the_resumed_run() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    drive(
        machine,
        [
            receive(
                make_input(
                    "t",
                    "run-2",
                    resume=[yes("int-1")],
                    state={"v": 2},
                    messages=[{"id": "u-9", "role": "user", "content": "again"}],
                )
            ),
            emit(tool_result("r-1", "tc-1", "ok")),
        ],
    )
    out = wire(machine.interrupt([make_interrupt({"id": "int-2", "reason": "confirmation"})], now=NOW))
    assert out[0] == {"type": "STATE_SNAPSHOT", "snapshot": {"v": 2}}
    # The input's new message is appended; the messages it left out are kept (SPEC section 9).
    assert out[1]["messages"][-2:] == [
        {"id": "u-9", "role": "user", "content": "again"},
        {"id": "r-1", "role": "tool", "content": "ok", "toolCallId": "tc-1"},
    ]
    assert [m["id"] for m in out[1]["messages"][:-2]] == [m.id for m in interrupted(approval("int-1", "tc-1")).messages]


def test_cancel_closes_what_the_run_left_open() -> None:
    machine = running(
        ev.StepStartedEvent(step_name="plan"),
        ev.TextMessageStartEvent(message_id="m-1"),
        ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="x"),
        ev.ReasoningStartEvent(message_id="r-1"),
        ev.ReasoningMessageStartEvent(message_id="r-2"),
    )
    effects = machine.cancel()
    assert trace(effects) == [
        "TEXT_MESSAGE_END",
        "TOOL_CALL_END",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "STEP_FINISHED",
        "Persist",
        "RUN_FINISHED",
    ]
    assert wire(effects)[-1] == run_finished("t", "run-1", outcome={"type": "cancelled"})
    assert machine.state is ThreadState.IDLE


def test_cancel_of_a_resumed_run_closes_its_interrupts() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    drive(machine, [receive(resume("run-2", yes("int-1"))), cancel()])
    assert machine.open_interrupts == ()
    assert [(r.interrupt.id, r.outcome) for r in machine.resolved] == [("int-1", "cancelled")]


# ---------------------------------------------------------------------------------------------
# 7. Record and restore.
# ---------------------------------------------------------------------------------------------


def lockstep_cases() -> list[tuple[str, int]]:
    return [(name, k) for name, (_, script) in SCRIPTS.items() for k in range(len(script()) + 1)]


@pytest.mark.parametrize("through_json", [False, True], ids=["record", "json"])
@pytest.mark.parametrize(("example", "k"), lockstep_cases())
def test_a_machine_restored_at_any_step_continues_identically(example: str, k: int, through_json: bool) -> None:
    thread_id, script = SCRIPTS[example]
    acts = script()
    original = ThreadMachine(thread_id)
    drive(original, acts[:k])
    record = original.record()
    if through_json:
        record = record_from_dict(orjson.loads(orjson.dumps(record_to_dict(record))))
    restored = ThreadMachine.from_record(record)
    assert restored.record() == original.record()
    assert restored.state is original.state
    assert restored.run_id == original.run_id
    assert restored.answers == original.answers
    for act in acts[k:]:
        assert act(restored) == act(original)
        assert restored.record() == original.record()
    # And both refuse a resume naming no interrupt of the thread alike.
    for machine in (original, restored):
        assert_rejected(
            machine,
            make_input(thread_id, "run-x", resume=[{"interruptId": "nope", "status": "cancelled"}]),
            RunErrorCode.UNKNOWN_INTERRUPT_ID,
            "'nope'",
        )


def restored_mid_run(acts: Sequence[Act], k: int, thread_id: str) -> ThreadMachine:
    machine = ThreadMachine(thread_id)
    drive(machine, acts[:k])
    return ThreadMachine.from_record(record_from_dict(orjson.loads(orjson.dumps(record_to_dict(machine.record())))))


@pytest.mark.parametrize("example", list(SCRIPTS))
def test_a_restored_machine_refuses_what_the_original_refuses(example: str) -> None:
    thread_id, script = SCRIPTS[example]
    acts = script()
    # Right after the resume is accepted: the run carries its answers, and a bound tool call
    # cannot be re-opened even by a machine brought back from storage.
    machine = restored_mid_run(acts, 4, thread_id)
    assert machine.state is ThreadState.RESUMED
    assert machine.answers
    bound = [a.interrupt.tool_call_id for a in machine.answers if a.interrupt.tool_call_id]
    for call in bound:
        refused(
            machine,
            emit(ev.ToolCallStartEvent(tool_call_id=call, tool_call_name="again")),
            repr(call),
        )
    assert_rejected(machine, make_input(thread_id, "run-x"), RunErrorCode.THREAD_BUSY, repr(thread_id))


def all_records(thread_id: str, acts: Sequence[Act]) -> list[ThreadRecord]:
    machine = ThreadMachine(thread_id)
    out = [machine.record()]
    for act in acts:
        for effect in act(machine):
            if isinstance(effect, Persist):
                out.append(effect.record)
        out.append(machine.record())
    return out


@pytest.mark.parametrize("example", list(SCRIPTS))
def test_records_survive_json(example: str) -> None:
    thread_id, script = SCRIPTS[example]
    acts = script()
    for record in all_records(thread_id, acts):
        data = record_to_dict(record)
        assert record_from_dict(data) == record
        text = orjson.dumps(data)
        through_json = orjson.loads(text)
        assert record_from_dict(through_json) == record
        assert orjson.dumps(record_to_dict(record_from_dict(through_json))) == text


def test_persist_versions_count_up_by_one() -> None:
    thread_id, script = EXAMPLES["approve-with-edits"]
    machine = ThreadMachine(thread_id)
    versions = [e.record.version for e in drive(machine, script()) if isinstance(e, Persist)]
    assert versions == list(range(1, len(versions) + 1))
    assert machine.version == versions[-1]
    assert machine.record().version == versions[-1]


def test_answers_property_is_the_resume_in_progress() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    assert machine.answers == ()
    machine.receive_input(resume("run-2", yes("int-1")), now=NOW)
    (answer,) = machine.answers
    assert isinstance(answer, Answer)
    assert answer.entry == ResumeEntry(interrupt_id="int-1", status="resolved", payload={"approved": True})
    assert isinstance(answer.interrupt, Interrupt)


# ---------------------------------------------------------------------------------------------
# Nesting: what the agent emits is held to the codec's one limit, so all it keeps can be sent.
# ---------------------------------------------------------------------------------------------


def nested_lists(depth: int) -> Any:
    value: Any = None
    for _ in range(depth):
        value = [value]
    return value


def announced(machine: ThreadMachine) -> None:
    """Everything the machine holds can be saved and announced (the limit leaves room for both)."""
    orjson.dumps(record_to_dict(machine.record()))
    effects = machine.interrupt([make_interrupt(CONFIRM)], now=NOW)
    wire(effects)  # STATE_SNAPSHOT, MESSAGES_SNAPSHOT, RUN_FINISHED: each validated and encoded


def document_events(depth: int) -> dict[str, list[ev.Event]]:
    """Agent events; the last one's announcing document (the event itself, or the snapshot it
    leads to) is ``depth`` deep, those before it set the stage."""
    state_depth = depth - 2  # the delta adds one level: STATE_SNAPSHOT, then the state
    return {
        "state-snapshot": [ev.StateSnapshotEvent(snapshot=nested_lists(depth - 1))],
        "state-delta": [
            ev.StateSnapshotEvent(snapshot=nested_lists(state_depth)),
            ev.StateDeltaEvent(delta=({"op": "replace", "path": "/0" * state_depth, "value": []},)),
        ],
        "activity": [
            ev.ActivitySnapshotEvent(message_id="act-1", activity_type="a", content={"k": nested_lists(depth - 4)})
        ],
        "activity-delta": [
            ev.ActivitySnapshotEvent(message_id="act-1", activity_type="a", content={"k": nested_lists(depth - 5)}),
            ev.ActivityDeltaEvent(
                message_id="act-1",
                activity_type="a",
                patch=({"op": "replace", "path": "/k" + "/0" * (depth - 5), "value": []},),
            ),
        ],
        "custom": [ev.CustomEvent(name="n", value=nested_lists(depth - 1))],
        "raw-event": [ev.CustomEvent(name="n", value=1, raw_event=nested_lists(depth - 1))],
    }


@pytest.mark.parametrize("kind", list(document_events(MAX_DEPTH)))
@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_the_agent_is_held_to_the_nesting_limit(kind: str, depth: int) -> None:
    *stage, last = document_events(depth)[kind]
    machine = running(*stage)
    if depth <= MAX_DEPTH:
        machine.emit(last)
        announced(machine)
        return
    error = refused(machine, emit(last), f"at most {MAX_DEPTH} levels")
    assert "$" in error.message  # where it goes too deep


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1])
def test_results_interrupts_and_continuations_are_held_to_the_limit(depth: int) -> None:
    deep_interrupt = make_interrupt({**CONFIRM, "metadata": {"k": nested_lists(depth - 5)}})
    acts: list[Act] = [
        finish(nested_lists(depth - 1)),
        lambda machine: machine.interrupt([deep_interrupt], now=NOW),
        lambda machine: machine.interrupt([make_interrupt(CONFIRM)], continuation=nested_lists(depth), now=NOW),
    ]
    for act in acts:
        machine = running()
        if depth <= MAX_DEPTH:
            effects = act(machine)
            wire(effects)
            orjson.dumps(record_to_dict(machine.record()))
        else:
            refused(machine, act, f"at most {MAX_DEPTH} levels")
    machine = running()
    if depth > MAX_DEPTH:
        with pytest.raises(LocalProtocolError, match=f"at most {MAX_DEPTH} levels"):
            machine.continuation = nested_lists(depth)
    else:
        machine.continuation = nested_lists(depth)


@pytest.mark.parametrize("field", ["metadata", "responseSchema", "xNote"])
def test_an_interrupt_too_deep_is_refused_where_it_goes_too_deep(field: str) -> None:
    # Level 5 of RUN_FINISHED is the interrupt's field: its value nests depth - 4 more.
    schema = {"type": "object"}
    for depth in (MAX_DEPTH, MAX_DEPTH + 1):
        value = {"k": nested_lists(depth - 5)}
        fields = {"responseSchema": schema, field: value} if field != "responseSchema" else {field: value}
        deep = make_interrupt({"id": "int-2", "reason": "input_required", **fields})
        plain = make_interrupt({"id": "int-1", "reason": "confirmation"})
        machine = running()
        if depth <= MAX_DEPTH:
            wire(machine.interrupt([plain, deep], now=NOW))
            continue
        both = [plain, deep]
        error = refused(machine, lambda m, both=both: m.interrupt(both, now=NOW), f"at most {MAX_DEPTH} levels")
        assert f"at $.outcome.interrupts[1].{field}.k[0]" in error.message, error.message


# ---------------------------------------------------------------------------------------------
# Bounded records: what a thread keeps grows with its conversation and audit trail, not its runs.
# ---------------------------------------------------------------------------------------------


def yes_to(iid: str) -> dict[str, Any]:
    return {"interruptId": iid, "status": "resolved", "payload": True}


def cycles(count: int) -> ThreadMachine:
    """``count`` interrupt -> resume cycles on thread ``t``: each asks, and the next run's resume answers."""
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-0", messages=[{"id": "u", "role": "user", "content": "x"}]), now=NOW)
    for n in range(count):
        machine.interrupt([make_interrupt({"id": f"int-{n}", "reason": "confirmation"})], now=NOW)
        machine.receive_input(resume(f"run-{n + 1}", yes_to(f"int-{n}")), now=NOW)
    machine.finish({"n": count})
    return machine


def test_only_the_last_resumes_are_kept_for_replay() -> None:
    machine = cycles(RESUMES_KEPT + 5)
    kept = [c.run_id for c in machine.record().completed_resumes if c.answers]
    assert len(kept) == RESUMES_KEPT and kept[-1] == f"run-{RESUMES_KEPT + 5}"
    # The last kept resume replays; an older one is refused, and stays in the audit trail.
    newest = RESUMES_KEPT + 4
    again = machine.receive_input(resume("again", yes_to(f"int-{newest}")), now=NOW)
    assert trace(again)[-1] == "RUN_FINISHED"
    assert_rejected(
        machine,
        resume("old", yes_to("int-0")),
        RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
        "'int-0'",
    )
    assert [r.interrupt.id for r in machine.resolved] == [f"int-{n}" for n in range(RESUMES_KEPT + 5)]


def test_a_record_does_not_grow_with_the_number_of_runs() -> None:
    def size(machine: ThreadMachine) -> int:
        return len(orjson.dumps(record_to_dict(machine.record())))

    def without_audit(machine: ThreadMachine) -> int:
        return len(orjson.dumps({**record_to_dict(machine.record()), "resolved": []}))

    small, large = cycles(RESUMES_KEPT), cycles(4 * RESUMES_KEPT)
    # Past the bound, only the audit trail grows: one short entry per interrupt.
    assert without_audit(large) - without_audit(small) < 200
    assert (size(large) - size(small)) / (3 * RESUMES_KEPT) < 600


def test_a_record_in_the_middle_of_a_run_holds_the_conversation_once() -> None:
    long_text = "y" * 100_000
    machine = ThreadMachine("t")
    said = {"id": "u", "role": "user", "content": long_text}
    machine.receive_input(make_input("t", "run-1", messages=[said]), now=NOW)
    machine.finish()
    machine.receive_input(make_input("t", "run-2"), now=NOW)
    data = record_to_dict(machine.record())
    assert "messagesBefore" not in data["activeRun"] and "stateBefore" not in data["activeRun"]
    assert len(orjson.dumps(data)) < len(long_text) + 2_000
    assert ThreadMachine.from_record(record_from_dict(data)).record() == machine.record()


def test_a_record_saved_with_snapshots_and_plain_payloads_still_replays() -> None:
    machine, _ = run_script("t", chain_acts())
    data = record_to_dict(machine.record())
    for completed in data["completedResumes"]:  # as a record was written before digests
        completed["snapshots"] = []
        completed["answers"] = [[i, status, '{"approved":true}'] for i, status, _ in completed["answers"]]
    legacy = ThreadMachine.from_record(record_from_dict(data))
    assert legacy.record() == machine.record()
    assert trace(legacy.receive_input(resume("run-3x", yes("B")), now=NOW))[-1] == "RUN_FINISHED"


def test_the_audit_trail_keeps_proposals_without_their_edit_schemas() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-1"), now=NOW)
    for event in tool_call("tc-1", "send", '{"to":"a"}', parent="m-1"):
        machine.emit(event)
    schema = {"type": "object", "properties": {"to": {"type": "string"}}}
    machine.interrupt([make_interrupt(approval("int-1", "tc-1"))], edit_schemas={"tc-1": schema}, now=NOW)
    assert machine.record().open_interrupts[0].proposal.parameters == schema  # needed while open
    machine.receive_input(resume("run-2", yes("int-1")), now=NOW)
    machine.finish()
    (entry,) = machine.resolved
    assert entry.proposal is not None and entry.proposal.parameters is None
    assert (entry.proposal.name, entry.proposal.arguments) == ("send", '{"to":"a"}')


def test_a_result_too_deep_is_refused_where_it_goes_too_deep() -> None:
    machine = running()
    error = refused(machine, finish({"k": nested_lists(MAX_DEPTH)}), f"at most {MAX_DEPTH} levels")
    assert error.message.startswith("in state RUNNING, RUN_FINISHED: at $.result.k[0]")
    machine.finish({"k": nested_lists(MAX_DEPTH - 3)})  # level 2 holds the result: 1 + 1 + depth - 3
