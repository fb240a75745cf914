"""Reading interrupts the legacy way ``ag-ui-langgraph`` announces them, by default.

Such a server announces an interrupt with the ``CUSTOM`` event named
:data:`LEGACY_INTERRUPT_EVENT` (``on_interrupt``) and ends the run with a ``RUN_FINISHED``
that has no ``outcome``. :func:`legacy_interrupt` reads one such event as the interrupt it
stands for; :class:`~agui_core.machine.client.ClientMachine` reads the run as one that ended
with an interrupt outcome holding them. No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from agui_core.protocol import events as ev
from agui_core.protocol.types import Interrupt

__all__ = ["LEGACY_INTERRUPT_EVENT", "LEGACY_REASON", "legacy_interrupt"]

LEGACY_INTERRUPT_EVENT = "on_interrupt"
"""The ``CUSTOM`` event name legacy LangGraph servers announce an interrupt with."""

LEGACY_REASON = "langgraph:interrupt"


def legacy_interrupt(event: ev.CustomEvent, *, fallback_id: str) -> Interrupt:
    """The interrupt a legacy ``on_interrupt`` ``CUSTOM`` event announces.

    Its ``value`` (the value given to LangGraph's ``interrupt()``, often sent as a JSON string)
    gives ``reason``, ``message`` and ``responseSchema`` when it is an object carrying them; a
    string value is the ``message``. The id is the LangGraph interrupt id the event's
    ``rawEvent`` carries, else ``fallback_id``. Without a reason (or with ``tool_call``, which
    the event cannot bind to a tool call), the interrupt is ``input_required`` when it has a
    schema, else ``langgraph:interrupt``. The value is kept in ``metadata["langgraph"]``.
    """
    value: Any = event.value
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            pass
    raw = event.raw_event
    raw_id = raw.get("id") if isinstance(raw, Mapping) else None
    fields: dict[str, Any] = {}
    reason: Any = None
    if isinstance(value, Mapping):
        reason = value.get("reason")
        if isinstance(value.get("message"), str):
            fields["message"] = value["message"]
        if isinstance(value.get("responseSchema"), Mapping):
            fields["response_schema"] = value["responseSchema"]
    elif isinstance(value, str):
        fields["message"] = value
    if not isinstance(reason, str) or not reason or reason == "tool_call":
        reason = "input_required" if "response_schema" in fields else LEGACY_REASON
    return Interrupt(
        id=raw_id if isinstance(raw_id, str) and raw_id else fallback_id,
        reason=reason,
        metadata={"langgraph": {"value": value, "legacy": LEGACY_INTERRUPT_EVENT}},
        **fields,
    )
