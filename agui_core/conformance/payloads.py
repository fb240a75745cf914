"""Resume payloads made from a ``responseSchema``: one that satisfies it, and ones that break it.

The conformance kit answers interrupts it knows nothing about, so it reads each interrupt's
``responseSchema`` and writes the answer itself: :func:`valid_payload` builds the smallest
value the schema accepts (required properties only, the first ``enum`` member, the
``minimum``, a well-known example for a ``format``), and :func:`violating_payloads` builds
values that each break the schema in one named way (:data:`VIOLATION_KINDS`): the wrong JSON
type, a required property left out, a value outside an ``enum``, a number under its
``minimum``, ...

Both are checked against the schema with :class:`~agui_core.protocol.payload.PayloadValidators`
before they are returned, so the kit never calls a server wrong for refusing a value that
was not in fact valid, nor for accepting one that was not in fact invalid. A schema the
generator cannot satisfy (a ``pattern`` it cannot guess, say) raises
:class:`PayloadGenerationError`; the person running the kit then supplies the answer
(``agui conformance --answers FILE``).

The generator follows the draft-07 keywords an interrupt's form usually holds; it is not a
general JSON Schema sampler.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from agui_core.errors import PayloadError, ResponseSchemaError
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import JSON

__all__ = [
    "VIOLATION_KINDS",
    "PayloadGenerationError",
    "Violation",
    "valid_payload",
    "violating_payloads",
]

VIOLATION_KINDS: Final = (
    "wrong type",
    "missing required",
    "enum miss",
    "below minimum",
    "above maximum",
    "too short",
    "too long",
    "format miss",
    "pattern miss",
    "extra property",
    "wrong property type",
)
"""The ways :func:`violating_payloads` breaks a schema, in the order it tries them."""

_FORMAT_EXAMPLES: Final[Mapping[str, str]] = {
    "email": "someone@example.com",
    "idn-email": "someone@example.com",
    "date-time": "2030-01-01T00:00:00Z",
    "date": "2030-01-01",
    "time": "12:00:00Z",
    "uri": "https://example.com/",
    "uri-reference": "https://example.com/",
    "iri": "https://example.com/",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "duration": "P1D",
    "json-pointer": "/a",
    "regex": "a",
}

# Values of each JSON type, tried in this order when the type must be wrong.
_WRONG_TYPE_CANDIDATES: Final[tuple[JSON, ...]] = ("not the expected type", 12345, 1.5, True, [], {}, None)
# The falsy ones, for an approval: a careless server reading a truthy value as a yes reads none of these so.
_FALSY_CANDIDATES: Final[tuple[JSON, ...]] = (None, False, 0, "", [])

_MAX_DEPTH = 8


class PayloadGenerationError(ValueError):
    """No value that satisfies the schema could be made; ``where`` is the JSON path at fault."""

    def __init__(self, message: str, where: str = "$") -> None:
        super().__init__(f"{where}: {message}")
        self.where = where


@attrs.frozen(kw_only=True)
class Violation:
    """A payload that breaks a schema in one way: ``kind`` (one of :data:`VIOLATION_KINDS`),
    ``path`` (where, as ``$.a.b``), ``value`` (the whole payload to send)."""

    kind: str
    path: str
    value: JSON

    def describe(self) -> str:
        """``kind at path`` for a report."""
        return f"{self.kind} at {self.path}"


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    if "properties" in schema or "required" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _number(schema: Mapping[str, Any], integral: bool) -> int | float:
    low: float | None = None
    minimum, exclusive = schema.get("minimum"), schema.get("exclusiveMinimum")
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        low = minimum + (1 if exclusive is True else 0)  # draft-04's boolean exclusiveMinimum
    if isinstance(exclusive, (int, float)) and not isinstance(exclusive, bool):
        low = max(low, exclusive + 1) if low is not None else exclusive + 1
    maximum = schema.get("maximum")
    value: int | float = low if low is not None else 1
    if isinstance(maximum, (int, float)) and not isinstance(maximum, bool) and value > maximum:
        value = maximum
    if integral:
        value = int(value) if float(value).is_integer() else int(value) + 1
    return value


def _string(schema: Mapping[str, Any]) -> str:
    text = _FORMAT_EXAMPLES.get(str(schema.get("format")), "x")
    minimum, maximum = schema.get("minLength"), schema.get("maxLength")
    if isinstance(minimum, int) and len(text) < minimum:
        text = text + "x" * (minimum - len(text))
    if isinstance(maximum, int) and len(text) > maximum:
        text = text[:maximum]
    return text


def _example(schema: Any, where: str, depth: int) -> JSON:
    """A value ``schema`` should accept (checked by the caller)."""
    if depth > _MAX_DEPTH:
        raise PayloadGenerationError("nested too deeply", where)
    if schema is True or schema == {}:
        return {}
    if schema is False:
        raise PayloadGenerationError("the schema false accepts nothing", where)
    if not isinstance(schema, Mapping):
        raise PayloadGenerationError(f"not a schema: {schema!r}", where)
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return copy.deepcopy(enum[0])
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return _example(branches[0], where, depth + 1)
    merged = dict(schema)
    for part in schema.get("allOf") or ():
        if isinstance(part, Mapping):
            for name, value in part.items():
                if name == "properties" and isinstance(value, Mapping):
                    merged["properties"] = {**(merged.get("properties") or {}), **value}
                elif name == "required" and isinstance(value, list):
                    merged["required"] = [*(merged.get("required") or []), *value]
                else:
                    merged.setdefault(name, value)
    types = _types(merged)
    kind = next((t for t in types if t != "null"), types[0] if types else "object")
    if kind == "object":
        declared = merged.get("properties")
        properties: Mapping[str, Any] = declared if isinstance(declared, Mapping) else {}
        out: dict[str, JSON] = {}
        for name in merged.get("required") or ():
            if isinstance(name, str):
                out[name] = _example(properties.get(name, {}), f"{where}.{name}", depth + 1)
        approved = properties.get("approved")
        if isinstance(approved, Mapping) and _types(approved) == ["boolean"]:
            out["approved"] = True  # the seed's approval pattern: the kit approves
        return out
    if kind == "array":
        least = merged.get("minItems")
        count = least if isinstance(least, int) else 0
        items = merged.get("items", {})
        return [_example(items, f"{where}[{i}]", depth + 1) for i in range(count)]
    if kind == "string":
        return _string(merged)
    if kind in ("integer", "number"):
        return _number(merged, integral=kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    raise PayloadGenerationError(f"unknown type {kind!r}", where)


def _accepts(validators: PayloadValidators, schema: Mapping[str, Any], value: JSON) -> bool:
    try:
        validators.validate("conformance", schema, value)
    except PayloadError:
        return False
    return True


def valid_payload(schema: Mapping[str, Any], *, validators: PayloadValidators | None = None) -> JSON:
    """The smallest value ``schema`` accepts, as the kit builds it; an approval's
    ``approved`` is ``true``.

    Raises :class:`PayloadGenerationError` when the value built does not pass the schema,
    and :class:`~agui_core.errors.ResponseSchemaError` when the schema cannot be compiled.
    """
    checker = validators if validators is not None else PayloadValidators()
    value = _example(schema, "$", 0)
    try:
        checker.validate("conformance", schema, value)
    except PayloadError as exc:
        raise PayloadGenerationError(f"the value built ({value!r}) fails the schema: {exc.message}") from None
    return value


def _set(root: JSON, path: Sequence[str], value: JSON) -> JSON:
    if not path:
        return value
    out = copy.deepcopy(root)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


def _drop(root: JSON, path: Sequence[str]) -> JSON:
    out = copy.deepcopy(root)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return out


def _wrong_type(schema: Mapping[str, Any], validators: PayloadValidators, falsy: bool) -> Iterator[JSON]:
    types = _types(schema)
    if not types:
        return
    # Judged by the type alone, so a value refused for another reason (an enum) is not taken.
    only: Mapping[str, Any] = {"type": types[0] if len(types) == 1 else types}
    for candidate in _FALSY_CANDIDATES if falsy else _WRONG_TYPE_CANDIDATES:
        if not _accepts(validators, only, candidate):
            yield candidate
            return


def _mutations(
    schema: Mapping[str, Any],
    base: JSON,
    path: tuple[str, ...],
    validators: PayloadValidators,
    depth: int,
    falsy: bool = False,
) -> Iterator[tuple[str, tuple[str, ...], JSON]]:
    """(kind, path, whole payload) for each way to break ``schema`` at ``path`` in ``base``."""
    here = base
    for key in path:
        here = here[key]
    if not path:
        for wrong in _wrong_type(schema, validators, falsy):
            yield "wrong type", path, wrong
    else:
        for wrong in _wrong_type(schema, validators, falsy):
            yield "wrong property type", path, _set(base, path, wrong)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        miss = "not-" + "-".join(str(v) for v in enum)[:40]
        yield "enum miss", path, _set(base, path, miss)
    for bound, kind, step in (("minimum", "below minimum", -1), ("maximum", "above maximum", 1)):
        limit = schema.get(bound)
        if isinstance(limit, (int, float)) and not isinstance(limit, bool):
            yield kind, path, _set(base, path, limit + step)
    if isinstance(schema.get("minLength"), int) and schema["minLength"] > 0:
        yield "too short", path, _set(base, path, "")
    if isinstance(schema.get("maxLength"), int):
        yield "too long", path, _set(base, path, "x" * (schema["maxLength"] + 1))
    if isinstance(schema.get("format"), str):
        yield "format miss", path, _set(base, path, "not a " + schema["format"])
    if isinstance(schema.get("pattern"), str):
        yield "pattern miss", path, _set(base, path, "\u0000")
    if not isinstance(here, dict) or depth >= _MAX_DEPTH:
        return
    required = [name for name in schema.get("required") or () if isinstance(name, str) and name in here]
    for name in required:
        yield "missing required", (*path, name), _drop(base, (*path, name))
    if schema.get("additionalProperties") is False:
        extra = "unexpectedProperty"
        yield "extra property", (*path, extra), _set(base, (*path, extra), 1)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        for name, sub in properties.items():
            if name in here and isinstance(sub, Mapping):
                yield from _mutations(sub, base, (*path, name), validators, depth + 1, falsy)


def violating_payloads(
    schema: Mapping[str, Any],
    *,
    base: JSON = None,
    limit: int | None = None,
    validators: PayloadValidators | None = None,
    falsy: bool = False,
) -> list[Violation]:
    """Payloads that each break ``schema`` one way, at most one per kind, in the order of
    :data:`VIOLATION_KINDS`; each is checked to fail the schema. ``base`` is the valid payload
    the mutations start from (default: :func:`valid_payload`); ``limit`` caps how many.
    ``falsy`` makes a wrong type a falsy one (``null``, ``false``, ``0``, ``""``, ``[]``), for
    an approval the kit must not be read as approving.

    An empty list means the generator found no value the schema refuses (``{}`` accepts all).
    """
    checker = validators if validators is not None else PayloadValidators()
    try:
        checker.check_schema("conformance", schema)
    except ResponseSchemaError:
        raise
    start = base if base is not None else valid_payload(schema, validators=checker)
    found: dict[str, Violation] = {}
    for kind, path, value in _mutations(schema, start, (), checker, 0, falsy):
        if kind in found or _accepts(checker, schema, value):
            continue
        found[kind] = Violation(kind=kind, path="$" + "".join(f".{p}" for p in path), value=value)
    ordered = [found[kind] for kind in VIOLATION_KINDS if kind in found]
    return ordered[:limit] if limit is not None else ordered
