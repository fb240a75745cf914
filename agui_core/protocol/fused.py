"""A ``RunAgentInput`` checked against its wire schema and built into attrs objects in one walk.

The long way to decode an input walks it three times: the depth walk over the whole document,
the compiled wire schema over the whole document, then the structure hooks, which build the
attrs objects. Building alone cost about as much as the reference pydantic decoder's whole
run. Here one generated function per wire class (and per level of nesting the class sits at)
checks what the schema says about its object (the type of every value, the required keys, the
constants and enums of tags and statuses, the tagged unions, a resume entry's one dependency)
while it fills the object's slots, and collects the free JSON values it passes (state,
payloads, metadata, parameters, unknown keys): a valid input can nest deep only there, so the
depth of the whole document is measured with one call over them.

The walk *vouches* for an input or *declines* it; it never says what is wrong. The caller sends
an input it declines the long way, which refuses it with the JSON path and the phrase it always
did (or, should the walk ever be stricter than the schema, accepts and builds it). So whether
an input is refused, and what a refusal says, is decided by the schema check alone; the walk
only makes accepted inputs cheaper. What it promises (``tests/protocol/test_fused.py`` checks
it on the corpus and on hostile variants of valid inputs): it declines every input the schema
refuses, it vouches for every JSON document the schema accepts, and what it builds equals what
the structure hooks build.

It checks exact classes (``type(v) is str``, ``type(v) is dict``): what ``orjson`` produces. A
caller's value of another class (a ``str`` subclass, a tuple for an array, a mapping that is no
dict) is declined, and judged the long way.

The functions are generated at import from the schema files the validators compile and from
the attrs classes the codec builds. A schema keyword the generator does not know stops the
import: a rule must never be skipped without a word.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any, Final, Union, get_args, get_origin, get_type_hints

import attrs

from agui_core.protocol import types as t
from agui_core.protocol.frozen import builder_class, check_plain, check_slot
from agui_core.protocol.validation import _inline, _lookup

__all__ = ["build_input"]

_FILE: Final = "<agui_core fused input walk>"
"""The file name the generated functions run under, so that a crash in them is recognised."""


class _Decline(Exception):
    """The walk cannot vouch for the value: the schema check must judge it."""


class _Absent:
    """The value of a key that is not there, where ``None`` is a value."""


_ABSENT: Final = _Absent()

# What an annotation keyword is: read by the error messages of the validators, not a rule.
_NOTES: Final = frozenset({"description", "title", "$id", "$comment", "$schema", "x-expected", "x-report-at"})
_OBJECT_KEYWORDS: Final = frozenset({"type", "required", "properties", "allOf", "dependencies"}) | _NOTES
_VALUE_KEYWORDS: Final = frozenset({"type", "const", "enum"}) | _NOTES

_CLASSES_OF: Final[dict[str, tuple[type[Any], ...]]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    # Exact classes: a bool is no number here, as in JSON Schema.
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}
_ANY_JSON: Final[tuple[type[Any], ...]] = (dict, list, str, int, float, bool, type(None))
_CONTAINERS: Final[tuple[type[Any], ...]] = (dict, list)
_NAMES: Final[dict[type[Any], str]] = {c: c.__name__ for c in _ANY_JSON if c is not type(None)} | {
    type(None): "_NoneType"
}
"""How the generated code names each class a JSON value may have."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _without_none(tp: Any) -> Any:
    if get_origin(tp) in (Union, types.UnionType) and type(None) in get_args(tp):
        inner = tuple(a for a in get_args(tp) if a is not type(None))
        return inner[0] if len(inner) == 1 else Union[inner]  # noqa: UP007
    return tp


def _class_union(tp: Any) -> tuple[type[Any], ...] | None:
    """The member classes of ``tp`` if it is a union of attrs classes."""
    if get_origin(tp) in (Union, types.UnionType):
        members = get_args(tp)
        if all(attrs.has(m) for m in members):
            return members
    return None


def _wrap(expr: str, times: int) -> str:
    """Python source of ``expr`` inside ``times`` one-item tuples."""
    return "(" * times + expr + ",)" * times


def _extras(d: dict[Any, Any], known: frozenset[str], counted: int, free: list[Any], wraps: int) -> dict[str, Any]:
    """The keys of ``d`` its class does not know, with their values (the slow path of an object
    that has some, or that holds ``null`` under a known key, which no key of the input allows
    where the walk has not already counted it)."""
    extra: dict[str, Any] = {}
    for key, value in d.items():
        if type(key) is not str:
            raise _Decline
        if key in known:
            continue
        extra[key] = value
        kind = type(value)
        if kind is dict or kind is list:
            if value:
                for _ in range(wraps):
                    value = (value,)
                free.append(value)
        elif kind not in _ANY_JSON:
            raise _Decline
    if len(extra) + counted != len(d):
        raise _Decline  # a known key holds null where its schema wants a value
    return extra


class _Generator:
    """Writes the walk's functions: one per (wire class, level), and one table per tagged union
    (and level) from tag value to member function."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "_Decline": _Decline,
            "_ABSENT": _ABSENT,
            "_EMPTY": t.EMPTY,
            "_extras": _extras,
            "_NoneType": type(None),
        }
        self.sources: list[str] = []
        self.functions: dict[tuple[type[Any], int, str | None], str] = {}
        self.unions: dict[str, dict[str, str]] = {}  # table name -> tag value -> function name
        self.tables: dict[tuple[tuple[type[Any], ...], int], str] = {}  # (members, level) -> table name
        self.counter = 0

    def constant(self, prefix: str, value: Any) -> str:
        self.counter += 1
        name = f"_{prefix}{self.counter}"
        self.namespace[name] = value
        return name

    def free(self, expr: str, level: int) -> str:
        """The statement that hands ``expr``, a non-empty container at ``level``, to the depth check."""
        return f"free.append({_wrap(expr, level - 2)})"

    # --- objects ---------------------------------------------------------------------------

    def object_rules(self, schema: Mapping[str, Any]) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        """The required keys, the properties and the dependencies of an object schema, its
        ``allOf`` merged in."""
        unknown = set(schema) - _OBJECT_KEYWORDS
        if unknown:
            raise RuntimeError(f"the fused walk does not know the keywords {sorted(unknown)}")
        if schema.get("type", "object") != "object":
            raise RuntimeError(f"an object schema of type {schema['type']!r}")
        required = list(schema.get("required", ()))
        properties = dict(schema.get("properties", {}))
        dependencies = dict(schema.get("dependencies", {}))
        for sub in schema.get("allOf", ()):
            more_required, more_properties, more_dependencies = self.object_rules(sub)
            for key, rule in more_properties.items():
                if key in properties and properties[key] != rule:
                    raise RuntimeError(f"two rules for the key {key!r}")
            if set(more_dependencies) & set(dependencies):
                raise RuntimeError("two dependencies on one key")
            required += [k for k in more_required if k not in required]
            properties.update(more_properties)
            dependencies.update(more_dependencies)
        return required, properties, dependencies

    def function(self, cls: type[Any], schema: Mapping[str, Any], level: int, dispatched_by: str | None) -> str:
        """The name of the function that checks and builds a ``cls`` object at ``level``;
        ``dispatched_by`` is the tag a union picked it by (so it is there, and right)."""
        key = (cls, level, dispatched_by)
        known = self.functions.get(key)
        if known is not None:
            return known
        # A function a union reaches trusts the tag it was picked by; reached otherwise, the
        # same class at the same level gets a function of its own that checks it.
        name = f"walk_{cls.__name__}_{level}" + ("" if dispatched_by is None else f"_by_{dispatched_by}")
        self.functions[key] = name
        required, properties, dependencies = self.object_rules(schema)
        fields = attrs.fields_dict(cls)
        hints = get_type_hints(cls)
        wire = {_camel(f): f for f in fields if f != "extra"}
        if "extra" not in fields or set(properties) - set(wire) or set(required) - set(properties):
            raise RuntimeError(f"{cls.__name__} and its schema name different keys")
        self.namespace[cls.__name__] = cls
        # The keys that must be there, then the optional ones: an object holding the former
        # alone (most messages, tool calls, functions) skips every look-up of the latter.
        builder = self.constant(f"{cls.__name__}Builder", builder_class(cls))
        # A union has found ``d`` to be a dict before it read the tag (see ``pick``).
        common = [] if dispatched_by is not None else ["if type(d) is not dict: raise _Decline"]
        common.append(f"o = {builder}()")
        optional: list[str] = []
        absent: list[str] = []
        for camel, attribute in wire.items():
            check_slot(cls, attribute)
            field = fields[attribute]
            if camel not in properties:
                raise RuntimeError(f"{cls.__name__}.{attribute} has no rule in the schema")
            rule = properties[camel]
            if not field.init:  # a tag: its value is the class's
                value = self.constant("tag", field.default)
                if camel not in required:
                    raise RuntimeError(f"{cls.__name__}.{attribute} is a tag the schema does not require")
                if camel != dispatched_by:
                    if set(rule) - _NOTES != {"const"} or rule["const"] != field.default:
                        raise RuntimeError(f"{cls.__name__}.{attribute} is no constant in the schema")
                    common.append(f"v = d[{camel!r}]")
                    common.append(f"if type(v) is not str or v != {value}: raise _Decline")
                common.append(f"o.{attribute} = {value}")
                continue
            is_required = camel in required
            lines = self.field(cls, attribute, camel, hints[attribute], rule, is_required, level + 1)
            (common if is_required else optional).extend([*lines, f"o.{attribute} = v"])
            if not is_required:
                absent.append(f"o.{attribute} = None")
        for present, rule in dependencies.items():
            (common if present in required else optional).extend(self.dependency(cls, present, rule, properties))
        known_keys = self.constant("known", frozenset(wire))
        check_slot(cls, "extra")
        done = f"o.__class__ = {cls.__name__}"
        lines = [
            f"def {name}(d, free):",
            *_indent(common),
            f"    if len(d) == {len(required)}:",
            *_indent(_indent([*absent, "o.extra = _EMPTY", done, "return o"])),
            f"    n = {len(required)}",
            *_indent(optional),
            f"    o.extra = _EMPTY if len(d) == n else _extras(d, {known_keys}, n, free, {level - 1})",
            f"    {done}",
            "    return o",
        ]
        self.sources.append("\n".join(lines))
        return name

    def dependency(self, cls: type[Any], key: str, rule: Mapping[str, Any], properties: Mapping[str, Any]) -> list[str]:
        """``dependencies: {key: {properties: {other: {const: c}}}}``: when ``key`` is there,
        ``other``, if there, is ``c`` (a cancelled resume entry carries no payload)."""
        if set(rule) != {"properties"} or len(rule["properties"]) != 1:
            raise RuntimeError(f"a dependency of {cls.__name__} the fused walk does not know")
        ((other, sub),) = rule["properties"].items()
        if set(sub) - _NOTES != {"const"} or type(sub["const"]) is not str:
            raise RuntimeError(f"a dependency of {cls.__name__} the fused walk does not know")
        if self.nullable(properties[key]):
            raise RuntimeError("a dependency on a key that may hold null")
        # ``key`` holding null is refused by the count of known keys: absent and null alike here.
        value = self.constant("const", sub["const"])
        return [
            f"if d.get({key!r}) is not None:",
            f"    w = d.get({other!r}, _ABSENT)",
            f"    if w is not _ABSENT and (type(w) is not str or w != {value}): raise _Decline",
        ]

    # --- values ----------------------------------------------------------------------------

    def nullable(self, rule: Mapping[str, Any]) -> bool:
        return type(None) in self.classes(rule)

    def classes(self, rule: Mapping[str, Any]) -> tuple[type[Any], ...]:
        """The exact classes a plain value may have under ``rule``."""
        unknown = set(rule) - _VALUE_KEYWORDS
        if unknown:
            raise RuntimeError(f"the fused walk does not know the keywords {sorted(unknown)}")
        if "const" in rule or "enum" in rule:
            allowed = [rule["const"]] if "const" in rule else list(rule["enum"])
            if not all(type(value) is str for value in allowed) or "type" in rule:
                raise RuntimeError("a constant or enum that is not of strings alone")
            return (str,)
        kinds = rule.get("type")
        if kinds is None:
            return _ANY_JSON
        if isinstance(kinds, str):
            kinds = [kinds]
        return tuple(cls for kind in kinds for cls in _CLASSES_OF[kind])

    def field(
        self,
        owner: type[Any],
        attribute: str,
        camel: str,
        hint: Any,
        rule: Mapping[str, Any],
        required: bool,
        level: int,
    ) -> list[str]:
        """Lines that leave in ``v`` the built value of the key ``camel`` (at ``level``), its
        default when the key is absent, and count the key in ``n`` when it is optional and there."""
        default = attrs.fields_dict(owner)[attribute].default
        tp = _without_none(hint)
        nullable = "items" not in rule and "x-dispatch" not in rule and not attrs.has(tp) and self.nullable(rule)
        if nullable:
            # ``null`` is a value here, so absence is told apart from it.
            if required:
                raise RuntimeError(f"{owner.__name__}.{attribute}: a required key that may hold null")
            check = self.value(tp, rule, "v", level)
            body = ["n += 1", *check]
            if default is not None:
                raise RuntimeError(f"{owner.__name__}.{attribute}: a default other than None")
            return [f"v = d.get({camel!r}, _ABSENT)", "if v is _ABSENT: v = None", "else:", *_indent(body)]
        check = self.value(tp, rule, "v", level)
        if required:
            # Absent raises KeyError, which declines; null is refused by every check below.
            return [f"v = d[{camel!r}]", *check]
        if default is not None:
            raise RuntimeError(f"{owner.__name__}.{attribute}: an optional key whose default is not None")
        return [f"v = d.get({camel!r})", "if v is not None:", *_indent(["n += 1", *check])]

    def value(self, tp: Any, rule: Mapping[str, Any], var: str, level: int) -> list[str]:
        """Lines that check ``var`` (the value at ``level``, never absent here) against ``rule``
        and leave in it what the attribute of declared type ``tp`` holds."""
        if attrs.has(tp):
            return [f"{var} = {self.function(tp, rule, level, None)}({var}, free)"]
        members = _class_union(tp)
        if members is not None:
            return [f"{var} = {self.pick(members, rule, var, level)}({var}, free)"]
        origin, args = get_origin(tp), get_args(tp)
        if origin is tuple and args[1:] == (Ellipsis,):
            return self.array(args[0], rule, var, level, also_string=False)
        if origin in (Union, types.UnionType) and str in args and len(args) == 2:
            rest = next(a for a in args if a is not str)
            if get_origin(rest) is tuple and get_args(rest)[1:] == (Ellipsis,):
                return self.array(get_args(rest)[0], rule, var, level, also_string=True)
        return self.plain(rule, var, level)

    def pick(self, members: tuple[type[Any], ...], rule: Mapping[str, Any], var: str, level: int) -> str:
        """The expression of the member function for ``var``: its tag looked up in the union's
        table, once ``var`` is found to be a dict (what is not gets the key None, which no
        table has: KeyError, a decline). Nothing else is read from what may not be a dict."""
        table = self.union(members, rule, level)
        return f"{table}[{var}[{str(rule['x-dispatch']['tag'])!r}] if type({var}) is dict else None]"

    def union(self, members: tuple[type[Any], ...], rule: Mapping[str, Any], level: int) -> str:
        """The name of the table that picks the member function of a tagged union by its tag."""
        if (
            "x-dispatch" not in rule
            or set(rule) - _NOTES - {"type", "x-dispatch"}
            or rule.get("type", "object") != "object"
        ):
            raise RuntimeError("a union of wire classes without a tagged-union schema")
        tag = str(rule["x-dispatch"]["tag"])
        known = self.tables.get((members, level))
        if known is not None:
            return known
        self.counter += 1
        table = self.tables[members, level] = f"_by_{tag}_{self.counter}"
        by_tag: dict[str, str] = {}
        self.unions[table] = by_tag
        classes = {str(attrs.fields_dict(m)[tag].default): m for m in members}
        shapes: Mapping[str, str] = rule["x-dispatch"]["shapes"]
        if set(shapes) != set(classes):
            raise RuntimeError(f"the tags of {sorted(classes)} and of their schema differ")
        for value, ref in shapes.items():
            file, node = _lookup(ref)
            by_tag[value] = self.function(classes[value], _inline(node, file), level, tag)
        return table

    def array(self, item: Any, rule: Mapping[str, Any], var: str, level: int, *, also_string: bool) -> list[str]:
        """An array of wire objects (``also_string``: or a string, as message content is)."""
        expected = ["string", "array"] if also_string else "array"
        if set(rule) - _NOTES != {"type", "items"} or rule["type"] != expected:
            raise RuntimeError(f"an array rule the fused walk does not know: {sorted(rule)}")
        items = rule["items"]
        if attrs.has(item):
            build = f"{self.function(item, items, level + 1, None)}(x, free)"
        else:
            members = _class_union(item)
            if members is None:
                raise RuntimeError(f"an array of {item!r}, which is no wire class")
            build = f"{self.pick(members, items, 'x', level + 1)}(x, free)"
        lines = [f"if type({var}) is not list: raise _Decline", f"{var} = tuple([{build} for x in {var}])"]
        if also_string:
            return [f"if type({var}) is not str:", *_indent(lines)]
        return lines

    def plain(self, rule: Mapping[str, Any], var: str, level: int) -> list[str]:
        """A value kept as it is: a string, a constant, an enum, free JSON."""
        classes = self.classes(rule)
        if "const" in rule:
            return [f"if type({var}) is not str or {var} != {self.constant('const', rule['const'])}: raise _Decline"]
        if "enum" in rule:
            allowed = self.constant("enum", frozenset(rule["enum"]))
            return [f"if type({var}) is not str or {var} not in {allowed}: raise _Decline"]
        containers = [_NAMES[c] for c in classes if c in _CONTAINERS]
        scalars = [_NAMES[c] for c in classes if c not in _CONTAINERS]
        if not containers and len(scalars) == 1:
            return [f"if type({var}) is not {scalars[0]}: raise _Decline"]
        not_scalar = " and ".join(f"c is not {name}" for name in scalars)
        if not containers:
            return [f"c = type({var})", f"if {not_scalar}: raise _Decline"]
        container = " or ".join(f"c is {name}" for name in containers)
        return [
            f"c = type({var})",
            f"if {container}:",
            f"    if {var}: {self.free(var, level)}",
            f"elif {not_scalar}: raise _Decline" if scalars else "else: raise _Decline",
        ]

    def compile(self) -> dict[str, Any]:
        code = compile("\n\n".join(self.sources), _FILE, "exec")
        exec(code, self.namespace)
        for table, by_tag in self.unions.items():
            self.namespace[table] = {value: self.namespace[name] for value, name in by_tag.items()}
        return self.namespace


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _generate() -> tuple[Any, frozenset[type[Any]]]:
    generator = _Generator()
    file, node = _lookup("input.json#/definitions/RunAgentInput")
    name = generator.function(t.RunAgentInput, _inline(node, file), 1, None)
    classes = frozenset(cls for cls, _level, _tag in generator.functions)
    for cls in classes:
        check_plain(cls)
    return generator.compile()[name], classes


_walk_input, _WALKED = _generate()
"""The walk of a whole input, and every wire class it builds."""


def _raised_here(exc: BaseException) -> bool:
    """Whether ``exc`` comes from the walk's own code (a bug) rather than from reading a
    caller's value (a value that is not JSON, to be judged the long way)."""
    tb = exc.__traceback__
    if tb is None:
        return True
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename in (_FILE, __file__)


def build_input(value: Any) -> tuple[t.RunAgentInput, list[Any]] | None:
    """The ``RunAgentInput`` that ``value`` (parsed JSON) describes, checked against the wire
    schema, and the free JSON values in it, for the caller to measure the depth of; ``None``
    when the walk declines to vouch for ``value``: the schema check must then judge it.

    Each free value comes wrapped in as many one-item tuples as it sits below level 2 of the
    document (where the input's own values sit), so that the list of them, taken as a
    document, nests exactly as deep as the deepest of them makes the input nest.
    """
    free: list[Any] = []
    try:
        built: t.RunAgentInput = _walk_input(value, free)
    except (_Decline, KeyError, TypeError):
        # KeyError and TypeError: a required key missing, or a union's tag missing, unknown
        # or unhashable (or what holds it no object).
        return None
    except Exception as exc:
        if _raised_here(exc):
            raise
        return None
    return built, free
