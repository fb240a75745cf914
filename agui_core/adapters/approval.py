"""The approval a framework adapter asks before a tool runs: its ``responseSchema``, edits included.

Every adapter that turns a framework's native tool approval into a ``tool_call`` interrupt
offers the same answer shape (SPEC section 5): ``{"approved": boolean}``, plus ``editedArgs``
when the tool's arguments may be edited, checked against the tool's own parameter schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import orjson

from agui_core.protocol.types import JSON
from agui_core.runtime.tools import APPROVE_SCHEMA

__all__ = ["approval_schema", "tool_arguments"]


def approval_schema(input_schema: Mapping[str, JSON] | None, *, allow_edits: bool) -> Mapping[str, JSON]:
    """The ``responseSchema`` of an approval: edits (``editedArgs``) must fit ``input_schema``.

    Without ``allow_edits`` an answer carrying ``editedArgs`` fails the schema
    (``INVALID_PAYLOAD``) rather than being quietly ignored.
    """
    if not allow_edits:
        return {**APPROVE_SCHEMA, "not": {"required": ["editedArgs"]}}
    if input_schema is None:
        return {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
            "required": ["approved"],
        }
    # The input schema moves under properties.editedArgs, but its definitions (pydantic's
    # "$defs" for a model parameter) are referred to from its root: they move to the root of
    # the approval schema, and any other reference to the input schema's root follows it.
    edited = {k: _moved_refs(v) for k, v in input_schema.items() if k not in _DEFINITIONS}
    schema: dict[str, JSON] = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "editedArgs": edited},
        "required": ["approved"],
    }
    for key in _DEFINITIONS:
        if isinstance(input_schema.get(key), dict):
            schema[key] = _moved_refs(input_schema[key])
    return schema


_DEFINITIONS: Final = ("$defs", "definitions")
_EDITED_ARGS: Final = "#/properties/editedArgs"


def _moved_refs(value: JSON) -> JSON:
    """``value`` (part of a tool's input schema) with its ``$ref``s made to fit the approval schema."""
    if isinstance(value, list):
        return [_moved_refs(v) for v in value]
    if not isinstance(value, dict):
        return value
    moved: dict[str, JSON] = {}
    for key, item in value.items():
        if key == "$ref" and isinstance(item, str) and item.startswith("#"):
            pointer = item[1:]
            kept = any(pointer == f"/{d}" or pointer.startswith(f"/{d}/") for d in _DEFINITIONS)
            moved[key] = item if kept else _EDITED_ARGS + pointer
        else:
            moved[key] = _moved_refs(item)
    return moved


def tool_arguments(value: object) -> dict[str, JSON]:
    """A tool call's arguments as a framework hands them over (a mapping, or JSON text that may
    be empty or broken), as the object an interrupt carries: ``{}`` for anything else."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            decoded = orjson.loads(value or "{}")
        except orjson.JSONDecodeError:
            return {}
        return decoded if isinstance(decoded, dict) else {}
    return {}
