"""Tests for agui_core.protocol.codec: exact round trips of generated wire documents, absent
versus null, unknown keys at every level, unknown and retired events, encode errors, and the
camelCase JSON of objects built by hand."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_core.errors import EncodeError, InvalidEventError
from agui_core.protocol.codec import (
    _WIRE_CLASSES,
    converter,
    decode_event,
    decode_input,
    encode_event,
    encode_input,
    event_to_dict,
    input_to_dict,
)
from agui_core.protocol.events import (
    EVENT_CLASS_BY_TYPE,
    CustomEvent,
    MessagesSnapshotEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
    SubagentFinishedEvent,
    TextMessageContentEvent,
    TextMessageStartEvent,
    ThinkingTranslator,
    ToolCallResultEvent,
    UnknownEvent,
)
from agui_core.protocol.types import (
    AgentCapabilities,
    AssistantMessage,
    Context,
    DataSource,
    FunctionCall,
    HumanInTheLoopCapabilities,
    ImageInputContent,
    Interrupt,
    MultiAgentCapabilities,
    ResumeEntry,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentInfo,
    TextInputContent,
    TokenUsage,
    Tool,
    ToolCall,
    ToolMessage,
    UrlSource,
    UserMessage,
)
from tests.strategies import (
    EVENT_TYPES,
    capabilities,
    event_of_type,
    events,
    interrupts,
    json_objects,
    resume_entries,
    run_agent_inputs,
    texts,
)

_generated = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _event_round_trip(doc: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(encode_event(decode_event(orjson.dumps(doc))))  # type: ignore[no-any-return]


def _input_round_trip(doc: dict[str, Any]) -> dict[str, Any]:
    return orjson.loads(encode_input(decode_input(orjson.dumps(doc))))  # type: ignore[no-any-return]


# --- round trips -----------------------------------------------------------------------------


@_generated
@given(events())
def test_generated_events_round_trip_exactly(doc: dict[str, Any]) -> None:
    assert _event_round_trip(doc) == doc


@pytest.mark.parametrize("event_type", EVENT_TYPES)
@settings(_generated, max_examples=15)
@given(data=st.data())
def test_each_event_type_decodes_to_its_class_and_round_trips(event_type: str, data: st.DataObject) -> None:
    doc = data.draw(event_of_type(event_type))
    event = decode_event(orjson.dumps(doc))
    assert type(event) is EVENT_CLASS_BY_TYPE[event_type]
    assert orjson.loads(encode_event(event)) == doc


@_generated
@given(run_agent_inputs())
def test_generated_inputs_round_trip_exactly(doc: dict[str, Any]) -> None:
    assert _input_round_trip(doc) == doc


_DECODERS: dict[str, Callable[[Any], Any]] = {"event": decode_event, "input": decode_input}
_ENCODERS: dict[str, Callable[[Any], bytes]] = {"event": encode_event, "input": encode_input}
_GENERATORS = {"event": events(), "input": run_agent_inputs()}
# Kind first, then a document of that kind: a plain one_of would rarely pick the input branch.
_documents = st.sampled_from(sorted(_GENERATORS)).flatmap(lambda kind: _GENERATORS[kind].map(lambda doc: (kind, doc)))


@_generated
@given(_documents)
def test_text_and_buffer_inputs_decode_like_bytes(document: tuple[str, dict[str, Any]]) -> None:
    kind, doc = document
    decode = _DECODERS[kind]
    data = orjson.dumps(doc)
    from_bytes = decode(data)
    assert decode(data.decode()) == from_bytes
    assert decode(bytearray(data)) == from_bytes
    assert decode(memoryview(data)) == from_bytes


@_generated
@given(_documents)
def test_encoded_bytes_are_stable_across_decodes(document: tuple[str, dict[str, Any]]) -> None:
    kind, doc = document
    decode, encode = _DECODERS[kind], _ENCODERS[kind]
    first = encode(decode(orjson.dumps(doc)))
    assert encode(decode(first)) == first


@_generated
@given(capabilities())
def test_capabilities_round_trip_through_the_converter(doc: dict[str, Any]) -> None:
    caps = converter.structure(doc, AgentCapabilities)
    assert isinstance(caps, AgentCapabilities)
    assert orjson.loads(orjson.dumps(converter.unstructure(caps))) == doc


@_generated
@given(interrupts(), resume_entries())
def test_interrupts_and_resume_entries_round_trip_through_the_converter(
    interrupt: dict[str, Any], entry: dict[str, Any]
) -> None:
    assert converter.unstructure(converter.structure(interrupt, Interrupt)) == interrupt
    assert converter.unstructure(converter.structure(entry, ResumeEntry)) == entry


def test_encoding_is_compact_json_in_field_order() -> None:
    event = TextMessageContentEvent(message_id="m-1", delta="hé")
    assert encode_event(event) == '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"hé"}'.encode()


# --- absent versus null ----------------------------------------------------------------------


def test_absent_optional_event_fields_stay_absent() -> None:
    doc = {"type": "TEXT_MESSAGE_START", "messageId": "m"}
    event = decode_event(orjson.dumps(doc))
    assert isinstance(event, TextMessageStartEvent)
    assert (event.role, event.name, event.timestamp, event.raw_event, event.metadata) == (None,) * 5
    assert event_to_dict(event) == doc


def test_absent_optional_input_fields_stay_absent_and_empty_lists_stay_empty() -> None:
    minimal = {"threadId": "t", "runId": "r", "messages": []}
    run_input = decode_input(orjson.dumps(minimal))
    assert (run_input.tools, run_input.context, run_input.resume, run_input.state) == (None,) * 4
    assert input_to_dict(run_input) == minimal
    empty = {**minimal, "tools": [], "context": [], "resume": []}
    assert _input_round_trip(empty) == empty


def test_absent_optional_interrupt_fields_stay_absent() -> None:
    doc = {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "interrupt", "interrupts": [{"id": "i", "reason": "confirmation"}]},
    }
    event = decode_event(orjson.dumps(doc))
    assert isinstance(event, RunFinishedEvent)
    assert isinstance(event.outcome, RunFinishedInterruptOutcome)
    assert event.outcome.interrupts == (Interrupt(id="i", reason="confirmation"),)
    assert _event_round_trip(doc) == doc


def test_absent_outcome_stays_absent() -> None:
    doc = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    event = decode_event(orjson.dumps(doc))
    assert isinstance(event, RunFinishedEvent)
    assert event.outcome is None
    assert event_to_dict(event) == doc


NULLS_IN_FREE_JSON_INPUTS = [
    pytest.param({"state": {"a": None, "b": [None, {"c": None}]}}, id="state"),
    pytest.param({"forwardedProps": {"k": None}}, id="forwardedProps"),
    pytest.param(
        {"resume": [{"interruptId": "i", "status": "resolved", "payload": {"x": None}}]},
        id="payload",
    ),
    pytest.param(
        {"resume": [{"interruptId": "i", "status": "resolved", "payload": [None]}]},
        id="payload-list",
    ),
    pytest.param(
        {
            "resume": [
                {
                    "interruptId": "i",
                    "status": "cancelled",
                    "metadata": {"ag-ui": None, "sig": None},
                }
            ]
        },
        id="resume-metadata",
    ),
    pytest.param(
        {"messages": [{"id": "m", "role": "user", "content": "hi", "metadata": {"k": None}}]},
        id="message-metadata",
    ),
    pytest.param(
        {"tools": [{"name": "t", "description": "d", "parameters": {"default": None}}]},
        id="tool-parameters",
    ),
]


@pytest.mark.parametrize("fields", NULLS_IN_FREE_JSON_INPUTS)
def test_null_inside_free_json_survives_in_inputs(fields: dict[str, Any]) -> None:
    doc = {"threadId": "t", "runId": "r", "messages": [], **fields}
    assert _input_round_trip(doc) == doc


NULLS_IN_FREE_JSON_EVENTS = [
    pytest.param({"type": "CUSTOM", "name": "n", "value": None}, id="custom-value-null"),
    pytest.param({"type": "STATE_SNAPSHOT", "snapshot": None}, id="snapshot-null"),
    pytest.param({"type": "RAW", "event": None}, id="raw-event-null"),
    pytest.param({"type": "STATE_SNAPSHOT", "snapshot": {"a": [None]}}, id="snapshot-nested"),
    pytest.param({"type": "STEP_STARTED", "stepName": "s", "metadata": {"k": None}}, id="event-metadata"),
    pytest.param({"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": {"r": None}}, id="result"),
    pytest.param({"type": "SUBAGENT_FINISHED", "subagentRunId": "s", "result": [None]}, id="subagent-result"),
    pytest.param(
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": None}]},
        id="patch-value-null",
    ),
    pytest.param(
        {
            "type": "RUN_FINISHED",
            "threadId": "t",
            "runId": "r",
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "i",
                        "reason": "input_required",
                        "responseSchema": {"type": ["string", "null"], "default": None},
                        "metadata": {"k": None},
                    }
                ],
            },
        },
        id="interrupt-schema-and-metadata",
    ),
]


@pytest.mark.parametrize("doc", NULLS_IN_FREE_JSON_EVENTS)
def test_null_inside_free_json_survives_in_events(doc: dict[str, Any]) -> None:
    assert _event_round_trip(doc) == doc


def test_custom_value_null_is_a_value_not_an_absence() -> None:
    event = decode_event(b'{"type":"CUSTOM","name":"n","value":null}')
    assert isinstance(event, CustomEvent)
    assert event.value is None
    assert event_to_dict(CustomEvent(name="n", value=None)) == {
        "type": "CUSTOM",
        "name": "n",
        "value": None,
    }
    assert event_to_dict(StateSnapshotEvent(snapshot=None)) == {
        "type": "STATE_SNAPSHOT",
        "snapshot": None,
    }


def test_input_state_null_is_normalised_to_absent() -> None:
    # zod's RunAgentInputSchema turns ``state: null`` into an absent state (``nullable()``
    # then ``transform(v => v ?? undefined)``); the codec reads it the same way, so a null
    # state does not survive a round trip.
    run_input = decode_input(b'{"threadId":"t","runId":"r","messages":[],"state":null}')
    assert run_input.state is None
    assert input_to_dict(run_input) == {"threadId": "t", "runId": "r", "messages": []}
    started = decode_event(
        b'{"type":"RUN_STARTED","threadId":"t","runId":"r",'
        b'"input":{"threadId":"t","runId":"r","messages":[],"state":null}}'
    )
    assert isinstance(started, RunStartedEvent)
    assert started.input is not None and started.input.state is None
    assert event_to_dict(started)["input"] == {"threadId": "t", "runId": "r", "messages": []}


# --- unknown keys ----------------------------------------------------------------------------

VENDOR = {"x-vendor": {"trace": [1, None, "é"]}}


def test_unknown_keys_on_a_run_finished_event_are_kept_at_every_level() -> None:
    doc = {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {
            "type": "interrupt",
            "interrupts": [{"id": "i", "reason": "tool_call", "toolCallId": "tc", "x-interrupt": 1}],
            "x-outcome": None,
        },
        "usage": [{"inputTokens": 3, "x-usage": "u"}],
        **VENDOR,
    }
    event = decode_event(orjson.dumps(doc))
    assert isinstance(event, RunFinishedEvent)
    assert dict(event.extra) == VENDOR
    assert isinstance(event.outcome, RunFinishedInterruptOutcome)
    assert dict(event.outcome.extra) == {"x-outcome": None}
    assert dict(event.outcome.interrupts[0].extra) == {"x-interrupt": 1}
    assert event.usage is not None and dict(event.usage[0].extra) == {"x-usage": "u"}
    assert _event_round_trip(doc) == doc


def test_unknown_keys_on_an_input_are_kept_at_every_level() -> None:
    doc = {
        "threadId": "t",
        "runId": "r",
        "messages": [
            {
                "id": "u1",
                "role": "user",
                "content": [
                    {"type": "text", "text": "look", "x-part": 1},
                    {
                        "type": "image",
                        "source": {"type": "url", "value": "https://x/y.png", "x-source": 2},
                    },
                ],
                "x-message": 3,
            },
            {
                "id": "a1",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "tc",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}", "x-function": 4},
                        "x-tool-call": 5,
                    }
                ],
            },
        ],
        "tools": [{"name": "f", "description": "d", "x-tool": 6}],
        "context": [{"description": "d", "value": "v", "x-context": 7}],
        "resume": [{"interruptId": "i", "status": "cancelled", "x-entry": 8}],
        "extra": "a key named like the attribute is still just an unknown key",
        **VENDOR,
    }
    run_input = decode_input(orjson.dumps(doc))
    assert dict(run_input.extra) == {**VENDOR, "extra": doc["extra"]}
    user, assistant = run_input.messages
    assert isinstance(user, UserMessage) and isinstance(assistant, AssistantMessage)
    assert dict(user.extra) == {"x-message": 3}
    assert not isinstance(user.content, str)
    text_part, image_part = user.content
    assert dict(text_part.extra) == {"x-part": 1}
    assert isinstance(image_part, ImageInputContent) and isinstance(image_part.source, UrlSource)
    assert dict(image_part.source.extra) == {"x-source": 2}
    assert assistant.tool_calls is not None
    assert dict(assistant.tool_calls[0].extra) == {"x-tool-call": 5}
    assert dict(assistant.tool_calls[0].function.extra) == {"x-function": 4}
    assert run_input.tools is not None and dict(run_input.tools[0].extra) == {"x-tool": 6}
    assert run_input.context is not None and dict(run_input.context[0].extra) == {"x-context": 7}
    assert run_input.resume is not None and dict(run_input.resume[0].extra) == {"x-entry": 8}
    assert _input_round_trip(doc) == doc


def test_unknown_keys_inside_a_run_started_input_and_a_subagent_outcome_are_kept() -> None:
    started = {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "r",
        "input": {"threadId": "t", "runId": "r", "messages": [], "x-input": True},
    }
    finished = {
        "type": "SUBAGENT_FINISHED",
        "subagentRunId": "s",
        "outcome": {"type": "suspended", "interruptIds": ["i"], "x-outcome": {}},
    }
    assert _event_round_trip(started) == started
    assert _event_round_trip(finished) == finished


def test_objects_without_unknown_keys_have_empty_extra() -> None:
    run_input = decode_input(b'{"threadId":"t","runId":"r","messages":[{"id":"m","role":"system","content":"c"}]}')
    assert not run_input.extra
    assert not run_input.messages[0].extra


def _wire_objects(value: Any) -> list[Any]:
    """Every attrs object in ``value`` and inside it, depth first."""
    found: list[Any] = []
    if attrs.has(type(value)):
        found.append(value)
        for field in attrs.fields(type(value)):
            found += _wire_objects(getattr(value, field.name))
    elif isinstance(value, tuple | list):
        for item in value:
            found += _wire_objects(item)
    return found


@_generated
@given(events())
def test_decoded_objects_are_their_frozen_wire_classes_at_every_level(doc: dict[str, Any]) -> None:
    # The structure functions build each object as a builder class and then turn it into its
    # wire class: what comes out is that class, frozen, at every level, never the builder.
    wire_classes = set(_WIRE_CLASSES)
    for obj in _wire_objects(decode_event(orjson.dumps(doc))):
        assert type(obj) in wire_classes or type(obj) in EVENT_CLASS_BY_TYPE.values()
        first = attrs.fields(type(obj))[0].name
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(obj, first, getattr(obj, first))


# --- unknown and retired events --------------------------------------------------------------

_unknown_types = texts(min_size=1, max_size=30).filter(lambda name: name not in EVENT_CLASS_BY_TYPE)


@_generated
@given(_unknown_types, json_objects())
def test_an_unknown_event_type_decodes_to_unknown_event_and_encodes_back(
    event_type: str, fields: dict[str, Any]
) -> None:
    doc = {**fields, "type": event_type}
    event = decode_event(orjson.dumps(doc))
    assert isinstance(event, UnknownEvent)
    assert event.type == event_type
    assert dict(event.data) == doc
    assert orjson.loads(encode_event(event)) == doc


def test_an_unknown_event_is_not_validated_against_any_known_schema() -> None:
    doc = {"type": "SOMETHING_NEW", "threadId": 42, "metadata": None}
    event = decode_event(orjson.dumps(doc))
    assert isinstance(event, UnknownEvent)
    assert orjson.loads(encode_event(event)) == doc


@pytest.mark.parametrize("doc", [{"messageId": "m"}, {"type": None}, {"type": 7}, {"type": ["RUN_STARTED"]}])
def test_an_event_without_a_string_type_is_invalid_at_type(doc: dict[str, Any]) -> None:
    with pytest.raises(InvalidEventError) as info:
        decode_event(orjson.dumps(doc))
    assert info.value.path == ("type",)


THINKING_STREAM = [
    {"type": "THINKING_START", "title": "plan", "timestamp": 1},
    {"type": "THINKING_TEXT_MESSAGE_START", "timestamp": 2},
    {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "first ", "timestamp": 3},
    {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "idea", "timestamp": 4},
    {"type": "THINKING_TEXT_MESSAGE_END", "timestamp": 5},
    {"type": "THINKING_TEXT_MESSAGE_START", "timestamp": 6},
    {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "second", "timestamp": 7},
    {"type": "THINKING_TEXT_MESSAGE_END", "timestamp": 8},
    {"type": "THINKING_END", "timestamp": 9},
]


def _counter_ids() -> ThinkingTranslator:
    counter = itertools.count()
    return ThinkingTranslator(lambda: f"id-{next(counter)}")


def test_thinking_events_decode_to_unknown_events() -> None:
    for doc in THINKING_STREAM:
        event = decode_event(orjson.dumps(doc))
        assert isinstance(event, UnknownEvent)
        assert ThinkingTranslator.handles(event)
        assert orjson.loads(encode_event(event)) == doc


def test_thinking_translator_turns_thinking_into_reasoning_events_with_consistent_ids() -> None:
    translator = _counter_ids()
    translated = [translator.translate(decode_event(orjson.dumps(doc))) for doc in THINKING_STREAM]
    assert translated == [
        ReasoningStartEvent(message_id="id-0", timestamp=1),
        ReasoningMessageStartEvent(message_id="id-1", timestamp=2),
        ReasoningMessageContentEvent(message_id="id-1", delta="first ", timestamp=3),
        ReasoningMessageContentEvent(message_id="id-1", delta="idea", timestamp=4),
        ReasoningMessageEndEvent(message_id="id-1", timestamp=5),
        ReasoningMessageStartEvent(message_id="id-2", timestamp=6),
        ReasoningMessageContentEvent(message_id="id-2", delta="second", timestamp=7),
        ReasoningMessageEndEvent(message_id="id-2", timestamp=8),
        ReasoningEndEvent(message_id="id-0", timestamp=9),
    ]
    written = [orjson.loads(encode_event(event, validate=True))["type"] for event in translated]
    assert all(name.startswith("REASONING_") for name in written)


def test_thinking_translator_passes_other_events_through_unchanged() -> None:
    translator = _counter_ids()
    event = TextMessageContentEvent(message_id="m", delta="d")
    unknown = UnknownEvent(type="SOMETHING_NEW", data={"type": "SOMETHING_NEW"})
    assert translator.translate(event) is event
    assert translator.translate(unknown) is unknown
    assert not ThinkingTranslator.handles(event)
    assert not ThinkingTranslator.handles(unknown)


def test_no_event_class_writes_a_thinking_type() -> None:
    assert not [name for name in EVENT_CLASS_BY_TYPE if name.startswith("THINKING")]
    assert len(EVENT_CLASS_BY_TYPE) == 31


# --- encode errors ---------------------------------------------------------------------------

INVALID_EVENTS = [
    pytest.param(
        RunFinishedEvent(thread_id="t", run_id="r", outcome=RunFinishedInterruptOutcome(interrupts=())),
        id="empty-interrupts",
    ),
    pytest.param(TextMessageContentEvent(message_id=None, delta="d"), id="null-required-field"),  # type: ignore[arg-type]
    pytest.param(TextMessageContentEvent(message_id="m", delta="d", timestamp=2**60), id="timestamp-too-big"),
    pytest.param(CustomEvent(name="n", value=1, metadata=[1, 2]), id="metadata-not-an-object"),  # type: ignore[arg-type]
    pytest.param(
        RunFinishedEvent(
            thread_id="t",
            run_id="r",
            outcome=RunFinishedInterruptOutcome(interrupts=(Interrupt(id="i", reason=None),)),  # type: ignore[arg-type]
        ),
        id="interrupt-reason-null",
    ),
]


@pytest.mark.parametrize("event", INVALID_EVENTS)
def test_encode_with_validate_refuses_an_invalid_event(event: Any) -> None:
    with pytest.raises(EncodeError):
        encode_event(event, validate=True)


@pytest.mark.parametrize(
    "thing",
    [
        "RUN_STARTED",
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        None,
        RunAgentInput(thread_id="t", run_id="r"),
        Interrupt(id="i", reason="confirmation"),
    ],
)
def test_encode_event_refuses_what_is_not_an_event(thing: Any) -> None:
    with pytest.raises(EncodeError):
        encode_event(thing)
    with pytest.raises(EncodeError):
        event_to_dict(thing)


@pytest.mark.parametrize("thing", [TextMessageStartEvent(message_id="m"), {"threadId": "t"}, None])
def test_encode_input_refuses_what_is_not_an_input(thing: Any) -> None:
    with pytest.raises(EncodeError):
        encode_input(thing)


def _nested(depth: int) -> Any:
    value: Any = None
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({1, 2}, id="set"),
        pytest.param(object(), id="object"),
        pytest.param(2**70, id="int-beyond-64-bits"),
        pytest.param({1: "non-string key"}, id="int-key"),
        pytest.param("\ud800", id="lone-surrogate"),
        pytest.param(_nested(300), id="deeper-than-orjson-writes"),
    ],
)
def test_a_value_json_cannot_hold_raises_encode_error(value: Any) -> None:
    with pytest.raises(EncodeError):
        encode_event(CustomEvent(name="n", value=value))
    with pytest.raises(EncodeError):
        encode_input(RunAgentInput(thread_id="t", run_id="r", state=value))


# --- hand-built objects ----------------------------------------------------------------------


def test_a_hand_built_interrupt_encodes_to_camel_case() -> None:
    interrupt = Interrupt(
        id="int-1",
        reason="tool_call",
        message="Send it?",
        tool_call_id="tc-1",
        response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
        expires_at="2026-04-20T17:00:00Z",
        metadata={"langgraph": {"checkpointId": "c"}},
        subagent_run_id="sa-1",
    )
    expected_interrupt = {
        "id": "int-1",
        "reason": "tool_call",
        "message": "Send it?",
        "toolCallId": "tc-1",
        "responseSchema": {"type": "object", "properties": {"approved": {"type": "boolean"}}},
        "expiresAt": "2026-04-20T17:00:00Z",
        "metadata": {"langgraph": {"checkpointId": "c"}},
        "subagentRunId": "sa-1",
    }
    assert converter.unstructure(interrupt) == expected_interrupt
    event = RunFinishedEvent(thread_id="t", run_id="r", outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,)))
    assert orjson.loads(encode_event(event, validate=True)) == {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "outcome": {"type": "interrupt", "interrupts": [expected_interrupt]},
    }


def test_hand_built_outcomes_encode_their_type_tags() -> None:
    success = RunFinishedEvent(
        thread_id="t",
        run_id="r",
        result={"ok": True},
        outcome=RunFinishedSuccessOutcome(pending_tool_call_ids=("tc",)),
    )
    cancelled = RunFinishedEvent(thread_id="t", run_id="r", outcome=RunFinishedCancelledOutcome())
    suspended = SubagentFinishedEvent(
        subagent_run_id="s", outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=("i",))
    )
    assert orjson.loads(encode_event(success, validate=True)) == {
        "type": "RUN_FINISHED",
        "threadId": "t",
        "runId": "r",
        "result": {"ok": True},
        "outcome": {"type": "success", "pendingToolCallIds": ["tc"]},
    }
    assert orjson.loads(encode_event(cancelled, validate=True))["outcome"] == {"type": "cancelled"}
    assert orjson.loads(encode_event(suspended, validate=True)) == {
        "type": "SUBAGENT_FINISHED",
        "subagentRunId": "s",
        "outcome": {"type": "suspended", "interruptIds": ["i"]},
    }


def test_a_hand_built_resume_input_encodes_to_camel_case() -> None:
    run_input = RunAgentInput(
        thread_id="thread-1",
        run_id="run-2",
        parent_run_id="run-1",
        protocol_version="1.0",
        messages=(
            ToolMessage(id="m1", content="done", tool_call_id="tc-1", subagent_run_id="sa"),
            AssistantMessage(
                id="m2",
                tool_calls=(
                    ToolCall(
                        id="tc-2",
                        function=FunctionCall(name="f", arguments="{}"),
                        encrypted_value="e",
                    ),
                ),
            ),
            UserMessage(
                id="m3",
                content=(
                    TextInputContent(text="see"),
                    ImageInputContent(source=DataSource(value="aGk=", mime_type="image/png")),
                ),
            ),
        ),
        tools=(Tool(name="f", description="d", parameters={"type": "object"}),),
        context=(),
        forwarded_props={"k": None},
        resume=(
            ResumeEntry(interrupt_id="i-1", status="resolved", payload={"approved": False}),
            ResumeEntry(interrupt_id="i-2", status="cancelled", metadata={"ag-ui": None}),
        ),
    )
    assert orjson.loads(encode_input(run_input, validate=True)) == {
        "threadId": "thread-1",
        "runId": "run-2",
        "messages": [
            {
                "id": "m1",
                "role": "tool",
                "content": "done",
                "toolCallId": "tc-1",
                "subagentRunId": "sa",
            },
            {
                "id": "m2",
                "role": "assistant",
                "toolCalls": [
                    {
                        "id": "tc-2",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                        "encryptedValue": "e",
                    }
                ],
            },
            {
                "id": "m3",
                "role": "user",
                "content": [
                    {"type": "text", "text": "see"},
                    {
                        "type": "image",
                        "source": {"type": "data", "value": "aGk=", "mimeType": "image/png"},
                    },
                ],
            },
        ],
        "protocolVersion": "1.0",
        "parentRunId": "run-1",
        "tools": [{"name": "f", "description": "d", "parameters": {"type": "object"}}],
        "context": [],
        "forwardedProps": {"k": None},
        "resume": [
            {"interruptId": "i-1", "status": "resolved", "payload": {"approved": False}},
            {"interruptId": "i-2", "status": "cancelled", "metadata": {"ag-ui": None}},
        ],
    }


def test_hand_built_events_with_nested_objects_encode_to_camel_case() -> None:
    result = ToolCallResultEvent(message_id="m", tool_call_id="tc", content="ok", role="tool", subagent_run_id="s")
    error = RunErrorEvent(
        message="boom",
        code="AGENT_ERROR",
        usage=(TokenUsage(input_tokens=1, cached_input_tokens=2, cache_write_input_tokens=3),),
    )
    snapshot = MessagesSnapshotEvent(messages=(UserMessage(id="u", content="hi", name="ann"),), timestamp=5)
    assert orjson.loads(encode_event(result, validate=True)) == {
        "type": "TOOL_CALL_RESULT",
        "messageId": "m",
        "toolCallId": "tc",
        "content": "ok",
        "role": "tool",
        "subagentRunId": "s",
    }
    assert orjson.loads(encode_event(error, validate=True)) == {
        "type": "RUN_ERROR",
        "message": "boom",
        "code": "AGENT_ERROR",
        "usage": [{"inputTokens": 1, "cachedInputTokens": 2, "cacheWriteInputTokens": 3}],
    }
    assert orjson.loads(encode_event(snapshot, validate=True)) == {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "u", "role": "user", "content": "hi", "name": "ann"}],
        "timestamp": 5,
    }


def test_hand_built_capabilities_encode_to_camel_case() -> None:
    caps = AgentCapabilities(
        human_in_the_loop=HumanInTheLoopCapabilities(interrupts=True, approve_with_edits=True),
        multi_agent=MultiAgentCapabilities(subagents=(SubagentInfo(name="researcher"),)),
        custom={"x": None},
    )
    assert converter.unstructure(caps) == {
        "multiAgent": {"subagents": [{"name": "researcher"}]},
        "humanInTheLoop": {"interrupts": True, "approveWithEdits": True},
        "custom": {"x": None},
    }


def test_a_hand_built_context_and_extra_keys_are_written() -> None:
    run_input = RunAgentInput(
        thread_id="t",
        run_id="r",
        context=(Context(description="d", value="v", extra={"x-c": 1}),),
        extra={"x-vendor": [None]},
    )
    assert input_to_dict(run_input) == {
        "threadId": "t",
        "runId": "r",
        "messages": [],
        "context": [{"description": "d", "value": "v", "x-c": 1}],
        "x-vendor": [None],
    }
