"""The one walk that checks an input against its wire schema and builds it (``fused.py``).

The walk only vouches or declines; the long way (depth walk, compiled schema, structure hooks)
judges whatever it declines. So the walk's promise, checked here on the corpus, on generated
inputs and on hostile variants of them, is an agreement with the long way:

- it vouches for exactly the JSON documents the long way accepts (declining one the schema
  accepts would only cost time, but it must not happen to a document a client sends);
- what it builds equals what the structure hooks build, attribute by attribute;
- ``decode_input`` and ``input_from_dict`` refuse what the long way refuses, with the same
  error (type, code, path, message), and build what it builds.
"""

from __future__ import annotations

import copy
import pickle
from types import MappingProxyType
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_core.errors import InvalidInputError, RunErrorCode
from agui_core.protocol import codec, fused
from agui_core.protocol.codec import MAX_DEPTH, converter, decode_input, encode_input, input_from_dict, overnested_at
from agui_core.protocol.types import RunAgentInput, TextInputContent
from agui_core.protocol.validation import _inline, _lookup, validate_input
from benchmarks.scenarios.decode_input import run_input
from tests.interop.corpus import CASES
from tests.strategies import json_values, run_agent_inputs

_fuzz = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

WIRE_LISTS = ("messages", "tools", "context", "resume")


def _long_way(value: Any) -> RunAgentInput | tuple[Any, ...]:
    """What the long way makes of ``value``: the input it builds, or its refusal."""
    try:
        at = overnested_at(value)
        if at is not None:
            raise InvalidInputError(codec._too_deep(), at)
        validate_input(value)
    except InvalidInputError as exc:
        return _refusal(exc)
    built: RunAgentInput = codec._structure_input(value, RunAgentInput)
    return built


def _refusal(error: InvalidInputError) -> tuple[Any, ...]:
    return (type(error), error.code, error.path, error.message)


def _decoded(data: bytes) -> RunAgentInput | tuple[Any, ...]:
    try:
        return decode_input(data)
    except InvalidInputError as exc:
        return _refusal(exc)


def _walked(value: Any) -> RunAgentInput | None:
    """What the walk vouches for, its free values' depth checked as ``decode_input`` does."""
    found = fused.build_input(value)
    if found is None:
        return None
    built, free = found
    if free and overnested_at(free) is not None:
        return None
    return built


def _same_input(ours: RunAgentInput, theirs: RunAgentInput) -> None:
    for field in attrs.fields(RunAgentInput):
        assert getattr(ours, field.name) == getattr(theirs, field.name), field.name
        assert type(getattr(ours, field.name)) is type(getattr(theirs, field.name)), field.name
    assert ours == theirs and repr(ours) == repr(theirs)


def _agrees(value: Any) -> None:
    """The walk and the long way agree on the JSON document ``value``, and so does ``decode_input``."""
    data = orjson.dumps(value)
    value = orjson.loads(data)
    expected = _long_way(value)
    walked = _walked(value)
    if isinstance(expected, RunAgentInput):
        assert walked is not None, "the walk declined an input the schema accepts"
        _same_input(walked, expected)
    else:
        assert walked is None, f"the walk vouched for an input the schema refuses: {expected}"
    decoded = _decoded(data)
    if isinstance(expected, RunAgentInput):
        assert isinstance(decoded, RunAgentInput)
        _same_input(decoded, expected)
    else:
        assert decoded == expected


# --- valid inputs --------------------------------------------------------------------------


def _valid_inputs() -> list[Any]:
    docs: list[Any] = [run_input(10), run_input(100)]
    for case in CASES:
        if case.kind == "input" and isinstance(_long_way(case.value), RunAgentInput):
            docs.append(case.value)
    return docs


INPUTS = _valid_inputs()


def test_the_corpus_holds_inputs_with_every_wire_list_and_every_message_role() -> None:
    assert len(INPUTS) > 10
    for key in WIRE_LISTS:
        assert any(doc.get(key) for doc in INPUTS), key
    roles = {m.get("role") for doc in INPUTS for m in doc.get("messages", ())}
    assert roles >= {"developer", "system", "assistant", "user", "tool", "activity", "reasoning"}


@pytest.mark.parametrize("doc", INPUTS)
def test_the_walk_builds_every_valid_input_of_the_corpus_as_the_long_way_does(doc: Any) -> None:
    _agrees(orjson.loads(orjson.dumps(doc)))


@pytest.mark.parametrize("doc", INPUTS)
def test_a_decoded_input_is_built_whole_and_behaves_like_the_long_way_s(doc: Any) -> None:
    data = orjson.dumps(doc)
    decoded = decode_input(data)
    eager = codec._structure_input(orjson.loads(data), RunAgentInput)
    for key in ("messages", "tools", "context", "resume"):
        assert type(getattr(decoded, key)) in (tuple, type(None))
    assert encode_input(decoded) == encode_input(eager)
    assert encode_input(decoded, validate=True) == encode_input(eager)
    assert converter.unstructure(decoded) == converter.unstructure(eager)
    assert attrs.asdict(decoded) == attrs.asdict(eager)
    assert decoded.__getstate__() == eager.__getstate__()  # type: ignore[attr-defined]
    for action in (copy.copy, copy.deepcopy, pickle.dumps, hash, lambda o: attrs.evolve(o, run_id="other")):
        assert _outcome(action, decoded) == _outcome(action, eager)
    assert codec.depth_checked(decoded)


def _outcome(action: Any, obj: RunAgentInput) -> Any:
    try:
        return action(obj)
    except Exception as exc:
        return type(exc), str(exc)


def _wire_objects(value: Any) -> list[Any]:
    """Every attrs object in ``value``, itself included."""
    if isinstance(value, tuple):
        return [found for item in value for found in _wire_objects(item)]
    if not attrs.has(type(value)):
        return []
    inner = [found for field in attrs.fields(type(value)) for found in _wire_objects(getattr(value, field.name))]
    return [value, *inner]


@pytest.mark.parametrize("doc", INPUTS)
def test_every_object_the_walk_builds_is_a_frozen_object_of_the_wire_class_itself(doc: Any) -> None:
    """The walk fills slots on a builder subclass, then makes each object its wire class."""
    decoded = decode_input(orjson.dumps(doc))
    objects = _wire_objects(decoded)
    for obj in objects:
        cls = type(obj)
        assert cls.__module__ == "agui_core.protocol.types" and not cls.__name__.endswith("Builder")
        assert cls.__mro__ == (cls, object)
        name = attrs.fields(cls)[0].name
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(obj, name, None)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            delattr(obj, name)
        assert attrs.evolve(obj) == obj


def test_the_corpus_builds_every_wire_class_an_input_holds() -> None:
    built = {type(obj) for doc in INPUTS for obj in _wire_objects(decode_input(orjson.dumps(doc)))}
    assert fused._WALKED <= built, fused._WALKED - built


@_fuzz
@given(doc=run_agent_inputs())
def test_the_walk_builds_every_generated_input_as_the_long_way_does(doc: dict[str, Any]) -> None:
    _agrees(orjson.loads(orjson.dumps(doc)))


def test_the_json_the_walk_builds_from_is_not_the_caller_s_to_change() -> None:
    doc = run_input(10)
    built = input_from_dict(doc)
    doc["messages"].clear()
    doc["resume"][0]["interruptId"] = "changed"
    assert len(built.messages) == 10
    assert built.resume is not None and built.resume[0].interrupt_id == "int-approve"


# --- invalid and odd inputs ------------------------------------------------------------------


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    items: Any = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        found.append((*prefix, key))
        found += _paths(child, (*prefix, key))
    return found


def _objects(value: Any) -> list[tuple[Any, ...]]:
    """The path of every object in ``value``, the root's included."""
    return [()] + [p for p in _paths(value) if isinstance(_at(value, p), dict)]


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    copied = copy.deepcopy(value)
    if not path:
        return new
    _at(copied, path[:-1])[path[-1]] = new
    return copied


def _removed(value: Any, path: tuple[Any, ...]) -> Any:
    copied = copy.deepcopy(value)
    del _at(copied, path[:-1])[path[-1]]
    return copied


_odd_values = st.one_of(
    st.sampled_from(
        [
            None, True, False, 0, 1, -1, 1.5, 2**53, "", "x", "user", "assistant", "tool", "text", "image",
            "url", "data", "file", "function", "resolved", "cancelled", [], [None], {}, [{}], ["x"],
            {"role": "user"}, {"type": "text"}, {"type": "text", "text": "t"}, {"id": "i", "role": "user"},
            {"type": "url", "value": "v"}, {"name": "n", "arguments": "{}"},
        ]
    ),
    json_values(max_leaves=5),
)  # fmt: skip

_valid_documents = st.one_of(st.sampled_from(INPUTS), run_agent_inputs())


@_fuzz
@given(doc=_valid_documents, data=st.data())
def test_a_valid_input_with_one_value_replaced_is_judged_as_the_long_way_judges_it(
    doc: Any, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(_paths(doc) or [("threadId",)]), label="path")
    _agrees(_replaced(doc, path, data.draw(_odd_values, label="value")))


@_fuzz
@given(doc=_valid_documents, data=st.data())
def test_a_valid_input_with_one_value_removed_is_judged_as_the_long_way_judges_it(
    doc: Any, data: st.DataObject
) -> None:
    path = data.draw(st.sampled_from(_paths(doc) or [("threadId",)]), label="path")
    _agrees(_removed(doc, path))


@_fuzz
@given(doc=_valid_documents, data=st.data())
def test_a_valid_input_with_a_key_added_to_one_object_is_judged_as_the_long_way_judges_it(
    doc: Any, data: st.DataObject
) -> None:
    """Known keys (with null or a wrong value, or where another role has them) and unknown ones."""
    where = data.draw(st.sampled_from(_objects(doc)), label="object")
    key = data.draw(
        st.sampled_from(
            [
                "id", "role", "type", "content", "toolCalls", "toolCallId", "name", "metadata", "payload",
                "status", "state", "source", "function", "activityType", "error", "mimeType", "text",
                "encryptedValue", "subagentRunId", "parameters", "forwardedProps", "unknownKey", "x-extra",
            ]
        ),
        label="key",
    )  # fmt: skip
    target = copy.deepcopy(doc)
    _at(target, where)[key] = data.draw(_odd_values, label="value")
    _agrees(target)


def _objects_nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"k": value}
    return value


# Where free JSON sits (the path of the value, and the level of the document it is at).
_FREE_PLACES = [
    (("state",), 2),
    (("forwardedProps",), 2),
    (("unknownKey",), 2),
    (("tools", 0, "parameters"), 4),
    (("resume", 1, "payload"), 4),
    (("resume", 1, "metadata"), 4),
    (("messages", 2, "metadata"), 4),
    (("messages", 4, "unknownKey"), 4),
    (("messages", 2, "toolCalls", 0, "metadata"), 6),
    (("messages", 2, "toolCalls", 0, "function", "unknownKey"), 7),
]


@pytest.mark.parametrize(("where", "level"), _FREE_PLACES)
@pytest.mark.parametrize("over", [0, 1])
def test_free_json_as_deep_as_allowed_is_built_and_one_level_deeper_refused(
    where: tuple[Any, ...], level: int, over: int
) -> None:
    doc = run_input(10)
    # The value is level ``level`` of the document, and nests ``k`` levels of its own.
    doc = _replaced(doc, where, _objects_nested(MAX_DEPTH - level + 1 + over))
    _agrees(doc)
    decoded = _decoded(orjson.dumps(doc))
    if over:
        assert isinstance(decoded, tuple) and decoded[2][: len(where)] == where
        assert f"at most {MAX_DEPTH} levels" in decoded[3]
    else:
        assert isinstance(decoded, RunAgentInput)


@pytest.mark.parametrize(
    ("where", "bad", "code"),
    [
        (("messages", 7, "content"), 5, RunErrorCode.INVALID_INPUT),
        (("messages", 9, "role"), "robot", RunErrorCode.INVALID_INPUT),
        (("messages", 2, "toolCalls", 0, "function", "name"), None, RunErrorCode.INVALID_INPUT),
        (("messages", 2, "toolCalls", 0, "type"), "teleport", RunErrorCode.INVALID_INPUT),
        (("messages", 3), [], RunErrorCode.INVALID_INPUT),
        (("tools", 1, "name"), 3, RunErrorCode.INVALID_INPUT),
        (("tools", 1, "parameters"), None, RunErrorCode.INVALID_INPUT),
        (("context", 0, "value"), [], RunErrorCode.INVALID_INPUT),
        (("resume", 2, "status"), "maybe", RunErrorCode.INVALID_RESUME),
        (("resume", 2, "payload"), {"late": True}, RunErrorCode.INVALID_RESUME),
        (("resume", 1, "metadata"), None, RunErrorCode.INVALID_RESUME),
        (("resume", 0), "entry", RunErrorCode.INVALID_RESUME),
        (("parentRunId",), None, RunErrorCode.INVALID_INPUT),
        (("state",), None, None),  # valid: null is a state
        (("state",), [[[[]]]], None),
    ],
)
def test_a_fault_anywhere_is_refused_at_decode_time_as_the_long_way_refuses_it(
    where: tuple[Any, ...], bad: Any, code: RunErrorCode | None
) -> None:
    doc = _replaced(run_input(10), where, bad)
    data = orjson.dumps(doc)
    _agrees(doc)
    if code is None:
        assert decode_input(data) == input_from_dict(orjson.loads(data))
        return
    for decode in (lambda: decode_input(data), lambda: input_from_dict(orjson.loads(data))):
        with pytest.raises(InvalidInputError) as refused:
            decode()
        assert refused.value.code is code
        assert refused.value.path[: len(where)] == where


class _Text(str):
    __slots__ = ()


class _Unreadable:
    """Not a mapping; reading a key of it fails with an error no decoder expects."""

    def __getitem__(self, key: Any) -> Any:
        raise ValueError(key)


@pytest.mark.parametrize(
    ("where", "odd"),
    [
        (("threadId",), _Text("t")),  # a str subclass: the schema accepts it
        (("messages",), ()),  # a tuple for an array: the schema accepts it
        (("messages", 0), MappingProxyType({"id": "s", "role": "system", "content": "c"})),  # no dict
        (("messages", 0), _Unreadable()),
        (("messages", 1, "content"), [_Unreadable()]),
        (("state",), {1, 2}),  # not JSON, in free JSON: nobody's business but encoding's
        (("resume", 0, "payload"), ("approved", True)),
    ],
)
def test_a_caller_s_value_of_another_class_is_declined_and_judged_the_long_way(
    where: tuple[Any, ...], odd: Any
) -> None:
    doc = _replaced(run_input(10), where, odd)
    assert fused.build_input(doc) is None
    expected = _long_way(doc)
    try:
        got: Any = input_from_dict(doc)
    except InvalidInputError as exc:
        got = _refusal(exc)
    except Exception as exc:  # the long way's own answer to what is not JSON, whatever it is
        got = type(exc)
    if isinstance(expected, RunAgentInput):
        assert isinstance(got, RunAgentInput)
        _same_input(got, expected)
    else:
        assert got == expected


def test_a_crash_inside_the_walk_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug of the walk is never taken for a fault of the input, nor hidden by the long way."""

    namespace: dict[str, Any] = {}
    exec(compile("def crashing(d, free):\n    return 1 / 0\n", fused._FILE, "exec"), namespace)
    monkeypatch.setattr(fused, "_walk_input", namespace["crashing"])
    with pytest.raises(ZeroDivisionError):
        decode_input(orjson.dumps(run_input(10)))


# --- the generator -------------------------------------------------------------------------


def _input_schema() -> Any:
    file, node = _lookup("input.json#/definitions/RunAgentInput")
    return _inline(node, file)


@pytest.mark.parametrize(
    ("where", "rule"),
    [
        (("properties", "threadId"), {"type": "string", "minLength": 1}),
        (("properties", "threadId"), {"type": "string", "pattern": "^t"}),
        (("properties", "messages"), {"type": "array", "items": {}, "maxItems": 3}),
        ((), {"additionalProperties": False}),
    ],
)
def test_the_generator_stops_at_a_keyword_it_does_not_know(where: tuple[str, ...], rule: Any) -> None:
    schema = _input_schema()
    node = _at(schema, where)
    node.update(rule)
    with pytest.raises(RuntimeError, match="does not know"):
        fused._Generator().function(RunAgentInput, schema, 1, None)


def test_the_generator_stops_where_a_class_and_its_schema_name_different_keys() -> None:
    schema = _input_schema()
    schema["properties"]["somethingNew"] = {"type": "string"}
    with pytest.raises(RuntimeError, match="different keys"):
        fused._Generator().function(RunAgentInput, schema, 1, None)


def test_a_union_member_reached_without_its_union_checks_its_tag() -> None:
    file, node = _lookup("content.json#/definitions/TextPart")
    generator = fused._Generator()
    direct = generator.function(TextInputContent, _inline(node, file), 5, None)
    dispatched = generator.function(TextInputContent, _inline(node, file), 5, "type")
    assert direct != dispatched
    namespace = generator.compile()
    assert namespace[direct]({"type": "text", "text": "x"}, []) == TextInputContent(text="x")
    with pytest.raises(fused._Decline):
        namespace[direct]({"type": "image", "text": "x"}, [])
