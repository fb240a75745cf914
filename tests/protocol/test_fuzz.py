"""Hostile input for the decoders of agui_core.protocol.codec.

Whatever arrives (random bytes, text with lone surrogates, nesting far beyond any sane
document, numbers JSON cannot hold as doubles, 10 MB strings, valid documents with one field
replaced by a value of the wrong type), ``decode_input`` either returns a ``RunAgentInput`` or
raises ``InvalidInputError``, and ``decode_event`` either returns an event or raises
``InvalidEventError``. Nothing else escapes. A document that is accepted can be written back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_core.errors import EncodeError, InvalidEventError, InvalidInputError, WireError
from agui_core.protocol.codec import decode_event, decode_input, encode_event, encode_input
from tests.strategies import EVENT_TYPES, events, json_values, run_agent_inputs, texts

_fuzz = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

Codec = tuple[Callable[[Any], Any], type[WireError], Callable[[Any], bytes]]
CODECS: dict[str, Codec] = {
    "input": (decode_input, InvalidInputError, encode_input),
    "event": (decode_event, InvalidEventError, encode_event),
}


def _decode_or_reject(kind: str, data: Any) -> Any:
    """The decoded object, or None when the decoder refused ``data`` with its own error."""
    decode, error, _ = CODECS[kind]
    try:
        return decode(data)
    except error as exc:
        assert isinstance(exc.path, tuple)
        assert isinstance(exc.message, str) and exc.message
        return None


def _accepted_documents_round_trip(kind: str, data: Any) -> None:
    """Decode ``data``; if accepted, it encodes, and what it encodes to is accepted again."""
    decoded = _decode_or_reject(kind, data)
    if decoded is not None:
        _, _, encode = CODECS[kind]
        written = encode(decoded)
        assert _decode_or_reject(kind, written) is not None


both = pytest.mark.parametrize("kind", sorted(CODECS))

# --- arbitrary bytes and text ----------------------------------------------------------------

# Lone surrogates are valid in a Python str but can never come out of UTF-8 bytes.
_any_characters = st.one_of(st.characters(), st.characters(categories=["Cs"]))


@both
@_fuzz
@given(data=st.binary(max_size=512))
def test_arbitrary_bytes_decode_or_are_rejected(kind: str, data: bytes) -> None:
    _decode_or_reject(kind, data)


@both
@_fuzz
@given(text=st.text(_any_characters, max_size=256))
def test_arbitrary_text_with_lone_surrogates_decodes_or_is_rejected(kind: str, text: str) -> None:
    _decode_or_reject(kind, text)


@both
@_fuzz
@given(data=st.data())
def test_a_lone_surrogate_anywhere_in_a_valid_document_is_rejected(kind: str, data: st.DataObject) -> None:
    doc = data.draw(run_agent_inputs() if kind == "input" else events())
    text = orjson.dumps(doc).decode()
    at = data.draw(st.integers(min_value=0, max_value=len(text)))
    surrogate = data.draw(st.characters(categories=["Cs"]))
    assert _decode_or_reject(kind, text[:at] + surrogate + text[at:]) is None


@both
@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud800\\u0041"])
def test_an_escaped_lone_surrogate_is_rejected(kind: str, escape: str) -> None:
    if kind == "input":
        text = '{"threadId":"' + escape + '","runId":"r","messages":[]}'
    else:
        text = '{"type":"CUSTOM","name":"' + escape + '","value":1}'
    assert _decode_or_reject(kind, text) is None
    assert _decode_or_reject(kind, text.encode()) is None


@pytest.mark.parametrize("kind", ["input", "event"])
@pytest.mark.parametrize("data", [b"", b" ", b"null", b"[]", b"0", b'"x"', b"{", b"{}", b"\xef\xbb\xbf{}", b"\x00"])
def test_documents_that_are_not_objects_are_rejected(kind: str, data: bytes) -> None:
    assert _decode_or_reject(kind, data) is None


@both
@pytest.mark.parametrize("data", [12, None, object(), ["{}"], {"threadId": "t"}])
def test_a_python_value_that_is_not_json_text_is_rejected(kind: str, data: Any) -> None:
    assert _decode_or_reject(kind, data) is None


@both
@_fuzz
@given(value=json_values(max_leaves=20))
def test_arbitrary_json_decodes_or_is_rejected(kind: str, value: Any) -> None:
    _accepted_documents_round_trip(kind, orjson.dumps(value))


_known_keys = st.sampled_from(
    [
        "type", "threadId", "runId", "messages", "state", "resume", "tools", "context", "outcome",
        "interrupts", "messageId", "delta", "content", "role", "id", "timestamp", "metadata",
        "snapshot", "patch", "value", "name", "toolCallId", "subagentRunId", "usage", "input",
    ]
)  # fmt: skip


@both
@_fuzz
@given(
    tag=st.sampled_from(EVENT_TYPES),
    fields=st.dictionaries(st.one_of(_known_keys, texts(max_size=4)), json_values(max_leaves=6), max_size=8),
)
def test_objects_with_known_keys_and_random_values_decode_or_are_rejected(
    kind: str, tag: str, fields: dict[str, Any]
) -> None:
    doc = {"type": tag, **fields} if kind == "event" else fields
    _accepted_documents_round_trip(kind, orjson.dumps(doc))


# --- nesting ---------------------------------------------------------------------------------


@both
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"[" * 10_000 + b"]" * 10_000, id="arrays"),
        pytest.param(b'{"a":' * 10_000 + b"1" + b"}" * 10_000, id="objects"),
        pytest.param(b"[" * 10_000, id="unclosed"),
        pytest.param(
            b'{"threadId":"t","runId":"r","messages":[],"state":' + b"[" * 10_000 + b"]" * 10_000 + b"}",
            id="in-state",
        ),
    ],
)
def test_nesting_ten_thousand_deep_is_rejected(kind: str, data: bytes) -> None:
    assert _decode_or_reject(kind, data) is None


def _nested_list(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _nested_object(depth: int) -> bytes:
    return b'{"k":' * depth + b"null" + b"}" * depth


DEPTHS = [10, 100, 253, 254, 255, 300, 999, 1000, 1022, 1023, 1024, 1025, 2000]

INPUT_SLOTS = {
    "state": lambda v: b'{"threadId":"t","runId":"r","messages":[],"state":' + v + b"}",
    "forwardedProps": lambda v: b'{"threadId":"t","runId":"r","messages":[],"forwardedProps":' + v + b"}",
    "payload": lambda v: (
        b'{"threadId":"t","runId":"r","messages":[],'
        b'"resume":[{"interruptId":"i","status":"resolved","payload":' + v + b"}]}"
    ),
    "metadata-value": lambda v: (
        b'{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":"c","metadata":{"k":' + v + b"}}]}"
    ),
    "unknown-key": lambda v: b'{"threadId":"t","runId":"r","messages":[],"x-vendor":' + v + b"}",
}
EVENT_SLOTS = {
    "snapshot": lambda v: b'{"type":"STATE_SNAPSHOT","snapshot":' + v + b"}",
    "custom-value": lambda v: b'{"type":"CUSTOM","name":"n","value":' + v + b"}",
    "raw-event": lambda v: b'{"type":"RAW","event":' + v + b"}",
    "interrupt-schema": lambda v: (
        b'{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt",'
        b'"interrupts":[{"id":"i","reason":"r","responseSchema":{"items":' + v + b"}}]}}"
    ),
    "unknown-type": lambda v: b'{"type":"NEW","data":' + v + b"}",
}


def _slots() -> Iterator[Any]:
    for name, build in INPUT_SLOTS.items():
        yield pytest.param("input", build, id=f"input-{name}")
    for name, build in EVENT_SLOTS.items():
        yield pytest.param("event", build, id=f"event-{name}")


@pytest.mark.parametrize(("kind", "build"), list(_slots()))
@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("nest", [_nested_list, _nested_object], ids=["lists", "objects"])
def test_deep_free_json_decodes_or_is_rejected_and_encodes_or_raises_encode_error(
    kind: str, build: Callable[[bytes], bytes], depth: int, nest: Callable[[int], bytes]
) -> None:
    # orjson reads up to 1024 levels but writes at most 254, so a document can be accepted
    # that cannot be written back; that must surface as EncodeError, nothing else.
    decoded = _decode_or_reject(kind, build(nest(depth)))
    if decoded is not None:
        _, _, encode = CODECS[kind]
        try:
            encode(decoded)
        except EncodeError:
            pass


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"threadId":"t","runId":"r","messages":' + _nested_list(1000) + b"}", id="messages"),
        pytest.param(
            b'{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":' + _nested_list(1000) + b"}]}",
            id="content",
        ),
        pytest.param(
            b'{"threadId":"t","runId":"r","messages":[],"resume":' + _nested_list(1000) + b"}",
            id="resume",
        ),
        pytest.param(b'{"threadId":' + _nested_object(1000) + b',"runId":"r","messages":[]}', id="threadId"),
    ],
)
def test_deep_nesting_where_the_schema_wants_structure_is_rejected(data: bytes) -> None:
    assert _decode_or_reject("input", data) is None


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b'{"type":"MESSAGES_SNAPSHOT","messages":' + _nested_list(1000) + b"}", id="messages"),
        pytest.param(b'{"type":"STATE_DELTA","delta":' + _nested_list(1000) + b"}", id="patch"),
        pytest.param(
            b'{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":' + _nested_object(1000) + b"}",
            id="outcome",
        ),
        pytest.param(
            b'{"type":"RUN_STARTED","threadId":"t","runId":"r","input":' + _nested_object(1000) + b"}",
            id="input",
        ),
    ],
)
def test_deep_nesting_where_an_event_schema_wants_structure_is_rejected(data: bytes) -> None:
    assert _decode_or_reject("event", data) is None


# --- numbers ---------------------------------------------------------------------------------

NUMBERS = [
    b"1e400", b"-1e400", b"1E-400", b"-0", b"-0.0", b"0.1e1",
    b"9007199254740991", b"9007199254740992", b"9007199254740993",
    str(2**63).encode(), str(-(2**63) - 1).encode(), str(2**64).encode(), str(2**200).encode(),
    b"1" * 400, b"0." + b"1" * 400,
]  # fmt: skip

NUMBER_SLOTS: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("input", INPUT_SLOTS["state"]),
    ("input", INPUT_SLOTS["payload"]),
    ("input", INPUT_SLOTS["metadata-value"]),
    ("input", lambda v: b'{"threadId":"t","runId":"r","messages":[],"state":{"n":[' + v + b"]}}"),
    ("event", EVENT_SLOTS["custom-value"]),
    ("event", lambda v: b'{"type":"STEP_STARTED","stepName":"s","timestamp":' + v + b"}"),
    ("event", lambda v: b'{"type":"RUN_ERROR","message":"m","usage":[{"inputTokens":' + v + b"}]}"),
    ("event", lambda v: b'{"type":"TEXT_MESSAGE_CONTENT","messageId":' + v + b',"delta":"d"}'),
]


@pytest.mark.parametrize("number", NUMBERS)
@pytest.mark.parametrize(("kind", "build"), NUMBER_SLOTS)
def test_extreme_numbers_decode_or_are_rejected(kind: str, build: Callable[[bytes], bytes], number: bytes) -> None:
    _accepted_documents_round_trip(kind, build(number))


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"1" * 400])
def test_a_number_no_double_can_hold_is_rejected(number: bytes) -> None:
    assert _decode_or_reject("input", INPUT_SLOTS["state"](number)) is None
    assert _decode_or_reject("event", EVENT_SLOTS["custom-value"](number)) is None


@pytest.mark.parametrize("number", [b"9007199254740992", str(2**63).encode(), str(2**64).encode(), b"1e300", b"1.5"])
def test_a_timestamp_that_is_not_a_safe_integer_is_rejected(number: bytes) -> None:
    doc = b'{"type":"STEP_STARTED","stepName":"s","timestamp":' + number + b"}"
    assert _decode_or_reject("event", doc) is None


@pytest.mark.parametrize("number", [b"-1", b"9007199254740992", b"0.5"])
def test_a_token_count_that_is_not_a_non_negative_safe_integer_is_rejected(number: bytes) -> None:
    doc = b'{"type":"RUN_ERROR","message":"m","usage":[{"inputTokens":' + number + b"}]}"
    assert _decode_or_reject("event", doc) is None


def test_big_numbers_in_free_json_round_trip() -> None:
    doc = b'{"threadId":"t","runId":"r","messages":[],"state":[-0,9007199254740993,18446744073709551615,1e308,-0.0]}'
    run_input = decode_input(doc)
    assert run_input.state == [0, 9007199254740993, 18446744073709551615, 1e308, -0.0]
    assert decode_input(encode_input(run_input)) == run_input


# --- size ------------------------------------------------------------------------------------

TEN_MB = 10 * 1024 * 1024


def test_a_ten_megabyte_string_round_trips() -> None:
    delta = "é" * (TEN_MB // 2)
    event = decode_event(orjson.dumps({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": delta}))
    assert getattr(event, "delta", None) == delta
    assert orjson.loads(encode_event(event))["delta"] == delta
    state = {"blob": "x" * TEN_MB}
    run_input = decode_input(orjson.dumps({"threadId": "t", "runId": "r", "messages": [], "state": state}))
    assert run_input.state == state


@both
@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"\x00" * TEN_MB, id="nul-bytes"),
        pytest.param(b"[" * TEN_MB, id="open-brackets"),
        pytest.param(b'"' + b"x" * TEN_MB, id="unterminated-string"),
        pytest.param(b'{"threadId":"' + b"\xff" * TEN_MB + b'"}', id="invalid-utf8"),
    ],
)
def test_ten_megabytes_of_garbage_is_rejected(kind: str, data: bytes) -> None:
    assert _decode_or_reject(kind, data) is None


# --- mutations of valid documents ------------------------------------------------------------

Path = tuple[str | int, ...]


def _paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every location inside ``value`` (not the root itself)."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        path = (*prefix, key)
        yield path
        yield from _paths(child, path)


def _replace(value: Any, path: Path, new: Any) -> Any:
    """A copy of ``value`` with the location ``path`` set to ``new``."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value[head], rest, new)}
    copy = list(value)
    copy[head] = _replace(value[head], rest, new)  # type: ignore[index]
    return copy


def _delete(value: Any, path: Path) -> Any:
    """A copy of ``value`` without the location ``path``."""
    head, rest = path[0], path[1:]
    if rest:
        if isinstance(value, dict):
            return {**value, head: _delete(value[head], rest)}
        copy = list(value)
        copy[head] = _delete(value[head], rest)  # type: ignore[index]
        return copy
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k != head}
    return [v for i, v in enumerate(value) if i != head]


_wrong_values = st.one_of(
    st.sampled_from(
        [
            None, True, False, 0, -1, 1.5, -0.0, 2**53, 2**63,
            "", "x", "RUN_STARTED", "user", "interrupt",
            [], [None], {}, {"type": "interrupt"}, {"type": "text"}, {"role": "user"}, [{}], ["x"],
        ]
    ),
    json_values(max_leaves=5),
)  # fmt: skip

_GENERATORS = {"event": events(), "input": run_agent_inputs()}
# Kind first, then a document of that kind: a plain one_of would rarely pick the input branch.
_valid_documents = st.sampled_from(sorted(_GENERATORS)).flatmap(
    lambda kind: _GENERATORS[kind].map(lambda doc: (kind, doc))
)


@_fuzz
@given(document=_valid_documents, data=st.data())
def test_a_valid_document_with_one_field_replaced_decodes_or_is_rejected(
    document: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    kind, doc = document
    path = data.draw(st.sampled_from(list(_paths(doc))), label="path")
    mutated = _replace(doc, path, data.draw(_wrong_values, label="value"))
    _accepted_documents_round_trip(kind, orjson.dumps(mutated))


@_fuzz
@given(document=_valid_documents, data=st.data())
def test_a_valid_document_with_one_field_removed_decodes_or_is_rejected(
    document: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    kind, doc = document
    path = data.draw(st.sampled_from(list(_paths(doc))), label="path")
    _accepted_documents_round_trip(kind, orjson.dumps(_delete(doc, path)))


@_fuzz
@given(document=_valid_documents, data=st.data())
def test_a_valid_document_with_a_tag_swapped_decodes_or_is_rejected(
    document: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    kind, doc = document
    tags = [p for p in _paths(doc) if p[-1] in ("type", "role", "op", "status")]
    if not tags:
        tags = [("threadId",)]
    path = data.draw(st.sampled_from(tags), label="path")
    new = data.draw(
        st.sampled_from(
            [
                *EVENT_TYPES, "THINKING_START", "text", "image", "data", "url", "file",
                "success", "interrupt", "cancelled", "suspended", "function", "resolved",
                "developer", "user", "tool", "activity", "reasoning", "add", "remove", "move",
            ]
        ),
        label="tag",
    )  # fmt: skip
    _accepted_documents_round_trip(kind, orjson.dumps(_replace(doc, path, new)))
