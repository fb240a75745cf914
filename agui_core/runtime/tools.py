"""Tools a host runs for its agent, some of them only after a person approves the call.

A tool is an async (or plain) function registered under the name the model calls it by.
A tool that needs approval is proposed to the client (``TOOL_CALL_START/ARGS/END``) and the
run interrupts with ``reason: tool_call``; on resume the host carries out the decision before
the agent runs again: approved runs it with the original arguments or the full
``editedArgs``, denied does not run it and says so in its result, cancelled does not run it
and sends no result.

Edits are checked before anything runs: ``editedArgs`` must pass the tool's parameter schema
(given, or read from the function's signature), and keys the schema does not name are
refused unless it allows them (``additionalProperties``, or a ``**kwargs`` parameter).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import attrs
import cattrs

from agui_core.protocol.codec import sendable_text
from agui_core.protocol.types import JSON

__all__ = [
    "APPROVE_SCHEMA",
    "APPROVE_WITH_EDITS_SCHEMA",
    "NOT_RUN_AGAIN",
    "NO_EDITS",
    "Tool",
    "ToolOutcome",
    "approval_message",
    "failed_result",
    "tool",
]

NOT_RUN_AGAIN = "the host stopped while this call ran; it was not run again"
"""The result sent for an approved call whose tool started in an earlier attempt at the run and
left no result (status ``unknown``): it is never run twice."""

APPROVE_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
"""The answer a tool approval expects: ``{"approved": true|false}``."""

APPROVE_WITH_EDITS_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {"type": "object", "description": "Full replacement of the tool args. Not merged."},
    },
    "required": ["approved"],
}
"""The approve-with-edits pattern of SPEC section 5: ``editedArgs`` replaces the arguments whole."""

MAIN_ARGUMENT_SHOWN = 80
"""How much of a tool call's main argument its default approval message shows (characters)."""


def approval_message(name: str, args: Mapping[str, JSON] | object) -> str:
    """The question an approval asks when its agent wrote none, in a person's words.

    ``Run deleteFile on "c.txt"?``: the tool and its main argument (the first whose value is
    text, a number or yes/no), never the arguments' JSON; ``Run cleanUp?`` when it has none.
    """
    if isinstance(args, Mapping):
        for value in args.values():
            if isinstance(value, str) and value.strip():
                shown = " ".join(value.split())
                if len(shown) > MAIN_ARGUMENT_SHOWN:
                    shown = shown[:MAIN_ARGUMENT_SHOWN] + "…"
                return f'Run {name} on "{shown}"?'
            if isinstance(value, bool | int | float):
                return f"Run {name} on {str(value).lower() if isinstance(value, bool) else value}?"
    return f"Run {name}?"


FAILURE_SHOWN = 500
"""How much of a tool's exception message its failed result carries (characters)."""


def failed_result(exc: BaseException) -> tuple[str, Mapping[str, JSON]]:
    """The content and metadata of the ``TOOL_CALL_RESULT`` of a tool that raised ``exc``.

    The content says it failed and why, in the tool's own words (its exception's message, cut
    to :data:`FAILURE_SHOWN` characters): what the model and the person are told. The metadata
    ``{"agui-core": {"status": "failed", "error": ...}}`` says the same to a program, so a
    client shows a failure as one.
    """
    said = sendable_text(str(exc).strip())  # bytes that are not UTF-8 in it (a file name) are no text
    if len(said) > FAILURE_SHOWN:
        said = said[:FAILURE_SHOWN] + "…"
    error = f"{type(exc).__name__}: {said}" if said else type(exc).__name__
    return f"the tool failed ({error})", {"agui-core": {"status": "failed", "error": error}}


NO_EDITS: Mapping[str, JSON] = {"not": {}, "description": "this tool takes no edits"}
"""The parameter schema of a tool that allows no edits: no ``editedArgs`` passes it."""


@attrs.frozen(kw_only=True)
class Tool:
    """A function the agent can call by ``name``; ``needs_approval`` gates it behind a person."""

    name: str
    function: Callable[..., Any]
    needs_approval: bool = False
    allow_edits: bool = True
    description: str = ""
    args_schema: Mapping[str, JSON] | None = None
    """The JSON Schema of the arguments, if given; otherwise :attr:`parameters` reads the signature."""

    @property
    def parameters(self) -> Mapping[str, JSON]:
        """The JSON Schema edited arguments must pass: ``args_schema``, or one read from the signature.

        An object schema that does not say otherwise refuses keys it does not name.
        """
        schema = self.args_schema if self.args_schema is not None else _signature_schema(self.function)
        is_object = schema.get("type") == "object" or ("type" not in schema and "properties" in schema)
        if is_object and "additionalProperties" not in schema:
            schema = {**schema, "additionalProperties": False}
        return schema

    @property
    def approval_schema(self) -> Mapping[str, JSON]:
        """The ``responseSchema`` of this tool's approvals (SPEC section 5), as clients see it.

        ``editedArgs`` is exactly :attr:`parameters`, the schema the host checks edits against, so
        a client knows which edits pass before it sends them.
        """
        if not self.allow_edits:
            return APPROVE_SCHEMA
        return {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "editedArgs": dict(self.parameters)},
            "required": ["approved"],
        }

    async def invoke(self, args: Mapping[str, JSON]) -> JSON:
        """Call the function with ``args`` as keyword arguments; await it when it is async.

        An argument the signature declares as an attrs class or a dataclass (or a list or
        optional of one) arrives as that class, built from its JSON.
        """
        hints = _hints(self.function) if self.args_schema is None else {}
        given = {
            key: _structure.structure(value, hints[key]) if key in hints and _holds_record_class(hints[key]) else value
            for key, value in args.items()
        }
        result = self.function(**given)
        if inspect.isawaitable(result):
            result = await result
        return result


_JSON_TYPES: Mapping[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
    tuple: "array",
}

_structure = cattrs.Converter()
"""Turns edited or proposed JSON arguments into the attrs classes and dataclasses a tool declares."""


def _is_record_class(annotation: Any) -> bool:
    return isinstance(annotation, type) and (attrs.has(annotation) or dataclasses.is_dataclass(annotation))


def _record_schema(cls: type, seen: frozenset[Any]) -> dict[str, JSON]:
    """An attrs class, dataclass or TypedDict as a closed JSON object: its fields, the required ones."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # annotations that cannot be resolved: any value under each name
        hints = {}
    properties: dict[str, JSON] = {}
    required: list[JSON] = []
    if typing.is_typeddict(cls):
        for key in hints:
            properties[key] = _annotation_schema(hints[key], seen)
        required = [key for key in hints if key in getattr(cls, "__required_keys__", frozenset(hints))]
    elif attrs.has(cls):
        for field in attrs.fields(cls):
            if not field.init:
                continue
            key = field.alias or field.name
            properties[key] = _annotation_schema(hints.get(field.name, Any), seen)
            if field.default is attrs.NOTHING:
                required.append(key)
    else:
        for item in dataclasses.fields(cls):
            if not item.init:
                continue
            properties[item.name] = _annotation_schema(hints.get(item.name, Any), seen)
            if item.default is dataclasses.MISSING and item.default_factory is dataclasses.MISSING:
                required.append(item.name)
    schema: dict[str, JSON] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def _annotation_schema(annotation: Any, seen: frozenset[Any] = frozenset()) -> dict[str, JSON]:
    """The JSON Schema of a parameter annotation; any value (``{}``) where none can be said.

    Plain types, ``list[X]``, ``dict[str, X]``, ``Literal``, enums, optional values, and
    attrs classes, dataclasses and TypedDicts (closed objects of their fields, nested as deep as
    they go; a class that contains itself is any object from its second appearance).
    """
    origin = typing.get_origin(annotation) or annotation
    arguments = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [m for m in arguments if m is not type(None)]
        options = [_annotation_schema(m, seen) for m in members]
        if len(arguments) > len(members):
            options.append({"type": "null"})
        if any(not option for option in options):
            return {}
        if len(options) == 1:
            return options[0]
        if all(set(option) == {"type"} and isinstance(option["type"], str) for option in options):
            return {"type": [option["type"] for option in options]}  # Optional[str]: ["string", "null"]
        return {"anyOf": list(options)}
    if origin is Literal:
        return {"enum": [value for value in arguments if isinstance(value, str | int | float | bool)]}
    if typing.is_typeddict(origin) or _is_record_class(origin):
        if origin in seen:
            return {"type": "object"}
        return _record_schema(origin, seen | {origin})
    if isinstance(origin, type) and issubclass(origin, enum.Enum):
        return {"enum": [member.value for member in origin if isinstance(member.value, str | int | float | bool)]}
    if isinstance(origin, type):
        for python, json_type in _JSON_TYPES.items():
            if issubclass(origin, python) and not (python is int and issubclass(origin, bool)):
                schema: dict[str, JSON] = {"type": json_type}
                if json_type == "array" and origin is not tuple and len(arguments) == 1:
                    items = _annotation_schema(arguments[0], seen)
                    if items:
                        schema["items"] = items
                if json_type == "object" and len(arguments) == 2:
                    values = _annotation_schema(arguments[1], seen)
                    if values:
                        schema["additionalProperties"] = values
                return schema
        if issubclass(origin, Mapping):
            return {"type": "object"}
    return {}


def _signature_schema(function: Callable[..., Any]) -> dict[str, JSON]:
    """The arguments a function takes as keywords, as a JSON Schema object."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return {"type": "object"}
    hints = _hints(function)
    properties: dict[str, JSON] = {}
    required: list[JSON] = []
    extra = False
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            extra = True
        elif parameter.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            properties[parameter.name] = _annotation_schema(hints.get(parameter.name, Any))
            if parameter.default is inspect.Parameter.empty:
                required.append(parameter.name)
    schema: dict[str, JSON] = {"type": "object", "properties": properties, "additionalProperties": extra}
    if required:
        schema["required"] = required
    return schema


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(function)
    except Exception:  # annotations that cannot be resolved: names only
        return {}


def _holds_record_class(annotation: Any) -> bool:
    """Whether JSON for ``annotation`` must be structured before the tool sees it."""
    if _is_record_class(annotation):
        return True
    return any(_holds_record_class(argument) for argument in typing.get_args(annotation))


@typing.overload
def tool(name: Callable[..., Awaitable[JSON] | JSON], /) -> Tool: ...


@typing.overload
def tool(
    name: str | None = None,
    *,
    needs_approval: bool = False,
    allow_edits: bool = True,
    args_schema: Mapping[str, JSON] | None = None,
) -> Callable[[Callable[..., Awaitable[JSON] | JSON]], Tool]: ...


def tool(
    name: str | Callable[..., Awaitable[JSON] | JSON] | None = None,
    *,
    needs_approval: bool = False,
    allow_edits: bool = True,
    args_schema: Mapping[str, JSON] | None = None,
) -> Tool | Callable[[Callable[..., Awaitable[JSON] | JSON]], Tool]:
    """Make a :class:`Tool` of a function: ``@tool``, or ``@tool("sendEmail", needs_approval=True)``."""

    def wrap(function: Callable[..., Awaitable[JSON] | JSON]) -> Tool:
        return Tool(
            name=(name if isinstance(name, str) else None) or function.__name__,
            function=function,
            needs_approval=needs_approval,
            allow_edits=allow_edits,
            description=inspect.getdoc(function) or "",
            args_schema=args_schema,
        )

    if name is not None and not isinstance(name, str):
        if not callable(name):
            raise TypeError(f"@tool takes a tool's name (a string) or its function, not {name!r}")
        return wrap(name)  # ``@tool`` without parentheses
    return wrap


@attrs.frozen(kw_only=True)
class ToolOutcome:
    """What became of one tool call, as the agent sees it on the run after the decision.

    ``status`` is ``executed`` (``result`` holds what the tool returned), ``denied`` (a person
    said no), ``cancelled`` (nobody decided: not run, no result sent), ``expired`` (nobody
    decided before the approval's ``expiresAt``: not run), ``failed`` (the tool raised;
    ``error`` says what) or ``unknown`` (the host stopped while the tool ran; it is never run
    twice, so whether it took effect cannot be known).
    """

    tool_call_id: str
    name: str
    status: Literal["executed", "denied", "cancelled", "expired", "failed", "unknown"]
    args: Mapping[str, JSON]
    result: JSON = None
    error: str | None = None
    edited: bool = False
