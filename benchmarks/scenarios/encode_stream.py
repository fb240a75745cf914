"""encode_stream: one interrupted run's event stream written as SSE frames.

The stream is what an agent emits on a tool-bound interrupt: RUN_STARTED, a text message of 20
deltas, a tool call whose arguments arrive in 5 chunks, a STATE_SNAPSHOT of about 2 KB, a
STATE_DELTA of 5 operations, a MESSAGES_SNAPSHOT of 6 messages and a RUN_FINISHED carrying
3 interrupts, each with a responseSchema. One operation encodes the whole stream.

- ours: :func:`agui_core.protocol.codec.encode_event` per event, framed ``data: ...\\n\\n``;
- ag_ui EventEncoder: the same events as ``ag_ui.core`` pydantic models, through
  ``ag_ui.encoder.EventEncoder().encode`` (which returns ``str``; the wire needs bytes, but
  the reference is timed as it is, without the extra ``.encode()``);
- orjson floor: ``orjson.dumps`` of the plain JSON dicts, framed the same way. No encoder that
  starts from typed objects can beat it; ours should stay within 2x of it.

Every side's objects are built once, outside the timed loop. The check proves the three
produce the same JSON, event for event.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from benchmarks.harness import Case, Comparison, Contender, Scenario

__all__ = ["SCENARIO", "stream"]

THREAD = "thread-7f3a"
RUN = "run-0192"
MESSAGE = "msg-assistant-42"
TOOL_CALL = "tc-send-email-1"
REPLY = "I drafted the update and will now send it to the board for review as agreed"


def _state() -> dict[str, Any]:
    """An agent state of about 2 KB: a document being drafted, with nested lists and nulls."""
    return {
        "draft": {
            "title": "Quarterly update for the board",
            "sections": [
                {
                    "id": f"sec-{i}",
                    "heading": f"Section {i}: {topic}",
                    "status": "reviewed" if i % 2 else "draft",
                    "wordCount": 120 + 37 * i,
                    "comments": [
                        {"by": "alice", "text": "Tighten this paragraph.", "resolved": False},
                        {"by": "bob", "text": None, "resolved": True},
                    ],
                }
                for i, topic in enumerate(("Revenue", "Hiring", "Roadmap", "Risks", "Asks"))
            ],
        },
        "recipients": ["board@example.com", "cfo@example.com", "ceo@example.com"],
        "settings": {"tone": "formal", "language": "en-GB", "maxWords": 1500, "attachments": []},
        "progress": {"step": 3, "of": 5, "lastSavedAt": "2026-04-20T16:59:12Z"},
        "history": [{"action": "edit", "section": f"sec-{i}", "at": 1776700000 + i} for i in range(8)],
    }


def _approve_schema() -> dict[str, Any]:
    return {
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
    }


def stream() -> list[dict[str, Any]]:
    """The events as plain JSON objects (camelCase keys, absent optionals left out)."""
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": THREAD, "runId": RUN}]
    events.append({"type": "TEXT_MESSAGE_START", "messageId": MESSAGE, "role": "assistant"})
    words = REPLY.split()
    deltas = [words[i % len(words)] + " " for i in range(20)]
    events.extend({"type": "TEXT_MESSAGE_CONTENT", "messageId": MESSAGE, "delta": d} for d in deltas)
    events.append({"type": "TEXT_MESSAGE_END", "messageId": MESSAGE})
    events.append(
        {
            "type": "TOOL_CALL_START",
            "toolCallId": TOOL_CALL,
            "toolCallName": "sendEmail",
            "parentMessageId": MESSAGE,
        }
    )
    args = orjson.dumps(
        {
            "to": "board@example.com",
            "subject": "Quarterly update",
            "body": "Please find the draft attached.",
        }
    ).decode()
    size = -(-len(args) // 5)
    for i in range(5):
        events.append(
            {
                "type": "TOOL_CALL_ARGS",
                "toolCallId": TOOL_CALL,
                "delta": args[i * size : (i + 1) * size],
            }
        )
    events.append({"type": "TOOL_CALL_END", "toolCallId": TOOL_CALL})
    events.append({"type": "STATE_SNAPSHOT", "snapshot": _state()})
    events.append(
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/progress/step", "value": 4},
                {
                    "op": "add",
                    "path": "/draft/sections/0/comments/-",
                    "value": {"by": "carol", "text": "ok", "resolved": False},
                },
                {"op": "remove", "path": "/history/0"},
                {"op": "copy", "from": "/recipients/0", "path": "/settings/attachments/-"},
                {"op": "test", "path": "/settings/tone", "value": "formal"},
            ],
        }
    )
    events.append(
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "m1", "role": "system", "content": "You help draft and send board updates."},
                {
                    "id": "m2",
                    "role": "user",
                    "content": "Draft the quarterly update and send it to the board.",
                },
                {
                    "id": "m3",
                    "role": "assistant",
                    "content": "Looking up last quarter's numbers.",
                    "toolCalls": [
                        {
                            "id": "tc-lookup-1",
                            "type": "function",
                            "function": {
                                "name": "lookupRevenue",
                                "arguments": '{"quarter":"Q1","year":2026}',
                            },
                        }
                    ],
                },
                {
                    "id": "m4",
                    "role": "tool",
                    "content": '{"revenue":4200000,"currency":"EUR"}',
                    "toolCallId": "tc-lookup-1",
                },
                {
                    "id": MESSAGE,
                    "role": "assistant",
                    "content": "".join(deltas),
                    "toolCalls": [
                        {
                            "id": TOOL_CALL,
                            "type": "function",
                            "function": {"name": "sendEmail", "arguments": args},
                        }
                    ],
                },
                {"id": "m6", "role": "user", "content": "Make sure the CFO is copied."},
            ],
        }
    )
    events.append(
        {
            "type": "RUN_FINISHED",
            "threadId": THREAD,
            "runId": RUN,
            "outcome": {
                "type": "interrupt",
                "interrupts": [
                    {
                        "id": "int-email-edit",
                        "reason": "tool_call",
                        "message": "Send the update to board@example.com? You can edit it first.",
                        "toolCallId": TOOL_CALL,
                        "responseSchema": _approve_schema(),
                        "metadata": {"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}},
                    },
                    {
                        "id": "int-cc",
                        "reason": "confirmation",
                        "message": "Copy the CFO?",
                        "responseSchema": {
                            "type": "object",
                            "properties": {"approved": {"type": "boolean"}},
                            "required": ["approved"],
                        },
                    },
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
                    },
                ],
            },
        }
    )
    return events


def _build() -> Sequence[Case]:
    from ag_ui.core import Event as ReferenceEvent
    from ag_ui.encoder import EventEncoder
    from pydantic import TypeAdapter

    from agui_core.protocol.codec import encode_event, event_from_dict

    dicts = stream()
    ours_events = [event_from_dict(d) for d in dicts]
    adapter: TypeAdapter[Any] = TypeAdapter(ReferenceEvent)
    reference_events = [adapter.validate_python(d) for d in dicts]
    encoder = EventEncoder()
    dumps = orjson.dumps

    def ours() -> list[bytes]:
        return [b"data: " + encode_event(event) + b"\n\n" for event in ours_events]

    def reference() -> list[str]:
        return [encoder.encode(event) for event in reference_events]

    def floor() -> list[bytes]:
        return [b"data: " + dumps(d) + b"\n\n" for d in dicts]

    def check() -> None:
        frames = (ours(), [f.encode() for f in reference()], floor())
        for index, (mine, theirs, bare) in enumerate(zip(*frames, strict=True)):
            bodies = [frame.removeprefix(b"data: ").removesuffix(b"\n\n") for frame in (mine, theirs, bare)]
            if not all(frame.startswith(b"data: ") and frame.endswith(b"\n\n") for frame in (mine, theirs, bare)):
                raise AssertionError(f"event {index}: a frame is not 'data: ...\\n\\n'")
            parsed = [orjson.loads(body) for body in bodies]
            if not parsed[0] == parsed[1] == parsed[2] == dicts[index]:
                raise AssertionError(f"event {index} ({dicts[index]['type']}): the encoders disagree: {bodies}")

    size = sum(len(frame) for frame in floor())
    return [
        Case(
            name=f"{len(dicts)} events, {size / 1024:.1f} KiB of SSE",
            contenders=(
                Contender("ours", ours),
                Contender("ag_ui EventEncoder", reference),
                Contender("orjson floor", floor),
            ),
            comparisons=(
                Comparison(ours="ours", theirs="ag_ui EventEncoder", target=10.0),
                Comparison(ours="ours", theirs="orjson floor", target=0.5),
            ),
            check=check,
            notes="one op = the whole stream",
        )
    ]


SCENARIO = Scenario(
    name="encode_stream",
    description="an interrupted run's events encoded as SSE frames",
    build=_build,
)
