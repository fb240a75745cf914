"""Tests for agui_core.protocol.validation: every event type, every message role and content
part, the interrupt and resume rules, error paths, phrases and codes, hostile and deeply nested
values, and agreement with a standard JSON Schema validator reading the same schema files."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import fastjsonschema
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referencing import Registry
from referencing.jsonschema import DRAFT7

from agui_core.errors import InvalidEventError, InvalidInputError, RunErrorCode, WireError
from agui_core.protocol import validation
from agui_core.protocol.events import EVENT_CLASS_BY_TYPE
from agui_core.protocol.validation import (
    DEVIATIONS,
    EVENT_TYPES,
    schema_documents,
    validate_capabilities,
    validate_event,
    validate_input,
    validate_interrupt,
    validate_resume_entry,
)
from tests import strategies

Path = tuple[str | int, ...]
MAX_SAFE = 2**53 - 1

# --- examples ------------------------------------------------------------------------------

MINIMAL_EVENTS: dict[str, dict[str, Any]] = {
    "TEXT_MESSAGE_START": {"messageId": "m1"},
    "TEXT_MESSAGE_CONTENT": {"messageId": "m1", "delta": "Hel"},
    "TEXT_MESSAGE_END": {"messageId": "m1"},
    "TEXT_MESSAGE_CHUNK": {},
    "TOOL_CALL_START": {"toolCallId": "tc1", "toolCallName": "book"},
    "TOOL_CALL_ARGS": {"toolCallId": "tc1", "delta": '{"a":'},
    "TOOL_CALL_END": {"toolCallId": "tc1"},
    "TOOL_CALL_CHUNK": {},
    "TOOL_CALL_RESULT": {"messageId": "m2", "toolCallId": "tc1", "content": "done"},
    "STATE_SNAPSHOT": {"snapshot": None},
    "STATE_DELTA": {"delta": []},
    "MESSAGES_SNAPSHOT": {"messages": []},
    "ACTIVITY_SNAPSHOT": {"messageId": "a1", "activityType": "plan", "content": {}},
    "ACTIVITY_DELTA": {"messageId": "a1", "activityType": "plan", "patch": []},
    "RAW": {"event": None},
    "CUSTOM": {"name": "ping", "value": None},
    "RUN_STARTED": {"threadId": "t1", "runId": "r1"},
    "RUN_FINISHED": {"threadId": "t1", "runId": "r1"},
    "RUN_ERROR": {"message": "boom"},
    "STEP_STARTED": {"stepName": "plan"},
    "STEP_FINISHED": {"stepName": "plan"},
    "REASONING_START": {"messageId": "r1"},
    "REASONING_MESSAGE_START": {"messageId": "r1", "role": "reasoning"},
    "REASONING_MESSAGE_CONTENT": {"messageId": "r1", "delta": "hmm"},
    "REASONING_MESSAGE_END": {"messageId": "r1"},
    "REASONING_MESSAGE_CHUNK": {},
    "REASONING_END": {"messageId": "r1"},
    "REASONING_ENCRYPTED_VALUE": {"subtype": "message", "entityId": "m1", "encryptedValue": "x"},
    "SUBAGENT_STARTED": {"subagentRunId": "s1", "name": "researcher"},
    "SUBAGENT_FINISHED": {"subagentRunId": "s1"},
    "SUBAGENT_ERROR": {"subagentRunId": "s1", "message": "failed"},
}

# Required fields whose value may be any JSON value, null included.
ANY_JSON_FIELDS = {("STATE_SNAPSHOT", "snapshot"), ("RAW", "event"), ("CUSTOM", "value")}

# Events that describe the run itself or the whole conversation carry no subagentRunId of
# their own attribution (the subagent events name theirs as a required field).
NOT_ATTRIBUTABLE = {"MESSAGES_SNAPSHOT", "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"}

MESSAGES: dict[str, dict[str, Any]] = {
    "developer": {"id": "m1", "role": "developer", "content": "Be brief."},
    "system": {"id": "m2", "role": "system", "content": "You help."},
    "assistant": {"id": "m3", "role": "assistant"},
    "user": {"id": "m4", "role": "user", "content": "Hi"},
    "tool": {"id": "m5", "role": "tool", "content": "42", "toolCallId": "tc1"},
    "activity": {"id": "m6", "role": "activity", "activityType": "plan", "content": {"step": 1}},
    "reasoning": {"id": "m7", "role": "reasoning", "content": "thinking"},
}

SOURCES: dict[str, dict[str, Any]] = {
    "data": {"type": "data", "value": "aGk=", "mimeType": "image/png"},
    "url": {"type": "url", "value": "https://example.com/a.png"},
    "file": {
        "type": "file",
        "value": "file-123",
        "provider": "openai",
        "mimeType": "application/pdf",
    },
}

PARTS: list[dict[str, Any]] = [
    {"type": "text", "text": "look", "id": "p0", "metadata": {"k": None}},
    *(
        {"type": kind, "source": source}
        for kind in ("image", "audio", "video", "document")
        for source in SOURCES.values()
    ),
]


def event(event_type: str, **fields: Any) -> dict[str, Any]:
    return {"type": event_type, **MINIMAL_EVENTS[event_type], **fields}


def run_input(**fields: Any) -> dict[str, Any]:
    return {"threadId": "t1", "runId": "r2", "messages": [], **fields}


def input_error(value: Any) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        validate_input(value)
    return caught.value


def event_error(value: Any) -> InvalidEventError:
    with pytest.raises(InvalidEventError) as caught:
        validate_event(value)
    return caught.value


def nested_lists(depth: int) -> Any:
    value: Any = None
    for _ in range(depth):
        value = [value]
    return value


def nested_objects(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"down": value}
    return value


def _event_definition(event_type: str) -> dict[str, Any]:
    docs = schema_documents()["events.json"]["definitions"]
    ref = docs["Event"]["x-dispatch"]["shapes"][event_type]
    definition: dict[str, Any] = docs[ref.rsplit("/", 1)[1]]
    return definition


def _optional_event_fields() -> Iterator[tuple[str, str]]:
    for event_type in MINIMAL_EVENTS:
        definition = _event_definition(event_type)
        for name in definition["properties"]:
            if name not in definition["required"]:
                yield event_type, name


# --- the schema files ----------------------------------------------------------------------


def test_every_schema_file_is_a_valid_draft_07_schema() -> None:
    documents = schema_documents()
    assert {"events.json", "input.json", "messages.json", "capabilities.json"} <= set(documents)
    for document in documents.values():
        jsonschema.Draft7Validator.check_schema(document)


def test_the_event_types_are_the_31_of_ag_ui_1_0() -> None:
    assert len(EVENT_TYPES) == 31
    assert set(EVENT_TYPES) == set(EVENT_CLASS_BY_TYPE) == set(MINIMAL_EVENTS)


def test_each_union_member_carries_the_tag_it_is_dispatched_by() -> None:
    documents = schema_documents()
    unions = 0
    for name, document in documents.items():
        for definition in document["definitions"].values():
            dispatch = definition.get("x-dispatch")
            if dispatch is None:
                continue
            unions += 1
            for tag_value, ref in dispatch["shapes"].items():
                file, _, pointer = ref.partition("#")
                member = documents[file or name]["definitions"][pointer.rsplit("/", 1)[1]]
                assert member["properties"][dispatch["tag"]] == {"const": tag_value}
                assert dispatch["tag"] in member["required"]
    assert unions == 7  # events, messages, content parts, part sources, 2 outcomes, patch ops


def test_validation_does_not_change_the_document() -> None:
    value = run_input(
        messages=list(MESSAGES.values()),
        tools=[{"name": "f", "description": "d"}],
        resume=[{"interruptId": "i1", "status": "resolved", "payload": {"ok": True}}],
    )
    before = copy.deepcopy(value)
    validate_input(value)
    assert value == before


def test_the_lean_rewrite_applies_to_the_installed_fastjsonschema() -> None:
    """The rewrite is dropped silently if the generated code changes shape; this notices."""
    schema = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}
    code = fastjsonschema.compile_to_code(schema)
    lean = validation._lean(code)
    assert lean != code
    assert "_keys = set(" not in lean


def test_deviations_are_named_and_documented() -> None:
    names = [d.name for d in DEVIATIONS]
    assert len(names) == len(set(names))
    assert "cancelled-resume-entry-with-payload" in names
    assert all(d.direction in ("stricter", "looser") and d.rule and d.where for d in DEVIATIONS)


# --- events --------------------------------------------------------------------------------


@pytest.mark.parametrize("event_type", sorted(MINIMAL_EVENTS))
def test_a_minimal_event_of_each_type_passes(event_type: str) -> None:
    validate_event(event(event_type))


@pytest.mark.parametrize("event_type", sorted(MINIMAL_EVENTS))
def test_unknown_keys_are_accepted_on_every_event(event_type: str) -> None:
    validate_event(event(event_type, futureField={"x": [1, None]}, another=None))


@pytest.mark.parametrize(
    ("event_type", "field"),
    [(t, f) for t, example in sorted(MINIMAL_EVENTS.items()) for f in example],
)
def test_a_missing_required_field_is_named(event_type: str, field: str) -> None:
    value = event(event_type)
    del value[field]
    err = event_error(value)
    assert err.path == (field,)
    assert err.expected.endswith("(required)")


@pytest.mark.parametrize(
    ("event_type", "field"),
    [(t, f) for t, example in sorted(MINIMAL_EVENTS.items()) for f in example if (t, f) not in ANY_JSON_FIELDS],
)
def test_a_required_field_of_the_wrong_type_is_named(event_type: str, field: str) -> None:
    err = event_error(event(event_type, **{field: 12345}))
    assert err.path == (field,)


@pytest.mark.parametrize(("event_type", "field"), sorted(ANY_JSON_FIELDS))
def test_required_free_json_fields_accept_null_and_anything(event_type: str, field: str) -> None:
    for value in (None, 0, "", [], {}, [{"a": None}]):
        validate_event(event(event_type, **{field: value}))


@pytest.mark.parametrize(("event_type", "field"), sorted(_optional_event_fields()))
def test_an_optional_event_field_rejects_null(event_type: str, field: str) -> None:
    assert event_error(event(event_type, **{field: None})).path == (field,)


@pytest.mark.parametrize("event_type", sorted(MINIMAL_EVENTS))
def test_the_base_fields_are_on_every_event(event_type: str) -> None:
    validate_event(event(event_type, timestamp=1_700_000_000_000, rawEvent={"x": 1}, metadata={"k": None}))
    if event_type in NOT_ATTRIBUTABLE:
        assert "subagentRunId" not in _event_definition(event_type)["properties"]
    else:
        validate_event(event(event_type, subagentRunId="s9"))


@pytest.mark.parametrize("metadata", [None, [], [1], "x", 3])
def test_metadata_is_an_object(metadata: Any) -> None:
    err = event_error(event("TEXT_MESSAGE_END", metadata=metadata))
    assert err.path == ("metadata",)
    assert err.expected.startswith("an object, not ")


def test_metadata_values_may_be_anything_null_included() -> None:
    validate_event(event("TEXT_MESSAGE_END", metadata={"a": None, "ag-ui": {"x": [None]}}))


@pytest.mark.parametrize("timestamp", [0, -MAX_SAFE, MAX_SAFE, 1.0, 1_700_000_000_000.0])
def test_timestamp_accepts_safe_integers(timestamp: float) -> None:
    validate_event(event("RUN_ERROR", timestamp=timestamp))


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        (1.5, "an integer, not the number 1.5"),
        (True, "an integer, not a boolean"),
        ("1", "an integer, not a string"),
        (MAX_SAFE + 1, f"an integer from {-MAX_SAFE} to {MAX_SAFE}"),
        (-MAX_SAFE - 1, f"an integer from {-MAX_SAFE} to {MAX_SAFE}"),
        (10**400, f"an integer from {-MAX_SAFE} to {MAX_SAFE}"),
        (1e300, f"an integer from {-MAX_SAFE} to {MAX_SAFE}"),
    ],
)
def test_timestamp_rejects_what_is_not_a_safe_integer(timestamp: Any, expected: str) -> None:
    err = event_error(event("RUN_ERROR", timestamp=timestamp))
    assert (err.path, err.expected) == (("timestamp",), expected)


def test_an_unknown_or_missing_event_type_is_refused() -> None:
    err = event_error({"type": "THINKING_START"})
    assert (err.path, err.expected) == (("type",), "one of the 31 event types of AG-UI 1.0")
    err = event_error({"messageId": "m1"})
    assert (err.path, err.expected) == (
        ("type",),
        "one of the 31 event types of AG-UI 1.0 (required)",
    )
    err = event_error({"type": ["RUN_ERROR"]})
    assert err.path == ("type",)


def test_text_message_roles_are_the_four_streamable_ones() -> None:
    for role in ("developer", "system", "assistant", "user"):
        validate_event(event("TEXT_MESSAGE_START", role=role))
        validate_event(event("TEXT_MESSAGE_CHUNK", role=role))
    err = event_error(event("TEXT_MESSAGE_START", role="tool"))
    assert (err.path, err.expected) == (
        ("role",),
        "one of 'developer', 'system', 'assistant', 'user'",
    )


def test_reasoning_message_start_role_is_fixed() -> None:
    err = event_error(event("REASONING_MESSAGE_START", role="assistant"))
    assert (err.path, err.expected) == (("role",), "'reasoning'")


def test_reasoning_encrypted_value_subtype_is_an_enum() -> None:
    validate_event(event("REASONING_ENCRYPTED_VALUE", subtype="tool-call"))
    err = event_error(event("REASONING_ENCRYPTED_VALUE", subtype="image"))
    assert (err.path, err.expected) == (("subtype",), "one of 'tool-call', 'message'")


def test_tool_call_result_content_is_a_string_or_parts() -> None:
    validate_event(event("TOOL_CALL_RESULT", content=PARTS, role="tool"))
    err = event_error(event("TOOL_CALL_RESULT", content={"text": "x"}))
    assert (err.path, err.expected) == (("content",), "a string or an array, not an object")
    err = event_error(
        event(
            "TOOL_CALL_RESULT",
            content=[{"type": "image", "source": {"type": "data", "value": "x"}}],
        )
    )
    assert (err.path, err.expected) == (("content", 0, "source", "mimeType"), "a string (required)")
    err = event_error(event("TOOL_CALL_RESULT", role="assistant"))
    assert (err.path, err.expected) == (("role",), "'tool'")


def test_activity_content_is_an_object() -> None:
    err = event_error(event("ACTIVITY_SNAPSHOT", content=[]))
    assert (err.path, err.expected) == (("content",), "an object, not an array")
    validate_event(event("ACTIVITY_SNAPSHOT", replace=False))


PATCH_OPS: list[dict[str, Any]] = [
    {"op": "add", "path": "/a/0", "value": None},
    {"op": "remove", "path": "/a~1b/~0c", "value": "leftover members are ignored"},
    {"op": "replace", "path": "", "value": {"whole": True}},
    {"op": "move", "from": "/a", "path": "/b"},
    {"op": "copy", "from": "/a", "path": "/b"},
    {"op": "test", "path": "/a", "value": [1]},
]


def test_json_patch_operations_of_every_kind_pass() -> None:
    validate_event(event("STATE_DELTA", delta=PATCH_OPS))
    validate_event(event("ACTIVITY_DELTA", patch=PATCH_OPS))


@pytest.mark.parametrize(
    ("operation", "path", "expected"),
    [
        ({"op": "add", "path": "/a"}, ("delta", 0, "value"), "any JSON value (required)"),
        (
            {"op": "move", "path": "/a"},
            ("delta", 0, "from"),
            "a JSON Pointer (RFC 6901) (required)",
        ),
        ({"op": "remove", "path": "a"}, ("delta", 0, "path"), "a JSON Pointer (RFC 6901)"),
        ({"op": "remove", "path": "/a~2"}, ("delta", 0, "path"), "a JSON Pointer (RFC 6901)"),
        ({"op": "remove", "path": "\n"}, ("delta", 0, "path"), "a JSON Pointer (RFC 6901)"),
        ({"op": "remove", "path": 3}, ("delta", 0, "path"), "a JSON Pointer (RFC 6901)"),
        (
            {"op": "merge", "path": "/a"},
            ("delta", 0, "op"),
            "one of 'add', 'remove', 'replace', 'move', 'copy', 'test'",
        ),
        (
            {"path": "/a"},
            ("delta", 0, "op"),
            "one of 'add', 'remove', 'replace', 'move', 'copy', 'test' (required)",
        ),
        ("add", ("delta", 0), "an object, not a string"),
    ],
)
def test_a_bad_patch_operation_is_named(operation: Any, path: Path, expected: str) -> None:
    err = event_error(event("STATE_DELTA", delta=[operation]))
    assert (err.path, err.expected) == (path, expected)


def test_a_long_hostile_pointer_is_refused_quickly_enough_to_test() -> None:
    # The pattern has nested stars; a failing match must not backtrack exponentially.
    err = event_error(event("STATE_DELTA", delta=[{"op": "remove", "path": "/a" * 20_000 + "~"}]))
    assert err.path == ("delta", 0, "path")


def test_messages_snapshot_checks_each_message_by_role() -> None:
    validate_event(event("MESSAGES_SNAPSHOT", messages=list(MESSAGES.values())))
    err = event_error(
        event(
            "MESSAGES_SNAPSHOT",
            messages=[MESSAGES["user"], {"id": "x", "role": "tool", "content": "c"}],
        )
    )
    assert (err.path, err.expected) == (("messages", 1, "toolCallId"), "a string (required)")


def test_run_started_input_is_a_run_agent_input() -> None:
    validate_event(event("RUN_STARTED", input=run_input(state=None, messages=[MESSAGES["assistant"]])))
    err = event_error(event("RUN_STARTED", input=run_input(messages=[{"id": "m", "role": "user"}])))
    assert (err.path, err.expected) == (
        ("input", "messages", 0, "content"),
        "a string or an array (required)",
    )
    err = event_error(event("RUN_STARTED", input={"threadId": "t1", "runId": "r1"}))
    assert (err.path, err.expected) == (("input", "messages"), "an array (required)")
    # The resume rule holds in the echo too; as an event fault it keeps the event's code.
    resume = [{"interruptId": "i1", "status": "cancelled", "payload": 1}]
    err = event_error(event("RUN_STARTED", input=run_input(resume=resume)))
    assert err.path == ("input", "resume", 0, "payload")
    assert err.code == RunErrorCode.INVALID_INPUT


INTERRUPT = {"id": "i1", "reason": "tool_call", "toolCallId": "tc1"}


def test_run_finished_outcomes_of_every_kind_pass() -> None:
    full_interrupt = {
        **INTERRUPT,
        "message": "Approve?",
        "responseSchema": {"type": "object"},
        "expiresAt": "2030-01-01T00:00:00Z",
        "metadata": {"ag-ui": None},
        "subagentRunId": "s1",
    }
    for outcome in (
        {"type": "success"},
        {"type": "success", "pendingToolCallIds": ["tc9"]},
        {"type": "interrupt", "interrupts": [INTERRUPT, full_interrupt]},
        {"type": "cancelled"},
    ):
        validate_event(event("RUN_FINISHED", outcome=outcome, result={"r": None}))
    usage = [{"provider": "openai", "model": "m", "inputTokens": 3, "outputTokens": 0, "totalTokens": 3}]
    validate_event(event("RUN_FINISHED", usage=usage))
    validate_event(event("RUN_ERROR", usage=[{}], code="AGENT_ERROR"))


@pytest.mark.parametrize(
    ("outcome", "path", "expected"),
    [
        ({"type": "interrupt", "interrupts": []}, ("outcome", "interrupts"), "at least 1 item"),
        ({"type": "interrupt"}, ("outcome", "interrupts"), "an array (required)"),
        ({"type": "error"}, ("outcome", "type"), "one of 'success', 'interrupt', 'cancelled'"),
        ({}, ("outcome", "type"), "one of 'success', 'interrupt', 'cancelled' (required)"),
        (None, ("outcome",), "an object, not null"),
        (
            {"type": "interrupt", "interrupts": [{"id": "i1"}]},
            ("outcome", "interrupts", 0, "reason"),
            "a string (required)",
        ),
        (
            {"type": "interrupt", "interrupts": [{**INTERRUPT, "responseSchema": []}]},
            ("outcome", "interrupts", 0, "responseSchema"),
            "an object, not an array",
        ),
        (
            {"type": "interrupt", "interrupts": [{**INTERRUPT, "expiresAt": 1700000000}]},
            ("outcome", "interrupts", 0, "expiresAt"),
            "a string, not a number",
        ),
        (
            {"type": "success", "pendingToolCallIds": [1]},
            ("outcome", "pendingToolCallIds", 0),
            "a string, not a number",
        ),
    ],
)
def test_a_bad_run_finished_outcome_is_named(outcome: Any, path: Path, expected: str) -> None:
    err = event_error(event("RUN_FINISHED", outcome=outcome))
    assert (err.path, err.expected) == (path, expected)


def test_token_counts_are_non_negative_safe_integers() -> None:
    err = event_error(event("RUN_FINISHED", usage=[{"inputTokens": -1}]))
    assert (err.path, err.expected) == (
        ("usage", 0, "inputTokens"),
        f"an integer from 0 to {MAX_SAFE}",
    )


def test_subagent_finished_outcomes() -> None:
    for outcome in (
        {"type": "success"},
        {"type": "suspended"},
        {"type": "suspended", "interruptIds": ["i1"]},
    ):
        validate_event(event("SUBAGENT_FINISHED", outcome=outcome))
    err = event_error(event("SUBAGENT_FINISHED", outcome={"type": "interrupt"}))
    assert (err.path, err.expected) == (("outcome", "type"), "one of 'success', 'suspended'")
    err = event_error(event("SUBAGENT_FINISHED", outcome={"type": "suspended", "interruptIds": "i1"}))
    assert (err.path, err.expected) == (("outcome", "interruptIds"), "an array, not a string")


def test_the_error_message_names_the_path_and_what_was_expected() -> None:
    err = event_error(event("RUN_FINISHED", outcome={"type": "interrupt", "interrupts": []}))
    assert err.message == "invalid event at $.outcome.interrupts: at least 1 item"
    assert str(err) == err.message


# --- RunAgentInput -------------------------------------------------------------------------


def test_a_minimal_input_passes() -> None:
    validate_input(run_input())


def test_a_full_input_passes() -> None:
    validate_input(
        run_input(
            protocolVersion="1.0.0",
            parentRunId="r1",
            state={"todo": [None]},
            messages=list(MESSAGES.values()),
            tools=[{"name": "f", "description": "d", "parameters": {"type": "object"}, "metadata": {}}],
            context=[{"description": "locale", "value": "fr"}],
            forwardedProps={"x": None},
            resume=[
                {"interruptId": "i1", "status": "resolved", "payload": {"approved": False}},
                {"interruptId": "i2", "status": "cancelled", "metadata": {"by": None}},
            ],
            somethingNew=[1, 2],
        )
    )


@pytest.mark.parametrize("state", [None, 0, "s", [], {"a": None}])
def test_state_may_be_null_or_any_value(state: Any) -> None:
    validate_input(run_input(state=state))


@pytest.mark.parametrize(
    ("fields", "path", "expected"),
    [
        ({"threadId": None}, ("threadId",), "a string, not null"),
        ({"runId": 7}, ("runId",), "a string, not a number"),
        ({"messages": None}, ("messages",), "an array, not null"),
        ({"tools": None}, ("tools",), "an array, not null"),
        ({"context": None}, ("context",), "an array, not null"),
        ({"forwardedProps": None}, ("forwardedProps",), "any JSON value but null"),
        ({"protocolVersion": None}, ("protocolVersion",), "a string, not null"),
        ({"parentRunId": None}, ("parentRunId",), "a string, not null"),
        ({"tools": [{"name": "f"}]}, ("tools", 0, "description"), "a string (required)"),
        (
            {"tools": [{"name": "f", "description": "d", "parameters": None}]},
            ("tools", 0, "parameters"),
            "any JSON value but null",
        ),
        (
            {"context": [{"description": "d", "value": 1}]},
            ("context", 0, "value"),
            "a string, not a number",
        ),
    ],
)
def test_a_bad_input_field_is_named(fields: dict[str, Any], path: Path, expected: str) -> None:
    err = input_error(run_input(**fields))
    assert (err.path, err.expected) == (path, expected)
    assert err.code == RunErrorCode.INVALID_INPUT


@pytest.mark.parametrize("field", ["threadId", "runId", "messages"])
def test_the_three_required_input_fields(field: str) -> None:
    value = run_input()
    del value[field]
    err = input_error(value)
    assert err.path == (field,)
    assert err.expected.endswith("(required)")


def test_the_input_error_message_reads_well() -> None:
    err = input_error(run_input(resume=[{"interruptId": "i1", "status": "approved"}]))
    assert err.message == "invalid RunAgentInput at $.resume[0].status: one of 'resolved', 'cancelled'"


# --- messages and content ------------------------------------------------------------------


@pytest.mark.parametrize("role", sorted(MESSAGES))
def test_a_minimal_message_of_each_role_passes(role: str) -> None:
    validate_input(run_input(messages=[MESSAGES[role]]))


@pytest.mark.parametrize(
    ("role", "field"),
    [(role, field) for role, example in sorted(MESSAGES.items()) for field in example if field != "role"],
)
def test_a_message_without_a_required_field_is_named(role: str, field: str) -> None:
    message = dict(MESSAGES[role])
    del message[field]
    err = input_error(run_input(messages=[MESSAGES["system"], message]))
    assert err.path == ("messages", 1, field)
    assert err.expected.endswith("(required)")


@pytest.mark.parametrize("role", sorted(MESSAGES))
def test_message_optional_fields_reject_null(role: str) -> None:
    definitions = schema_documents()["messages.json"]["definitions"]
    shape = definitions[f"{role.capitalize()}Message"]
    optional = [name for name in shape["properties"] if name not in shape["required"]]
    assert "metadata" in optional and "subagentRunId" in optional
    for name in optional:
        err = input_error(run_input(messages=[{**MESSAGES[role], name: None}]))
        assert err.path == ("messages", 0, name)


def test_an_unknown_or_missing_role_is_named() -> None:
    roles = "'developer', 'system', 'assistant', 'user', 'tool', 'activity', 'reasoning'"
    err = input_error(run_input(messages=[{"id": "m", "role": "robot", "content": "x"}]))
    assert (err.path, err.expected) == (("messages", 0, "role"), f"one of {roles}")
    err = input_error(run_input(messages=[{"id": "m", "content": "x"}]))
    assert (err.path, err.expected) == (("messages", 0, "role"), f"one of {roles} (required)")
    err = input_error(run_input(messages=["hello"]))
    assert (err.path, err.expected) == (("messages", 0), "an object, not a string")


def test_unknown_keys_are_accepted_on_messages_parts_and_sources() -> None:
    part = {"type": "image", "source": {**SOURCES["url"], "width": 3}, "alt": "x"}
    message = {**MESSAGES["user"], "content": [part], "language": "fr"}
    validate_input(run_input(messages=[message]))


def test_content_parts_of_every_kind_pass_in_user_and_tool_messages() -> None:
    user = {**MESSAGES["user"], "content": PARTS}
    tool = {**MESSAGES["tool"], "content": PARTS, "error": "partial"}
    validate_input(run_input(messages=[user, tool, {**MESSAGES["user"], "content": []}]))


def test_text_part_metadata_is_any_value_but_null() -> None:
    # Unlike every other metadata, a part's is z.any() in the reference schema.
    validate_input(
        run_input(messages=[{**MESSAGES["user"], "content": [{"type": "text", "text": "t", "metadata": [1]}]}])
    )
    message = {**MESSAGES["user"], "content": [{"type": "text", "text": "t", "metadata": None}]}
    err = input_error(run_input(messages=[message]))
    assert (err.path, err.expected) == (
        ("messages", 0, "content", 0, "metadata"),
        "any JSON value but null",
    )


@pytest.mark.parametrize(
    ("content", "path", "expected"),
    [
        ({"type": "text"}, ("content",), "a string or an array, not an object"),
        (
            [{"type": "pdf"}],
            ("content", 0, "type"),
            "one of 'text', 'image', 'audio', 'video', 'document'",
        ),
        (
            [{"text": "t"}],
            ("content", 0, "type"),
            "one of 'text', 'image', 'audio', 'video', 'document' (required)",
        ),
        ([{"type": "text"}], ("content", 0, "text"), "a string (required)"),
        ([{"type": "image"}], ("content", 0, "source"), "an object (required)"),
        (
            [{"type": "audio", "source": {"value": "x"}}],
            ("content", 0, "source", "type"),
            "one of 'data', 'url', 'file' (required)",
        ),
        (
            [{"type": "video", "source": {"type": "data", "value": "x"}}],
            ("content", 0, "source", "mimeType"),
            "a string (required)",
        ),
        (
            [{"type": "document", "source": {"type": "url", "value": None}}],
            ("content", 0, "source", "value"),
            "a string, not null",
        ),
        (
            [{"type": "image", "source": {"type": "file", "value": "f", "provider": 1}}],
            ("content", 0, "source", "provider"),
            "a string, not a number",
        ),
        (
            [{"type": "image", "source": "https://x"}],
            ("content", 0, "source"),
            "an object, not a string",
        ),
    ],
)
def test_a_bad_content_part_is_named(content: Any, path: Path, expected: str) -> None:
    err = input_error(run_input(messages=[{**MESSAGES["user"], "content": content}]))
    assert (err.path, err.expected) == (("messages", 0, *path), expected)


def test_only_user_and_tool_content_may_be_parts() -> None:
    for role in ("developer", "system", "assistant", "reasoning"):
        err = input_error(run_input(messages=[{**MESSAGES[role], "content": PARTS}]))
        assert (err.path, err.expected) == (("messages", 0, "content"), "a string, not an array")


def test_assistant_tool_calls() -> None:
    call = {
        "id": "tc1",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
        "metadata": {},
    }
    validate_input(run_input(messages=[{**MESSAGES["assistant"], "toolCalls": [call], "content": "ok"}]))
    bad = {**call, "type": "tool"}
    err = input_error(run_input(messages=[{**MESSAGES["assistant"], "toolCalls": [bad]}]))
    assert (err.path, err.expected) == (("messages", 0, "toolCalls", 0, "type"), "'function'")
    bad = {**call, "function": {"name": "f", "arguments": {}}}
    err = input_error(run_input(messages=[{**MESSAGES["assistant"], "toolCalls": [bad]}]))
    assert (err.path, err.expected) == (
        ("messages", 0, "toolCalls", 0, "function", "arguments"),
        "a string, not an object",
    )


# --- resume --------------------------------------------------------------------------------


def test_an_empty_resume_is_valid() -> None:
    validate_input(run_input(resume=[]))


@pytest.mark.parametrize(
    ("entry", "path", "expected"),
    [
        (
            {"interruptId": "i1", "status": "approved"},
            ("status",),
            "one of 'resolved', 'cancelled'",
        ),
        ({"interruptId": "i1"}, ("status",), "one of 'resolved', 'cancelled' (required)"),
        ({"status": "resolved"}, ("interruptId",), "a string (required)"),
        (
            {"interruptId": "i1", "status": "cancelled", "payload": {"why": "no"}},
            ("payload",),
            "no payload when status is 'cancelled'",
        ),
        (
            {"interruptId": "i1", "status": "cancelled", "payload": False},
            ("payload",),
            "no payload when status is 'cancelled'",
        ),
        (
            {"interruptId": "i1", "status": "cancelled", "payload": None},
            ("payload",),
            "any JSON value but null",
        ),
        (
            {"interruptId": "i1", "status": "resolved", "payload": None},
            ("payload",),
            "any JSON value but null",
        ),
        (
            {"interruptId": "i1", "status": "resolved", "metadata": None},
            ("metadata",),
            "an object, not null",
        ),
        (
            {"interruptId": "i1", "status": "cancelled", "metadata": []},
            ("metadata",),
            "an object, not an array",
        ),
        (
            {"interruptId": "i1", "status": "approved", "payload": 1},
            ("status",),
            "one of 'resolved', 'cancelled'",
        ),
        ("i1", (), "an object, not a string"),
    ],
)
def test_a_bad_resume_entry_is_invalid_resume(entry: Any, path: Path, expected: str) -> None:
    err = input_error(run_input(resume=[{"interruptId": "i0", "status": "resolved"}, entry]))
    assert (err.path, err.expected) == (("resume", 1, *path), expected)
    assert err.code == RunErrorCode.INVALID_RESUME
    # The part validator agrees, and places the fault where it is told the entry sits.
    with pytest.raises(InvalidInputError) as caught:
        validate_resume_entry(entry, at=("resume", 1))
    assert (caught.value.path, caught.value.expected) == (err.path, err.expected)
    assert caught.value.code == RunErrorCode.INVALID_RESUME


@pytest.mark.parametrize("resume", [None, {"interruptId": "i1", "status": "resolved"}])
def test_resume_that_is_not_an_array_is_invalid_resume(resume: Any) -> None:
    err = input_error(run_input(resume=resume))
    assert (err.path, err.code) == (("resume",), RunErrorCode.INVALID_RESUME)
    assert err.expected.startswith("an array, not ")


def test_a_fault_outside_resume_keeps_invalid_input() -> None:
    err = input_error(run_input(threadId=None, resume=[{"interruptId": "i1", "status": "x"}]))
    assert (err.path, err.code) == (("threadId",), RunErrorCode.INVALID_INPUT)
    assert InvalidInputError.code == RunErrorCode.INVALID_INPUT  # the class default is untouched


def test_a_denial_is_a_resolved_payload() -> None:
    validate_resume_entry({"interruptId": "i1", "status": "resolved", "payload": {"approved": False}})
    validate_resume_entry({"interruptId": "i1", "status": "cancelled", "metadata": {"reason": None}})


def test_validate_interrupt() -> None:
    validate_interrupt(INTERRUPT)
    validate_interrupt({"id": "i1", "reason": "acme:review", "unknown": True})
    with pytest.raises(InvalidEventError) as caught:
        validate_interrupt(
            {"id": "i1", "reason": "confirmation", "metadata": None},
            at=("outcome", "interrupts", 0),
        )
    assert caught.value.path == ("outcome", "interrupts", 0, "metadata")


# --- capabilities --------------------------------------------------------------------------


def test_a_full_capabilities_document_passes() -> None:
    validate_capabilities({})
    validate_capabilities(
        {
            "identity": {
                "name": "a",
                "type": "b",
                "description": "c",
                "version": "1",
                "provider": "p",
                "documentationUrl": "https://x",
                "metadata": {},
            },
            "transport": {
                "streaming": True,
                "websocket": False,
                "httpBinary": False,
                "pushNotifications": False,
                "resumable": True,
            },
            "tools": {
                "supported": True,
                "items": [{"name": "f", "description": "d"}],
                "parallelCalls": True,
                "clientProvided": True,
            },
            "output": {"structuredOutput": True, "supportedMimeTypes": ["text/plain"]},
            "state": {"snapshots": True, "deltas": True, "memory": False, "persistentState": True},
            "multiAgent": {
                "supported": True,
                "delegation": False,
                "handoffs": False,
                "subagents": [{"name": "r", "description": "research"}],
            },
            "reasoning": {"supported": True, "streaming": True, "encrypted": False},
            "multimodal": {
                "input": {"image": True, "audio": False, "video": False, "pdf": True, "file": True},
                "output": {"image": False, "audio": False},
            },
            "execution": {
                "codeExecution": False,
                "sandboxed": True,
                "maxIterations": 10,
                "maxExecutionTime": 0,
            },
            "humanInTheLoop": {
                "supported": True,
                "approvals": True,
                "interventions": False,
                "feedback": False,
                "interrupts": True,
                "approveWithEdits": True,
            },
            "custom": {"anything": [None]},
            "future": 1,
        }
    )


@pytest.mark.parametrize(
    ("value", "path", "expected"),
    [
        ({"custom": None}, ("custom",), "an object, not null"),
        (
            {"humanInTheLoop": {"interrupts": "yes"}},
            ("humanInTheLoop", "interrupts"),
            "a boolean, not a string",
        ),
        (
            {"execution": {"maxIterations": -1}},
            ("execution", "maxIterations"),
            f"an integer from 0 to {MAX_SAFE}",
        ),
        (
            {"tools": {"items": [{"name": "f"}]}},
            ("tools", "items", 0, "description"),
            "a string (required)",
        ),
        (
            {"multiAgent": {"subagents": [{}]}},
            ("multiAgent", "subagents", 0, "name"),
            "a string (required)",
        ),
        ([], (), "an object, not an array"),
    ],
)
def test_bad_capabilities_are_named(value: Any, path: Path, expected: str) -> None:
    with pytest.raises(WireError) as caught:
        validate_capabilities(value)
    assert (caught.value.path, caught.value.expected) == (path, expected)


# --- hostile values ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([], "an object, not an array"),
        ("{}", "an object, not a string"),
        (None, "an object, not null"),
        (3, "an object, not a number"),
        (2.5, "an object, not the number 2.5"),
        (True, "an object, not a boolean"),
        (b"{}", "an object, not a Python bytes"),
    ],
)
def test_a_document_that_is_not_an_object_is_refused(value: Any, expected: str) -> None:
    for validate, error in (
        (validate_input, InvalidInputError),
        (validate_event, InvalidEventError),
    ):
        with pytest.raises(error) as caught:
            validate(value)
        assert (caught.value.path, caught.value.expected) == ((), expected)


def test_deep_nesting_in_free_json_is_not_walked() -> None:
    """Free JSON has an empty schema, so nothing recurses into it however deep it goes."""
    for deep in (nested_lists(5000), nested_objects(5000)):
        validate_input(
            run_input(
                state=deep,
                forwardedProps=deep,
                messages=[{**MESSAGES["activity"], "content": {"deep": deep}, "metadata": {"k": deep}}],
                tools=[{"name": "f", "description": "d", "parameters": deep}],
                resume=[
                    {
                        "interruptId": "i1",
                        "status": "resolved",
                        "payload": deep,
                        "metadata": {"m": deep},
                    }
                ],
            )
        )
        for event_type, field in (
            ("STATE_SNAPSHOT", "snapshot"),
            ("CUSTOM", "value"),
            ("RAW", "event"),
        ):
            validate_event(event(event_type, **{field: deep}, rawEvent=deep))
        validate_event(
            event(
                "RUN_FINISHED",
                result=deep,
                outcome={
                    "type": "interrupt",
                    "interrupts": [{**INTERRUPT, "responseSchema": {"deep": deep}}],
                },
            )
        )
        validate_event(event("STATE_DELTA", delta=[{"op": "add", "path": "", "value": deep}]))


def test_deep_nesting_where_a_shape_is_expected_is_refused_without_recursion() -> None:
    deep = nested_lists(5000)
    assert input_error(deep).path == ()
    assert input_error(run_input(threadId=deep)).expected == "a string, not an array"
    assert input_error(run_input(messages=deep)).path == ("messages", 0)
    assert input_error(run_input(messages=[{**MESSAGES["user"], "content": deep}])).path == (
        "messages",
        0,
        "content",
        0,
    )
    assert input_error(run_input(resume=[{"interruptId": "i", "status": deep}])).path == (
        "resume",
        0,
        "status",
    )
    assert event_error({"type": deep}).path == ("type",)
    assert event_error(nested_objects(5000)).path == ("type",)


def test_values_json_cannot_hold_become_our_error() -> None:
    err = input_error(run_input(threadId=object()))
    assert (err.path, err.expected) == (("threadId",), "a string, not a Python object")
    err = input_error(run_input(messages=[{1: "x", "id": "m", "role": "user", "content": "c"}, {"id": ("m",)}]))
    assert err.path == ("messages", 1, "role")


class _Hostile(dict[str, Any]):
    """A mapping that fails when asked anything: no exception of its own may escape."""

    def __contains__(self, key: object) -> bool:
        raise RuntimeError("no")

    def keys(self) -> Any:
        raise RuntimeError("no")


def test_no_exception_but_ours_escapes() -> None:
    for validate, error in (
        (validate_input, InvalidInputError),
        (validate_event, InvalidEventError),
        (validate_capabilities, WireError),
    ):
        with pytest.raises(error) as caught:
            validate(_Hostile(type="RUN_ERROR", message="m"))
        assert caught.value.path == ()
        assert "RuntimeError" in caught.value.expected
    err = input_error(run_input(messages=[_Hostile(id="m", role="user", content="c")]))
    assert err.path == ("messages", 0)


# --- generated documents -------------------------------------------------------------------

_GENERATED = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])


@_GENERATED
@given(strategies.run_agent_inputs())
def test_generated_inputs_pass(value: dict[str, Any]) -> None:
    validate_input(value)


@_GENERATED
@given(strategies.events())
def test_generated_events_pass(value: dict[str, Any]) -> None:
    validate_event(value)


@_GENERATED
@given(strategies.capabilities())
def test_generated_capabilities_pass(value: dict[str, Any]) -> None:
    validate_capabilities(value)


def _standard(node: Any) -> Any:
    """A schema file as any JSON Schema validator reads it: x-dispatch becomes a oneOf."""
    if isinstance(node, list):
        return [_standard(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _standard(value) for key, value in node.items()}
    if "x-dispatch" in node:
        out["oneOf"] = [{"$ref": ref} for ref in node["x-dispatch"]["shapes"].values()]
    return out


def _reference_validators() -> dict[str, Callable[[Any], bool]]:
    documents = {name: _standard(doc) for name, doc in schema_documents().items()}
    registry: Registry[Any] = Registry().with_resources(
        (doc["$id"], DRAFT7.create_resource(doc)) for doc in documents.values()
    )
    base = documents["events.json"]["$id"].rsplit("/", 1)[0]

    def validator(ref: str) -> Callable[[Any], bool]:
        checker = jsonschema.Draft7Validator({"$ref": f"{base}/{ref}"}, registry=registry)
        return checker.is_valid

    return {
        "input": validator("input.json#/definitions/RunAgentInput"),
        "event": validator("events.json#/definitions/Event"),
        "capabilities": validator("capabilities.json#/definitions/AgentCapabilities"),
    }


_REFERENCE = _reference_validators()
_OURS: dict[str, Callable[[Any], None]] = {
    "input": validate_input,
    "event": validate_event,
    "capabilities": validate_capabilities,
}

# Replacement values aimed at the schemas' edges: nulls, wrong kinds, tag values of other
# union members, integer bounds. Strings avoid a lone "\n": Python's re (which jsonschema
# uses as is) lets "$" match before it, JavaScript and fastjsonschema do not.
_HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**54), max_value=2**54),
    st.sampled_from([1.0, 1.5, -0.0, 2.0**53, 1e300]),
    st.text("ab/~01", max_size=4),
    st.sampled_from(
        [
            "resolved",
            "cancelled",
            "user",
            "tool",
            "assistant",
            "text",
            "image",
            "url",
            "data",
            "file",
            "interrupt",
            "success",
            "suspended",
            "add",
            "move",
            "function",
            "reasoning",
            "RUN_ERROR",
        ]
    ),
    # Built afresh each time: a shared container could be mutated into itself.
    st.builds(list),
    st.builds(dict),
    st.builds(lambda: [{}]),
)


def _locations(value: Any, path: Path = ()) -> Iterator[Path]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _locations(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _locations(item, (*path, index))


@st.composite
def _mutated(draw: st.DrawFn, documents: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A valid document with one value replaced, one key deleted, or both at once."""
    value = copy.deepcopy(draw(documents))
    for _ in range(draw(st.integers(min_value=1, max_value=2))):
        where = draw(st.sampled_from(list(_locations(value))))
        if not where:
            continue
        parent = value
        for step in where[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[where[-1]]
        else:
            parent[where[-1]] = draw(_HOSTILE)
    return value


def _agree(kind: str, value: Any) -> None:
    try:
        _OURS[kind](value)
        ours = True
    except WireError:
        ours = False
    assert ours == _REFERENCE[kind](value)


@_GENERATED
@given(_mutated(strategies.run_agent_inputs()))
def test_inputs_get_the_verdict_of_a_standard_validator(value: dict[str, Any]) -> None:
    """Dispatch by tag and the lean compiled code decide as jsonschema does on the same files."""
    _agree("input", value)


@_GENERATED
@given(_mutated(strategies.events()))
def test_events_get_the_verdict_of_a_standard_validator(value: dict[str, Any]) -> None:
    _agree("event", value)


@_GENERATED
@given(_mutated(strategies.capabilities()))
def test_capabilities_get_the_verdict_of_a_standard_validator(value: dict[str, Any]) -> None:
    _agree("capabilities", value)
