"""A person's answers to interrupts, before they become resume entries. No I/O.

:class:`Reply` and the helpers that build one (:func:`resolve`, :func:`approve`, :func:`deny`,
:func:`approve_with_edits`, :func:`cancel`) are what :meth:`ClientMachine.resume
<agui_core.machine.client.ClientMachine.resume>` takes; :func:`plain_json` copies an answer's
values as plain JSON, refusing what JSON cannot carry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from agui_core.protocol.types import JSON

__all__ = ["REPLY_KEYS", "Reply", "approve", "approve_with_edits", "cancel", "deny", "plain_json", "resolve"]

REPLY_KEYS = frozenset({"status", "payload", "metadata"})
"""The keys of a reply given as a mapping shaped like the reference client's responses."""


@attrs.frozen(kw_only=True)
class Reply:
    """A person's answer to one interrupt, before it becomes a resume entry.

    ``payload=None`` leaves the payload out; ``metadata=None`` leaves the metadata out.
    Build one with :func:`resolve`, :func:`approve`, :func:`deny`, :func:`approve_with_edits`
    or :func:`cancel`.
    """

    status: Literal["resolved", "cancelled"]
    payload: JSON = None
    metadata: Mapping[str, JSON] | None = None


def resolve(payload: JSON, metadata: Mapping[str, JSON] | None = None) -> Reply:
    """Answer with ``payload`` (checked against the interrupt's ``responseSchema``)."""
    return Reply(status="resolved", payload=payload, metadata=metadata)


def approve(metadata: Mapping[str, JSON] | None = None) -> Reply:
    """Approve: the payload ``{"approved": true}``."""
    return Reply(status="resolved", payload={"approved": True}, metadata=metadata)


def deny(metadata: Mapping[str, JSON] | None = None) -> Reply:
    """Deny: the payload ``{"approved": false}`` (a denial is an answer, not a cancellation)."""
    return Reply(status="resolved", payload={"approved": False}, metadata=metadata)


def approve_with_edits(edited_args: Mapping[str, JSON], metadata: Mapping[str, JSON] | None = None) -> Reply:
    """Approve with the tool call's arguments replaced whole by ``edited_args``.

    Only for an interrupt whose ``responseSchema`` declares ``properties.editedArgs``.
    """
    return Reply(
        status="resolved",
        payload={"approved": True, "editedArgs": edited_args},
        metadata=metadata,
    )


def cancel(metadata: Mapping[str, JSON] | None = None) -> Reply:
    """Give up on the interrupt without an answer (a bound tool call is then not executed)."""
    return Reply(status="cancelled", metadata=metadata)


def plain_json(value: Any, where: str, depth: int = 0) -> Any:
    """``value`` as plain JSON (dicts and lists, copied), or ``TypeError``/``ValueError`` for
    what JSON cannot carry as it is (sets, NaN, non-string keys, arbitrary objects)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} holds {value!r}, which JSON cannot carry")
        return value
    if depth > 200:
        raise ValueError(f"{where} is nested too deeply")
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where} has the key {key!r}; JSON object keys are strings")
            out[key] = plain_json(item, f"{where}.{key}", depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [plain_json(item, f"{where}[{index}]", depth + 1) for index, item in enumerate(value)]
    raise TypeError(f"{where} holds a {type(value).__name__}, which is not a JSON value")
