"""The JSON examples of the seed document (the "Interrupts" concept page) through the codec.

Four ``RUN_FINISHED`` events that end a run on interrupts, and the four resume inputs that
answer them, as the page prints them (kept in :mod:`tests.seed`). The ``[email protected]``
strings are what the page's e-mail obfuscation left in place of the addresses; they are kept
as they are.

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
from tests.seed import SEED_RESUME_INPUTS, SEED_RUN_FINISHED

EXAMPLES = [
    pytest.param(SEED_RUN_FINISHED[name], SEED_RESUME_INPUTS[name], id=test_id)
    for name, test_id in (
        ("minimal-tool-approval", "minimal-tool-approval"),
        ("approve-with-edits", "approve-with-edits"),
        ("parallel-interrupts", "parallel-interrupts"),
        ("non-tool-input-request", "non-tool-input"),
    )
]


@pytest.mark.parametrize(("event_doc", "resume_doc"), EXAMPLES)
def test_seed_run_finished_event_round_trips_exactly(event_doc: dict[str, Any], resume_doc: dict[str, Any]) -> None:
    event = decode_event(orjson.dumps(event_doc))
    assert isinstance(event, RunFinishedEvent)
    assert isinstance(event.outcome, RunFinishedInterruptOutcome)
    assert orjson.loads(encode_event(event, validate=True)) == event_doc
    # The same bytes whatever the layout of the text they came from.
    assert encode_event(decode_event(orjson.dumps(event_doc, option=orjson.OPT_INDENT_2))) == encode_event(event)


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
    assert isinstance(event, RunFinishedEvent) and isinstance(event.outcome, RunFinishedInterruptOutcome)
    assert run_input.resume is not None
    assert run_input.thread_id == event.thread_id
    assert run_input.run_id != event.run_id
    assert [entry.interrupt_id for entry in run_input.resume] == [i.id for i in event.outcome.interrupts]


def test_seed_fields_decode_to_their_attributes() -> None:
    edits = decode_event(orjson.dumps(SEED_RUN_FINISHED["approve-with-edits"]))
    form = decode_event(orjson.dumps(SEED_RUN_FINISHED["non-tool-input-request"]))
    assert isinstance(edits, RunFinishedEvent) and isinstance(edits.outcome, RunFinishedInterruptOutcome)
    assert isinstance(form, RunFinishedEvent) and isinstance(form.outcome, RunFinishedInterruptOutcome)
    (edit_interrupt,) = edits.outcome.interrupts
    assert edit_interrupt.tool_call_id == "tc-42"
    assert edit_interrupt.metadata == {"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}}
    (form_interrupt,) = form.outcome.interrupts
    assert form_interrupt.reason == "input_required"
    assert form_interrupt.tool_call_id is None
    assert form_interrupt.expires_at == "2026-04-20T17:00:00Z"
    parallel = decode_input(orjson.dumps({**SEED_RESUME_INPUTS["parallel-interrupts"], "messages": []}))
    assert parallel.resume is not None
    assert [(e.status, e.payload) for e in parallel.resume] == [
        ("resolved", {"approved": True}),
        ("resolved", {"approved": True}),
        ("cancelled", None),
    ]
