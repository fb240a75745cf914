"""One nesting limit: decoding, encoding with ``validate`` and the shared check, at every depth around it."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import attrs
import orjson
import pytest

from agui_core.errors import EncodeError, InvalidEventError, InvalidInputError, RunErrorCode
from agui_core.protocol import codec
from agui_core.protocol.codec import (
    MAX_DEPTH,
    decode_event,
    decode_input,
    encode_event,
    encode_input,
    overnested_at,
)
from agui_core.protocol.events import CustomEvent, StateSnapshotEvent
from agui_core.protocol.types import RunAgentInput

AROUND = [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1]


def lists(depth: int) -> Any:
    """``depth`` arrays, one inside the other."""
    value: Any = None
    for _ in range(depth):
        value = [value]
    return value


def wrapped(value: Any, depth: int) -> Any:
    """``value`` inside ``depth`` arrays."""
    for _ in range(depth):
        value = [value]
    return value


def objects(depth: int) -> Any:
    """``depth`` objects, one inside the other, under the key ``k``."""
    value: Any = 1
    for _ in range(depth):
        value = {"k": value}
    return value


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("nest", [lists, objects])
@pytest.mark.parametrize("depth", AROUND)
def test_decode_input_at_every_depth_around_the_limit(nest: Any, depth: int) -> None:
    # The input's own object is level 1: its state at level 2 makes the document depth deep.
    doc = {"threadId": "t", "runId": "r", "messages": [], "state": nest(depth - 1)}
    assert depth_of(doc) == depth
    data = orjson.dumps(doc)
    if depth <= MAX_DEPTH:
        assert decode_input(data).state == doc["state"]
        assert orjson.loads(encode_input(decode_input(data), validate=True)) == orjson.loads(data)
        return
    with pytest.raises(InvalidInputError) as caught:
        decode_input(data)
    error = caught.value
    assert error.code is RunErrorCode.INVALID_INPUT
    assert error.path[0] == "state" and len(error.path) == 8
    assert f"at most {MAX_DEPTH} levels" in error.message
    first = "$.state[0]" if nest is lists else "$.state.k"
    assert error.message.startswith(f"invalid RunAgentInput at {first}")


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(lambda v: {"type": "STATE_SNAPSHOT", "snapshot": v}, id="snapshot"),
        pytest.param(lambda v: {"type": "CUSTOM", "name": "n", "value": v}, id="custom"),
        pytest.param(lambda v: {"type": "NOT_YET_KNOWN", "data": v}, id="unknown-type"),
    ],
)
@pytest.mark.parametrize("depth", AROUND)
def test_decode_event_at_every_depth_around_the_limit(where: Any, depth: int) -> None:
    doc = where(lists(depth - 1))
    assert depth_of(doc) == depth
    data = orjson.dumps(doc)
    if depth <= MAX_DEPTH:
        event = decode_event(data)
        assert orjson.loads(encode_event(event, validate=True)) == doc
        return
    with pytest.raises(InvalidEventError) as caught:
        decode_event(data)
    assert caught.value.code is RunErrorCode.INVALID_INPUT
    assert caught.value.path[0] in ("snapshot", "value", "data")
    assert f"at most {MAX_DEPTH} levels" in caught.value.message


@pytest.mark.parametrize("depth", AROUND)
def test_encoding_with_validate_holds_the_same_limit(depth: int) -> None:
    event = StateSnapshotEvent(snapshot=lists(depth - 1))
    run_input = RunAgentInput(thread_id="t", run_id="r", state=lists(depth - 1))
    if depth <= MAX_DEPTH:
        encode_event(event, validate=True)
        encode_input(run_input, validate=True)
        return
    with pytest.raises(EncodeError, match=f"deeper than {MAX_DEPTH} levels"):
        encode_event(event, validate=True)
    with pytest.raises(EncodeError, match=f"deeper than {MAX_DEPTH} levels"):
        encode_input(run_input, validate=True)
    # Without validate, the hot path writes what JSON can hold (up to 254 levels).
    encode_event(CustomEvent(name="n", value=lists(depth)))


@pytest.mark.parametrize("level", [1, 2, 4])
@pytest.mark.parametrize("fast", [True, False], ids=["orjson", "walk"])
def test_overnested_at_counts_from_the_level_given(level: int, fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fast:
        monkeypatch.setattr(codec, "_WRITABLE_DEPTH", None)
    fits = MAX_DEPTH - level + 1
    assert overnested_at(lists(fits), level=level) is None
    assert overnested_at(objects(fits), level=level) is None
    assert overnested_at(lists(fits + 1), level=level) == (0,) * min(fits, 8)
    assert overnested_at({"a": [1, {"b": objects(fits)}]}, level=level) == ("a", 1, "b", *("k",) * min(fits - 3, 5))
    assert overnested_at("text", level=level) is None
    assert overnested_at({1, 2}, level=level) is None  # not JSON: encoding's business, not depth's


def test_the_fast_check_reuses_its_shells_and_keeps_nothing_alive() -> None:
    class Held(list[Any]):  # orjson writes a list subclass as a list; unlike a list, it takes a weakref
        pass

    fits = MAX_DEPTH - 2 + 1
    for _ in range(3):  # the same shell, after a fit and after a refusal
        assert overnested_at(lists(fits), level=2) is None
        assert overnested_at(lists(fits + 1), level=2) == (0,) * 8
    held = Held([1])
    ref = weakref.ref(held)
    assert overnested_at(held, level=2) is None
    del held
    gc.collect()
    assert ref() is None


def test_the_first_too_deep_value_in_document_order_is_named() -> None:
    value = {"a": 1, "b": lists(MAX_DEPTH), "c": lists(MAX_DEPTH + 5)}
    assert overnested_at(value) == ("b",) + (0,) * 7


def test_orjson_writes_what_the_fast_check_assumes() -> None:
    # If a release of orjson changes its limit the check falls back to the walk; this says so.
    assert codec._WRITABLE_DEPTH == 254


def test_the_reused_wrappings_hold_nothing_after_a_check() -> None:
    # overnested_at lends a prebuilt chain of arrays to orjson; whatever the verdict, the chain
    # goes back empty (no reference to the caller's value) and is reused, not piled up.
    for level in (1, 2, 4):
        wraps = 254 - MAX_DEPTH + level - 1
        for value in ({"a": [1]}, lists(MAX_DEPTH), lists(MAX_DEPTH + 3), {1, 2}):
            overnested_at(value, level=level)
        pool = codec._SHELLS[wraps]
        assert len(pool) == 1
        outer, inner = pool[0]
        assert inner == [None] and depth_of(outer) == wraps
    # A level no document uses still gets the right answer, from a shell of its own.
    assert overnested_at(lists(MAX_DEPTH - 40), level=41) is None
    assert overnested_at(lists(MAX_DEPTH - 39), level=41) == (0,) * 8


def test_a_decoded_input_carries_the_proof_that_its_depth_was_checked() -> None:
    document = {"threadId": "t", "runId": "r", "messages": [], "tools": [], "context": [], "forwardedProps": {}}
    data = orjson.dumps({**document, "state": {"k": lists(MAX_DEPTH - 3)}})
    decoded = decode_input(data)
    assert codec.depth_checked(decoded)
    assert codec.depth_checked(codec.input_from_dict(orjson.loads(data)))
    # A new input from a decoded one, or one built in code, has no proof: its taker checks it.
    assert not codec.depth_checked(attrs.evolve(decoded, state=lists(MAX_DEPTH)))
    assert not codec.depth_checked(RunAgentInput(thread_id="t", run_id="r"))
    # The proof is the input itself, not its id: once it is gone, a new object there has none.
    ref = weakref.ref(decoded)
    del decoded
    gc.collect()
    assert ref() is None
    assert not any(codec.depth_checked(RunAgentInput(thread_id="t", run_id=str(n))) for n in range(100))


def test_only_an_input_decoded_from_its_bytes_carries_its_messages_as_parsed() -> None:
    # A thread compares an input's messages as parsed with its own wire dicts: only the ones
    # decode_input parsed itself, which nobody else holds, so they still say what the input says.
    messages = [{"id": "u-1", "role": "user", "content": "hi"}, {"id": "d-1", "role": "developer", "content": "x"}]
    document = {"threadId": "t", "runId": "r", "messages": messages, "tools": [], "context": [], "forwardedProps": {}}
    decoded = decode_input(orjson.dumps(document))
    assert codec.parsed_messages(decoded) == messages
    assert [m.id for m in decoded.messages] == [m["id"] for m in messages]
    # The caller of input_from_dict holds the dicts and may change them; a new input has none.
    assert codec.parsed_messages(codec.input_from_dict(orjson.loads(orjson.dumps(document)))) is None
    assert codec.parsed_messages(attrs.evolve(decoded, run_id="r2")) is None
    assert codec.parsed_messages(RunAgentInput(thread_id="t", run_id="r")) is None
    # What the module keeps goes with the input.
    before = len(codec._DECODED)
    for n in range(50):
        decode_input(orjson.dumps({**document, "runId": f"r{n}"}))
    gc.collect()
    assert len(codec._DECODED) == before


@pytest.mark.parametrize(
    ("value", "level", "fault"),
    [
        ({"a": [1, "two", None, 3.5, True]}, 1, None),
        ((1, (2,)), 1, None),  # tuples are written as arrays
        ({"a": [1, {2, 3}]}, 1, (("a", 1), "not JSON (Type is not JSON serializable: set)")),
        ({"a": {"b": object()}}, 3, (("a", "b"), "not JSON (Type is not JSON serializable: object)")),
        ({"ok": 1, "counts": {7: "seven"}}, 1, (("counts",), "not JSON: an object key that is not a string (int 7)")),
        ([0, 2**64], 1, ((1,), "not JSON (Integer exceeds 64-bit range)")),
        (wrapped({1}, 12), 1, ((0,) * 8, "not JSON (Type is not JSON serializable: set)")),  # the path cut as depth's
        (lists(MAX_DEPTH + 1), 1, ((0,) * 8, f"JSON nested at most {MAX_DEPTH} levels deep")),
        ([lists(MAX_DEPTH), {1}], 1, ((0,) * 8, f"JSON nested at most {MAX_DEPTH} levels deep")),  # depth first
        (lists(MAX_DEPTH - 1), 2, None),
        (lists(MAX_DEPTH), 2, ((0,) * 8, f"JSON nested at most {MAX_DEPTH} levels deep")),
    ],
)
def test_json_fault_names_where_a_value_cannot_be_written_and_why(value: Any, level: int, fault: Any) -> None:
    assert codec.json_fault(value, level=level) == fault
    # It refuses exactly what orjson cannot write (or writes past the limit); depth as overnested_at sees it.
    writable = True
    try:
        orjson.dumps(value)
    except TypeError:
        writable = False
    assert (fault is None) == (writable and overnested_at(value, level=level) is None)
