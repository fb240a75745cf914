"""``decode_input`` builds an input's wire objects (messages, tools, context, resume) on first
use: the deferred input must behave exactly like one built whole, and bad input must still be
refused at decode time with the same error.

The eager twin of every deferred input is ``input_from_dict`` of the same JSON, which builds
everything at once.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import attrs
import orjson
import pytest

from agui_core.errors import InvalidInputError, RunErrorCode
from agui_core.protocol import codec
from agui_core.protocol.codec import converter, decode_input, encode_input, input_from_dict
from agui_core.protocol.types import RunAgentInput, UserMessage
from benchmarks.scenarios.decode_input import run_input
from tests.interop.corpus import CASES

DEFERRED = sorted(codec._DEFERRED_INPUT_FIELDS)


def _valid_inputs() -> list[Any]:
    docs: list[Any] = [run_input(10), run_input(100)]
    for case in CASES:
        if case.kind != "input":
            continue
        try:
            input_from_dict(case.value)
        except InvalidInputError:
            continue
        docs.append(case.value)
    return docs


INPUTS = _valid_inputs()


def _slots(obj: RunAgentInput) -> dict[str, Any]:
    """What the object's slots hold, read past the deferred fields."""
    return {name: codec._slot(RunAgentInput, name).__get__(obj, RunAgentInput) for name in DEFERRED}


def _untouched(data: bytes) -> RunAgentInput:
    decoded = decode_input(data)
    if any(orjson.loads(data).get(codec._camel(name)) is not None for name in DEFERRED):
        assert any(type(v) is codec._Deferred for v in _slots(decoded).values())
    return decoded


def test_the_corpus_holds_inputs_with_every_deferred_field() -> None:
    assert len(INPUTS) > 10
    for name in DEFERRED:
        assert any(doc.get(codec._camel(name)) for doc in INPUTS), name


@pytest.mark.parametrize("doc", INPUTS)
def test_a_deferred_input_equals_the_eager_one_attribute_by_attribute(doc: Any) -> None:
    data = orjson.dumps(doc)
    eager = input_from_dict(orjson.loads(data))
    deferred = _untouched(data)
    for field in attrs.fields(RunAgentInput):
        assert getattr(deferred, field.name) == getattr(eager, field.name), field.name
    # Built once, then the same objects on every read.
    for name in DEFERRED:
        assert getattr(deferred, name) is getattr(deferred, name)
    assert not any(type(v) is codec._Deferred for v in _slots(deferred).values())


@pytest.mark.parametrize("doc", INPUTS)
def test_a_deferred_input_compares_prints_and_encodes_like_the_eager_one(doc: Any) -> None:
    data = orjson.dumps(doc)
    eager = input_from_dict(orjson.loads(data))
    assert _untouched(data) == eager
    assert eager == _untouched(data)
    assert repr(_untouched(data)) == repr(eager)
    assert encode_input(_untouched(data)) == encode_input(eager)
    assert encode_input(_untouched(data), validate=True) == encode_input(eager)
    assert converter.unstructure(_untouched(data)) == converter.unstructure(eager)
    assert attrs.asdict(_untouched(data)) == attrs.asdict(eager)
    try:
        expected: Any = hash(eager)
    except TypeError as exc:  # free JSON (dicts) inside is not hashable: the same refusal
        with pytest.raises(TypeError, match=str(exc).split("'")[1]):
            hash(_untouched(data))
    else:
        assert hash(_untouched(data)) == expected


def _outcome(action: Any, obj: RunAgentInput) -> Any:
    """What ``action`` makes of ``obj``: its result, or the type and text of its refusal."""
    try:
        return action(obj)
    except Exception as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("doc", INPUTS)
def test_a_deferred_input_pickles_copies_and_evolves_like_the_eager_one(doc: Any) -> None:
    data = orjson.dumps(doc)
    eager = input_from_dict(orjson.loads(data))
    # The state pickling and copying start from: the built objects, never a deferred JSON.
    state = _untouched(data).__getstate__()  # type: ignore[attr-defined]
    assert state == eager.__getstate__()  # type: ignore[attr-defined]
    assert not any(type(v) is codec._Deferred for v in state.values())
    actions = [
        lambda o: pickle.loads(pickle.dumps(o)),
        copy.copy,
        copy.deepcopy,
        lambda o: attrs.evolve(o, run_id="other"),
    ]
    for action in actions:
        result = _outcome(action, _untouched(data))
        assert result == _outcome(action, eager)
        if isinstance(result, RunAgentInput):
            assert not any(type(v) is codec._Deferred for v in _slots(result).values())


def test_a_hand_built_input_writes_and_reads_through_the_deferred_fields() -> None:
    message = UserMessage(id="u", content="hi")
    built = RunAgentInput(thread_id="t", run_id="r", messages=(message,), tools=None)
    assert built.messages == (message,) and built.tools is None and built.context is None
    assert _slots(built)["messages"] == (message,)
    assert isinstance(RunAgentInput.__dict__["messages"], codec._DeferredField)
    assert RunAgentInput.messages is codec._slot(RunAgentInput, "messages")  # type: ignore[comparison-overlap]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.messages = ()  # type: ignore[misc]


def test_only_decode_input_defers_a_json_the_caller_still_holds_is_built_at_once() -> None:
    doc = run_input(10)
    built = input_from_dict(doc)
    assert not any(type(v) is codec._Deferred for v in _slots(built).values())
    doc["messages"].clear()  # the caller's JSON changing afterwards changes nothing
    assert len(built.messages) == 10


def _refusal(error: InvalidInputError) -> tuple[Any, ...]:
    return (type(error), error.code, error.path, error.message)


@pytest.mark.parametrize(
    ("where", "bad", "code"),
    [
        (("messages", 7, "content"), 5, RunErrorCode.INVALID_INPUT),
        (("messages", 9, "role"), "robot", RunErrorCode.INVALID_INPUT),
        (("messages", 2, "toolCalls", 0, "function", "name"), None, RunErrorCode.INVALID_INPUT),
        (("tools", 1, "name"), 3, RunErrorCode.INVALID_INPUT),
        (("context", 0, "value"), [], RunErrorCode.INVALID_INPUT),
        (("resume", 2, "status"), "maybe", RunErrorCode.INVALID_RESUME),
        (("state",), [[[[]]]] * 1, None),  # valid: decoded, not refused
    ],
)
def test_bad_input_in_a_deferred_field_is_refused_at_decode_time(
    where: tuple[Any, ...], bad: Any, code: RunErrorCode | None
) -> None:
    doc = run_input(10)
    node = doc
    for step in where[:-1]:
        node = node[step]
    node[where[-1]] = bad
    data = orjson.dumps(doc)
    if code is None:
        assert decode_input(data) == input_from_dict(orjson.loads(data))
        return
    with pytest.raises(InvalidInputError) as deferred:
        decode_input(data)
    with pytest.raises(InvalidInputError) as eager:
        input_from_dict(orjson.loads(data))
    assert deferred.value.code is code
    assert deferred.value.path == where
    assert _refusal(deferred.value) == _refusal(eager.value)


def test_an_input_too_deep_inside_a_message_is_refused_at_decode_time() -> None:
    doc = run_input(10)
    deep: Any = 1
    for _ in range(codec.MAX_DEPTH):
        deep = [deep]
    doc["messages"][4]["unknownKey"] = deep
    with pytest.raises(InvalidInputError) as caught:
        decode_input(orjson.dumps(doc))
    assert caught.value.path[:3] == ("messages", 4, "unknownKey")
    assert f"at most {codec.MAX_DEPTH} levels" in caught.value.message
