"""Which UI an interrupt needs: approval, form, confirmation or the fallback. No I/O.

:func:`route_interrupt` switches on the core reasons (SPEC section 4) and never fails on an
unknown one: any other reason gets the fallback, rendered from ``message``, ``responseSchema``
and ``metadata``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import attrs

from agui_core.machine.interrupts import CONFIRMATION_SCHEMA, offers_edits
from agui_core.protocol.types import JSON, Interrupt

__all__ = ["DEFAULT_CONFIRMATION_SCHEMA", "ProposedToolCall", "Route", "RouteKind", "route_interrupt"]

DEFAULT_CONFIRMATION_SCHEMA: Mapping[str, Any] = CONFIRMATION_SCHEMA
"""What a ``confirmation`` without a ``responseSchema`` is answered with (SPEC section 4)."""

RouteKind: TypeAlias = Literal["approval", "form", "confirmation", "fallback"]


@attrs.frozen(kw_only=True)
class ProposedToolCall:
    """A tool call as the client saw it proposed: ``arguments`` is the JSON text streamed or
    snapshotted, ``args`` its parsed value (``None`` when the text is not JSON)."""

    id: str
    name: str | None
    arguments: str
    args: JSON = None


@attrs.frozen(kw_only=True)
class Route:
    """The UI an interrupt needs.

    ``kind``: ``approval`` (reason ``tool_call``), ``form`` (``input_required``),
    ``confirmation`` or ``fallback`` (any other reason: render ``message``, ``schema`` and
    ``metadata``). ``schema`` is the schema the answer must satisfy: the ``responseSchema``,
    or :data:`DEFAULT_CONFIRMATION_SCHEMA` for a confirmation that declares none.
    ``editable`` (approval) says whether an edit form may be offered; ``tool_call`` (approval)
    is the call awaiting the decision, when the client saw it.
    """

    kind: RouteKind
    interrupt: Interrupt
    message: str | None = None
    schema: Mapping[str, JSON] | None = None
    metadata: Mapping[str, JSON] | None = None
    editable: bool = False
    tool_call: ProposedToolCall | None = None


def route_interrupt(interrupt: Interrupt, tool_call: ProposedToolCall | None = None) -> Route:
    """The UI ``interrupt`` needs; ``tool_call`` is the call an approval concerns, as the client
    saw it proposed. Never raises: an unknown reason gets the fallback."""
    schema = interrupt.response_schema if isinstance(interrupt.response_schema, Mapping) else None
    metadata = interrupt.metadata if isinstance(interrupt.metadata, Mapping) else None
    message = interrupt.message if isinstance(interrupt.message, str) else None
    reason = interrupt.reason
    common: dict[str, Any] = {"interrupt": interrupt, "message": message, "metadata": metadata}
    if reason == "tool_call":
        return Route(kind="approval", schema=schema, editable=offers_edits(schema), tool_call=tool_call, **common)
    if reason == "input_required":
        return Route(kind="form", schema=schema, **common)
    if reason == "confirmation":
        return Route(
            kind="confirmation",
            schema=schema if schema is not None else DEFAULT_CONFIRMATION_SCHEMA,
            **common,
        )
    return Route(kind="fallback", schema=schema, **common)
