"""The client's enforcement stage: unrecognised union members stripped before strict decoding. No I/O.

The spec's processing model (``docs/spec/1.1/basic/processing``) tells a consumer apart from a
producer: a union member it does not recognise (an outcome named after it shipped, a content
part of a new kind) MUST NOT abort the run; the consumer strips it and SHOULD warn, naming the
path removed. ``agui_core.protocol``'s codec is the host's: it validates a known ``type``
strictly and refuses such members, and the host keeps refusing them in what it reads (the seed
profile). So the client path runs :func:`strip_unrecognised` over the raw JSON object first,
and decodes what is left strictly (:func:`decode_client_event`): a malformed known value stays
fatal.

What is stripped, each with the :class:`Stripped` notice the client machine turns into a
warning of the same rule (:attr:`~agui_core.machine.client.ClientMachine.warnings`):

``outcome-unknown``
    A ``RUN_FINISHED`` ``outcome`` whose ``type`` is a string this version does not describe.
    The outcome is optional, so the field goes and the run finishes (read as success).
``patch-op-unknown``
    A ``STATE_DELTA`` or ``ACTIVITY_DELTA`` operation whose ``op`` is a string RFC 6902 does not
    define. The operation is dropped from the list; the rest of the patch applies.
``content-part-unknown``
    A content part in a ``MESSAGES_SNAPSHOT`` message (or in a message of the input a
    ``RUN_STARTED`` echoes) whose ``type`` is a string this version does not describe, or a
    media part whose ``source`` has such a ``type`` (the source is required, so the part goes
    whole). The part is dropped from the list; the message stays.

A member whose tag is not a string at all is malformed, not unrecognised: it is left for the
strict decoder to refuse. An object with nothing to strip comes back as it is (no copy).
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson

from agui_core.protocol import events as ev
from agui_core.protocol.codec import decode_event, event_from_dict

__all__ = ["STRIP_RULES", "Stripped", "decode_client_event", "strip_unrecognised"]

STRIP_RULES = frozenset({"outcome-unknown", "patch-op-unknown", "content-part-unknown"})
"""The warning rules of what :func:`strip_unrecognised` removes."""

_OUTCOME_TYPES = frozenset({"success", "interrupt", "cancelled"})
_PATCH_OPS = frozenset({"add", "remove", "replace", "move", "copy", "test"})
_PART_TYPES = frozenset({"text", "image", "audio", "video", "document"})
_SOURCE_TYPES = frozenset({"data", "url", "file"})
_PATCH_FIELDS = {"STATE_DELTA": "delta", "ACTIVITY_DELTA": "patch"}


@attrs.frozen(kw_only=True)
class Stripped:
    """One piece of unrecognised material removed from an event: ``rule`` (one of
    :data:`STRIP_RULES`), the JSON Pointer ``path`` it was at, and a ``message`` naming both."""

    rule: str
    path: str
    message: str


def _unknown_tag(member: Any, known: frozenset[str]) -> str | None:
    """The tag of ``member`` when it is a string outside ``known``; else ``None``."""
    if not isinstance(member, dict):
        return None
    tag = member.get("type")
    return tag if isinstance(tag, str) and tag not in known else None


def _strip_outcome(value: dict[str, Any], notices: list[Stripped]) -> dict[str, Any]:
    tag = _unknown_tag(value.get("outcome"), _OUTCOME_TYPES)
    if tag is None:
        return value
    notices.append(
        Stripped(
            rule="outcome-unknown",
            path="/outcome",
            message=f"RUN_FINISHED /outcome of unknown type {tag!r} was stripped; the run finished",
        )
    )
    return {key: item for key, item in value.items() if key != "outcome"}


def _strip_patch(value: dict[str, Any], field: str, notices: list[Stripped]) -> dict[str, Any]:
    patch = value.get(field)
    if not isinstance(patch, list):
        return value
    kept: list[Any] = []
    for position, operation in enumerate(patch):
        op = operation.get("op") if isinstance(operation, dict) else None
        if isinstance(op, str) and op not in _PATCH_OPS:
            notices.append(
                Stripped(
                    rule="patch-op-unknown",
                    path=f"/{field}/{position}",
                    message=f"{value['type']} /{field}/{position} has unknown op {op!r}; dropped, the rest applied",
                )
            )
        else:
            kept.append(operation)
    return value if len(kept) == len(patch) else {**value, field: kept}


def _part_fault(part: Any) -> str | None:
    """Why a content part is unrecognised (``None``: it is not)."""
    tag = _unknown_tag(part, _PART_TYPES)
    if tag is not None:
        return f"a content part of unknown type {tag!r}"
    source = part.get("source") if isinstance(part, dict) else None
    tag = _unknown_tag(source, _SOURCE_TYPES)
    if tag is not None:
        return f"a {part.get('type')} part whose source is of unknown type {tag!r}"
    return None


def _strip_parts(value: dict[str, Any], notices: list[Stripped], label: str, at: str = "") -> dict[str, Any]:
    """``value`` (an object holding ``messages``, at JSON Pointer ``at``) without its messages'
    unrecognised content parts; ``label`` names the event in the notices."""
    messages = value.get("messages")
    if not isinstance(messages, list):
        return value
    changed = False
    kept_messages: list[Any] = []
    for index, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            kept_messages.append(message)
            continue
        kept: list[Any] = []
        for position, part in enumerate(content):
            fault = _part_fault(part)
            if fault is None:
                kept.append(part)
                continue
            path = f"{at}/messages/{index}/content/{position}"
            notices.append(
                Stripped(
                    rule="content-part-unknown",
                    path=path,
                    message=f"{label} {path} is {fault}; dropped from the message",
                )
            )
        if len(kept) == len(content):
            kept_messages.append(message)
        else:
            changed = True
            kept_messages.append({**message, "content": kept})
    return {**value, "messages": kept_messages} if changed else value


def strip_unrecognised(value: Any) -> tuple[Any, tuple[Stripped, ...]]:
    """``value`` (a raw event object) without the unrecognised union members this module
    describes, and a notice for each removed. Anything else, malformed included, is left as it
    is for the strict decoder to judge; ``value`` itself is never changed."""
    if not isinstance(value, dict):
        return value, ()
    etype = value.get("type")
    notices: list[Stripped] = []
    if etype == "RUN_FINISHED":
        value = _strip_outcome(value, notices)
    elif etype in _PATCH_FIELDS:
        value = _strip_patch(value, _PATCH_FIELDS[etype], notices)
    elif etype == "MESSAGES_SNAPSHOT":
        value = _strip_parts(value, notices, "MESSAGES_SNAPSHOT")
    elif etype == "RUN_STARTED" and isinstance(value.get("input"), dict):
        run_input = _strip_parts(value["input"], notices, "RUN_STARTED", "/input")
        if run_input is not value["input"]:
            value = {**value, "input": run_input}
    return value, tuple(notices)


def decode_client_event(
    data: bytes | bytearray | memoryview | str,
) -> tuple[ev.Event | ev.UnknownEvent, tuple[Stripped, ...]]:
    """One event as a client reads it: unrecognised union members stripped
    (:func:`strip_unrecognised`), the rest decoded strictly. Returns the event and what was
    stripped, for :meth:`~agui_core.machine.client.ClientMachine.receive_event`'s ``stripped``.
    Raises :class:`~agui_core.errors.InvalidEventError` as
    :func:`~agui_core.protocol.codec.decode_event` does."""
    try:
        value = orjson.loads(data)
    except (orjson.JSONDecodeError, TypeError):
        # Not JSON: the codec's own decoder raises the error, worded as everywhere else.
        return decode_event(data), ()
    value, notices = strip_unrecognised(value)
    return event_from_dict(value), notices
