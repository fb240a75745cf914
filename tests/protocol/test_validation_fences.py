"""Fences around the speed tricks of the wire layer: each fails the moment its assumption breaks.

- The lean rewrite (``validation._lean``) edits fastjsonschema's generated source with regular
  expressions. It is applied only under the fastjsonschema versions it was checked against
  (``validation.LEAN_VERIFIED``; pyproject.toml allows a range): a test pins each one's code
  digest, and under any other version the validators must run the code as generated; a test
  fails if the rewrite was skipped for any shape, and the lean and the generated validators
  must agree on a corpus of valid documents and their mutations.
- The generated decoders build objects with ``object.__new__`` and never call ``__init__``: a
  wire class that gains an attrs validator, converter or post-init hook is refused at codegen.
- A crash inside a compiled validator is a bug of ours: it raises, it never becomes a refusal
  (``INVALID_INPUT``) that blames the client.
- The generated encoders build nested wire objects in place when their class is exactly the
  declared one: on the corpus they write what one call per nested object wrote, and an object
  of another class (a subclass, another wire class, no wire class) does what it did before.
- ``encode_event`` keeps a signature CPython specialises calls to (no keyword-only parameter).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import fastjsonschema
import orjson
import pytest
from fastjsonschema import JsonSchemaValueException

from agui_core.errors import EncodeError, InvalidInputError, WireError
from agui_core.protocol import codec, validation
from agui_core.protocol import events as ev
from agui_core.protocol import types as t
from agui_core.protocol.codec import decode_input
from agui_core.protocol.frozen import check_plain
from tests.interop.corpus import CASES
from tests.protocol.test_frozen import needs_its_init

GENERATED_FOR: dict[str, str] = {
    "2.22.3": "c52c78f6762f56ca58f2e234b20b2ae6a6ca05d09f0b9260df28b00e01bd0c18",
}
"""fastjsonschema version -> sha256 of the code it generates for RunAgentInput, as the lean
rewrite was written and checked against. A new version: read its generated code, check that
``_lean`` still removes every key set (the tests below), then add its digest here."""

INPUT_REF = "input.json#/definitions/RunAgentInput"


def _schema(ref: str) -> dict[str, Any]:
    file, node = validation._lookup(ref)
    schema: dict[str, Any] = validation._for_compiler(validation._inline(node, file))
    return schema


def test_the_rewrite_is_checked_for_exactly_the_versions_it_is_applied_under() -> None:
    assert set(GENERATED_FOR) == validation.LEAN_VERIFIED


@pytest.mark.pure_only
def test_fastjsonschema_generates_the_code_the_rewrite_was_written_for(monkeypatch: pytest.MonkeyPatch) -> None:
    code = validation._generate(_schema(INPUT_REF))
    digest = hashlib.sha256(code.encode()).hexdigest()
    if fastjsonschema.VERSION in GENERATED_FOR:
        assert digest == GENERATED_FOR[fastjsonschema.VERSION], (
            "fastjsonschema generated other code than the lean rewrite was written for: check _lean"
        )
    # Under a version the rewrite was not checked against, the validators run the code as generated.
    monkeypatch.setattr(fastjsonschema, "VERSION", "0.0.0-unchecked")
    compiled: list[str] = []
    real_compile = compile

    def spy(source: str, *args: Any) -> Any:
        compiled.append(source)
        return real_compile(source, *args)

    monkeypatch.setattr(validation, "compile", spy, raising=False)  # shadows the builtin there
    validation._compile(_schema(INPUT_REF))
    assert compiled == [validation._generate(_schema(INPUT_REF))]  # (the code names the version)


def test_the_lean_rewrite_applied_to_every_shape() -> None:
    assert validation.LEAN_SKIPPED == []
    code = validation._generate(_schema(INPUT_REF))
    lean = validation._lean(code)
    assert "_keys = set(" in code and "_keys = set(" not in lean
    assert validation.LEAN_SKIPPED == []


def test_a_shape_the_rewrite_cannot_handle_runs_as_generated_and_is_recorded() -> None:
    odd = (
        "def validate(data):\n"
        "    other_keys = set(data.keys())\n"
        "    if 'x' in other_keys and unknown_keys:\n"
        "        pass\n"
    )
    before = len(validation.LEAN_SKIPPED)
    try:
        assert validation._lean(odd) == odd
        assert validation.LEAN_SKIPPED[before:] == [odd]
    finally:
        del validation.LEAN_SKIPPED[before:]


def _mutations(doc: Any, depth: int = 0) -> Iterator[Any]:
    """``doc``, then copies of it with one key dropped or one value replaced, a few levels deep."""
    yield doc
    if depth > 2:
        return
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield {k: v for k, v in doc.items() if k != key}
            for other in (None, 1, "x", [], {}, True):
                yield {**doc, key: other}
            for inner in _mutations(value, depth + 1):
                yield {**doc, key: inner}
    elif isinstance(doc, list):
        for index, value in enumerate(doc[:3]):
            for inner in _mutations(value, depth + 1):
                yield [*doc[:index], inner, *doc[index + 1 :]]


def _verdict(validate: Callable[[Any], Any], doc: Any) -> tuple[str, str] | None:
    try:
        validate(doc)
    except JsonSchemaValueException as exc:
        return exc.message, str(exc.path)
    return None


def test_the_lean_and_the_generated_validators_agree_on_the_corpus() -> None:
    refs = {"input": INPUT_REF}
    dispatch = validation._EVENT_DISPATCH["shapes"]
    pairs: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {}

    def pair(ref: str) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
        if ref not in pairs:
            schema = _schema(ref)
            pairs[ref] = (validation._compile(schema), validation._compile(schema, lean=False))
        return pairs[ref]

    checked = 0
    for case in CASES:
        doc = case.value
        if case.kind == "input":
            ref = refs["input"]
        elif isinstance(doc, dict) and doc.get("type") in dispatch:
            ref = dispatch[doc["type"]]
        else:
            continue
        lean, generated = pair(ref)
        for mutated in _mutations(doc):
            assert _verdict(lean, mutated) == _verdict(generated, mutated), (case.name, mutated)
            checked += 1
    assert checked > 1000 and len(pairs) > 20


def test_every_wire_class_is_plain_for_the_generated_decoder() -> None:
    for cls in codec._WIRE_CLASSES:
        check_plain(cls)


@pytest.mark.parametrize("kind", ["validator", "converter", "post_init"])
def test_a_wire_class_with_init_logic_is_refused_at_codegen(kind: str) -> None:
    with pytest.raises(TypeError, match="Odd"):
        codec._register_class(needs_its_init(kind))


def _crashing_check(monkeypatch: pytest.MonkeyPatch, ref: str) -> validation.Check:
    """The check of ``ref`` compiled from generated code that crashes (a bug, not a refusal)."""
    monkeypatch.setattr(validation, "_generate", lambda schema: "def validate(data):\n    return 1 / 0\n")
    monkeypatch.delitem(validation._SHAPES, ref)
    return validation._shape(ref)


@pytest.mark.pure_only
def test_a_crash_inside_a_compiled_validator_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    check = _crashing_check(monkeypatch, INPUT_REF)
    monkeypatch.setattr(validation, "_check_input", check)
    # The compiled schema judges what the one-walk decoder (fused.py) declines: here a runId
    # that is no string. (A crash inside that walk raises too: tests/protocol/test_fused.py.)
    body = b'{"threadId":"t","runId":7,"messages":[],"tools":[],"context":[],"forwardedProps":{}}'
    with pytest.raises(ZeroDivisionError):
        decode_input(body)
    with pytest.raises(ZeroDivisionError):
        validation.validate_input({"threadId": "t"})


class _Refusing(dict[str, Any]):
    """A caller's mapping that fails when read: the value's fault, refused, not a crash of ours."""

    def __contains__(self, key: object) -> bool:
        raise LookupError("no")


def test_a_value_that_fails_when_read_is_still_refused() -> None:
    with pytest.raises(InvalidInputError) as caught:
        validation.validate_input(_Refusing(threadId="t"))
    assert "LookupError" in caught.value.expected


# --- the encoders build nested wire objects in place ---------------------------------------


def _shallow_encoders(monkeypatch: pytest.MonkeyPatch) -> dict[type[Any], Callable[[Any], Any]]:
    """Every wire class's unstructure function as it was before nested objects were built in
    place: one call, through the table, for each nested object."""
    table: dict[type[Any], Callable[[Any], Any]] = {}
    with monkeypatch.context() as patch:
        patch.setattr(codec, "_INLINE_DEPTH", 0)
        patch.setattr(codec, "_BY_CLASS", table)
        for cls in codec._WIRE_CLASSES:
            table[cls] = codec._make_unstructure(cls, codec._wire_names(cls))
    return table


@attrs.frozen(kw_only=True)
class _SubToolCall(t.ToolCall):
    """A subclass the codec does not know: never a wire class, however close."""


_FUNCTION = t.FunctionCall(name="f", arguments="{}")
_ODD_NESTING: dict[str, Any] = {
    "a known class where another is declared": ev.MessagesSnapshotEvent(
        messages=(t.AssistantMessage(id="a", tool_calls=(_FUNCTION,)),)  # type: ignore[arg-type]
    ),
    "a tool call as a message": ev.MessagesSnapshotEvent(
        messages=(t.ToolCall(id="tc", function=_FUNCTION),)  # type: ignore[arg-type]
    ),
    "an interrupt as an outcome": ev.RunFinishedEvent(
        thread_id="t",
        run_id="r",
        outcome=t.Interrupt(id="i", reason="x"),  # type: ignore[arg-type]
    ),
    "a subclass of the declared class": ev.MessagesSnapshotEvent(
        messages=(t.AssistantMessage(id="a", tool_calls=(_SubToolCall(id="x", function=_FUNCTION),)),)
    ),
    "a dict where a function is declared": ev.MessagesSnapshotEvent(
        messages=(t.AssistantMessage(id="a", tool_calls=(t.ToolCall(id="x", function={"name": "n"}),)),)  # type: ignore[arg-type]
    ),
    "None where an interrupt is declared": ev.RunFinishedEvent(
        thread_id="t",
        run_id="r",
        outcome=t.RunFinishedInterruptOutcome(interrupts=(None,)),  # type: ignore[arg-type]
    ),
    "unknown keys at every level": ev.MessagesSnapshotEvent(
        messages=(
            t.AssistantMessage(
                id="a",
                tool_calls=(t.ToolCall(id="x", function=t.FunctionCall(name="n", arguments="", extra={"k": [1]})),),
                extra={"id": "overridden", "z": None},
            ),
        ),
        extra={"e": 2},
    ),
}


_ODD_NESTING_STRANGERS = {
    "a subclass of the declared class": "_SubToolCall",
    "a dict where a function is declared": "dict",
    "None where an interrupt is declared": "NoneType",
}


def _outcome(encode: Callable[[Any], Any], obj: Any) -> Any:
    try:
        return orjson.dumps(encode(obj))
    except Exception as exc:  # whatever happens, it is what is compared
        return (type(exc), str(exc))


def test_building_nested_objects_in_place_changes_no_output(monkeypatch: pytest.MonkeyPatch) -> None:
    shallow = _shallow_encoders(monkeypatch)
    compared = 0
    for case in CASES:
        try:
            obj: Any = (codec.event_from_dict if case.kind == "event" else codec.input_from_dict)(case.value)
        except WireError:
            continue
        if isinstance(obj, ev.UnknownEvent):
            continue
        expected = orjson.dumps(shallow[type(obj)](obj))
        assert orjson.dumps(codec.converter.unstructure(obj)) == expected, case.name
        if case.kind == "event":
            assert codec.encode_event(obj) == expected, case.name
        compared += 1
    assert compared > 100


@pytest.mark.parametrize("name", list(_ODD_NESTING))
def test_a_nested_object_of_another_class_does_what_it_did_before(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # In place means "when the class is exactly the declared one"; anything else still goes
    # through the table by its class: another wire class writes its own JSON, the rest fails.
    event = _ODD_NESTING[name]
    shallow = _shallow_encoders(monkeypatch)
    before = _outcome(shallow[type(event)], event)
    if isinstance(before, tuple) and before[0] is KeyError:
        # What a hand-built event with a stranger inside used to raise, a bare KeyError, is
        # now an EncodeError that names the stranger's class.
        stranger = _ODD_NESTING_STRANGERS[name]
        before = (
            EncodeError,
            f"cannot encode {type(event).__name__}: it holds a {stranger} where a wire object belongs",
        )
    assert _outcome(codec.event_to_dict, event) == before
    assert _outcome(lambda e: orjson.loads(codec.encode_event(e)), event) == before


@pytest.mark.pure_only
def test_encode_event_keeps_a_signature_cpython_specialises_calls_to() -> None:
    # A keyword-only parameter makes every call take CPython's generic path; once per event,
    # that was a measurable share of encoding a stream of small events.
    code = codec.encode_event.__code__
    assert code.co_kwonlyargcount == 0
    assert not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)


def test_a_hand_built_input_with_a_stranger_inside_is_an_encode_error() -> None:
    run_input = t.RunAgentInput(thread_id="t", run_id="r", messages=({"id": "m", "role": "user"},))  # type: ignore[arg-type]
    with pytest.raises(EncodeError, match="RunAgentInput: it holds a dict where a wire object belongs"):
        codec.input_to_dict(run_input)
    with pytest.raises(EncodeError, match="RunAgentInput: it holds a dict where a wire object belongs"):
        codec.encode_input(run_input)
