"""One line per event and per answer, as the demo prints them (``<-`` received, ``->`` sent).

An event's line is its type, then its fields (``threadId`` left out, long values cut to
:data:`WIDTH` characters): short enough to follow a run by eye, whole enough to see what
the agent sent.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

from agui_core.machine.client import Reply
from agui_core.protocol import events as ev
from agui_core.protocol.codec import event_to_dict

__all__ = ["WIDTH", "as_json", "cut", "describe_event", "describe_reply", "show_value"]

WIDTH: Final = 110
"""The longest value shown in an event line."""

_BARE = re.compile(r"[\w.@:/+-]+", re.ASCII)


def as_json(value: Any) -> str:
    return orjson.dumps(value).decode()


def cut(text: str, width: int = WIDTH) -> str:
    """``text``, cut to ``width`` characters with an ellipsis when longer."""
    return text if len(text) <= width else text[: width - 3] + "..."


def show_value(value: Any) -> str:
    if isinstance(value, str):
        if _BARE.fullmatch(value):
            return value
        if value[:1] in "{[":  # JSON carried as text (tool call arguments, results): shown as is
            try:
                orjson.loads(value)
            except orjson.JSONDecodeError:
                pass
            else:
                return cut(value)
        return cut(as_json(value))
    return cut(as_json(value))


def describe_event(event: ev.Event | ev.UnknownEvent) -> str:
    """One line for ``event``: its type, then its fields (``threadId`` left out, long values cut)."""
    if isinstance(event, ev.UnknownEvent):
        data: dict[str, Any] = dict(event.data)
    else:
        data = event_to_dict(event)
    data.pop("type", None)
    data.pop("threadId", None)
    parts = [event.type]
    if isinstance(event, ev.MessagesSnapshotEvent):
        parts.append(f"messages=[{len(event.messages)} messages]")
        data.pop("messages", None)
    outcome = data.pop("outcome", None)
    has_result = "result" in data
    result = data.pop("result", None)
    parts.extend(f"{key}={show_value(value)}" for key, value in data.items())
    if isinstance(outcome, dict):
        kind = outcome.get("type")
        if kind == "interrupt":
            count = len(outcome.get("interrupts") or ())
            parts.append(f"outcome=interrupt ({count} interrupt{'s' if count != 1 else ''}, shown below)")
        else:
            parts.append(f"outcome={kind}")
    if has_result:
        parts.append(f"result={show_value(result)}")
    return " ".join(parts)


def describe_reply(reply: Reply) -> str:
    """An answer in a few words: ``cancelled``, or ``resolved`` and its payload."""
    if reply.status == "cancelled":
        return "cancelled"
    return "resolved " + cut(as_json(reply.payload), 160)
