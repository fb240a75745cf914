"""Hypothesis strategies for valid AG-UI 1.0 wire documents.

Each strategy draws a plain JSON value (dicts with camelCase keys, lists, str, int, float,
bool, None) shaped the way a reference producer sends it and accepted by the zod schemas of
``@ag-ui/core`` 1.0.0: an optional key is either absent or valid (``null`` only where a
schema allows it), metadata is an object, an interrupt outcome holds at least one interrupt,
a cancelled resume entry has no payload. Objects are open, so now and then one carries an
unknown key (never one its schema knows) whose value must survive a round trip.

``RunAgentInput.state`` is never ``null`` here: zod normalises it to absent, so it cannot
round-trip (the codec tests pin that behaviour separately).

Every strategy is built once and cached, so drawing from one inside a test stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, timedelta, timezone
from functools import cache
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

__all__ = [
    "EVENT_TYPES",
    "MAX_SAFE_INTEGER",
    "MESSAGE_ROLES",
    "capabilities",
    "content_parts",
    "event_of_type",
    "events",
    "interrupts",
    "json_objects",
    "json_values",
    "messages",
    "non_null_json_values",
    "resume_entries",
    "run_agent_inputs",
    "run_finished_outcomes",
    "texts",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``: the bound of every ``z.int()`` in the schemas."""

MESSAGE_ROLES = ("developer", "system", "assistant", "user", "tool", "activity", "reasoning")

# Surrogate code points cannot be encoded as UTF-8, so no producer can send them in a string.
_characters = st.characters(exclude_categories=("Cs",))


@cache
def texts(*, min_size: int = 0, max_size: int = 12) -> SearchStrategy[str]:
    """Strings as JSON carries them: any Unicode scalar value, NUL and emoji included."""
    return st.text(_characters, min_size=min_size, max_size=max_size)


_ids = st.one_of(
    texts(max_size=8),
    st.uuids().map(str),
    st.from_regex(r"[a-z]{1,6}-[0-9]{1,4}", fullmatch=True),
)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
    st.sampled_from([0, -1, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER]),
    # Finite floats print in their shortest form and parse back to the same double.
    st.floats(allow_nan=False, allow_infinity=False),
    texts(),
)


@cache
def json_values(*, max_leaves: int = 10) -> SearchStrategy[Any]:
    """Any JSON value, ``null`` inside containers included."""
    return st.recursive(
        _scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(texts(max_size=6), children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


@cache
def non_null_json_values() -> SearchStrategy[Any]:
    """Any JSON value except a top-level ``null`` (fields typed ``any`` but refined non-null)."""
    return json_values().filter(lambda value: value is not None)


@cache
def json_objects(*, max_size: int = 4) -> SearchStrategy[dict[str, Any]]:
    """A JSON object of free JSON values (metadata, activity content, responseSchema)."""
    return st.dictionaries(texts(max_size=8), json_values(max_leaves=6), max_size=max_size)


_metadata = json_objects(max_size=3)
_timestamps = st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER)
_counts = st.integers(min_value=0, max_value=MAX_SAFE_INTEGER)

# Keys a vendor might add. Some look like known keys in another spelling on purpose: they are
# still unknown to the object and must come back untouched.
_vendor_keys = st.one_of(
    st.sampled_from(["x-vendor", "x-trace-id", "extra", "_meta", "ag-ui", "tool_call_id", "$ref"]),
    texts(min_size=1, max_size=10),
)


def _object(
    required: Mapping[str, SearchStrategy[Any]],
    optional: Mapping[str, SearchStrategy[Any]] | None = None,
) -> SearchStrategy[dict[str, Any]]:
    """An open object: every required key, any subset of the optional ones, and sometimes
    a key the schema does not know."""
    optional = dict(optional or {})
    known = frozenset(required) | frozenset(optional)
    base = st.fixed_dictionaries(dict(required), optional=optional)
    unknown = st.dictionaries(
        _vendor_keys.filter(lambda key: key not in known),
        json_values(max_leaves=4),
        min_size=1,
        max_size=2,
    )

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        out = draw(base)
        if draw(st.integers(min_value=0, max_value=4)) == 0:
            out.update(draw(unknown))
        return out

    return build()


# --- content parts ---------------------------------------------------------------------------

_mime_types = st.sampled_from(["image/png", "audio/wav", "video/mp4", "application/pdf", "text/plain"])
_sources = st.one_of(
    _object({"type": st.just("data"), "value": texts(max_size=16), "mimeType": _mime_types}),
    _object({"type": st.just("url"), "value": texts(max_size=16)}, {"mimeType": _mime_types}),
    _object(
        {"type": st.just("file"), "value": texts(max_size=16)},
        {"provider": st.sampled_from(["openai", "anthropic", "gemini"]), "mimeType": _mime_types},
    ),
)


@cache
def content_parts() -> SearchStrategy[dict[str, Any]]:
    """One part of a message body: text, image, audio, video or document."""
    part_optional = {"id": _ids, "metadata": non_null_json_values()}
    media = [
        _object({"type": st.just(kind), "source": _sources}, part_optional)
        for kind in ("image", "audio", "video", "document")
    ]
    return st.one_of(_object({"type": st.just("text"), "text": texts()}, part_optional), *media)


@cache
def _bodies() -> SearchStrategy[str | list[dict[str, Any]]]:
    return st.one_of(texts(), st.lists(content_parts(), max_size=3))


# --- messages --------------------------------------------------------------------------------


@cache
def _tool_calls() -> SearchStrategy[dict[str, Any]]:
    return _object(
        {
            "id": _ids,
            "type": st.just("function"),
            "function": _object({"name": texts(min_size=1), "arguments": texts()}),
        },
        {"encryptedValue": texts(), "metadata": _metadata},
    )


@cache
def _message(role: str) -> SearchStrategy[dict[str, Any]]:
    common: dict[str, SearchStrategy[Any]] = {
        "subagentRunId": _ids,
        "metadata": _metadata,
        "encryptedValue": texts(),
    }
    named = {**common, "name": texts()}
    head = {"id": _ids, "role": st.just(role)}
    if role in ("developer", "system"):
        return _object({**head, "content": texts()}, named)
    if role == "assistant":
        return _object(head, {**named, "content": texts(), "toolCalls": st.lists(_tool_calls(), max_size=3)})
    if role == "user":
        return _object({**head, "content": _bodies()}, named)
    if role == "tool":
        return _object({**head, "content": _bodies(), "toolCallId": _ids}, {**common, "error": texts()})
    if role == "activity":
        return _object(
            {**head, "activityType": texts(), "content": json_objects()},
            {"subagentRunId": _ids, "metadata": _metadata},
        )
    if role == "reasoning":
        return _object({**head, "content": texts()}, common)
    raise ValueError(f"not a message role: {role!r}")


@cache
def messages(role: str | None = None) -> SearchStrategy[dict[str, Any]]:
    """A message of the given role, or of any of the seven."""
    if role is not None:
        return _message(role)
    return st.one_of(*(_message(r) for r in MESSAGE_ROLES))


# --- interrupts, resumes, inputs -------------------------------------------------------------

_reasons = st.one_of(
    st.sampled_from(["tool_call", "input_required", "confirmation", "langgraph:database_modification"]),
    texts(),
)
_offsets = st.sampled_from([UTC, timezone(timedelta(hours=9)), timezone(-timedelta(hours=5, minutes=30))])
_rfc3339 = st.datetimes(timezones=_offsets).map(lambda moment: moment.isoformat())
_response_schemas = st.one_of(
    st.just(
        {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}},
            "required": ["approved"],
        }
    ),
    st.just({"type": "boolean"}),
    json_objects(),
)


@cache
def interrupts() -> SearchStrategy[dict[str, Any]]:
    """An Interrupt."""
    return _object(
        {"id": _ids, "reason": _reasons},
        {
            "message": texts(),
            "toolCallId": _ids,
            "responseSchema": _response_schemas,
            "expiresAt": st.one_of(_rfc3339, texts()),
            "metadata": _metadata,
            "subagentRunId": _ids,
        },
    )


@cache
def resume_entries() -> SearchStrategy[dict[str, Any]]:
    """A resume entry: resolved with an optional payload, or cancelled without one."""
    resolved = _object(
        {"interruptId": _ids, "status": st.just("resolved")},
        {"payload": non_null_json_values(), "metadata": _metadata},
    )
    cancelled = _object({"interruptId": _ids, "status": st.just("cancelled")}, {"metadata": _metadata})
    return st.one_of(resolved, cancelled)


@cache
def _tools() -> SearchStrategy[dict[str, Any]]:
    return _object(
        {"name": texts(min_size=1), "description": texts()},
        {"parameters": st.one_of(_response_schemas, non_null_json_values()), "metadata": _metadata},
    )


@cache
def run_agent_inputs() -> SearchStrategy[dict[str, Any]]:
    """A RunAgentInput (``state`` never ``null``: see the module docstring)."""
    return _object(
        {"threadId": _ids, "runId": _ids, "messages": st.lists(messages(), max_size=4)},
        {
            "protocolVersion": st.sampled_from(["1.0", "1.0.0", "0.0.40"]),
            "parentRunId": _ids,
            "state": non_null_json_values(),
            "tools": st.lists(_tools(), max_size=2),
            "context": st.lists(_object({"description": texts(), "value": texts()}), max_size=2),
            "forwardedProps": non_null_json_values(),
            "resume": st.lists(resume_entries(), max_size=3),
        },
    )


# --- capabilities ----------------------------------------------------------------------------


@cache
def _flags(*names: str) -> SearchStrategy[dict[str, Any]]:
    return _object({}, {name: st.booleans() for name in names})


@cache
def capabilities() -> SearchStrategy[dict[str, Any]]:
    """An AgentCapabilities document."""
    return _object(
        {},
        {
            "identity": _object(
                {},
                {
                    "name": texts(),
                    "type": texts(),
                    "description": texts(),
                    "version": texts(),
                    "provider": texts(),
                    "documentationUrl": texts(),
                    "metadata": _metadata,
                },
            ),
            "transport": _flags("streaming", "websocket", "httpBinary", "pushNotifications", "resumable"),
            "tools": _object(
                {},
                {
                    "supported": st.booleans(),
                    "items": st.lists(_tools(), max_size=2),
                    "parallelCalls": st.booleans(),
                    "clientProvided": st.booleans(),
                },
            ),
            "output": _object(
                {},
                {
                    "structuredOutput": st.booleans(),
                    "supportedMimeTypes": st.lists(_mime_types, max_size=3),
                },
            ),
            "state": _flags("snapshots", "deltas", "memory", "persistentState"),
            "multiAgent": _object(
                {},
                {
                    "supported": st.booleans(),
                    "delegation": st.booleans(),
                    "handoffs": st.booleans(),
                    "subagents": st.lists(_object({"name": texts()}, {"description": texts()}), max_size=2),
                },
            ),
            "reasoning": _flags("supported", "streaming", "encrypted"),
            "multimodal": _object(
                {},
                {
                    "input": _flags("image", "audio", "video", "pdf", "file"),
                    "output": _flags("image", "audio"),
                },
            ),
            "execution": _object(
                {},
                {
                    "codeExecution": st.booleans(),
                    "sandboxed": st.booleans(),
                    "maxIterations": _counts,
                    "maxExecutionTime": _counts,
                },
            ),
            "humanInTheLoop": _flags(
                "supported",
                "approvals",
                "interventions",
                "feedback",
                "interrupts",
                "approveWithEdits",
            ),
            "custom": json_objects(),
        },
    )


# --- events ----------------------------------------------------------------------------------

_text_roles = st.sampled_from(["developer", "system", "assistant", "user"])


@cache
def _json_pointers() -> SearchStrategy[str]:
    token = texts(max_size=5).map(lambda s: s.replace("~", "~0").replace("/", "~1"))
    return st.lists(token, max_size=3).map(lambda tokens: "".join("/" + t for t in tokens))


@cache
def _patch() -> SearchStrategy[list[dict[str, Any]]]:
    pointer = _json_pointers()
    # A patch's ``value`` may be null: only its absence is refused.
    with_value = [
        _object({"op": st.just(op), "path": pointer, "value": json_values(max_leaves=4)})
        for op in ("add", "replace", "test")
    ]
    with_from = [_object({"op": st.just(op), "from": pointer, "path": pointer}) for op in ("move", "copy")]
    remove = _object({"op": st.just("remove"), "path": pointer})
    return st.lists(st.one_of(*with_value, *with_from, remove), max_size=3)


@cache
def _token_usage() -> SearchStrategy[dict[str, Any]]:
    return _object(
        {},
        {
            "provider": st.sampled_from(["openai", "anthropic"]),
            "model": texts(),
            "inputTokens": _counts,
            "outputTokens": _counts,
            "totalTokens": _counts,
            "reasoningTokens": _counts,
            "cachedInputTokens": _counts,
            "cacheWriteInputTokens": _counts,
        },
    )


@cache
def run_finished_outcomes() -> SearchStrategy[dict[str, Any]]:
    """The ``outcome`` of RUN_FINISHED: success, interrupt (never empty) or cancelled."""
    return st.one_of(
        _object({"type": st.just("success")}, {"pendingToolCallIds": st.lists(_ids, max_size=3)}),
        _object(
            {
                "type": st.just("interrupt"),
                "interrupts": st.lists(interrupts(), min_size=1, max_size=3),
            }
        ),
        _object({"type": st.just("cancelled")}),
    )


_subagent_outcomes = st.one_of(
    _object({"type": st.just("success")}),
    _object({"type": st.just("suspended")}, {"interruptIds": st.lists(_ids, max_size=3)}),
)

# Per event type: (required fields, optional fields, attributable). Attributable events may
# carry ``subagentRunId``; run-scoped events and MESSAGES_SNAPSHOT may not, and the
# SUBAGENT_* events require it.
_EVENT_FIELDS: dict[str, tuple[dict[str, SearchStrategy[Any]], dict[str, SearchStrategy[Any]], bool]] = {
    "TEXT_MESSAGE_START": ({"messageId": _ids}, {"role": _text_roles, "name": texts()}, True),
    "TEXT_MESSAGE_CONTENT": ({"messageId": _ids, "delta": texts()}, {}, True),
    "TEXT_MESSAGE_END": ({"messageId": _ids}, {}, True),
    "TEXT_MESSAGE_CHUNK": (
        {},
        {"messageId": _ids, "role": _text_roles, "delta": texts(), "name": texts()},
        True,
    ),
    "TOOL_CALL_START": (
        {"toolCallId": _ids, "toolCallName": texts(min_size=1)},
        {"parentMessageId": _ids},
        True,
    ),
    "TOOL_CALL_ARGS": ({"toolCallId": _ids, "delta": texts()}, {}, True),
    "TOOL_CALL_END": ({"toolCallId": _ids}, {}, True),
    "TOOL_CALL_CHUNK": (
        {},
        {"toolCallId": _ids, "toolCallName": texts(), "parentMessageId": _ids, "delta": texts()},
        True,
    ),
    "TOOL_CALL_RESULT": (
        {"messageId": _ids, "toolCallId": _ids, "content": _bodies()},
        {"role": st.just("tool")},
        True,
    ),
    "STATE_SNAPSHOT": ({"snapshot": json_values()}, {}, True),
    "STATE_DELTA": ({"delta": _patch()}, {}, True),
    "MESSAGES_SNAPSHOT": ({"messages": st.lists(messages(), max_size=4)}, {}, False),
    "ACTIVITY_SNAPSHOT": (
        {"messageId": _ids, "activityType": texts(), "content": json_objects()},
        {"replace": st.booleans()},
        True,
    ),
    "ACTIVITY_DELTA": ({"messageId": _ids, "activityType": texts(), "patch": _patch()}, {}, True),
    "RAW": ({"event": json_values()}, {"source": texts()}, True),
    "CUSTOM": ({"name": texts(), "value": json_values()}, {}, True),
    "RUN_STARTED": (
        {"threadId": _ids, "runId": _ids},
        {
            "protocolVersion": st.sampled_from(["1.0", "1.0.0"]),
            "parentRunId": _ids,
            "input": run_agent_inputs(),
        },
        False,
    ),
    "RUN_FINISHED": (
        {"threadId": _ids, "runId": _ids},
        {
            "result": non_null_json_values(),
            "outcome": run_finished_outcomes(),
            "usage": st.lists(_token_usage(), max_size=2),
        },
        False,
    ),
    "RUN_ERROR": (
        {"message": texts()},
        {
            "code": st.one_of(st.sampled_from(["PENDING_INTERRUPTS", "INVALID_INPUT"]), texts()),
            "usage": st.lists(_token_usage(), max_size=2),
        },
        False,
    ),
    "STEP_STARTED": ({"stepName": texts()}, {}, True),
    "STEP_FINISHED": ({"stepName": texts()}, {}, True),
    "REASONING_START": ({"messageId": _ids}, {}, True),
    "REASONING_MESSAGE_START": ({"messageId": _ids, "role": st.just("reasoning")}, {}, True),
    "REASONING_MESSAGE_CONTENT": ({"messageId": _ids, "delta": texts()}, {}, True),
    "REASONING_MESSAGE_END": ({"messageId": _ids}, {}, True),
    "REASONING_MESSAGE_CHUNK": ({}, {"messageId": _ids, "delta": texts()}, True),
    "REASONING_END": ({"messageId": _ids}, {}, True),
    "REASONING_ENCRYPTED_VALUE": (
        {
            "subtype": st.sampled_from(["tool-call", "message"]),
            "entityId": _ids,
            "encryptedValue": texts(),
        },
        {},
        True,
    ),
    "SUBAGENT_STARTED": (
        {"subagentRunId": _ids, "name": texts()},
        {
            "description": texts(),
            "parentSubagentRunId": _ids,
            "parentToolCallId": _ids,
            "parentMessageId": _ids,
        },
        False,
    ),
    "SUBAGENT_FINISHED": (
        {"subagentRunId": _ids},
        {"result": non_null_json_values(), "outcome": _subagent_outcomes},
        False,
    ),
    "SUBAGENT_ERROR": ({"subagentRunId": _ids, "message": texts()}, {"code": texts()}, False),
}

EVENT_TYPES: tuple[str, ...] = tuple(_EVENT_FIELDS)
"""The 31 event types of AG-UI 1.0, in the order of ``@ag-ui/core``'s ``EventType``."""

_BASE_EVENT_OPTIONAL: dict[str, SearchStrategy[Any]] = {
    "timestamp": _timestamps,
    "rawEvent": non_null_json_values(),
    "metadata": _metadata,
}


@cache
def event_of_type(event_type: str) -> SearchStrategy[dict[str, Any]]:
    """An event of the given wire ``type``."""
    required, optional, attributable = _EVENT_FIELDS[event_type]
    extra_optional = {"subagentRunId": _ids} if attributable else {}
    return _object(
        {"type": st.just(event_type), **required},
        {**_BASE_EVENT_OPTIONAL, **extra_optional, **optional},
    )


_all_events = st.one_of(*(event_of_type(event_type) for event_type in EVENT_TYPES))


def events() -> SearchStrategy[dict[str, Any]]:
    """An event of any of the 31 types."""
    return _all_events
