"""The codec's limits on an input's lists: counted as soon as the JSON is parsed, before the
depth walk and the wire-schema check, and only where the text is long enough to go over them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agui_core.errors import InvalidInputError, RunErrorCode
from agui_core.machine.thread import MAX_INTERRUPTS
from agui_core.protocol import codec
from agui_core.protocol.codec import MAX_RESUME_ENTRIES, decode_input, input_from_dict
from agui_core.protocol.validation import validate_input

SMALLEST: dict[str, Any] = {
    "message": {"id": "", "role": "assistant"},
    "content part": {"type": "text", "text": ""},
    "tool call": {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
    "tool": {"name": "", "description": ""},
    "context entry": {"description": "", "value": ""},
    "resume entry": {"interruptId": "", "status": "cancelled"},
}
"""The smallest valid entry of each counted list: every key it has is required."""


def placed(kind: str, entries: list[Any]) -> dict[str, Any]:
    """An input holding ``entries`` of ``kind`` where they go."""
    doc: dict[str, Any] = {"threadId": "t", "runId": "r", "messages": []}
    if kind == "message":
        doc["messages"] = entries
    elif kind == "content part":
        doc["messages"] = [{"id": "", "role": "user", "content": entries}]
    elif kind == "tool call":
        doc["messages"] = [{"id": "", "role": "assistant", "toolCalls": entries}]
    elif kind == "tool":
        doc["tools"] = entries
    elif kind == "context entry":
        doc["context"] = entries
    else:
        doc["resume"] = entries
    return doc


@pytest.mark.parametrize("kind", sorted(SMALLEST))
def test_no_valid_entry_of_a_counted_list_is_shorter_than_the_codec_assumes(kind: str) -> None:
    smallest = SMALLEST[kind]
    validate_input(placed(kind, [smallest]))
    assert len(orjson.dumps(smallest)) >= codec._SMALLEST_ENTRY
    for key in smallest:  # nothing in it can go: each key is required
        with pytest.raises(InvalidInputError):
            validate_input(placed(kind, [{k: v for k, v in smallest.items() if k != key}]))


@given(kind=st.sampled_from(sorted(SMALLEST)), limit=st.integers(1, 40), extra=st.integers(-3, 3))
def test_an_input_of_the_smallest_entries_is_refused_exactly_when_it_has_too_many(
    kind: str, limit: int, extra: int
) -> None:
    """The tightest packing there is: the shortcut for short texts never lets one too many through."""
    allowed = MAX_RESUME_ENTRIES if kind == "resume entry" else limit
    count = max(0, allowed + extra)
    data = orjson.dumps(placed(kind, [SMALLEST[kind]] * count))
    for text in (data, data.decode(), memoryview(data)):
        if count <= allowed:
            decode_input(text, max_messages=limit)
            continue
        with pytest.raises(InvalidInputError) as refused:
            decode_input(text, max_messages=limit)
        assert f"at most {allowed} " in refused.value.message and f"not {count}" in refused.value.message
        code = RunErrorCode.INVALID_RESUME if kind == "resume entry" else RunErrorCode.INVALID_INPUT
        assert refused.value.code == code


def test_input_from_dict_counts_as_decode_input_does() -> None:
    doc = placed("tool", [SMALLEST["tool"]] * 3)
    with pytest.raises(InvalidInputError) as refused:
        input_from_dict(doc, max_messages=2)
    assert refused.value.path == ("tools",) and "at most 2 tools in one input, not 3" in refused.value.message
    assert len(input_from_dict(doc, max_messages=3).tools or ()) == 3
    assert len(input_from_dict(doc).tools or ()) == 3  # no limit unless one is given


def test_content_parts_and_tool_calls_count_together_over_all_messages() -> None:
    messages = [
        {"id": "a", "role": "assistant", "toolCalls": [SMALLEST["tool call"]] * 2},
        {"id": "u", "role": "user", "content": [SMALLEST["content part"]] * 2},
        {"id": "s", "role": "user", "content": "a string is no list of parts"},
    ]
    doc = {"threadId": "t", "runId": "r", "messages": messages}
    decode_input(orjson.dumps(doc), max_messages=4)
    with pytest.raises(InvalidInputError) as refused:
        decode_input(orjson.dumps(doc), max_messages=3)
    assert refused.value.path == ("messages",)
    assert "at most 3 content parts and tool calls in all the messages of one input, not 4" in refused.value.message


def test_a_resume_is_limited_without_being_asked_and_the_machine_agrees_on_the_number() -> None:
    assert MAX_INTERRUPTS == MAX_RESUME_ENTRIES
    doc = placed("resume entry", [SMALLEST["resume entry"]] * (MAX_RESUME_ENTRIES + 1))
    for refuse in (lambda: decode_input(orjson.dumps(doc)), lambda: input_from_dict(doc)):
        with pytest.raises(InvalidInputError) as refused:
            refuse()
        assert refused.value.code == RunErrorCode.INVALID_RESUME and refused.value.path == ("resume",)


def test_lists_are_counted_before_the_depth_walk_and_the_schema_check(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(codec, "overnested_at", lambda *a, **k: calls.append("depth"))
    monkeypatch.setattr(codec, "validate_input", lambda *a, **k: calls.append("schema"))
    doc = placed("message", [{"id": "", "role": "nobody"}] * 50)  # invalid, and too many
    with pytest.raises(InvalidInputError) as refused:
        decode_input(orjson.dumps(doc), max_messages=10)
    assert "at most 10 messages" in refused.value.message
    assert calls == []


def test_what_is_not_an_input_object_is_left_to_validation() -> None:
    for text in (b"[]", b'"x"', b'{"threadId": "t", "runId": "r", "messages": {"0": 1}}'):
        with pytest.raises(InvalidInputError) as refused:
            decode_input(text, max_messages=0)
        assert "at most" not in refused.value.message
