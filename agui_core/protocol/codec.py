"""The one codec: AG-UI JSON bytes to attrs objects and back.

Decoding is ``orjson.loads`` -> the compiled wire schema of the object's type (see
:mod:`agui_core.protocol.validation`) -> one cattrs structure hook per class. Encoding is one
cattrs unstructure hook per class -> ``orjson.dumps``. The hooks are generated once, at import,
for every wire class, with three rules the reference producers follow:

- keys are camelCase; an optional attribute that is ``None`` is left out, never written as null;
- free JSON (state, payloads, results, metadata) passes through untouched, ``null`` included;
- keys this version does not know are kept in the object's ``extra`` and written back as they
  came, so a proxy loses nothing.

An event of a type this version does not know decodes to :class:`UnknownEvent` and encodes back
to the same object. Outgoing events are not validated on the hot path; pass ``validate=True``
(tests and debug mode do) to check them against the same schemas the decoder uses.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, Union, get_args, get_origin, get_type_hints

import attrs
import cattrs
import orjson
from cattrs.gen import make_dict_structure_fn, override

from agui_core.errors import EncodeError, InvalidEventError, InvalidInputError
from agui_core.protocol import types as t
from agui_core.protocol.events import EVENT_CLASS_BY_TYPE, EVENT_CLASSES, Event, UnknownEvent
from agui_core.protocol.validation import validate_event, validate_input

__all__ = [
    "converter",
    "decode_event",
    "decode_input",
    "encode_event",
    "encode_input",
    "event_from_dict",
    "event_to_dict",
    "input_from_dict",
    "input_to_dict",
]

converter = cattrs.Converter()
"""The cattrs converter that knows every wire class. Use it for wire objects nested anywhere."""

# In definition order, which is leaf first: a class's hook is generated after the hooks of
# the classes it holds, so cattrs finds them instead of its generic fallback.
_WIRE_CLASSES: tuple[type[Any], ...] = (
    *(obj for obj in vars(t).values() if isinstance(obj, type) and attrs.has(obj)),
    *EVENT_CLASSES,
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _identity(value: Any, _type: Any = None) -> Any:
    return value


def _is_free_json(tp: Any) -> bool:
    """Free JSON passes through both ways: ``Any`` and ``Mapping[str, Any]``."""
    return tp is Any or (get_origin(tp) is Mapping and get_args(tp)[1] is Any)


converter.register_structure_hook_func(_is_free_json, _identity)
converter.register_unstructure_hook_func(_is_free_json, _identity)
# Free JSON arrives as dicts and lists; wire objects are never held in them. Unstructuring
# them by identity keeps a large state or payload from being copied on every event.
converter.register_unstructure_hook(dict, _identity)
converter.register_unstructure_hook(list, _identity)


def _tagged_union(tag: str, members: tuple[type[Any], ...]) -> Callable[[Any, Any], Any]:
    """A structure hook that picks a union member by its tag with one dict lookup."""
    by_tag = {attrs.fields_dict(cls)[tag].default: cls for cls in members}
    hooks: dict[str, Callable[[Any, Any], Any]] = {}

    def structure(value: Any, _type: Any) -> Any:
        # Member hooks are looked up on first use: the classes register after the unions.
        name = value[tag]
        hook = hooks.get(name)
        if hook is None:
            hook = hooks[name] = converter.get_structure_hook(by_tag[name])
        return hook(value, None)

    return structure


def _optional(hook: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _type: Any) -> Any:
        return None if value is None else hook(value, _type)

    return structure


def _register_unions() -> None:
    for union, tag in (
        (t.Message, "role"),
        (t.InputContent, "type"),
        (t.InputContentSource, "type"),
        (t.RunFinishedOutcome, "type"),
        (t.SubagentFinishedOutcome, "type"),
    ):
        members = get_args(union)
        hook = _tagged_union(tag, members)
        converter.register_structure_hook(union, hook)
        # ``X | None`` of a tagged union: None passes through, the rest goes to the hook.
        converter.register_structure_hook(Union[union, None], _optional(hook))
    parts_hook = _tagged_union("type", get_args(t.InputContent))

    def content(value: Any, _type: Any) -> Any:
        if isinstance(value, str):
            return value
        return tuple(parts_hook(part, None) for part in value)

    converter.register_structure_hook(str | tuple[t.InputContent, ...], content)


def _register_class(cls: type[Any]) -> None:
    fields = attrs.fields(cls)
    wire = {f.name: _camel(f.name) for f in fields if f.name != "extra"}
    known = frozenset(wire.values())
    tags = {f.name for f in fields if not f.init}
    st_overrides: dict[str, Any] = {name: override(rename=camel) for name, camel in wire.items() if name not in tags}
    st_overrides["extra"] = override(omit=True)
    base_structure = make_dict_structure_fn(cls, converter, **st_overrides)

    # Only an attribute whose default is None is optional on the wire; tags and fields with
    # another default (``messages=()``) are always written.
    unstructure = _BY_CLASS[cls] = _make_unstructure(cls, wire)
    def structure(value: Mapping[str, Any], _type: Any) -> Any:
        obj = base_structure(value, cls)
        if not known.issuperset(value):
            obj = attrs.evolve(obj, extra={k: v for k, v in value.items() if k not in known})
        return obj

    converter.register_unstructure_hook(cls, unstructure)
    converter.register_structure_hook(cls, structure)


_UNION_MEMBERS: dict[Any, tuple[type[Any], ...]] = {
    union: get_args(union)
    for union in (t.Message, t.InputContent, t.InputContentSource, t.RunFinishedOutcome, t.SubagentFinishedOutcome)
}
_BY_CLASS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}
"""Every wire class's unstructure function, for unions that dispatch on ``obj.__class__``."""


def _value_expr(tp: Any, var: str) -> str:
    """Python source that unstructures ``var``, whose declared type is ``tp`` (not None)."""
    if attrs.has(tp):
        return f"_BY_CLASS[{tp.__name__}]({var})"
    if tp in _UNION_MEMBERS:
        return f"_BY_CLASS[{var}.__class__]({var})"
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and args[1:] == (Ellipsis,):
        inner = args[0]
        if attrs.has(inner) or inner in _UNION_MEMBERS:
            return f"[{_value_expr(inner, 'x')} for x in {var}]"
        return var  # a tuple of plain JSON values: orjson writes tuples as arrays
    if origin in (Union, types.UnionType) and str in args:
        # ``str | tuple[InputContent, ...]``: message content.
        rest = next(a for a in args if a is not str)
        return f"{var} if {var}.__class__ is str else {_value_expr(rest, var)}"
    if origin in (Union, types.UnionType) and all(a in _UNION_MEMBERS or attrs.has(a) for a in args):
        return f"_BY_CLASS[{var}.__class__]({var})"
    return var  # str, int, bool, Literal, free JSON


def _make_unstructure(cls: type[Any], wire: Mapping[str, str]) -> Callable[[Any], dict[str, Any]]:
    """Generate the unstructure function of ``cls``: camelCase keys, None left out, extras kept.

    cattrs' own generator goes through a hook per field and per union member; this one
    inlines each field's handling, which makes encoding several times faster.
    """
    hints = get_type_hints(cls)
    fields = {f.name: f for f in attrs.fields(cls)}
    required, optional = [], []
    for name, camel in wire.items():
        tp = hints[name]
        field = fields[name]
        if field.default is None:
            inner = tuple(a for a in get_args(tp) if a is not type(None))
            if get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp):
                tp = inner[0] if len(inner) == 1 else Union[inner]  # noqa: UP007
            optional.append((name, camel, _value_expr(tp, "v")))
        else:
            required.append((name, camel, _value_expr(tp, f"o.{name}")))
    lines = [f"def unstructure_{cls.__name__}(o):"]
    lines.append("    d = {" + ", ".join(f"{camel!r}: {expr}" for _, camel, expr in required) + "}")
    for name, camel, expr in optional:
        lines.append(f"    v = o.{name}")
        lines.append(f"    if v is not None: d[{camel!r}] = {expr}")
    lines.append("    if o.extra: d.update(o.extra)")
    lines.append("    return d")
    namespace: dict[str, Any] = {"_BY_CLASS": _BY_CLASS}
    namespace.update({c.__name__: c for c in _WIRE_CLASSES})
    exec(compile("\n".join(lines), f"<agui_core unstructure {cls.__name__}>", "exec"), namespace)
    function: Callable[[Any], dict[str, Any]] = namespace[f"unstructure_{cls.__name__}"]
    return function


_register_unions()
for _cls in _WIRE_CLASSES:
    _register_class(_cls)
for _union in _UNION_MEMBERS:
    converter.register_unstructure_hook(_union, lambda obj: _BY_CLASS[obj.__class__](obj))
converter.register_unstructure_hook(UnknownEvent, lambda ev: dict(ev.data))

_UNSTRUCTURE_EVENT: dict[type[Any], Callable[[Any], dict[str, Any]]] = {
    cls: converter.get_unstructure_hook(cls) for cls in (*EVENT_CLASSES, UnknownEvent)
}
_STRUCTURE_EVENT: dict[str, Callable[[Any, Any], Any]] = {
    tag: converter.get_structure_hook(cls) for tag, cls in EVENT_CLASS_BY_TYPE.items()
}
_structure_input = converter.get_structure_hook(t.RunAgentInput)
_unstructure_input = converter.get_unstructure_hook(t.RunAgentInput)


def _loads(data: bytes | bytearray | memoryview | str, error: type[InvalidInputError] | type[InvalidEventError]) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise error(f"valid JSON ({exc.msg} at position {exc.pos})") from None
    except TypeError:
        raise error(f"JSON text as bytes or str, not {type(data).__name__}") from None


def _dumps(obj: Any) -> bytes:
    try:
        return orjson.dumps(obj)
    except TypeError as exc:
        raise EncodeError(f"cannot encode as JSON: {exc}") from None


def input_from_dict(value: Any) -> t.RunAgentInput:
    """Validate an already-parsed JSON value and build the ``RunAgentInput`` it describes."""
    validate_input(value)
    result: t.RunAgentInput = _structure_input(value, t.RunAgentInput)
    return result


def decode_input(data: bytes | bytearray | memoryview | str) -> t.RunAgentInput:
    """Decode and validate a ``RunAgentInput``; raises :class:`InvalidInputError`."""
    return input_from_dict(_loads(data, InvalidInputError))


def event_from_dict(value: Any) -> Event | UnknownEvent:
    """Validate an already-parsed JSON value and build the event it describes.

    A known ``type`` must satisfy its schema; an unknown one gives an :class:`UnknownEvent`.
    """
    if not isinstance(value, dict):
        raise InvalidEventError("an object")
    tag = value.get("type")
    structure = _STRUCTURE_EVENT.get(tag) if isinstance(tag, str) else None
    if structure is None:
        if not isinstance(tag, str):
            raise InvalidEventError("a string", ("type",))
        return UnknownEvent(type=tag, data=value)
    validate_event(value)
    return structure(value, None)  # type: ignore[no-any-return]


def decode_event(data: bytes | bytearray | memoryview | str) -> Event | UnknownEvent:
    """Decode and validate one event; raises :class:`InvalidEventError`."""
    return event_from_dict(_loads(data, InvalidEventError))


def event_to_dict(event: Event | UnknownEvent, *, validate: bool = False) -> dict[str, Any]:
    """The JSON object of ``event``; with ``validate``, checked against its wire schema."""
    try:
        unstructure = _UNSTRUCTURE_EVENT[type(event)]
    except KeyError:
        raise EncodeError(f"not an AG-UI event: {type(event).__name__}") from None
    out = unstructure(event)
    if validate and not isinstance(event, UnknownEvent):
        try:
            validate_event(out)
        except InvalidEventError as exc:
            raise EncodeError(f"refusing to encode an invalid {event.type}: {exc.message}") from None
    return out


def encode_event(event: Event | UnknownEvent, *, validate: bool = False) -> bytes:
    """Compact JSON bytes of ``event``."""
    if validate:
        return _dumps(event_to_dict(event, validate=True))
    unstructure = _UNSTRUCTURE_EVENT.get(event.__class__)
    if unstructure is None:
        raise EncodeError(f"not an AG-UI event: {type(event).__name__}")
    try:
        return orjson.dumps(unstructure(event))
    except TypeError as exc:
        raise EncodeError(f"cannot encode as JSON: {exc}") from None


def input_to_dict(run_input: t.RunAgentInput, *, validate: bool = False) -> dict[str, Any]:
    """The JSON object of ``run_input``; with ``validate``, checked against the wire schema."""
    if not isinstance(run_input, t.RunAgentInput):
        raise EncodeError(f"not a RunAgentInput: {type(run_input).__name__}")
    out: dict[str, Any] = _unstructure_input(run_input)
    if validate:
        try:
            validate_input(out)
        except InvalidInputError as exc:
            raise EncodeError(f"refusing to encode an invalid RunAgentInput: {exc.message}") from None
    return out


def encode_input(run_input: t.RunAgentInput, *, validate: bool = False) -> bytes:
    """Compact JSON bytes of ``run_input``."""
    return _dumps(input_to_dict(run_input, validate=validate))

