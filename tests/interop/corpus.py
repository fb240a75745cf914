"""A hand-written corpus of AG-UI wire documents, valid and invalid, aimed at the edges.

Every case is a whole document one of the codec's entry points reads: an event
(``event_from_dict``) or a ``RunAgentInput`` (``input_from_dict``). Interrupts and resume
entries are tested inside the smallest document that carries them (a ``RUN_FINISHED`` with an
interrupt outcome, a ``RunAgentInput`` with a ``resume``); such a case also keeps the bare part
in ``part``, so each reference can be asked about it on its own too.

Nothing here says what the verdict should be: the differential tests ask both reference
implementations and compare. The cases include the JSON examples of the seed document
(``/work/shared/seeds``), verbatim, from :mod:`tests.seed`; ``SEED_RUN_FINISHED`` and
``SEED_RESUME_INPUTS`` are re-exported from there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from tests.seed import APPROVE_WITH_ANY_EDITS_SCHEMA, SEED_RESUME_INPUTS, SEED_RUN_FINISHED

__all__ = [
    "CASES",
    "CASES_BY_NAME",
    "SEED_RESUME_INPUTS",
    "SEED_RUN_FINISHED",
    "Case",
    "PartKind",
    "WireKind",
]

WireKind = Literal["event", "input"]
PartKind = Literal["Interrupt", "ResumeEntry"]


@dataclass(frozen=True, slots=True)
class Case:
    """One document and, when the case is about an interrupt or a resume entry, that part."""

    name: str
    kind: WireKind
    value: Any
    part: tuple[PartKind, Any] | None = None


# --- building blocks ---------------------------------------------------------------------

TS = 1_700_000_000_000
RAW = {"provider": "openai", "chunk": {"id": "c-1", "choices": []}}
META = {"trace": "t-1", "nothing": None, "nested": {"list": [1, "two", None]}}
MAX_BASE = {"timestamp": TS, "rawEvent": RAW, "metadata": META}
"""The optional fields every event may carry, all set."""
MAX_ATTR = {**MAX_BASE, "subagentRunId": "sub-1"}
"""The same plus subagent attribution, for the events that are attributable."""

INTERRUPT_MIN = {"id": "int-1", "reason": "confirmation"}
INTERRUPT_MAX = {
    "id": "int-2",
    "reason": "tool_call",
    "message": "Send the email?",
    "toolCallId": "tc-1",
    "responseSchema": APPROVE_WITH_ANY_EDITS_SCHEMA,
    "expiresAt": "2026-04-20T17:00:00Z",
    "metadata": {"langgraph": {"checkpointId": "ckpt-1"}, "gone": None},
    "subagentRunId": "sub-1",
}

DATA_SOURCE = {"type": "data", "value": "aGVsbG8=", "mimeType": "image/png"}
URL_SOURCE = {"type": "url", "value": "https://example.com/cat.png", "mimeType": "image/png"}
FILE_SOURCE = {
    "type": "file",
    "value": "file-abc",
    "provider": "openai",
    "mimeType": "application/pdf",
}

CONTENT_PARTS = [
    {"type": "text", "text": "look at these", "id": "p-1", "metadata": {"lang": "en"}},
    {"type": "image", "source": DATA_SOURCE, "id": "p-2", "metadata": {"alt": "a cat"}},
    {"type": "image", "source": {"type": "url", "value": "https://example.com/x.png"}},
    {"type": "audio", "source": URL_SOURCE},
    {
        "type": "video",
        "source": {"type": "url", "value": "https://example.com/v.mp4", "mimeType": "video/mp4"},
    },
    {"type": "document", "source": FILE_SOURCE},
    {"type": "document", "source": {"type": "file", "value": "file-min"}},
]

TOOL_CALL = {
    "id": "tc-1",
    "type": "function",
    "function": {"name": "send_email", "arguments": '{"to":"a@example.com"}'},
}
TOOL_CALL_MAX = {**TOOL_CALL, "id": "tc-2", "encryptedValue": "enc", "metadata": {"k": None}}

MESSAGES = {
    "developer": {"id": "m-dev", "role": "developer", "content": "be brief"},
    "system": {"id": "m-sys", "role": "system", "content": "you are helpful", "name": "sys"},
    "assistant-text": {"id": "m-a1", "role": "assistant", "content": "hello"},
    "assistant-tools-only": {
        "id": "m-a2",
        "role": "assistant",
        "toolCalls": [TOOL_CALL, TOOL_CALL_MAX],
    },
    "assistant-bare": {"id": "m-a3", "role": "assistant"},
    "user-text": {"id": "m-u1", "role": "user", "content": "hi"},
    "user-parts": {"id": "m-u2", "role": "user", "content": CONTENT_PARTS},
    "user-empty-parts": {"id": "m-u3", "role": "user", "content": []},
    "tool": {"id": "m-t1", "role": "tool", "content": "sent", "toolCallId": "tc-1"},
    "tool-error": {
        "id": "m-t2",
        "role": "tool",
        "content": "",
        "toolCallId": "tc-2",
        "error": "SMTP down",
    },
    "tool-parts": {
        "id": "m-t3",
        "role": "tool",
        "content": CONTENT_PARTS[:2],
        "toolCallId": "tc-3",
    },
    "activity": {
        "id": "m-act",
        "role": "activity",
        "activityType": "progress",
        "content": {"pct": 40},
    },
    "reasoning": {"id": "m-r", "role": "reasoning", "content": "thinking", "encryptedValue": "e"},
    "all-optional": {
        "id": "m-u4",
        "role": "user",
        "content": "x",
        "name": "ann",
        "encryptedValue": "enc",
        "metadata": {"k": None},
        "subagentRunId": "sub-1",
    },
}

PATCH_OPS = [
    {"op": "add", "path": "/a", "value": 1},
    {"op": "add", "path": "/n", "value": None},
    {"op": "remove", "path": "/a"},
    {"op": "replace", "path": "", "value": {"whole": True}},
    {"op": "move", "from": "/b", "path": "/c"},
    {"op": "copy", "from": "/c", "path": "/d~1e~0f"},
    {"op": "test", "path": "/d", "value": [1, 2]},
]

TOOL = {
    "name": "send_email",
    "description": "Send an email",
    "parameters": {"type": "object", "properties": {"to": {"type": "string"}}},
}


def run_finished(outcome: Any = None, **fields: Any) -> dict[str, Any]:
    """A RUN_FINISHED of thread ``t-1`` run ``r-1``; ``outcome`` is left out when None."""
    event: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": "t-1", "runId": "r-1"}
    if outcome is not None:
        event["outcome"] = outcome
    event.update(fields)
    return event


def interrupted(*interrupts: Any) -> dict[str, Any]:
    """A RUN_FINISHED whose interrupt outcome carries ``interrupts``."""
    return run_finished({"type": "interrupt", "interrupts": list(interrupts)})


def run_input(**fields: Any) -> dict[str, Any]:
    """A minimal RunAgentInput of thread ``t-1`` run ``r-2`` with ``fields`` set on top."""
    return {"threadId": "t-1", "runId": "r-2", "messages": [], **fields}


def resumed(*entries: Any) -> dict[str, Any]:
    """A RunAgentInput whose ``resume`` carries ``entries``."""
    return run_input(resume=list(entries))


def snapshot(*messages: Any) -> dict[str, Any]:
    """A MESSAGES_SNAPSHOT of ``messages``."""
    return {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)}


# --- the cases -----------------------------------------------------------------------------

# Per event type: the smallest valid event, and one with every optional field set.
_EVENTS_MINIMAL: dict[str, dict[str, Any]] = {
    "TEXT_MESSAGE_START": {"messageId": "m-1"},
    "TEXT_MESSAGE_CONTENT": {"messageId": "m-1", "delta": "Hel"},
    "TEXT_MESSAGE_END": {"messageId": "m-1"},
    "TEXT_MESSAGE_CHUNK": {},
    "TOOL_CALL_START": {"toolCallId": "tc-1", "toolCallName": "send_email"},
    "TOOL_CALL_ARGS": {"toolCallId": "tc-1", "delta": '{"to":'},
    "TOOL_CALL_END": {"toolCallId": "tc-1"},
    "TOOL_CALL_CHUNK": {},
    "TOOL_CALL_RESULT": {"messageId": "m-t", "toolCallId": "tc-1", "content": "sent"},
    "STATE_SNAPSHOT": {"snapshot": {"count": 1}},
    "STATE_DELTA": {"delta": []},
    "MESSAGES_SNAPSHOT": {"messages": []},
    "ACTIVITY_SNAPSHOT": {"messageId": "m-act", "activityType": "progress", "content": {}},
    "ACTIVITY_DELTA": {"messageId": "m-act", "activityType": "progress", "patch": []},
    "RAW": {"event": {"anything": True}},
    "CUSTOM": {"name": "my:event", "value": 1},
    "RUN_STARTED": {"threadId": "t-1", "runId": "r-1"},
    "RUN_FINISHED": {"threadId": "t-1", "runId": "r-1"},
    "RUN_ERROR": {"message": "boom"},
    "STEP_STARTED": {"stepName": "plan"},
    "STEP_FINISHED": {"stepName": "plan"},
    "REASONING_START": {"messageId": "rs-1"},
    "REASONING_MESSAGE_START": {"messageId": "rm-1", "role": "reasoning"},
    "REASONING_MESSAGE_CONTENT": {"messageId": "rm-1", "delta": "hmm"},
    "REASONING_MESSAGE_END": {"messageId": "rm-1"},
    "REASONING_MESSAGE_CHUNK": {},
    "REASONING_END": {"messageId": "rs-1"},
    "REASONING_ENCRYPTED_VALUE": {
        "subtype": "message",
        "entityId": "rm-1",
        "encryptedValue": "opaque",
    },
    "SUBAGENT_STARTED": {"subagentRunId": "sub-1", "name": "researcher"},
    "SUBAGENT_FINISHED": {"subagentRunId": "sub-1"},
    "SUBAGENT_ERROR": {"subagentRunId": "sub-1", "message": "failed"},
}

_EVENTS_MAXIMAL: dict[str, dict[str, Any]] = {
    "TEXT_MESSAGE_START": {**MAX_ATTR, "messageId": "m-1", "role": "assistant", "name": "bot"},
    "TEXT_MESSAGE_CONTENT": {**MAX_ATTR, "messageId": "m-1", "delta": ""},
    "TEXT_MESSAGE_END": {**MAX_ATTR, "messageId": "m-1"},
    "TEXT_MESSAGE_CHUNK": {
        **MAX_ATTR,
        "messageId": "m-1",
        "role": "user",
        "delta": "x",
        "name": "n",
    },
    "TOOL_CALL_START": {
        **MAX_ATTR,
        "toolCallId": "tc-1",
        "toolCallName": "f",
        "parentMessageId": "m-1",
    },
    "TOOL_CALL_ARGS": {**MAX_ATTR, "toolCallId": "tc-1", "delta": "{}"},
    "TOOL_CALL_END": {**MAX_ATTR, "toolCallId": "tc-1"},
    "TOOL_CALL_CHUNK": {
        **MAX_ATTR,
        "toolCallId": "tc-1",
        "toolCallName": "f",
        "parentMessageId": "m-1",
        "delta": "{",
    },
    "TOOL_CALL_RESULT": {
        **MAX_ATTR,
        "messageId": "m-t",
        "toolCallId": "tc-1",
        "content": CONTENT_PARTS,
        "role": "tool",
    },
    "STATE_SNAPSHOT": {**MAX_ATTR, "snapshot": {"deep": {"null": None, "list": [{}, []]}}},
    "STATE_DELTA": {**MAX_ATTR, "delta": PATCH_OPS},
    "MESSAGES_SNAPSHOT": {**MAX_BASE, "messages": list(MESSAGES.values())},
    "ACTIVITY_SNAPSHOT": {
        **MAX_ATTR,
        "messageId": "m-act",
        "activityType": "p",
        "content": {"a": None},
        "replace": False,
    },
    "ACTIVITY_DELTA": {**MAX_ATTR, "messageId": "m-act", "activityType": "p", "patch": PATCH_OPS},
    "RAW": {**MAX_ATTR, "event": [1, None], "source": "openai"},
    "CUSTOM": {**MAX_ATTR, "name": "my:event", "value": {"k": [None]}},
    "RUN_STARTED": {
        **MAX_BASE,
        "threadId": "t-1",
        "runId": "r-1",
        "protocolVersion": "1.0",
        "parentRunId": "r-0",
        "input": {
            "threadId": "t-1",
            "runId": "r-1",
            "messages": [MESSAGES["user-text"]],
            "tools": [],
            "context": [],
        },
    },
    "RUN_FINISHED": {
        **MAX_BASE,
        "threadId": "t-1",
        "runId": "r-1",
        "result": {"answer": 42},
        "outcome": {"type": "success", "pendingToolCallIds": ["tc-9"]},
        "usage": [
            {
                "provider": "openai",
                "model": "gpt",
                "inputTokens": 10,
                "outputTokens": 5,
                "totalTokens": 15,
                "reasoningTokens": 2,
                "cachedInputTokens": 3,
                "cacheWriteInputTokens": 0,
            }
        ],
    },
    "RUN_ERROR": {
        **MAX_BASE,
        "message": "boom",
        "code": "AGENT_ERROR",
        "usage": [{"inputTokens": 1}],
    },
    "STEP_STARTED": {**MAX_ATTR, "stepName": "plan"},
    "STEP_FINISHED": {**MAX_ATTR, "stepName": "plan"},
    "REASONING_START": {**MAX_ATTR, "messageId": "rs-1"},
    "REASONING_MESSAGE_START": {**MAX_ATTR, "messageId": "rm-1", "role": "reasoning"},
    "REASONING_MESSAGE_CONTENT": {**MAX_ATTR, "messageId": "rm-1", "delta": "hmm"},
    "REASONING_MESSAGE_END": {**MAX_ATTR, "messageId": "rm-1"},
    "REASONING_MESSAGE_CHUNK": {**MAX_ATTR, "messageId": "rm-1", "delta": "d"},
    "REASONING_END": {**MAX_ATTR, "messageId": "rs-1"},
    "REASONING_ENCRYPTED_VALUE": {
        **MAX_ATTR,
        "subtype": "tool-call",
        "entityId": "tc-1",
        "encryptedValue": "o",
    },
    "SUBAGENT_STARTED": {
        **MAX_BASE,
        "subagentRunId": "sub-2",
        "name": "researcher",
        "description": "looks things up",
        "parentSubagentRunId": "sub-1",
        "parentToolCallId": "tc-1",
        "parentMessageId": "m-1",
    },
    "SUBAGENT_FINISHED": {
        **MAX_BASE,
        "subagentRunId": "sub-1",
        "result": [1, 2],
        "outcome": {"type": "suspended", "interruptIds": ["int-1", "int-2"]},
    },
    "SUBAGENT_ERROR": {
        **MAX_BASE,
        "subagentRunId": "sub-1",
        "message": "failed",
        "code": "TIMEOUT",
    },
}


def _typed(event_type: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": event_type, **fields}


def _event_cases() -> Iterator[Case]:
    for event_type, fields in _EVENTS_MINIMAL.items():
        yield Case(f"event/{event_type}/minimal", "event", _typed(event_type, fields))
    for event_type, fields in _EVENTS_MAXIMAL.items():
        yield Case(f"event/{event_type}/maximal", "event", _typed(event_type, fields))

    content = _EVENTS_MINIMAL["TEXT_MESSAGE_CONTENT"]
    ev = lambda **kw: _typed("TEXT_MESSAGE_CONTENT", {**content, **kw})

    # Shared optional fields: null, wrong shapes, odd numbers.
    yield Case("event/timestamp/null", "event", ev(timestamp=None))
    yield Case("event/timestamp/zero", "event", ev(timestamp=0))
    yield Case("event/timestamp/negative", "event", ev(timestamp=-1))
    yield Case("event/timestamp/float-integral", "event", ev(timestamp=1.0))
    yield Case("event/timestamp/float-fraction", "event", ev(timestamp=1.5))
    yield Case("event/timestamp/string", "event", ev(timestamp=str(TS)))
    yield Case("event/timestamp/iso-string", "event", ev(timestamp="2026-04-20T17:00:00Z"))
    yield Case("event/timestamp/bool", "event", ev(timestamp=True))
    yield Case("event/timestamp/max-safe", "event", ev(timestamp=2**53 - 1))
    yield Case("event/timestamp/min-safe", "event", ev(timestamp=-(2**53 - 1)))
    yield Case("event/timestamp/above-safe", "event", ev(timestamp=2**53))
    yield Case("event/timestamp/huge", "event", ev(timestamp=2**70))
    yield Case("event/metadata/null", "event", ev(metadata=None))
    yield Case("event/metadata/empty", "event", ev(metadata={}))
    yield Case("event/metadata/null-values", "event", ev(metadata={"a": None, "b": [None]}))
    yield Case("event/metadata/reserved-key", "event", ev(metadata={"ag-ui": {"v": 1}}))
    yield Case("event/metadata/array", "event", ev(metadata=[{"a": 1}]))
    yield Case("event/metadata/string", "event", ev(metadata="m"))
    yield Case("event/rawEvent/null", "event", ev(rawEvent=None))
    yield Case("event/rawEvent/scalar", "event", ev(rawEvent="line"))
    yield Case("event/subagentRunId/null", "event", ev(subagentRunId=None))
    yield Case("event/subagentRunId/number", "event", ev(subagentRunId=7))
    yield Case("event/unknown-key", "event", ev(**{"x-vendor": {"trace": [1]}, "zz": None}))
    yield Case(
        "event/snake-case-key",
        "event",
        {"type": "TEXT_MESSAGE_CONTENT", "message_id": "m-1", "delta": "x"},
    )
    yield Case("event/required-missing", "event", {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m-1"})
    yield Case("event/required-null", "event", ev(delta=None))
    yield Case("event/required-wrong-type", "event", ev(delta=5))

    # The type tag itself.
    yield Case("event/type/missing", "event", {"messageId": "m-1"})
    yield Case("event/type/number", "event", {"type": 3, "messageId": "m-1"})
    yield Case("event/type/unknown", "event", {"type": "FUTURE_EVENT", "whatever": [1, {"a": None}]})
    yield Case("event/type/lowercase", "event", {"type": "run_finished", "threadId": "t-1", "runId": "r-1"})
    yield Case("event/not-an-object", "event", [{"type": "RUN_FINISHED"}])
    yield Case("event/legacy/THINKING_START", "event", {"type": "THINKING_START", "title": "plan"})
    yield Case("event/legacy/THINKING_TEXT_MESSAGE_START", "event", {"type": "THINKING_TEXT_MESSAGE_START"})
    yield Case(
        "event/legacy/THINKING_TEXT_MESSAGE_CONTENT",
        "event",
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hm"},
    )
    yield Case("event/legacy/THINKING_TEXT_MESSAGE_END", "event", {"type": "THINKING_TEXT_MESSAGE_END"})
    yield Case("event/legacy/THINKING_END", "event", {"type": "THINKING_END", "timestamp": TS})

    # Text messages and tool calls.
    start = lambda **kw: _typed("TEXT_MESSAGE_START", {"messageId": "m-1", **kw})
    for role in ("developer", "system", "assistant", "user"):
        yield Case(f"event/TEXT_MESSAGE_START/role-{role}", "event", start(role=role))
    yield Case("event/TEXT_MESSAGE_START/role-tool", "event", start(role="tool"))
    yield Case("event/TEXT_MESSAGE_START/role-null", "event", start(role=None))
    yield Case("event/TEXT_MESSAGE_START/name-null", "event", start(name=None))
    yield Case(
        "event/TEXT_MESSAGE_CHUNK/delta-null",
        "event",
        _typed("TEXT_MESSAGE_CHUNK", {"delta": None}),
    )
    yield Case(
        "event/TOOL_CALL_START/parent-null",
        "event",
        _typed("TOOL_CALL_START", {"toolCallId": "tc-1", "toolCallName": "f", "parentMessageId": None}),
    )
    result = lambda **kw: _typed("TOOL_CALL_RESULT", {"messageId": "m-t", "toolCallId": "tc-1", "content": "ok", **kw})
    yield Case("event/TOOL_CALL_RESULT/role-assistant", "event", result(role="assistant"))
    yield Case("event/TOOL_CALL_RESULT/role-null", "event", result(role=None))
    yield Case("event/TOOL_CALL_RESULT/content-null", "event", result(content=None))
    yield Case("event/TOOL_CALL_RESULT/content-object", "event", result(content={"sent": True}))
    yield Case("event/TOOL_CALL_RESULT/content-empty-parts", "event", result(content=[]))
    yield Case(
        "event/TOOL_CALL_RESULT/part-unknown-type",
        "event",
        result(content=[{"type": "hologram", "data": "x"}]),
    )
    yield Case(
        "event/TOOL_CALL_RESULT/part-metadata-null",
        "event",
        result(content=[{"type": "text", "text": "x", "metadata": None}]),
    )
    yield Case(
        "event/TOOL_CALL_RESULT/part-metadata-scalar",
        "event",
        result(content=[{"type": "text", "text": "x", "metadata": 3}]),
    )
    yield Case(
        "event/TOOL_CALL_RESULT/part-id-null",
        "event",
        result(content=[{"type": "text", "text": "x", "id": None}]),
    )
    yield Case(
        "event/TOOL_CALL_RESULT/part-unknown-key",
        "event",
        result(content=[{"type": "text", "text": "x", "cite": [1]}]),
    )
    yield Case(
        "event/TOOL_CALL_RESULT/source-unknown-type",
        "event",
        result(content=[{"type": "image", "source": {"type": "s3", "value": "k"}}]),
    )
    yield Case(
        "event/TOOL_CALL_RESULT/data-source-no-mime",
        "event",
        result(content=[{"type": "image", "source": {"type": "data", "value": "AA=="}}]),
    )
    yield Case(
        "event/TOOL_CALL_RESULT/url-source-mime-null",
        "event",
        result(content=[{"type": "image", "source": {"type": "url", "value": "u", "mimeType": None}}]),
    )
    yield Case("event/TOOL_CALL_RESULT/image-no-source", "event", result(content=[{"type": "image"}]))
    yield Case(
        "event/REASONING_MESSAGE_START/no-role",
        "event",
        _typed("REASONING_MESSAGE_START", {"messageId": "rm-1"}),
    )
    yield Case(
        "event/REASONING_MESSAGE_START/role-assistant",
        "event",
        _typed("REASONING_MESSAGE_START", {"messageId": "rm-1", "role": "assistant"}),
    )
    yield Case(
        "event/REASONING_ENCRYPTED_VALUE/bad-subtype",
        "event",
        _typed("REASONING_ENCRYPTED_VALUE", {"subtype": "span", "entityId": "x", "encryptedValue": "o"}),
    )

    # State and free JSON.
    yield Case("event/STATE_SNAPSHOT/null", "event", _typed("STATE_SNAPSHOT", {"snapshot": None}))
    yield Case("event/STATE_SNAPSHOT/array", "event", _typed("STATE_SNAPSHOT", {"snapshot": [1, "a"]}))
    yield Case("event/STATE_SNAPSHOT/scalar", "event", _typed("STATE_SNAPSHOT", {"snapshot": "s"}))
    yield Case("event/STATE_SNAPSHOT/missing", "event", _typed("STATE_SNAPSHOT", {}))
    yield Case("event/CUSTOM/value-null", "event", _typed("CUSTOM", {"name": "n", "value": None}))
    yield Case("event/CUSTOM/value-missing", "event", _typed("CUSTOM", {"name": "n"}))
    yield Case("event/RAW/event-null", "event", _typed("RAW", {"event": None}))
    yield Case("event/RAW/event-missing", "event", _typed("RAW", {}))
    yield Case(
        "event/ACTIVITY_SNAPSHOT/content-array",
        "event",
        _typed("ACTIVITY_SNAPSHOT", {"messageId": "m", "activityType": "p", "content": [1]}),
    )
    yield Case(
        "event/ACTIVITY_SNAPSHOT/replace-null",
        "event",
        _typed(
            "ACTIVITY_SNAPSHOT",
            {"messageId": "m", "activityType": "p", "content": {}, "replace": None},
        ),
    )

    # JSON Patch operations (STATE_DELTA.delta, ACTIVITY_DELTA.patch).
    delta = lambda *ops: _typed("STATE_DELTA", {"delta": list(ops)})
    for op in PATCH_OPS:
        yield Case(f"event/STATE_DELTA/op-{op['op']}-{PATCH_OPS.index(op)}", "event", delta(op))
    yield Case(
        "event/STATE_DELTA/remove-leftover-value",
        "event",
        delta({"op": "remove", "path": "/a", "value": 1}),
    )
    yield Case(
        "event/STATE_DELTA/op-unknown-member",
        "event",
        delta({"op": "add", "path": "/a", "value": 1, "why": "x"}),
    )
    yield Case("event/STATE_DELTA/add-no-value", "event", delta({"op": "add", "path": "/a"}))
    yield Case("event/STATE_DELTA/test-no-value", "event", delta({"op": "test", "path": "/a"}))
    yield Case("event/STATE_DELTA/move-no-from", "event", delta({"op": "move", "path": "/a"}))
    yield Case(
        "event/STATE_DELTA/copy-from-number",
        "event",
        delta({"op": "copy", "from": 1, "path": "/a"}),
    )
    yield Case(
        "event/STATE_DELTA/move-into-itself",
        "event",
        delta({"op": "move", "from": "/a", "path": "/a/b"}),
    )
    yield Case("event/STATE_DELTA/pointer-no-slash", "event", delta({"op": "remove", "path": "a"}))
    yield Case("event/STATE_DELTA/pointer-bad-escape", "event", delta({"op": "remove", "path": "/a~2b"}))
    yield Case("event/STATE_DELTA/pointer-trailing-tilde", "event", delta({"op": "remove", "path": "/a~"}))
    yield Case(
        "event/STATE_DELTA/pointer-root-slash",
        "event",
        delta({"op": "add", "path": "/", "value": 1}),
    )
    yield Case(
        "event/STATE_DELTA/pointer-array-dash",
        "event",
        delta({"op": "add", "path": "/list/-", "value": 1}),
    )
    yield Case(
        "event/STATE_DELTA/pointer-unicode",
        "event",
        delta({"op": "add", "path": "/キー/ü", "value": 1}),
    )
    yield Case("event/STATE_DELTA/op-unknown", "event", delta({"op": "merge", "path": "/a", "value": {}}))
    yield Case("event/STATE_DELTA/op-missing", "event", delta({"path": "/a", "value": 1}))
    yield Case(
        "event/STATE_DELTA/not-an-array",
        "event",
        _typed("STATE_DELTA", {"delta": {"op": "remove", "path": "/a"}}),
    )
    yield Case("event/STATE_DELTA/null", "event", _typed("STATE_DELTA", {"delta": None}))
    yield Case(
        "event/ACTIVITY_DELTA/bad-pointer",
        "event",
        _typed(
            "ACTIVITY_DELTA",
            {
                "messageId": "m",
                "activityType": "p",
                "patch": [{"op": "replace", "path": "x", "value": 1}],
            },
        ),
    )

    # Messages (MESSAGES_SNAPSHOT.messages).
    for role, message in MESSAGES.items():
        yield Case(f"event/MESSAGES_SNAPSHOT/{role}", "event", snapshot(message))
    yield Case(
        "event/MESSAGES_SNAPSHOT/role-unknown",
        "event",
        snapshot({"id": "m", "role": "bot", "content": "x"}),
    )
    yield Case("event/MESSAGES_SNAPSHOT/role-missing", "event", snapshot({"id": "m", "content": "x"}))
    yield Case("event/MESSAGES_SNAPSHOT/id-missing", "event", snapshot({"role": "user", "content": "x"}))
    yield Case(
        "event/MESSAGES_SNAPSHOT/user-content-null",
        "event",
        snapshot({"id": "m", "role": "user", "content": None}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/user-content-missing",
        "event",
        snapshot({"id": "m", "role": "user"}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/assistant-content-null",
        "event",
        snapshot({"id": "m", "role": "assistant", "content": None}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/assistant-toolcalls-null",
        "event",
        snapshot({"id": "m", "role": "assistant", "toolCalls": None}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/assistant-content-parts",
        "event",
        snapshot({"id": "m", "role": "assistant", "content": CONTENT_PARTS[:1]}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/system-content-parts",
        "event",
        snapshot({"id": "m", "role": "system", "content": CONTENT_PARTS[:1]}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/tool-no-toolcallid",
        "event",
        snapshot({"id": "m", "role": "tool", "content": "x"}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/tool-error-null",
        "event",
        snapshot({**MESSAGES["tool"], "error": None}),
    )
    yield Case("event/MESSAGES_SNAPSHOT/tool-name", "event", snapshot({**MESSAGES["tool"], "name": "t"}))
    yield Case(
        "event/MESSAGES_SNAPSHOT/message-name-null",
        "event",
        snapshot({**MESSAGES["user-text"], "name": None}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/message-metadata-null",
        "event",
        snapshot({**MESSAGES["user-text"], "metadata": None}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/message-metadata-array",
        "event",
        snapshot({**MESSAGES["user-text"], "metadata": []}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/message-subagent-null",
        "event",
        snapshot({**MESSAGES["user-text"], "subagentRunId": None}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/message-unknown-key",
        "event",
        snapshot({**MESSAGES["user-text"], "ext": {"x": 1}}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/activity-content-array",
        "event",
        snapshot({**MESSAGES["activity"], "content": [1]}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/activity-content-null",
        "event",
        snapshot({**MESSAGES["activity"], "content": None}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/toolcall-type-other",
        "event",
        snapshot({"id": "m", "role": "assistant", "toolCalls": [{**TOOL_CALL, "type": "retrieval"}]}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/toolcall-args-object",
        "event",
        snapshot(
            {
                "id": "m",
                "role": "assistant",
                "toolCalls": [{**TOOL_CALL, "function": {"name": "f", "arguments": {}}}],
            }
        ),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/toolcall-metadata-null",
        "event",
        snapshot({"id": "m", "role": "assistant", "toolCalls": [{**TOOL_CALL, "metadata": None}]}),
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/subagentRunId-on-event",
        "event",
        {**snapshot(), "subagentRunId": "sub-1"},
    )
    yield Case(
        "event/MESSAGES_SNAPSHOT/messages-null",
        "event",
        _typed("MESSAGES_SNAPSHOT", {"messages": None}),
    )

    # Run lifecycle.
    yield Case(
        "event/RUN_STARTED/input-null",
        "event",
        _typed("RUN_STARTED", {"threadId": "t", "runId": "r", "input": None}),
    )
    yield Case(
        "event/RUN_STARTED/input-no-messages",
        "event",
        _typed("RUN_STARTED", {"threadId": "t", "runId": "r", "input": {"threadId": "t", "runId": "r"}}),
    )
    yield Case(
        "event/RUN_STARTED/input-state-null",
        "event",
        _typed("RUN_STARTED", {"threadId": "t", "runId": "r", "input": run_input(state=None)}),
    )
    yield Case(
        "event/RUN_STARTED/parentRunId-null",
        "event",
        _typed("RUN_STARTED", {"threadId": "t", "runId": "r", "parentRunId": None}),
    )
    yield Case("event/RUN_STARTED/threadId-missing", "event", _typed("RUN_STARTED", {"runId": "r"}))
    yield Case("event/RUN_ERROR/code-null", "event", _typed("RUN_ERROR", {"message": "m", "code": None}))
    yield Case("event/RUN_ERROR/code-number", "event", _typed("RUN_ERROR", {"message": "m", "code": 500}))
    yield Case(
        "event/RUN_ERROR/with-threadId",
        "event",
        _typed("RUN_ERROR", {"message": "m", "threadId": "t-1"}),
    )
    yield Case(
        "event/RUN_ERROR/usage-negative",
        "event",
        _typed("RUN_ERROR", {"message": "m", "usage": [{"inputTokens": -1}]}),
    )
    yield Case(
        "event/RUN_ERROR/usage-float",
        "event",
        _typed("RUN_ERROR", {"message": "m", "usage": [{"inputTokens": 1.5}]}),
    )
    yield Case(
        "event/RUN_ERROR/usage-null-field",
        "event",
        _typed("RUN_ERROR", {"message": "m", "usage": [{"model": None}]}),
    )
    yield Case("event/RUN_ERROR/usage-empty", "event", _typed("RUN_ERROR", {"message": "m", "usage": []}))


def _run_finished_cases() -> Iterator[Case]:
    yield Case("event/RUN_FINISHED/outcome-absent", "event", run_finished())
    yield Case("event/RUN_FINISHED/outcome-absent-with-result", "event", run_finished(result="done"))
    yield Case("event/RUN_FINISHED/success", "event", run_finished({"type": "success"}))
    yield Case(
        "event/RUN_FINISHED/success-with-result",
        "event",
        run_finished({"type": "success"}, result={"n": None}),
    )
    yield Case(
        "event/RUN_FINISHED/success-result-falsy",
        "event",
        run_finished({"type": "success"}, result=0),
    )
    yield Case(
        "event/RUN_FINISHED/success-result-false",
        "event",
        run_finished({"type": "success"}, result=False),
    )
    yield Case("event/RUN_FINISHED/result-null", "event", run_finished({"type": "success"}, result=None))
    yield Case(
        "event/RUN_FINISHED/success-pending-empty",
        "event",
        run_finished({"type": "success", "pendingToolCallIds": []}),
    )
    yield Case(
        "event/RUN_FINISHED/success-pending-null",
        "event",
        run_finished({"type": "success", "pendingToolCallIds": None}),
    )
    yield Case(
        "event/RUN_FINISHED/success-with-interrupts",
        "event",
        run_finished({"type": "success", "interrupts": [INTERRUPT_MIN]}),
    )
    yield Case("event/RUN_FINISHED/cancelled", "event", run_finished({"type": "cancelled"}))
    yield Case(
        "event/RUN_FINISHED/cancelled-with-result",
        "event",
        run_finished({"type": "cancelled"}, result="partial"),
    )
    yield Case(
        "event/RUN_FINISHED/cancelled-with-interrupts",
        "event",
        run_finished({"type": "cancelled", "interrupts": [INTERRUPT_MIN]}),
    )
    yield Case("event/RUN_FINISHED/outcome-error", "event", run_finished({"type": "error", "message": "x"}))
    yield Case("event/RUN_FINISHED/outcome-unknown", "event", run_finished({"type": "handoff"}))
    yield Case("event/RUN_FINISHED/outcome-no-type", "event", run_finished({"interrupts": [INTERRUPT_MIN]}))
    yield Case("event/RUN_FINISHED/outcome-string", "event", run_finished("interrupt"))
    yield Case("event/RUN_FINISHED/outcome-null", "event", {**run_finished(), "outcome": None})
    yield Case(
        "event/RUN_FINISHED/outcome-unknown-key",
        "event",
        run_finished({"type": "success", "note": "x"}),
    )
    yield Case("event/RUN_FINISHED/interrupt-empty", "event", interrupted())
    yield Case("event/RUN_FINISHED/interrupt-missing-list", "event", run_finished({"type": "interrupt"}))
    yield Case(
        "event/RUN_FINISHED/interrupt-null-list",
        "event",
        run_finished({"type": "interrupt", "interrupts": None}),
    )
    yield Case(
        "event/RUN_FINISHED/interrupt-with-result",
        "event",
        run_finished({"type": "interrupt", "interrupts": [INTERRUPT_MIN]}, result="so far"),
    )
    yield Case(
        "event/RUN_FINISHED/interrupt-many",
        "event",
        interrupted(INTERRUPT_MIN, INTERRUPT_MAX, {**INTERRUPT_MIN, "id": "int-3"}),
    )
    yield Case(
        "event/RUN_FINISHED/interrupt-duplicate-ids",
        "event",
        interrupted(INTERRUPT_MIN, INTERRUPT_MIN),
    )
    yield Case("event/RUN_FINISHED/threadId-null", "event", {**run_finished(), "threadId": None})
    yield Case(
        "event/RUN_FINISHED/snake-case-ids",
        "event",
        {"type": "RUN_FINISHED", "thread_id": "t-1", "run_id": "r-1"},
    )
    yield Case("event/RUN_FINISHED/usage-null", "event", run_finished(usage=None))

    # SUBAGENT_FINISHED outcomes.
    sub = lambda **kw: _typed("SUBAGENT_FINISHED", {"subagentRunId": "sub-1", **kw})
    yield Case("event/SUBAGENT_FINISHED/success", "event", sub(outcome={"type": "success"}))
    yield Case("event/SUBAGENT_FINISHED/suspended", "event", sub(outcome={"type": "suspended"}))
    yield Case(
        "event/SUBAGENT_FINISHED/suspended-with-ids",
        "event",
        sub(outcome={"type": "suspended", "interruptIds": ["int-1"]}),
    )
    yield Case(
        "event/SUBAGENT_FINISHED/suspended-ids-empty",
        "event",
        sub(outcome={"type": "suspended", "interruptIds": []}),
    )
    yield Case(
        "event/SUBAGENT_FINISHED/suspended-ids-null",
        "event",
        sub(outcome={"type": "suspended", "interruptIds": None}),
    )
    yield Case(
        "event/SUBAGENT_FINISHED/suspended-ids-numbers",
        "event",
        sub(outcome={"type": "suspended", "interruptIds": [1]}),
    )
    yield Case(
        "event/SUBAGENT_FINISHED/suspended-with-interrupts",
        "event",
        sub(outcome={"type": "suspended", "interrupts": [INTERRUPT_MIN]}),
    )
    yield Case(
        "event/SUBAGENT_FINISHED/outcome-interrupt",
        "event",
        sub(outcome={"type": "interrupt", "interrupts": [INTERRUPT_MIN]}),
    )
    yield Case("event/SUBAGENT_FINISHED/outcome-cancelled", "event", sub(outcome={"type": "cancelled"}))
    yield Case("event/SUBAGENT_FINISHED/outcome-null", "event", sub(outcome=None))
    yield Case("event/SUBAGENT_FINISHED/result-null", "event", sub(result=None))
    yield Case("event/SUBAGENT_FINISHED/no-subagentRunId", "event", _typed("SUBAGENT_FINISHED", {}))
    yield Case(
        "event/SUBAGENT_STARTED/no-name",
        "event",
        _typed("SUBAGENT_STARTED", {"subagentRunId": "sub-1"}),
    )
    yield Case(
        "event/SUBAGENT_STARTED/description-null",
        "event",
        _typed("SUBAGENT_STARTED", {"subagentRunId": "s", "name": "n", "description": None}),
    )
    yield Case(
        "event/SUBAGENT_ERROR/no-message",
        "event",
        _typed("SUBAGENT_ERROR", {"subagentRunId": "sub-1"}),
    )


def _interrupt_cases() -> Iterator[Case]:
    variants: dict[str, Any] = {
        "minimal": INTERRUPT_MIN,
        "maximal": INTERRUPT_MAX,
        "reason-input-required": {
            **INTERRUPT_MIN,
            "reason": "input_required",
            "responseSchema": {"type": "integer"},
        },
        "reason-custom": {**INTERRUPT_MIN, "reason": "langgraph:database_modification"},
        "reason-core-reserved": {**INTERRUPT_MIN, "reason": "core:future"},
        "reason-empty": {**INTERRUPT_MIN, "reason": ""},
        "reason-missing": {"id": "int-1"},
        "reason-null": {**INTERRUPT_MIN, "reason": None},
        "id-missing": {"reason": "confirmation"},
        "id-number": {**INTERRUPT_MIN, "id": 1},
        "tool-call-without-toolCallId": {**INTERRUPT_MIN, "reason": "tool_call"},
        "message-null": {**INTERRUPT_MIN, "message": None},
        "toolCallId-null": {**INTERRUPT_MIN, "toolCallId": None},
        "responseSchema-null": {**INTERRUPT_MIN, "responseSchema": None},
        "responseSchema-true": {**INTERRUPT_MIN, "responseSchema": True},
        "responseSchema-array": {**INTERRUPT_MIN, "responseSchema": [{"type": "string"}]},
        "responseSchema-empty": {**INTERRUPT_MIN, "responseSchema": {}},
        "responseSchema-nonsense": {**INTERRUPT_MIN, "responseSchema": {"type": "no-such-type"}},
        "expiresAt-utc": {**INTERRUPT_MIN, "expiresAt": "2026-04-20T17:00:00Z"},
        "expiresAt-offset": {**INTERRUPT_MIN, "expiresAt": "2026-04-20T17:00:00.123+09:00"},
        "expiresAt-no-zone": {**INTERRUPT_MIN, "expiresAt": "2026-04-20T17:00:00"},
        "expiresAt-not-a-date": {**INTERRUPT_MIN, "expiresAt": "tomorrow"},
        "expiresAt-number": {**INTERRUPT_MIN, "expiresAt": 1776704400000},
        "expiresAt-null": {**INTERRUPT_MIN, "expiresAt": None},
        "metadata-null": {**INTERRUPT_MIN, "metadata": None},
        "metadata-array": {**INTERRUPT_MIN, "metadata": ["x"]},
        "metadata-null-values": {**INTERRUPT_MIN, "metadata": {"a": None}},
        "subagentRunId": {**INTERRUPT_MIN, "subagentRunId": "sub-1"},
        "subagentRunId-null": {**INTERRUPT_MIN, "subagentRunId": None},
        "unknown-key": {**INTERRUPT_MIN, "priority": "high", "ext": {"a": [None]}},
    }
    for name, interrupt in variants.items():
        yield Case(f"interrupt/{name}", "event", interrupted(interrupt), part=("Interrupt", interrupt))


def _input_cases() -> Iterator[Case]:
    yield Case("input/minimal", "input", run_input())
    yield Case(
        "input/maximal",
        "input",
        run_input(
            protocolVersion="1.0",
            parentRunId="r-1",
            state={"draft": {"to": None}},
            messages=list(MESSAGES.values()),
            tools=[TOOL, {"name": "noop", "description": "", "metadata": {"k": None}}],
            context=[{"description": "user locale", "value": "ko-KR"}],
            forwardedProps={"ui": {"theme": "dark"}},
            resume=[
                {
                    "interruptId": "int-1",
                    "status": "resolved",
                    "payload": {"approved": True},
                    "metadata": {"sig": "s"},
                }
            ],
        ),
    )
    yield Case("input/messages-missing", "input", {"threadId": "t-1", "runId": "r-2"})
    yield Case("input/messages-null", "input", run_input(messages=None))
    yield Case("input/threadId-missing", "input", {"runId": "r-2", "messages": []})
    yield Case("input/threadId-number", "input", run_input(threadId=1))
    yield Case("input/snake-case-keys", "input", {"thread_id": "t-1", "run_id": "r-2", "messages": []})
    yield Case("input/not-an-object", "input", ["t-1", "r-2"])
    yield Case("input/tools-empty", "input", run_input(tools=[], context=[]))
    yield Case("input/tools-null", "input", run_input(tools=None))
    yield Case("input/context-null", "input", run_input(context=None))
    yield Case("input/tool-parameters-null", "input", run_input(tools=[{**TOOL, "parameters": None}]))
    yield Case("input/tool-no-description", "input", run_input(tools=[{"name": "f"}]))
    yield Case(
        "input/context-value-object",
        "input",
        run_input(context=[{"description": "d", "value": {"a": 1}}]),
    )
    yield Case("input/state-null", "input", run_input(state=None))
    yield Case("input/state-array", "input", run_input(state=[1]))
    yield Case("input/state-scalar", "input", run_input(state=0))
    yield Case("input/state-empty-object", "input", run_input(state={}))
    yield Case("input/forwardedProps-null", "input", run_input(forwardedProps=None))
    yield Case("input/forwardedProps-empty", "input", run_input(forwardedProps={}))
    yield Case("input/forwardedProps-scalar", "input", run_input(forwardedProps="x"))
    yield Case("input/protocolVersion-null", "input", run_input(protocolVersion=None))
    yield Case("input/parentRunId-null", "input", run_input(parentRunId=None))
    yield Case("input/unknown-key", "input", run_input(agentId="a-1", ext={"k": None}))
    yield Case("input/resume-empty", "input", run_input(resume=[]))
    yield Case("input/resume-null", "input", run_input(resume=None))
    yield Case(
        "input/resume-object",
        "input",
        run_input(resume={"interruptId": "int-1", "status": "resolved"}),
    )
    for role, message in MESSAGES.items():
        yield Case(f"input/message-{role}", "input", run_input(messages=[message]))
    yield Case(
        "input/message-role-unknown",
        "input",
        run_input(messages=[{"id": "m", "role": "bot", "content": "x"}]),
    )
    yield Case(
        "input/message-part-unknown-type",
        "input",
        run_input(messages=[{"id": "m", "role": "user", "content": [{"type": "hologram"}]}]),
    )
    yield Case(
        "input/message-part-metadata-null",
        "input",
        run_input(
            messages=[
                {
                    "id": "m",
                    "role": "user",
                    "content": [{"type": "text", "text": "x", "metadata": None}],
                }
            ]
        ),
    )


def _resume_cases() -> Iterator[Case]:
    resolved = {"interruptId": "int-1", "status": "resolved"}
    cancelled = {"interruptId": "int-1", "status": "cancelled"}
    variants: dict[str, Any] = {
        "resolved-with-payload": {**resolved, "payload": {"approved": True}},
        "resolved-denial": {**resolved, "payload": {"approved": False}},
        "resolved-no-payload": resolved,
        "resolved-payload-null": {**resolved, "payload": None},
        "resolved-payload-false": {**resolved, "payload": False},
        "resolved-payload-zero": {**resolved, "payload": 0},
        "resolved-payload-empty-string": {**resolved, "payload": ""},
        "resolved-payload-array": {**resolved, "payload": [None, 1]},
        "resolved-payload-null-inside": {**resolved, "payload": {"comment": None}},
        "resolved-with-metadata": {
            **resolved,
            "payload": 1,
            "metadata": {"signature": "sig", "routing": None},
        },
        "cancelled": cancelled,
        "cancelled-with-payload": {**cancelled, "payload": {"approved": False}},
        "cancelled-with-payload-null": {**cancelled, "payload": None},
        "cancelled-with-metadata": {**cancelled, "metadata": {"why": "closed the tab"}},
        "metadata-null": {**resolved, "payload": 1, "metadata": None},
        "metadata-array": {**resolved, "payload": 1, "metadata": [1]},
        "metadata-string": {**resolved, "payload": 1, "metadata": "m"},
        "metadata-empty": {**resolved, "payload": 1, "metadata": {}},
        "metadata-reserved-key": {
            **resolved,
            "payload": 1,
            "metadata": {"ag-ui": {"replay": True}},
        },
        "status-bad": {**resolved, "status": "denied"},
        "status-uppercase": {**resolved, "status": "RESOLVED"},
        "status-missing": {"interruptId": "int-1", "payload": 1},
        "status-null": {**resolved, "status": None},
        "interruptId-missing": {"status": "resolved", "payload": 1},
        "interruptId-number": {**resolved, "interruptId": 1},
        "interruptId-null": {**resolved, "interruptId": None},
        "snake-case-key": {"interrupt_id": "int-1", "status": "resolved"},
        "unknown-key": {**resolved, "payload": 1, "respondedAt": "2026-04-20T17:00:00Z"},
    }
    for name, entry in variants.items():
        yield Case(f"resume/{name}", "input", resumed(entry), part=("ResumeEntry", entry))
    yield Case(
        "resume/two-entries-same-interrupt",
        "input",
        resumed({**resolved, "payload": 1}, {**resolved, "payload": 2}),
    )


def _seed_cases() -> Iterator[Case]:
    for name, event in SEED_RUN_FINISHED.items():
        yield Case(f"seed/{name}/run-finished", "event", event)
    for name, run in SEED_RESUME_INPUTS.items():
        yield Case(f"seed/{name}/resume-as-printed", "input", run)
        yield Case(f"seed/{name}/resume-with-messages", "input", {**run, "messages": []})


CASES: tuple[Case, ...] = (
    *_event_cases(),
    *_run_finished_cases(),
    *_interrupt_cases(),
    *_input_cases(),
    *_resume_cases(),
    *_seed_cases(),
)
"""Every case, names unique."""

CASES_BY_NAME: dict[str, Case] = {case.name: case for case in CASES}
assert len(CASES_BY_NAME) == len(CASES), "corpus case names must be unique"
