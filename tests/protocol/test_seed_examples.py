"""The JSON examples of the seed document (the "Interrupts" concept page) through the codec.

Four ``RUN_FINISHED`` events that end a run on interrupts, and the four resume inputs that
answer them, copied as the page prints them. The ``[email protected]`` strings are what the page's
e-mail obfuscation left in place of the addresses; they are kept as they are.

The page's resume inputs omit ``messages``, which both reference schemas require, so as printed
they are refused; with ``"messages": []`` added they are valid.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agui_core.errors import InvalidInputError
from agui_core.protocol.codec import decode_event, decode_input, encode_event, encode_input
from agui_core.protocol.events import RunFinishedEvent
from agui_core.protocol.types import RunFinishedInterruptOutcome

MINIMAL_TOOL_APPROVAL_EVENT: dict[str, Any] = {
    "type": "RUN_FINISHED",
    "threadId": "thread-1",
    "runId": "run-1",
    "outcome": {
        "type": "interrupt",
        "interrupts": [
            {
                "id": "int-abc123",
                "reason": "tool_call",
                "message": "Send email to [email protected] with subject 'Hi'?",
                "toolCallId": "tc-001",
                "responseSchema": {
                    "type": "object",
                    "properties": {"approved": {"type": "boolean"}},
                    "required": ["approved"],
                },
            }
        ],
    },
}

MINIMAL_TOOL_APPROVAL_RESUME: dict[str, Any] = {
    "threadId": "thread-1",
    "runId": "run-2",
    "resume": [{"interruptId": "int-abc123", "status": "resolved", "payload": {"approved": True}}],
}

APPROVE_WITH_EDITS_EVENT: dict[str, Any] = {
    "type": "RUN_FINISHED",
    "threadId": "thread-2",
    "runId": "run-10",
    "outcome": {
        "type": "interrupt",
        "interrupts": [
            {
                "id": "int-email-edit",
                "reason": "tool_call",
                "message": (
                    "Send email to [email protected]? You can edit the body before approving."
                ),
                "toolCallId": "tc-42",
                "responseSchema": {
                    "type": "object",
                    "properties": {
                        "approved": {"type": "boolean"},
                        "editedArgs": {
                            "type": "object",
                            "properties": {
                                "to": {"type": "string", "format": "email"},
                                "subject": {"type": "string"},
                                "body": {"type": "string"},
                            },
                        },
                    },
                    "required": ["approved"],
                },
                "metadata": {"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}},
            }
        ],
    },
}

APPROVE_WITH_EDITS_RESUME: dict[str, Any] = {
    "threadId": "thread-2",
    "runId": "run-11",
    "resume": [
        {
            "interruptId": "int-email-edit",
            "status": "resolved",
            "payload": {
                "approved": True,
                "editedArgs": {
                    "to": "[email protected]",
                    "subject": "Hi",
                    "body": "Hi (revised per my note)",
                },
            },
        }
    ],
}

PARALLEL_INTERRUPTS_EVENT: dict[str, Any] = {
    "type": "RUN_FINISHED",
    "threadId": "thread-3",
    "runId": "run-20",
    "outcome": {
        "type": "interrupt",
        "interrupts": [
            {
                "id": "i-1",
                "reason": "tool_call",
                "toolCallId": "tc-a",
                "message": "Approve sendEmail to [email protected]?",
            },
            {
                "id": "i-2",
                "reason": "tool_call",
                "toolCallId": "tc-b",
                "message": "Approve sendEmail to [email protected]?",
            },
            {
                "id": "i-3",
                "reason": "tool_call",
                "toolCallId": "tc-c",
                "message": "Approve sendEmail to [email protected]?",
            },
        ],
    },
}

PARALLEL_INTERRUPTS_RESUME: dict[str, Any] = {
    "threadId": "thread-3",
    "runId": "run-21",
    "resume": [
        {"interruptId": "i-1", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "i-2", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "i-3", "status": "cancelled"},
    ],
}

NON_TOOL_INPUT_EVENT: dict[str, Any] = {
    "type": "RUN_FINISHED",
    "threadId": "thread-4",
    "runId": "run-30",
    "outcome": {
        "type": "interrupt",
        "interrupts": [
            {
                "id": "int-form",
                "reason": "input_required",
                "message": "Please provide the quarterly filing details.",
                "responseSchema": {
                    "type": "object",
                    "properties": {
                        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
                        "year": {"type": "integer", "minimum": 2000},
                        "revenue": {"type": "number"},
                    },
                    "required": ["quarter", "year", "revenue"],
                },
                "expiresAt": "2026-04-20T17:00:00Z",
            }
        ],
    },
}

NON_TOOL_INPUT_RESUME: dict[str, Any] = {
    "threadId": "thread-4",
    "runId": "run-31",
    "resume": [
        {
            "interruptId": "int-form",
            "status": "resolved",
            "payload": {"quarter": "Q1", "year": 2026, "revenue": 4200000},
        }
    ],
}

EXAMPLES = [
    pytest.param(
        MINIMAL_TOOL_APPROVAL_EVENT, MINIMAL_TOOL_APPROVAL_RESUME, id="minimal-tool-approval"
    ),
    pytest.param(APPROVE_WITH_EDITS_EVENT, APPROVE_WITH_EDITS_RESUME, id="approve-with-edits"),
    pytest.param(PARALLEL_INTERRUPTS_EVENT, PARALLEL_INTERRUPTS_RESUME, id="parallel-interrupts"),
    pytest.param(NON_TOOL_INPUT_EVENT, NON_TOOL_INPUT_RESUME, id="non-tool-input"),
]


@pytest.mark.parametrize(("event_doc", "resume_doc"), EXAMPLES)
def test_seed_run_finished_event_round_trips_exactly(
    event_doc: dict[str, Any], resume_doc: dict[str, Any]
) -> None:
    event = decode_event(orjson.dumps(event_doc))
    assert isinstance(event, RunFinishedEvent)
    assert isinstance(event.outcome, RunFinishedInterruptOutcome)
    assert orjson.loads(encode_event(event, validate=True)) == event_doc
    # The same bytes whatever the layout of the text they came from.
    assert encode_event(
        decode_event(orjson.dumps(event_doc, option=orjson.OPT_INDENT_2))
    ) == encode_event(event)


@pytest.mark.parametrize(("event_doc", "resume_doc"), EXAMPLES)
def test_seed_resume_input_without_messages_is_refused_at_messages(
    event_doc: dict[str, Any], resume_doc: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInputError) as info:
        decode_input(orjson.dumps(resume_doc))
    assert info.value.path == ("messages",)


@pytest.mark.parametrize(("event_doc", "resume_doc"), EXAMPLES)
def test_seed_resume_input_with_empty_messages_round_trips_exactly(
    event_doc: dict[str, Any], resume_doc: dict[str, Any]
) -> None:
    completed = {**resume_doc, "messages": []}
    run_input = decode_input(orjson.dumps(completed))
    assert orjson.loads(encode_input(run_input, validate=True)) == completed


@pytest.mark.parametrize(("event_doc", "resume_doc"), EXAMPLES)
def test_seed_resume_answers_every_interrupt_of_its_run_on_the_same_thread(
    event_doc: dict[str, Any], resume_doc: dict[str, Any]
) -> None:
    event = decode_event(orjson.dumps(event_doc))
    run_input = decode_input(orjson.dumps({**resume_doc, "messages": []}))
    assert isinstance(event, RunFinishedEvent) and isinstance(
        event.outcome, RunFinishedInterruptOutcome
    )
    assert run_input.resume is not None
    assert run_input.thread_id == event.thread_id
    assert run_input.run_id != event.run_id
    assert [entry.interrupt_id for entry in run_input.resume] == [
        i.id for i in event.outcome.interrupts
    ]


def test_seed_fields_decode_to_their_attributes() -> None:
    edits = decode_event(orjson.dumps(APPROVE_WITH_EDITS_EVENT))
    form = decode_event(orjson.dumps(NON_TOOL_INPUT_EVENT))
    assert isinstance(edits, RunFinishedEvent) and isinstance(
        edits.outcome, RunFinishedInterruptOutcome
    )
    assert isinstance(form, RunFinishedEvent) and isinstance(
        form.outcome, RunFinishedInterruptOutcome
    )
    (edit_interrupt,) = edits.outcome.interrupts
    assert edit_interrupt.tool_call_id == "tc-42"
    assert edit_interrupt.metadata == {
        "langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}
    }
    (form_interrupt,) = form.outcome.interrupts
    assert form_interrupt.reason == "input_required"
    assert form_interrupt.tool_call_id is None
    assert form_interrupt.expires_at == "2026-04-20T17:00:00Z"
    parallel = decode_input(orjson.dumps({**PARALLEL_INTERRUPTS_RESUME, "messages": []}))
    assert parallel.resume is not None
    assert [(e.status, e.payload) for e in parallel.resume] == [
        ("resolved", {"approved": True}),
        ("resolved", {"approved": True}),
        ("cancelled", None),
    ]
