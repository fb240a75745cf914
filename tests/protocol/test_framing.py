"""SSE and JSON-lines framings, both ways."""

from __future__ import annotations

import orjson
import pytest

from agui_core.protocol.codec import decode_event, encode_event
from agui_core.protocol.events import RunStartedEvent, TextMessageContentEvent
from agui_core.protocol.framing import JsonLinesReader, SSEReader, jsonl_frame, sse_frame

EVENTS = [
    RunStartedEvent(thread_id="t", run_id="r"),
    TextMessageContentEvent(message_id="m", delta="line one\nline two: ünïcode"),
]


def test_sse_frame_is_data_line_and_blank_line() -> None:
    assert sse_frame(b'{"a":1}') == b'data: {"a":1}\n\n'


def test_jsonl_frame_ends_with_newline() -> None:
    assert jsonl_frame(b'{"a":1}') == b'{"a":1}\n'


@pytest.mark.parametrize("split", [1, 3, 7, 1000])
def test_sse_reader_reassembles_events_fed_in_pieces(split: int) -> None:
    stream = b"".join(sse_frame(encode_event(e)) for e in EVENTS)
    reader = SSEReader()
    bodies: list[bytes] = []
    for start in range(0, len(stream), split):
        bodies += reader.feed(stream[start : start + split])
    bodies += reader.close()
    assert [decode_event(b) for b in bodies] == EVENTS


def test_sse_reader_follows_the_standard() -> None:
    reader = SSEReader()
    text = b': comment\r\nevent: x\r\nid: 1\r\ndata: {"a":\r\ndata:1}\r\n\r\ndata: {}\n'
    assert reader.feed(text) == [b'{"a":\n1}']
    assert reader.close() == [b"{}"]


@pytest.mark.parametrize("split", [1, 5, 1000])
def test_jsonl_reader_skips_blank_lines_and_accepts_crlf(split: int) -> None:
    stream = b'{"a":1}\r\n\n  \n{"b":2}\n{"c":3}'
    reader = JsonLinesReader()
    lines: list[bytes] = []
    for start in range(0, len(stream), split):
        lines += reader.feed(stream[start : start + split])
    lines += reader.close()
    assert [orjson.loads(line) for line in lines] == [{"a": 1}, {"b": 2}, {"c": 3}]


@pytest.mark.parametrize("reader_type", [JsonLinesReader, SSEReader])
def test_readers_bound_an_unfinished_line(reader_type: type[JsonLinesReader] | type[SSEReader]) -> None:
    reader = reader_type(max_line=10)
    reader.feed(b"0123456789")
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        reader.feed(b"x")
