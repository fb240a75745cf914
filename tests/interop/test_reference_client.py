"""What we encode passes the reference TypeScript client's own inbound checks, untouched.

Realistic streams are built from our event classes, encoded with
``encode_event(validate=True)`` and run, in one node process, through ``@ag-ui/client``'s
``enforceEvents()`` (schema parse, unknown material stripped with a warning) and
``verifyEvents()`` (the ordering rules of SPEC section 7). Each must pass with nothing stripped
and come out as it went in. Two control streams show the harness does catch a refused stream
and a stripped key, and the client's ``buildResumeArray`` output is read back by our decoder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
import pytest

from agui_core.protocol.codec import encode_event, input_from_dict, input_to_dict
from agui_core.protocol.events import (
    Event,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from agui_core.protocol.types import (
    AssistantMessage,
    FunctionCall,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    ToolCall,
    UserMessage,
)
from tests.interop.nodebridge import NodeResult, json_equal, node_resume, node_verify
from tests.seed import APPROVE_WITH_ANY_EDITS_SCHEMA

THREAD = "thread-1"
TS = 1_776_000_000_000
ARGS = '{"to":"ann@example.com","subject":"Hi"}'

USER = UserMessage(id="m-1", content="Email Ann that I'm late.")
PROPOSAL = AssistantMessage(
    id="m-2",
    content="I'll send it once you approve.",
    tool_calls=(ToolCall(id="tc-1", function=FunctionCall(name="send_email", arguments=ARGS)),),
)
APPROVAL = Interrupt(
    id="int-1",
    reason="tool_call",
    message="Send the email to Ann?",
    tool_call_id="tc-1",
    response_schema=APPROVE_WITH_ANY_EDITS_SCHEMA,
    expires_at="2026-04-20T17:00:00Z",
    metadata={"langgraph": {"checkpointId": "ckpt-1"}, "node": None},
)


def interrupted_run() -> list[Event]:
    """Run 1: text, a tool call proposed, the boundary snapshots, then the interrupt."""
    return [
        RunStartedEvent(thread_id=THREAD, run_id="run-1", protocol_version="1.0", timestamp=TS),
        TextMessageStartEvent(message_id="m-2", role="assistant"),
        TextMessageContentEvent(message_id="m-2", delta="I'll send it "),
        TextMessageContentEvent(message_id="m-2", delta="once you approve."),
        TextMessageEndEvent(message_id="m-2"),
        ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="send_email", parent_message_id="m-2"),
        ToolCallArgsEvent(tool_call_id="tc-1", delta=ARGS[:12]),
        ToolCallArgsEvent(tool_call_id="tc-1", delta=ARGS[12:]),
        ToolCallEndEvent(tool_call_id="tc-1"),
        StateSnapshotEvent(snapshot={"draft": {"to": "ann@example.com", "cc": None}, "step": 2}),
        MessagesSnapshotEvent(messages=(USER, PROPOSAL)),
        RunFinishedEvent(
            thread_id=THREAD,
            run_id="run-1",
            outcome=RunFinishedInterruptOutcome(interrupts=(APPROVAL,)),
            metadata={"ag-ui": {"note": "paused"}},
        ),
    ]


def resumed_run() -> list[Event]:
    """Run 2: answers int-1, reports the tool's result (no re-emitted TOOL_CALL_*), succeeds."""
    resume_input = RunAgentInput(
        thread_id=THREAD,
        run_id="run-2",
        messages=(USER, PROPOSAL),
        state={"draft": {"to": "ann@example.com", "cc": None}, "step": 2},
        tools=(),
        context=(),
        forwarded_props={},
        resume=(ResumeEntry(interrupt_id="int-1", status="resolved", payload={"approved": True}),),
    )
    return [
        RunStartedEvent(thread_id=THREAD, run_id="run-2", parent_run_id="run-1", input=resume_input),
        StepStartedEvent(step_name="send"),
        ToolCallResultEvent(message_id="m-3", tool_call_id="tc-1", content="sent", role="tool"),
        StepFinishedEvent(step_name="send"),
        StateDeltaEvent(
            delta=(
                {"op": "replace", "path": "/step", "value": 3},
                {"op": "remove", "path": "/draft"},
            )
        ),
        TextMessageStartEvent(message_id="m-4", role="assistant"),
        TextMessageContentEvent(message_id="m-4", delta="Done: Ann knows."),
        TextMessageEndEvent(message_id="m-4"),
        RunFinishedEvent(
            thread_id=THREAD,
            run_id="run-2",
            result={"sent": True, "messageId": None},
            outcome=RunFinishedSuccessOutcome(),
        ),
    ]


def subagent_interrupted_run() -> list[Event]:
    """A subagent raises the interrupt and is closed as suspended before the run ends."""
    question = Interrupt(
        id="int-9",
        reason="input_required",
        message="Which quarter?",
        response_schema={"type": "object", "properties": {"quarter": {"enum": ["Q1", "Q2"]}}},
        subagent_run_id="sub-1",
    )
    return [
        RunStartedEvent(thread_id="thread-2", run_id="run-5"),
        ReasoningStartEvent(message_id="rs-1"),
        ReasoningMessageStartEvent(message_id="rm-1"),
        ReasoningMessageContentEvent(message_id="rm-1", delta="The filing needs a quarter."),
        ReasoningMessageEndEvent(message_id="rm-1"),
        ReasoningEndEvent(message_id="rs-1"),
        SubagentStartedEvent(
            subagent_run_id="sub-1",
            name="filer",
            description="files reports",
            parent_message_id="m-1",
        ),
        TextMessageStartEvent(message_id="m-7", role="assistant", subagent_run_id="sub-1"),
        TextMessageContentEvent(message_id="m-7", delta="I need the quarter.", subagent_run_id="sub-1"),
        TextMessageEndEvent(message_id="m-7", subagent_run_id="sub-1"),
        SubagentFinishedEvent(
            subagent_run_id="sub-1",
            outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=("int-9",)),
        ),
        StateSnapshotEvent(snapshot={}),
        MessagesSnapshotEvent(
            messages=(
                USER,
                AssistantMessage(id="m-7", content="I need the quarter.", subagent_run_id="sub-1"),
            ),
        ),
        RunFinishedEvent(
            thread_id="thread-2",
            run_id="run-5",
            outcome=RunFinishedInterruptOutcome(interrupts=(question,)),
        ),
    ]


def subagent_resumed_run() -> list[Event]:
    """The continuation: the same subagentRunId is started again and completes."""
    return [
        RunStartedEvent(thread_id="thread-2", run_id="run-6"),
        SubagentStartedEvent(subagent_run_id="sub-1", name="filer"),
        ToolCallStartEvent(tool_call_id="tc-7", tool_call_name="file_report", subagent_run_id="sub-1"),
        ToolCallArgsEvent(tool_call_id="tc-7", delta='{"quarter":"Q1"}', subagent_run_id="sub-1"),
        ToolCallEndEvent(tool_call_id="tc-7", subagent_run_id="sub-1"),
        ToolCallResultEvent(
            message_id="m-8",
            tool_call_id="tc-7",
            content="filed",
            subagent_run_id="sub-1",
        ),
        SubagentFinishedEvent(subagent_run_id="sub-1", result="filed", outcome=SubagentFinishedSuccessOutcome()),
        RunFinishedEvent(thread_id="thread-2", run_id="run-6", outcome=RunFinishedSuccessOutcome()),
    ]


def cancelled_run() -> list[Event]:
    return [
        RunStartedEvent(thread_id="thread-3", run_id="run-8"),
        TextMessageStartEvent(message_id="m-9"),
        TextMessageEndEvent(message_id="m-9"),
        RunFinishedEvent(thread_id="thread-3", run_id="run-8", outcome=RunFinishedCancelledOutcome()),
    ]


def refused_input() -> list[Event]:
    """What a host sends for an input that ignores open interrupts: a lone RUN_ERROR."""
    return [RunErrorEvent(message="thread thread-1 has open interrupts: int-1", code="PENDING_INTERRUPTS")]


def chained_runs() -> list[Event]:
    """Both runs of the approval on one connection: a new RUN_STARTED may follow RUN_FINISHED."""
    return interrupted_run() + resumed_run()


STREAMS = {
    "interrupted-run": interrupted_run,
    "resumed-run": resumed_run,
    "subagent-interrupted-run": subagent_interrupted_run,
    "subagent-resumed-run": subagent_resumed_run,
    "cancelled-run": cancelled_run,
    "refused-input": refused_input,
    "chained-runs": chained_runs,
}


def wire(events: Sequence[Event]) -> list[dict[str, Any]]:
    """The events as a reader receives them: our validated bytes, parsed."""
    return [orjson.loads(encode_event(event, validate=True)) for event in events]


# Control streams: things the client must refuse or strip, so a pass above means something.
CONTROLS = {
    "finished-with-tool-call-open": interrupted_run()[:7] + interrupted_run()[-1:],
    "unknown-key": [
        RunStartedEvent(thread_id=THREAD, run_id="run-1", extra={"x-vendor": {"trace": 1}}),
        RunFinishedEvent(thread_id=THREAD, run_id="run-1"),
    ],
}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, tuple[list[dict[str, Any]], NodeResult]]:
    """Every stream and control through the reference client, in one node process."""
    named = {**{n: build() for n, build in STREAMS.items()}, **CONTROLS}
    sent = {name: wire(events) for name, events in named.items()}
    results = node_verify(list(sent.values()))
    return {name: (sent[name], result) for name, result in zip(sent, results, strict=False)}


@pytest.mark.parametrize("name", list(STREAMS))
def test_our_stream_passes_the_reference_client_untouched(
    name: str, verdicts: dict[str, tuple[list[dict[str, Any]], NodeResult]]
) -> None:
    sent, result = verdicts[name]
    assert result.ok, result.error
    assert result.warnings == ()
    assert result.stripped == ()
    assert json_equal(result.value, sent), f"the client changed the stream:\n{result.value}\n!=\n{sent}"


def test_the_client_refuses_run_finished_with_a_tool_call_open(
    verdicts: dict[str, tuple[list[dict[str, Any]], NodeResult]],
) -> None:
    _, result = verdicts["finished-with-tool-call-open"]
    assert not result.ok
    assert result.error is not None and "tc-1" in result.error


def test_the_client_reports_what_it_strips(
    verdicts: dict[str, tuple[list[dict[str, Any]], NodeResult]],
) -> None:
    sent, result = verdicts["unknown-key"]
    assert result.ok, result.error
    assert len(result.stripped) == 1 and "/x-vendor" in result.stripped[0]
    assert "x-vendor" in sent[0] and "x-vendor" not in result.value[0]


def test_reference_resume_arrays_decode_as_our_inputs() -> None:
    """``buildResumeArray`` output, put in a RunAgentInput, is read and written back by us
    unchanged; its refusals and ``isInterruptExpired`` come back through the bridge."""
    interrupts = [
        {"id": "i-1", "reason": "tool_call", "toolCallId": "tc-a"},
        {
            "id": "i-2",
            "reason": "tool_call",
            "toolCallId": "tc-b",
            "expiresAt": "2026-04-20T17:00:00Z",
        },
        {"id": "i-3", "reason": "confirmation", "expiresAt": "2026-04-20T17:00:00+09:00"},
    ]
    answers = {
        "i-1": {"status": "resolved", "payload": {"approved": True}, "metadata": {"sig": None}},
        "i-2": {"status": "resolved", "payload": {"approved": False}},
        "i-3": {"status": "cancelled"},
    }
    built, missing = node_resume(
        [
            {"interrupts": interrupts, "responses": answers, "now": "2026-04-20T17:00:00Z"},
            {
                "interrupts": interrupts,
                "responses": {"i-1": answers["i-1"]},
                "now": "2026-04-20T07:59:59Z",
            },
        ]
    )
    assert built.ok, built.error
    assert built.value == [
        {
            "interruptId": "i-1",
            "status": "resolved",
            "payload": {"approved": True},
            "metadata": {"sig": None},
        },
        {"interruptId": "i-2", "status": "resolved", "payload": {"approved": False}},
        {"interruptId": "i-3", "status": "cancelled"},
    ]
    # The instant itself counts as expired; +09:00 puts i-3's instant at 08:00Z.
    assert built.expired == (False, True, True)
    assert not missing.ok and missing.error is not None and "i-2, i-3" in missing.error
    assert missing.expired == (False, False, False)

    document = {"threadId": "thread-3", "runId": "run-21", "messages": [], "resume": built.value}
    assert json_equal(input_to_dict(input_from_dict(document)), document)
