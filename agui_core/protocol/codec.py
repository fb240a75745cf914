"""The one codec: AG-UI JSON bytes to attrs objects and back.

Decoding is ``orjson.loads`` -> the compiled wire schema of the object's type (see
:mod:`agui_core.protocol.validation`) -> the class's structure hook. An input takes one walk
instead (:mod:`agui_core.protocol.fused`), which checks and builds it together; it goes the
long way only when the walk declines it, and the compiled schema then names the fault.
Encoding is the class's unstructure hook -> ``orjson.dumps``. The hooks are Python functions
generated once, at import, for every wire class (each field's handling inlined, unions
dispatched by tag or by class with one dict lookup; an encoder builds the wire objects nested
a few levels inside its own in place, by exact class) and registered on one cattrs
:data:`converter`, so wire objects nested in anything else cattrs handles use them too. They
follow three rules of the reference producers:

- keys are camelCase; an optional attribute that is ``None`` is left out, never written as null;
- free JSON (state, payloads, results, metadata) passes through untouched, ``null`` included;
- keys this version does not know are kept in the object's ``extra`` and written back as they
  came, so a proxy loses nothing.

An event of a type this version does not know decodes to :class:`UnknownEvent` and encodes back
to the same object. Outgoing events are not validated on the hot path; pass ``validate=True``
(tests and debug mode do) to check them against the same schemas the decoder uses.

Nesting. A document (an input or an event) nests at most :data:`MAX_DEPTH` levels of arrays
and objects. Decoding refuses a deeper one with the path where it goes too deep, encoding
with ``validate`` refuses one, and the thread machine refuses an agent's event or state that
would make one (:func:`overnested_at` is the one check they share). JSON readers and writers
disagree about depth (orjson reads 1,024 levels and writes 254); one limit well under both
means that whatever is accepted can be saved, announced and read back everywhere.

Size. What a host does with an input costs it time for every entry of the input's lists, far
more than parsing the entry did. :func:`decode_input` refuses, as soon as the JSON is parsed
(before its depth is measured or anything in it is validated or built), a ``resume`` of more
than :data:`MAX_RESUME_ENTRIES` entries (code ``INVALID_RESUME``) and, given ``max_messages``,
an input with more messages than that, more tools, more context entries, or more content parts
and tool calls in all its messages together (code ``INVALID_INPUT``). The error names the limit.
"""

from __future__ import annotations

import functools
import re
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal, Union, get_args, get_origin, get_type_hints

import attrs
import cattrs
import orjson

from agui_core.errors import EncodeError, InvalidEventError, InvalidInputError, RunErrorCode, format_path
from agui_core.protocol import types as t
from agui_core.protocol.events import EVENT_CLASS_BY_TYPE, EVENT_CLASSES, Event, UnknownEvent
from agui_core.protocol.frozen import builder_class, check_plain, check_slot
from agui_core.protocol.fused import build_input
from agui_core.protocol.validation import validate_event, validate_input

__all__ = [
    "MAX_DEPTH",
    "MAX_RESUME_ENTRIES",
    "SURROGATE",
    "converter",
    "decode_event",
    "decode_input",
    "depth_checked",
    "encode_event",
    "encode_input",
    "encode_text_deltas",
    "encode_text_deltas_framed",
    "event_from_dict",
    "event_to_dict",
    "input_from_dict",
    "input_to_dict",
    "json_fault",
    "overnested_at",
    "sendable_text",
    "structure_message",
    "text_fault",
    "text_fields",
    "unstructure_message",
    "wire_keys",
]

converter = cattrs.Converter()
"""The cattrs converter that knows every wire class. Use it for wire objects nested anywhere."""

MAX_DEPTH: Final = 128
"""How deeply a document (an input or an event) may nest arrays and objects; the document's
own object is level 1. A thread record wraps these documents a few levels deeper (fewer
than ten), well within what JSON encoding writes (254), so everything accepted can be saved."""

MAX_RESUME_ENTRIES: Final = 100
"""How many entries a resume may carry: one per open interrupt, and a thread has at most this
many (the thread machine's ``MAX_INTERRUPTS`` is this number), so a longer resume can never be
right. The decoder refuses one before anything in it is looked at."""

_SMALLEST_ENTRY: Final = 25
"""The fewest characters a valid entry of a counted list takes as JSON: a text part,
``{"type":"text","text":""}`` (a message, a tool call, a tool, a context entry or a resume
entry takes more). A document shorter than ``n + 1`` of them holds at most ``n`` entries that
pass validation, which stops at the first that does not: its lists need not be counted."""

_PATH_SHOWN: Final = 8
"""How many steps of the path to a too-deep value an error names (the rest adds nothing)."""

Path = tuple[str | int, ...]


def _writable_depth() -> int | None:
    """How deeply orjson writes (254 in every release so far); ``None`` if it is not that."""

    def nested(depth: int) -> Any:
        value: Any = None
        for _ in range(depth):
            value = [value]
        return value

    try:
        orjson.dumps(nested(254))
    except TypeError:
        return None
    try:
        orjson.dumps(nested(255))
    except TypeError:
        return 254
    return None


_WRITABLE_DEPTH: Final = _writable_depth()


def _walk(value: Any, allowed: int) -> Path | None:
    """The path to the first array or object in ``value`` deeper than ``allowed`` (``value``: 1)."""
    stack: list[tuple[Any, int, Path]] = [(value, 1, ())]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            children: list[tuple[str | int, Any]] = list(item.items())
        elif isinstance(item, list | tuple):
            children = list(enumerate(item))
        else:
            continue
        if depth > allowed:
            return path
        # Reversed onto the stack, so the first too-deep value in document order is found.
        children.reverse()
        for key, child in children:
            if isinstance(child, dict | list | tuple):
                # Paths stop growing at what an error shows, so a deep walk costs no more per value.
                stack.append((child, depth + 1, (*path, key) if len(path) < _PATH_SHOWN else path))
    return None


def overnested_at(value: Any, *, level: int = 1) -> Path | None:
    """Where ``value``, placed at ``level`` of a document (1: it is the document), makes the
    document nest deeper than :data:`MAX_DEPTH`; ``None`` where it does not.

    The answer is the path, inside ``value``, of the first array or object that is too deep,
    cut to its first few steps. Values that are not JSON are not judged here (encoding
    refuses them).
    """
    fault = json_fault(value, level=level)
    return fault[0] if fault is not None and fault[1] == _too_deep() else None


def json_fault(value: Any, *, level: int = 1) -> tuple[Path, str] | None:
    """Why ``value``, placed at ``level`` of a document, cannot be written as that document's
    JSON, and where inside ``value`` (its path, cut as :func:`overnested_at` cuts it); ``None``
    when it can.

    :func:`overnested_at`'s question, and the one it leaves to encoding: a value ``orjson``
    cannot write (a set, an ``object()``, a dict with a key that is not a string, an integer
    past 64 bits). Asked of what a thread keeps of an agent's (its state, an event's free
    JSON, a run's result), so that such a value is refused when it is given, not when the
    thread is saved or the event sent. A writable value costs the one ``orjson`` pass of
    :func:`overnested_at`; the walks are for refusals.
    """
    # Narrowed as a local: mypyc emits C that does not compile for a narrowed ``Final[int | None]``.
    writable_depth = _WRITABLE_DEPTH
    if writable_depth is not None and _writable_in_shell(value, writable_depth - MAX_DEPTH + level - 1):
        # The common case at C speed: wrapped in that many arrays, ``value`` is writable
        # exactly when it is not too deep. Only a refusal pays for the walks, to find the path.
        return None
    at = _walk(value, MAX_DEPTH - level + 1)
    if at is not None:
        return at, _too_deep()
    return _unwritable_at(value)


SURROGATE: Final = re.compile(r"[\ud800-\udfff]")
"""A surrogate code point. In a Python string one is never half of a pair but alone (a decoder's
``errors="surrogateescape"`` makes them of bytes that are not UTF-8), and it is not text: JSON in
UTF-8 cannot carry it. ``s.isascii() or SURROGATE.search(s) is None`` is the quick way to know a
string is free of them; :func:`text_fault` says where one is."""


def text_fault(value: str) -> str | None:
    """Why the string ``value`` is no text JSON can carry (a lone surrogate, named with its
    index), as a phrase that follows what holds it; ``None``: it is text."""
    found = SURROGATE.search(value)
    if found is None:
        return None
    return (
        f"holds the lone surrogate U+{ord(found.group()):04X} at index {found.start()}, which is not "
        "Unicode text: JSON cannot carry it (decode bytes that are not UTF-8 with errors='replace')"
    )


def sendable_text(value: str) -> str:
    """``value`` with each lone surrogate replaced by U+FFFD: text of the host's own (an
    exception's message) that it sends as it can, rather than refuses."""
    return value if value.isascii() else SURROGATE.sub("\ufffd", value)


def text_fields(cls: type[Any]) -> tuple[tuple[str, str], ...]:
    """The attributes of the wire class ``cls`` that hold text (a string, or a ``Literal`` of
    strings, optional or not), each with its key on the wire."""
    hints = get_type_hints(cls)
    out = []
    for name, wire in _wire_names(cls).items():
        tp = hints[name]
        kinds = get_args(tp) if get_origin(tp) in (Union, types.UnionType) else (tp,)
        if any(k is str or (get_origin(k) is Literal and all(isinstance(a, str) for a in get_args(k))) for k in kinds):
            out.append((name, wire))
    return tuple(out)


def _unwritable_at(value: Any) -> tuple[Path, str] | None:
    """The path of the first part of ``value`` (not too deep) that ``orjson`` cannot write, and why."""
    try:
        orjson.dumps(value)
    except TypeError:
        pass
    else:
        return None
    stack: list[tuple[Any, Path]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    return path, f"not JSON: an object key that is not a string ({type(key).__name__} {key!r:.40})"
                why = None if key.isascii() else text_fault(key)
                if why is not None:
                    return path, f"not JSON: an object key {why}"
            children: list[tuple[str | int, Any]] = list(item.items())
        elif isinstance(item, list | tuple):
            children = list(enumerate(item))
        else:
            try:
                orjson.dumps(item)
            except TypeError as exc:
                why = text_fault(item) if isinstance(item, str) else None
                return path, f"not JSON: a string {why}" if why is not None else f"not JSON ({exc})"
            continue
        children.reverse()  # so the first in document order is found first
        for key, child in children:
            stack.append((child, (*path, key) if len(path) < _PATH_SHOWN else path))
    return (), "not JSON"  # orjson refused the whole, and no part alone: not seen, but never silent


_SHELLS: dict[int, list[tuple[list[Any], list[Any]]]] = {}
"""Free shells by how many arrays deep they are: (outermost array, innermost array).

Building a hundred arrays for every check cost more than writing them; a shell is built once
and reused. A check takes a shell out of its pool while it holds a value, so threads
checking at once each use their own (``list.pop`` and ``append`` are atomic)."""


def _writable_in_shell(value: Any, wraps: int) -> bool:
    """Whether ``orjson`` writes ``value`` wrapped in ``wraps`` arrays."""
    if wraps <= 0:
        try:
            orjson.dumps(value)
        except TypeError:
            return False
        return True
    pool = _SHELLS.setdefault(wraps, [])
    try:
        outer, inner = pool.pop()
    except IndexError:
        inner = [None]
        outer = inner
        for _ in range(wraps - 1):
            outer = [outer]
    inner[0] = value
    try:
        orjson.dumps(outer)
    except TypeError:
        return False  # too deep, or not JSON at all
    finally:
        inner[0] = None  # a shell keeps nothing alive
        pool.append((outer, inner))
    return True


def _too_deep() -> str:
    return f"JSON nested at most {MAX_DEPTH} levels deep"


# Every wire class. The generated functions find each other through tables filled as the
# classes register, at call time, so the order here does not matter.
_WIRE_CLASSES: tuple[type[Any], ...] = (
    *(obj for obj in vars(t).values() if isinstance(obj, type) and attrs.has(obj)),
    *EVENT_CLASSES,
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_UNION_TAGS: dict[Any, str] = {
    t.Message: "role",
    t.InputContent: "type",
    t.InputContentSource: "type",
    t.RunFinishedOutcome: "type",
    t.SubagentFinishedOutcome: "type",
}
"""The tagged unions of the wire and the name of each one's tag."""

_UNION_NAMES: dict[Any, str] = {union: f"_U{n}" for n, union in enumerate(_UNION_TAGS)}
_BY_CLASS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {}
"""Every wire class's unstructure function."""
_STRUCTURE_BY_CLASS: dict[type[Any], Callable[..., Any]] = {}
"""Every wire class's structure function, ``(value, type=None) -> object``."""
_STRUCTURE_BY_TAG: dict[Any, dict[str, Callable[..., Any]]] = {union: {} for union in _UNION_TAGS}
"""For each tagged union, its members' structure functions by tag value. Filled once every
class is generated; the generated code holds these very dicts."""


def _is_optional(tp: Any) -> bool:
    return get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp)


def _without_none(tp: Any) -> Any:
    inner = tuple(a for a in get_args(tp) if a is not type(None))
    return inner[0] if len(inner) == 1 else Union[inner]  # noqa: UP007


def _is_wire(tp: Any) -> bool:
    """A wire class, or a tagged union of them."""
    return attrs.has(tp) or tp in _UNION_TAGS


def _structure_expr(tp: Any, var: str) -> str:
    """Python source that builds a value of declared type ``tp`` (not None) from ``var``."""
    if attrs.has(tp):
        return f"_S[{tp.__name__}]({var})"
    if tp in _UNION_TAGS:
        return f"{_UNION_NAMES[tp]}[{var}[{_UNION_TAGS[tp]!r}]]({var})"
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and args[1:] == (Ellipsis,):
        if _is_wire(args[0]):
            return f"tuple([{_structure_expr(args[0], 'x')} for x in {var}])"
        return f"tuple({var})"
    if origin in (Union, types.UnionType) and str in args:
        rest = next(a for a in args if a is not str)
        return f"{var} if {var}.__class__ is str else {_structure_expr(rest, var)}"
    return var  # str, int, bool, Literal, free JSON


_INLINE_DEPTH: Final = 3
"""How many levels of nested wire objects a generated function builds itself (the object it
encodes is level 0) before it calls the nested object's own function.

A Python call per nested object was most of the cost of a messages snapshot (message, tool
call, function) and of a run's end (outcome, interrupt). Three levels cover both; deeper
objects (a content part's source, an input's messages inside ``RUN_STARTED``) are rare."""

_MEMBERS_FIRST: Final[tuple[type[Any], ...]] = (t.AssistantMessage, t.UserMessage, t.ToolMessage)
"""Union members tried before the others, in this order: the messages most conversations hold
most of. A union is inlined as a chain of class tests, so the common ones should come first."""


def _indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _members(union: Any) -> list[type[Any]]:
    members = list(get_args(union))
    return sorted(members, key=lambda c: _MEMBERS_FIRST.index(c) if c in _MEMBERS_FIRST else len(_MEMBERS_FIRST))


def _unstructure_code(tp: Any, src: str, depth: int) -> tuple[list[str], str]:
    """Source that unstructures ``src``, whose declared type is ``tp`` (not None), inside the
    object at ``depth``: the statements to run first, and the expression of the result.

    A nested wire object is built in place when its class is exactly the declared one (or one
    of a union's members); any other class goes to ``_BY_CLASS`` by its class, as it did when
    every nested object was a call, so what a wrong class does (a KeyError, or another wire
    class's JSON) does not change. ``src`` is a local name or an attribute read; where
    statements use it, it is read once.
    """
    if _is_wire(tp):
        call = f"_BY_CLASS[{src}.__class__]({src})"
        if depth >= _INLINE_DEPTH:
            return [], call
        level = depth + 1
        obj, out = (src, f"d{level}") if src.isidentifier() else (f"o{level}", f"d{level}")
        lines = [] if obj == src else [f"{obj} = {src}"]
        members = _members(tp) if tp in _UNION_TAGS else [tp]
        if len(members) > 1:
            lines.append(f"c{level} = {obj}.__class__")
            test = f"c{level}"
        else:
            test = f"{obj}.__class__"
        for n, member in enumerate(members):
            lines.append(f"{'if' if n == 0 else 'elif'} {test} is {member.__name__}:")
            lines += _indented(_dict_lines(member, _wire_names(member), obj, out, level))
        lines += ["else:", f"    {out} = _BY_CLASS[{obj}.__class__]({obj})"]
        return lines, out
    origin, args = get_origin(tp), get_args(tp)
    if origin is tuple and args[1:] == (Ellipsis,):
        if not _is_wire(args[0]):
            return [], src  # a tuple of plain JSON values: orjson writes tuples as arrays
        item = f"x{depth}"
        code, expr = _unstructure_code(args[0], item, depth)
        if not code:
            return [], f"[{expr} for {item} in {src}]"
        lines = [f"l{depth} = []", f"for {item} in {src}:", *_indented([*code, f"l{depth}.append({expr})"])]
        return lines, f"l{depth}"
    if origin in (Union, types.UnionType) and str in args:
        # ``str | tuple[InputContent, ...]``: message content.
        rest = next(a for a in args if a is not str)
        code, expr = _unstructure_code(rest, src, depth)
        if not code:
            return [], f"{src} if {src}.__class__ is str else {expr}"
        value = f"s{depth}"
        code, expr = _unstructure_code(rest, value, depth)
        lines = [f"{value} = {src}", f"if {value}.__class__ is not str:", *_indented([*code, f"{value} = {expr}"])]
        return lines, value
    return [], src  # str, int, bool, Literal, free JSON


def _wire_names(cls: type[Any]) -> dict[str, str]:
    """Each attribute of ``cls`` and its key on the wire (``extra`` is no key)."""
    return {f.name: _camel(f.name) for f in attrs.fields(cls) if f.name != "extra"}


_WIRE_KEYS: dict[type[Any], frozenset[str]] = {}


def wire_keys(cls: type[Any]) -> frozenset[str]:
    """The keys a ``cls`` object's own fields take on the wire: what its ``extra`` (the unknown
    fields, written after them) must not hold, or it would overwrite them."""
    keys = _WIRE_KEYS.get(cls)
    if keys is None:
        keys = _WIRE_KEYS[cls] = frozenset(_wire_names(cls).values())
    return keys


def _compile(name: str, lines: list[str], namespace: dict[str, Any]) -> Any:
    namespace.update({c.__name__: c for c in _WIRE_CLASSES})
    exec(compile("\n".join(lines), f"<agui_core {name}>", "exec"), namespace)
    return namespace[name]


def _make_unstructure(cls: type[Any], wire: Mapping[str, str]) -> Callable[[Any], dict[str, Any]]:
    """The unstructure function of ``cls``: camelCase keys, None left out, extras written back.

    Only an attribute whose default is None is optional on the wire; tags and attributes with
    another default (``messages=()``) are always written. Each field's handling is inlined,
    which makes encoding several times faster than a hook per field.
    """
    body = [*_dict_lines(cls, wire, "o", "d", 0), "return d"]
    lines = [f"def unstructure_{cls.__name__}(o):", *_indented(body)]
    return _compile(f"unstructure_{cls.__name__}", lines, {"_BY_CLASS": _BY_CLASS})  # type: ignore[no-any-return]


def _make_encode(cls: type[Any], wire: Mapping[str, str]) -> Callable[[Any], bytes]:
    """The JSON bytes of a ``cls`` object: its unstructure function and ``orjson.dumps`` in one.

    One Python call per event instead of two: on a stream of small events (text deltas) the
    call costs as much as building the event's dict.
    """
    name = f"encode_{cls.__name__}"
    body = [
        *_dict_lines(cls, wire, "o", "d", 0),
        "try:",
        "    return _dumps(d)",
        "except TypeError as exc:",
        "    raise EncodeError(f'cannot encode as JSON: {exc}') from None",
    ]
    namespace = {"_BY_CLASS": _BY_CLASS, "_dumps": orjson.dumps, "EncodeError": EncodeError}
    return _compile(name, [f"def {name}(o):", *_indented(body)], namespace)  # type: ignore[no-any-return]


def _dict_lines(cls: type[Any], wire: Mapping[str, str], obj: str, out: str, depth: int) -> list[str]:
    """Source lines that build ``out``, the JSON object of the ``cls`` object ``obj``, which
    is ``depth`` levels of wire objects inside the one the function encodes.

    Keys go in in attribute order, required ones first, then the optional ones that are set,
    then ``extra``; nested wire objects are built before the key they go under.
    """
    hints = get_type_hints(cls)
    fields = attrs.fields_dict(cls)
    lines: list[str] = []
    plain: list[str] = []  # required keys whose values are expressions, for the dict display
    later: list[str] = []  # required keys after the first that needs statements
    optional = []
    for name, camel in wire.items():
        tp = hints[name]
        if fields[name].default is None:
            optional.append((name, camel, _without_none(tp) if _is_optional(tp) else tp))
            continue
        code, expr = _unstructure_code(tp, f"{obj}.{name}", depth)
        if code or later:
            later += [*code, f"{out}[{camel!r}] = {expr}"]
        else:
            plain.append(f"{camel!r}: {expr}")
    lines += [f"{out} = {{" + ", ".join(plain) + "}", *later]
    value = f"v{depth}"
    for name, camel, tp in optional:
        code, expr = _unstructure_code(tp, value, depth)
        if expr == value:
            # A plain value is read again when set rather than kept in a local: fewer
            # instructions on the common path, where it is None.
            lines.append(f"if {obj}.{name} is not None: {out}[{camel!r}] = {obj}.{name}")
            continue
        set_key = [*code, f"{out}[{camel!r}] = {expr}"]
        lines += [f"{value} = {obj}.{name}", f"if {value} is not None:", *_indented(set_key)]
    lines.append(f"if {obj}.extra: {out}.update({obj}.extra)")
    return lines


def _make_structure(cls: type[Any], wire: Mapping[str, str]) -> Callable[..., Any]:
    """The structure function of ``cls``, from a JSON object that passed the wire schema.

    Required keys are there and values have their declared types, so nothing is checked
    twice; keys this version does not know go to ``extra``. The object is built as its
    class's builder (:func:`~agui_core.protocol.frozen.builder_class`), whose slots take plain
    attribute stores, and then turned into ``cls``: no keyword-argument call to attrs'
    ``__init__``, and no C call through a slot's descriptor per field, which cost about a
    third of building a message.
    """
    hints = get_type_hints(cls)
    fields = attrs.fields_dict(cls)
    namespace: dict[str, Any] = {
        "_S": _STRUCTURE_BY_CLASS,
        "_KNOWN": frozenset(wire.values()),
        "_EMPTY": t.EMPTY,
        "_new": object.__new__,
    }
    namespace.update({_UNION_NAMES[u]: _STRUCTURE_BY_TAG[u] for u in _UNION_TAGS})
    namespace["_Builder"] = builder_class(cls)
    lines = [f"def structure_{cls.__name__}(d, _type=None):", "    o = _new(_Builder)"]
    for name, field in fields.items():
        check_slot(cls, name)
        if name == "extra":
            value = "_EMPTY if _KNOWN.issuperset(d) else {k: w for k, w in d.items() if k not in _KNOWN}"
        elif not field.init:
            namespace[f"_default_{name}"] = field.default
            value = f"_default_{name}"
        else:
            camel, tp = wire[name], hints[name]
            if field.default is None:
                expr = _structure_expr(_without_none(tp) if _is_optional(tp) else tp, "v")
                value = f"d.get({camel!r})" if expr == "v" else f"None if (v := d.get({camel!r})) is None else {expr}"
            elif field.default is attrs.NOTHING:
                value = _structure_expr(tp, f"d[{camel!r}]")
            else:
                namespace[f"_default_{name}"] = field.default
                value = f"_default_{name} if (v := d.get({camel!r}, _EMPTY)) is _EMPTY else {_structure_expr(tp, 'v')}"
        lines.append(f"    o.{name} = {value}")
    lines += [f"    o.__class__ = {cls.__name__}", "    return o"]
    return _compile(f"structure_{cls.__name__}", lines, namespace)  # type: ignore[no-any-return]


def _register_class(cls: type[Any]) -> None:
    check_plain(cls)
    wire = _wire_names(cls)
    unstructure = _BY_CLASS[cls] = _make_unstructure(cls, wire)
    structure = _STRUCTURE_BY_CLASS[cls] = _make_structure(cls, wire)
    converter.register_unstructure_hook(cls, unstructure)
    converter.register_structure_hook(cls, structure)


def _register_unions() -> None:
    """Tagged unions structure by their tag and unstructure by the object's class."""
    for union, tag in _UNION_TAGS.items():
        by_tag = _STRUCTURE_BY_TAG[union]
        for cls in get_args(union):
            by_tag[str(attrs.fields_dict(cls)[tag].default)] = _STRUCTURE_BY_CLASS[cls]

        def structure(value: Any, _type: Any, by_tag: dict[str, Any] = by_tag, tag: str = tag) -> Any:
            return None if value is None else by_tag[value[tag]](value)

        converter.register_structure_hook(union, structure)
        converter.register_structure_hook(Union[union, None], structure)  # noqa: UP007
        converter.register_unstructure_hook(union, lambda obj: _BY_CLASS[obj.__class__](obj))


for _cls in _WIRE_CLASSES:
    _register_class(_cls)
_register_unions()
converter.register_unstructure_hook(UnknownEvent, lambda ev: dict(ev.data))

# Looked up once: ``converter.structure(value, tp)`` and ``converter.unstructure(value, tp)``
# find the hook by dispatch on every call, which costs a long conversation about as much as
# building its messages.
structure_message: Final[Callable[[Any, Any], t.Message]] = converter.get_structure_hook(t.Message)
"""The codec's structure hook for any message: ``structure_message(data, Message)``."""
unstructure_message: Final[Callable[[t.Message], dict[str, Any]]] = converter.get_unstructure_hook(t.Message)
"""The codec's unstructure hook for any message: its wire dict."""

_UNSTRUCTURE_EVENT: dict[type[Any], Callable[[Any], dict[str, Any]]] = {
    cls: converter.get_unstructure_hook(cls) for cls in (*EVENT_CLASSES, UnknownEvent)
}
_ENCODE_EVENT: dict[type[Any], Callable[[Any], bytes]] = {
    cls: _make_encode(cls, _wire_names(cls)) for cls in EVENT_CLASSES
}
_ENCODE_EVENT[UnknownEvent] = lambda event: _dumps(dict(event.data))
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


def _refuse_long_lists(value: Any, max_messages: int | None, size: int | None) -> None:
    """Refuse an input whose lists are over the limits (see :func:`decode_input`), having
    looked at nothing but their lengths. ``size`` is the length of the input's JSON text
    (``None``: not known); a text too short to hold more valid entries than a limit allows is
    not counted against it."""
    if value.__class__ is not dict:
        return  # not an object at all: validation says so
    if size is None or size >= _SMALLEST_ENTRY * (MAX_RESUME_ENTRIES + 1):
        resume = value.get("resume")
        if resume.__class__ is list and len(resume) > MAX_RESUME_ENTRIES:
            error = InvalidInputError(
                f"at most {MAX_RESUME_ENTRIES} entries (a thread has at most {MAX_RESUME_ENTRIES} open "
                f"interrupts), not {len(resume)}",
                ("resume",),
            )
            error.code = RunErrorCode.INVALID_RESUME
            raise error
    if max_messages is None or (size is not None and size < _SMALLEST_ENTRY * (max_messages + 1)):
        return
    for key, entries in (("messages", "messages"), ("tools", "tools"), ("context", "context entries")):
        found = value.get(key)
        if found.__class__ is list and len(found) > max_messages:
            raise InvalidInputError(f"at most {max_messages} {entries} in one input, not {len(found)}", (key,))
    messages = value.get("messages")
    if messages.__class__ is not list:
        return
    parts = 0
    for message in messages:  # at most max_messages of them: counted above
        if message.__class__ is dict:
            content = message.get("content")
            calls = message.get("toolCalls")
            if content.__class__ is list:
                parts += len(content)
            if calls.__class__ is list:
                parts += len(calls)
    if parts > max_messages:
        raise InvalidInputError(
            f"at most {max_messages} content parts and tool calls in all the messages of one input, not {parts}",
            ("messages",),
        )


_DECODED: dict[int, tuple[weakref.ref[t.RunAgentInput], Sequence[Any] | None]] = {}
"""Every input :func:`decode_input` or :func:`input_from_dict` returned and still alive, by
``id``: a reference to the input, the proof that its depth was checked (a frozen input cannot
be given other values; ``attrs.evolve`` makes a new one, which is not here), and, for one
:func:`decode_input` parsed itself, its ``messages`` as parsed (see :func:`parsed_messages`).
An entry goes when its input does."""


def _forget(key: int, ref: weakref.ref[t.RunAgentInput]) -> None:
    # Called as the input dies, before its id can be another object's.
    found = _DECODED.get(key)
    if found is not None and found[0] is ref:
        del _DECODED[key]


def _remember(result: t.RunAgentInput, messages: Sequence[Any] | None) -> None:
    key = id(result)
    _DECODED[key] = (weakref.ref(result, functools.partial(_forget, key)), messages)


def depth_checked(run_input: t.RunAgentInput) -> bool:
    """Whether ``run_input`` is one this module decoded, so nested within :data:`MAX_DEPTH`.

    An input built in code is not: whoever takes it checks its depth (the thread machine
    does). The JSON values a decoded input carries are taken as decoded: a caller that edits
    them in place (a state made deeper) takes on what the check would have refused.
    """
    found = _DECODED.get(id(run_input))
    return found is not None and found[0]() is run_input


def parsed_messages(run_input: t.RunAgentInput) -> Sequence[Any] | None:
    """The ``messages`` of ``run_input`` as :func:`decode_input` parsed them from its bytes (wire
    dicts, one for each message, in order, as the schema accepted them), or ``None`` for an input
    it did not parse itself.

    The message dicts and their tool call dicts were made from the bytes and no caller holds
    them, and what a thread compares in them (roles, text, ids, tool names and arguments) is
    strings, so it still says what the input's messages say: a thread compares them, at C
    speed, with its own wire dicts (a client sends the whole conversation again with every
    input). Nested JSON values (metadata, unknown keys) are the input messages' own objects.
    Read them, never change them. They live as long as the input: while its run goes on, the
    conversation's dicts are held twice (not its strings, which the messages share).
    """
    found = _DECODED.get(id(run_input))
    return found[1] if found is not None and found[0]() is run_input else None


def _checked_input(value: Any) -> t.RunAgentInput:
    """The ``RunAgentInput`` of ``value`` (within the limits), or the refusal that says what
    is wrong with it and where.

    One walk (:func:`~agui_core.protocol.fused.build_input`) checks and builds an input the
    schema accepts. An input it declines goes the long way: the depth walk and the compiled
    schema, which name the fault, then the structure hooks, should there be none.
    """
    found = build_input(value)
    if found is not None:
        built, free = found
        # The walk has checked the wire objects, which nest a few levels; only free JSON nests deep.
        if not free or overnested_at(free) is None:
            return built
    at = overnested_at(value)
    if at is not None:
        raise InvalidInputError(_too_deep(), at)
    validate_input(value)
    result: t.RunAgentInput = _structure_input(value, t.RunAgentInput)
    return result


def input_from_dict(value: Any, *, max_messages: int | None = None) -> t.RunAgentInput:
    """Validate an already-parsed JSON value and build the ``RunAgentInput`` it describes.

    The limits are :func:`decode_input`'s.
    """
    _refuse_long_lists(value, max_messages, None)
    result = _checked_input(value)
    _remember(result, None)  # the caller holds ``value`` and may change it: not its messages
    return result


def decode_input(data: bytes | bytearray | memoryview | str, *, max_messages: int | None = None) -> t.RunAgentInput:
    """Decode and validate a ``RunAgentInput``; raises :class:`InvalidInputError`.

    ``max_messages`` (``None``: no limit) is the most messages one input may carry, and the
    most tools, the most context entries, and the most content parts and tool calls in all
    its messages together; a ``resume`` carries at most :data:`MAX_RESUME_ENTRIES` entries
    (``INVALID_RESUME``). An input over a limit is refused as soon as it is parsed, before
    anything in it is validated, with an error that names the limit.
    """
    value = _loads(data, InvalidInputError)
    # Before the depth walk and validation: both cost time for every entry of every list.
    _refuse_long_lists(value, max_messages, len(data))
    result = _checked_input(value)
    _remember(result, value.get("messages"))
    return result


def event_from_dict(value: Any) -> Event | UnknownEvent:
    """Validate an already-parsed JSON value and build the event it describes.

    A known ``type`` must satisfy its schema; an unknown one gives an :class:`UnknownEvent`.
    """
    if not isinstance(value, dict):
        raise InvalidEventError("an object")
    at = overnested_at(value)
    if at is not None:
        raise InvalidEventError(_too_deep(), at)
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
    try:
        out = unstructure(event)
    except KeyError as exc:
        raise _not_wire(event, exc) from None
    if validate:
        _check_depth(out, "an event")
    if validate and not isinstance(event, UnknownEvent):
        try:
            validate_event(out)
        except InvalidEventError as invalid:
            raise EncodeError(f"refusing to encode an invalid {event.type}: {invalid.message}") from None
    return out


def _check_depth(document: Any, what: str) -> None:
    at = overnested_at(document)
    if at is not None:
        raise EncodeError(f"refusing to encode {what} nested deeper than {MAX_DEPTH} levels (at {format_path(at)})")


def encode_event(event: Event | UnknownEvent, validate: bool = False) -> bytes:
    """Compact JSON bytes of ``event``."""
    # Called once per event: ``validate`` is not keyword-only because CPython does not
    # specialise calls to a function with keyword-only parameters, and ``type()`` is one
    # specialised instruction whatever the event's class, where ``__class__`` is not.
    if validate:
        return _dumps(event_to_dict(event, validate=True))
    try:
        encode = _ENCODE_EVENT[type(event)]
    except KeyError:
        found = _ENCODE_EVENT.get(event.__class__)  # an object that passes for an event
        if found is None:
            raise EncodeError(f"not an AG-UI event: {type(event).__name__}") from None
        encode = found
    try:
        return encode(event)
    except KeyError as exc:  # the encoders look nested wire objects up by class, and only that
        raise _not_wire(event, exc) from None


def encode_text_deltas(message_id: str, deltas: Sequence[str]) -> list[bytes]:
    """The compact JSON bytes of a ``TEXT_MESSAGE_CONTENT`` of ``message_id`` per delta, as
    :func:`encode_event` writes each (no subagent, timestamp, metadata or extra fields).

    For a run's streamed text, built without an event object per delta: the event's wire form
    is fixed but for two strings, and orjson writes a string alone as it writes it in a dict.
    """
    dumps = orjson.dumps
    try:
        head = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":' + dumps(message_id) + b',"delta":'
        return [head + dumps(delta) + b"}" for delta in deltas]
    except TypeError as exc:
        raise EncodeError(f"cannot encode as JSON: {exc}") from None


def encode_text_deltas_framed(message_id: str, deltas: Sequence[str], after: bytes) -> bytes:
    """What :func:`encode_text_deltas` gives, each event followed by ``after`` (``b"\\n"``: JSON
    lines), in one piece: one join instead of two concatenations a delta."""
    if not deltas:
        return b""
    dumps = orjson.dumps
    try:
        head = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":' + dumps(message_id) + b',"delta":'
        return head + (b"}" + after + head).join([dumps(delta) for delta in deltas]) + b"}" + after
    except TypeError as exc:
        raise EncodeError(f"cannot encode as JSON: {exc}") from None


def _not_wire(event: Any, exc: KeyError) -> EncodeError:
    """The error for an event or input built by hand with something else where a wire object belongs."""
    found = exc.args[0] if exc.args else None
    what = found.__name__ if isinstance(found, type) else repr(found)
    return EncodeError(f"cannot encode {type(event).__name__}: it holds a {what} where a wire object belongs")


def input_to_dict(run_input: t.RunAgentInput, *, validate: bool = False) -> dict[str, Any]:
    """The JSON object of ``run_input``; with ``validate``, checked against the wire schema."""
    if not isinstance(run_input, t.RunAgentInput):
        raise EncodeError(f"not a RunAgentInput: {type(run_input).__name__}")
    try:
        out: dict[str, Any] = _unstructure_input(run_input)
    except KeyError as exc:
        raise _not_wire(run_input, exc) from None
    if validate:
        _check_depth(out, "a RunAgentInput")
        try:
            validate_input(out)
        except InvalidInputError as invalid:
            raise EncodeError(f"refusing to encode an invalid RunAgentInput: {invalid.message}") from None
    return out


def encode_input(run_input: t.RunAgentInput, *, validate: bool = False) -> bytes:
    """Compact JSON bytes of ``run_input``."""
    return _dumps(input_to_dict(run_input, validate=validate))
