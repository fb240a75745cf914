"""Wire-schema validation of AG-UI 1.0 objects: inputs, events, interrupts, capabilities.

The schemas are the JSON Schema (draft-07) files in ``agui_core/protocol/schemas/``. They
describe every shape as the zod schemas of ``@ag-ui/core`` 1.0.0 do, except where
:data:`DEVIATIONS` says otherwise. Every shape is compiled once, at import, with fastjsonschema.

Three annotation keywords, which other validators ignore, carry what JSON Schema cannot say
cheaply:

- ``x-dispatch`` marks a tagged union (events by ``type``, messages by ``role``, content parts
  and part sources by ``type``, outcomes by ``type``, patch operations by ``op``): the tag's
  name and the full shape of each tag value. This module picks the shape with one dict lookup;
  a compiled ``oneOf`` would try each member by raising and catching, ten times slower.
- ``x-expected`` is the phrase an error uses for a shape whose generic description would be
  unhelpful; ``x-report-at`` names the key an error is reported at instead of the failing one.

Errors: each ``validate_*`` function raises :class:`~agui_core.errors.InvalidInputError`,
:class:`~agui_core.errors.InvalidEventError` or :class:`~agui_core.errors.WireError` with the
JSON path of the first fault found and a short phrase saying what was expected there, and
nothing else, whatever it is given. A fault inside ``resume`` has the code ``INVALID_RESUME``.

Reporting differs from zod in ways that are not deviations: only the first fault is reported
(zod lists them all), and in one object a missing required key is reported before a wrong
value (zod goes key by key).
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from typing import Any, Final, Literal

import attrs
import fastjsonschema
import orjson
from fastjsonschema import JsonSchemaValueException

from agui_core.errors import InvalidEventError, InvalidInputError, RunErrorCode, WireError

__all__ = [
    "DEVIATIONS",
    "EVENT_TYPES",
    "LEAN_SKIPPED",
    "Deviation",
    "schema_documents",
    "validate_capabilities",
    "validate_event",
    "validate_input",
    "validate_interrupt",
    "validate_resume_entry",
]

Path = tuple[str | int, ...]


@attrs.frozen(kw_only=True, slots=True)
class Deviation:
    """A place where these schemas accept or refuse what ``@ag-ui/core``'s zod schemas do not."""

    name: str
    direction: Literal["stricter", "looser"]
    where: str
    rule: str


DEVIATIONS: Final[tuple[Deviation, ...]] = (
    Deviation(
        name="cancelled-resume-entry-with-payload",
        direction="stricter",
        where="ResumeEntry, in RunAgentInput.resume[] and RUN_STARTED.input.resume[]",
        rule=(
            "an entry whose status is 'cancelled' must not carry 'payload' (SPEC section 2); "
            "zod accepts a non-null payload on either status"
        ),
    ),
)
"""Every deliberate difference from the reference zod schemas, for the differential tests.

Not deviations: a float with no fractional part (``1.0``) passes where an integer is required,
as it does in JavaScript, which cannot tell the two apart.
"""


# --- the schema files --------------------------------------------------------------------


def _load_documents() -> dict[str, dict[str, Any]]:
    folder = resources.files("agui_core.protocol").joinpath("schemas")
    return {entry.name: orjson.loads(entry.read_bytes()) for entry in folder.iterdir() if entry.name.endswith(".json")}


_DOCUMENTS: Final = _load_documents()


def schema_documents() -> dict[str, dict[str, Any]]:
    """A fresh copy of every schema file, by file name (``"events.json"``, ...)."""
    return copy.deepcopy(_DOCUMENTS)


def _absolute(ref: str, base_file: str) -> str:
    """``file.json#/pointer`` for a reference written in ``base_file``."""
    file, _, pointer = ref.partition("#")
    return f"{file or base_file}#{pointer}"


def _lookup(ref: str) -> tuple[str, Any]:
    file, _, pointer = ref.partition("#")
    node: Any = _DOCUMENTS[file]
    for token in pointer.split("/")[1:]:
        node = node[token.replace("~1", "/").replace("~0", "~")]
    return file, node


# Keywords whose value maps names to schemas (a property may be called "description").
_BY_NAME: Final = frozenset({"properties", "definitions", "dependencies"})


def _inline(node: Any, base_file: str, seen: tuple[str, ...] = ()) -> Any:
    """``node`` with every ``$ref`` replaced by what it names, and ``x-dispatch`` shapes
    written as absolute references.

    An inlined schema compiles with no resolver, so nothing is ever fetched, and with no
    function call per reference. The schemas are not recursive; a cycle is a bug in them.
    """
    if isinstance(node, list):
        return [_inline(item, base_file, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = _absolute(node["$ref"], base_file)
        if target in seen:
            raise RuntimeError(f"recursive schema reference {target}")
        file, resolved = _lookup(target)
        inlined = _inline(resolved, file, (*seen, target))
        # draft-07 ignores a $ref's siblings; here they are only annotations, kept.
        return {**inlined, **{k: v for k, v in node.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "x-dispatch":
            shapes = {tag: _absolute(ref, base_file) for tag, ref in value["shapes"].items()}
            out[key] = {**value, "shapes": shapes}
        elif key in _BY_NAME:
            out[key] = {name: _inline(sub, base_file, seen) for name, sub in value.items()}
        else:
            out[key] = _inline(value, base_file, seen)
    return out


# Dropped before compiling: the generated code embeds each failing node in its error, so
# prose and dispatch tables would only make it bigger.
_NOT_COMPILED: Final = frozenset({"description", "title", "$id", "$comment", "x-dispatch"})


def _for_compiler(node: Any) -> Any:
    if isinstance(node, list):
        return [_for_compiler(item) for item in node]
    if not isinstance(node, dict):
        return node
    return {
        key: ({name: _for_compiler(sub) for name, sub in value.items()} if key in _BY_NAME else _for_compiler(value))
        for key, value in node.items()
        if key not in _NOT_COMPILED
    }


# --- compiling ---------------------------------------------------------------------------

# fastjsonschema copies every object's keys into a set and takes each known key out of it
# (for additionalProperties, which these schemas never use), and builds the set of required
# keys even when none is missing. Those allocations are most of its cost on the small objects
# of AG-UI, so the generated code is rewritten to test the object itself: only under a
# fastjsonschema whose generated code the rewrite was checked against (LEAN_VERIFIED), since
# pyproject.toml allows a range of them; under any other the code runs as generated (correct,
# slower). Should the generated code ever change shape, the rewrite is abandoned whole and the
# code runs as generated; that is recorded in LEAN_SKIPPED, and
# tests/protocol/test_validation_fences.py fails on it.
_KEY_SET: Final = re.compile(r"^[ ]*(\w+)_keys = set\(\1\.keys\(\)\)\n", re.MULTILINE)
_KEY_REMOVE: Final = re.compile(r'^[ ]*\w+_keys\.remove\("[^"\\]+"\)\n', re.MULTILINE)
_KEY_TEST: Final = re.compile(r'if "([^"\\]+)" in (\w+)_keys:')
_MISSING: Final = re.compile(r"^([ ]*)(\w+)__missing_keys = set\((\[[^\]]*\])\) - (\w+)\.keys\(\)$", re.MULTILINE)
_KEY_SET_LEFT: Final = re.compile(r"(?<!__missing)_keys\b")


def _all_present(match: re.Match[str]) -> str:
    indent, target, names, obj = match.groups()
    present = " and ".join(f"{name!r} in {obj}" for name in ast.literal_eval(names))
    return f"{indent}{target}__missing_keys = not ({present}) and set({names}) - {obj}.keys()"


LEAN_VERIFIED: Final = frozenset({"2.22.3"})
"""The fastjsonschema versions whose generated code the lean rewrite was checked against
(tests/protocol/test_validation_fences.py pins each one's code)."""

LEAN_SKIPPED: Final[list[str]] = []
"""Generated code the lean rewrite could not be applied to (it then runs as generated)."""


def _lean(code: str) -> str:
    """The generated ``code`` without its per-object key sets, or ``code`` itself."""
    lean = _KEY_SET.sub("", code)
    lean = _KEY_REMOVE.sub("", lean)
    lean = _KEY_TEST.sub(r'if "\1" in \2:', lean)
    lean = _MISSING.sub(_all_present, lean)
    if _KEY_SET_LEFT.search(lean):
        LEAN_SKIPPED.append(code)
        return code
    return lean


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


_VALIDATOR_FILE: Final = "<agui_core compiled validator>"
"""The file name the compiled validators' code runs under, so a crash in it is recognised."""
_OUR_FILES: Final = (_VALIDATOR_FILE, __file__, fastjsonschema.__file__.removesuffix("__init__.py"))


def _crashed_in_our_code(exc: BaseException) -> bool:
    """Whether ``exc`` was raised by the validator's own code rather than by the value checked.

    A value may be a mapping of the caller's that raises when it is read: that is the value's
    fault, and it is refused. An exception whose innermost frame is the compiled validator,
    this module or fastjsonschema is a bug of ours, and must not be turned into a refusal.
    """
    tb = exc.__traceback__
    if tb is None:
        return True
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame.f_code.co_filename.startswith(_OUR_FILES)


def _generate(schema: Mapping[str, Any]) -> str:
    """fastjsonschema's code for ``schema``, as generated."""
    return fastjsonschema.compile_to_code(
        {"$schema": "http://json-schema.org/draft-07/schema#", **schema},
        use_default=False,  # a default would be written into the caller's document
        use_formats=False,
    )


def _compile(schema: Mapping[str, Any], *, lean: bool = True) -> Callable[[Any], Any]:
    if any("additionalProperties" in node or "patternProperties" in node for node in _nodes(schema)):
        raise RuntimeError("the lean rewrite of the generated code assumes open objects")
    code = _generate(schema)
    namespace: dict[str, Any] = {}
    lean = lean and fastjsonschema.VERSION in LEAN_VERIFIED
    exec(compile(_lean(code) if lean else code, _VALIDATOR_FILE, "exec"), namespace)
    validate: Callable[[Any], Any] = namespace["validate"]
    return validate


# --- faults and what they say ------------------------------------------------------------


class _Fault(Exception):
    """A fault at ``path`` from the value being checked; prefixed on its way up."""

    def __init__(self, expected: str, path: Path) -> None:
        super().__init__(expected)
        self.expected = expected
        self.path = path


_TYPE_PHRASES: Final = {
    "string": "a string",
    "object": "an object",
    "array": "an array",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


def _kind(value: Any) -> str:
    """What a value is, for 'X, not Y'. Never renders the value, which may be huge."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a Python {type(value).__name__}"


def _describe(schema: Mapping[str, Any]) -> str:
    """What a value must be to satisfy ``schema``, in a few words."""
    if "x-expected" in schema:
        return str(schema["x-expected"])
    if "const" in schema:
        return repr(schema["const"])
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    kinds = schema.get("type")
    if isinstance(kinds, str):
        return _TYPE_PHRASES[kinds]
    if isinstance(kinds, list):
        return " or ".join(_TYPE_PHRASES[k] for k in kinds)
    if "allOf" in schema:
        return _describe(schema["allOf"][0])
    return "any JSON value"


def _bounds(schema: Mapping[str, Any]) -> str:
    what = _TYPE_PHRASES.get(schema.get("type", "number"), "a number")
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"{what} from {low} to {high}"
    if low is not None:
        return f"{what} of at least {low}"
    return f"{what} of at most {high}"


def _unreadable(exc: Exception) -> str:
    return f"JSON data (the validator failed with {type(exc).__name__})"


def _fault(exc: JsonSchemaValueException) -> _Fault:
    """Our fault for fastjsonschema's: its path without the leading ``data``, ints for indexes."""
    # No property in the schemas is named by digits alone, so such a segment is an index.
    path: list[str | int] = [int(s) if s.isdigit() else s for s in exc.path[1:]]
    rule = exc.rule
    definition: Mapping[str, Any] = exc.definition if isinstance(exc.definition, dict) else {}
    if rule == "required":
        present = exc.value if isinstance(exc.value, dict) else {}
        missing = next((k for k in definition.get("required", ()) if k not in present), None)
        if missing is None:
            return _Fault("an object with every required key", tuple(path))
        sub = definition.get("properties", {}).get(missing, {})
        return _Fault(f"{_describe(sub)} (required)", (*path, missing))
    if "x-report-at" in definition and path:
        path[-1] = definition["x-report-at"]
    where = tuple(path)
    if "x-expected" in definition:
        return _Fault(str(definition["x-expected"]), where)
    if rule == "type":
        return _Fault(f"{_describe(definition)}, not {_kind(exc.value)}", where)
    if rule in ("enum", "const"):
        return _Fault(_describe(definition), where)
    if rule == "minItems":
        count = definition["minItems"]
        return _Fault(f"at least {count} item{'' if count == 1 else 's'}", where)
    if rule in ("minimum", "maximum"):
        return _Fault(_bounds(definition), where)
    if rule == "pattern":
        return _Fault(f"a string matching {definition['pattern']}", where)
    return _Fault(exc.message.replace("data", "the value", 1), where)


# --- checks ------------------------------------------------------------------------------

Check = Callable[[Any], None]
"""Checks one value; raises :class:`_Fault` with a path from that value."""

_ITEMS: Final = 0  # a step into every item of an array (a property step is a string)


def _union_slots(schema: Mapping[str, Any], steps: Path = ()) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Where below ``schema`` the compiled code leaves a tagged union to finish."""
    if steps and "x-dispatch" in schema:
        yield steps, schema["x-dispatch"]
        return
    for name, sub in schema.get("properties", {}).items():
        yield from _union_slots(sub, (*steps, name))
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _union_slots(items, (*steps, _ITEMS))
    for sub in schema.get("allOf", ()):
        yield from _union_slots(sub, steps)


def _at_key(key: str, inner: Check) -> Check:
    def check(value: Any) -> None:
        # The compiled code has already found ``value`` to be an object.
        if key in value:
            try:
                inner(value[key])
            except _Fault as fault:
                fault.path = (key, *fault.path)
                raise

    return check


def _at_items(inner: Check) -> Check:
    def check(value: Any) -> None:
        # Not an array where the schema allows a string too (message content).
        if isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                try:
                    inner(item)
                except _Fault as fault:
                    fault.path = (index, *fault.path)
                    raise

    return check


def _tag_fault(value: Any, tag: str, expected: str) -> _Fault:
    if not isinstance(value, dict):
        return _Fault(f"an object, not {_kind(value)}", ())
    if tag not in value:
        return _Fault(f"{expected} (required)", (tag,))
    return _Fault(expected, (tag,))


def _union(dispatch: Mapping[str, Any]) -> Check:
    """The check of a tagged union: the tag picks the member's shape with one lookup."""
    tag: str = dispatch["tag"]
    members = {value: _shape(ref) for value, ref in dispatch["shapes"].items()}
    expected: str = dispatch.get("expected") or "one of " + ", ".join(repr(v) for v in members)

    def check(value: Any) -> None:
        try:
            member = members[value[tag]]
        except (KeyError, TypeError):  # not an object, no tag, an unknown or unhashable tag
            raise _tag_fault(value, tag, expected) from None
        member(value)

    return check


def _union_items(key: str, dispatch: Mapping[str, Any]) -> Check:
    """``_at_key(key, _at_items(_union(dispatch)))`` in one function: the check of an array of
    tagged-union members (messages, content parts, patch operations).

    One Python call per item instead of four: on a long conversation the calls between the
    steps cost as much as the compiled checks of the messages themselves.
    """
    tag: str = dispatch["tag"]
    members = {value: _SHAPE_PARTS[_shape(ref)] for value, ref in dispatch["shapes"].items()}
    expected: str = dispatch.get("expected") or "one of " + ", ".join(repr(v) for v in members)

    def check(value: Any) -> None:
        # The compiled code has already found ``value`` to be an object.
        if key not in value:
            return
        items = value[key]
        # Not an array where the schema allows a string too (message content).
        if not isinstance(items, (list, tuple)):
            return
        for index, item in enumerate(items):
            try:
                validate, slots = members[item[tag]]
            except (KeyError, TypeError):  # not an object, no tag, an unknown or unhashable tag
                fault = _tag_fault(item, tag, expected)
                fault.path = (key, index, *fault.path)
                raise fault from None
            try:
                validate(item)
            except JsonSchemaValueException as exc:
                fault = _fault(exc)
                fault.path = (key, index, *fault.path)
                raise fault from None
            except RecursionError as too_deep:
                raise _Fault(_unreadable(too_deep), (key, index)) from None
            except Exception as unexpected:
                if _crashed_in_our_code(unexpected):
                    raise
                raise _Fault(_unreadable(unexpected), (key, index)) from None
            for slot in slots:
                try:
                    slot(item)
                except _Fault as fault:
                    fault.path = (key, index, *fault.path)
                    raise

    return check


_SHAPES: dict[str, Check] = {}
_SHAPE_PARTS: dict[Check, tuple[Callable[[Any], Any], tuple[Check, ...]]] = {}
"""Each shape's check taken apart: its compiled validator and the union checks that follow it."""


def _shape(ref: str) -> Check:
    """The check of the shape at ``file.json#/pointer``, compiled once."""
    known = _SHAPES.get(ref)
    if known is not None:
        return known
    file, node = _lookup(ref)
    schema = _inline(node, file)
    validate = _compile(_for_compiler(schema))
    slots: list[Check] = []
    for steps, dispatch in _union_slots(schema):
        if len(steps) >= 2 and steps[-1] == _ITEMS and steps[-2] != _ITEMS:
            slot = _union_items(str(steps[-2]), dispatch)
            steps = steps[:-2]
        else:
            slot = _union(dispatch)
        for step in reversed(steps):
            slot = _at_items(slot) if step == _ITEMS else _at_key(str(step), slot)
        slots.append(slot)

    def check(value: Any) -> None:
        try:
            validate(value)
        except JsonSchemaValueException as exc:
            raise _fault(exc) from None
        except RecursionError as too_deep:  # the value's own depth, not a bug: the value is refused
            raise _Fault(_unreadable(too_deep), ()) from None
        except Exception as unexpected:
            # A crash of the compiled validator (or of the lean rewrite of it) is a bug: it is
            # raised as it is, never turned into a refusal that would blame the client.
            if _crashed_in_our_code(unexpected):
                raise
            raise _Fault(_unreadable(unexpected), ()) from None
        for slot in slots:
            slot(value)

    _SHAPES[ref] = check
    _SHAPE_PARTS[check] = (validate, tuple(slots))
    return check


_check_input: Final = _shape("input.json#/definitions/RunAgentInput")
_check_resume_entry: Final = _shape("interrupts.json#/definitions/ResumeEntry")
_check_interrupt: Final = _shape("interrupts.json#/definitions/Interrupt")
_check_capabilities: Final = _shape("capabilities.json#/definitions/AgentCapabilities")
_EVENT_DISPATCH: Final = _inline(_DOCUMENTS["events.json"]["definitions"]["Event"], "events.json")["x-dispatch"]
_check_event: Final = _union(_EVENT_DISPATCH)

EVENT_TYPES: Final[frozenset[str]] = frozenset(_EVENT_DISPATCH["shapes"])
"""The ``type`` of every AG-UI 1.0 event the schemas describe."""


# --- the public checks -------------------------------------------------------------------


def _run(check: Check, value: Any, at: Path) -> tuple[str, Path] | None:
    """Run ``check``: None, or the fault found as (expected, path from the document root)."""
    try:
        check(value)
    except _Fault as fault:
        return fault.expected, (*at, *fault.path)
    except RecursionError as exc:
        return _unreadable(exc), at
    except Exception as unexpected:
        if _crashed_in_our_code(unexpected):
            raise
        return _unreadable(unexpected), at
    return None


def validate_input(value: Any) -> None:
    """Check a parsed ``RunAgentInput``; raises :class:`InvalidInputError`.

    The error's code is ``INVALID_RESUME`` for a fault inside ``resume``, else ``INVALID_INPUT``.
    """
    fault = _run(_check_input, value, ())
    if fault is not None:
        err = InvalidInputError(*fault)
        if fault[1][:1] == ("resume",):
            err.code = RunErrorCode.INVALID_RESUME
        raise err


def validate_resume_entry(value: Any, *, at: Path = ()) -> None:
    """Check one parsed resume entry; raises :class:`InvalidInputError` (``INVALID_RESUME``).

    ``at`` is where the entry sits in its input, such as ``("resume", 0)``, for the error's path.
    """
    fault = _run(_check_resume_entry, value, at)
    if fault is not None:
        err = InvalidInputError(*fault)
        err.code = RunErrorCode.INVALID_RESUME
        raise err


def validate_event(value: Any) -> None:
    """Check a parsed event; raises :class:`InvalidEventError`.

    A ``type`` outside :data:`EVENT_TYPES` is refused too: whether an unknown event is passed
    through is for the caller to decide before calling.
    """
    fault = _run(_check_event, value, ())
    if fault is not None:
        raise InvalidEventError(*fault)


def validate_interrupt(value: Any, *, at: Path = ()) -> None:
    """Check one parsed interrupt; raises :class:`InvalidEventError`.

    ``at`` is where it sits in its event, such as ``("outcome", "interrupts", 0)``, for the
    error's path.
    """
    fault = _run(_check_interrupt, value, at)
    if fault is not None:
        raise InvalidEventError(*fault)


def validate_capabilities(value: Any) -> None:
    """Check a parsed ``AgentCapabilities`` document; raises :class:`WireError`."""
    fault = _run(_check_capabilities, value, ())
    if fault is not None:
        raise WireError(*fault)
