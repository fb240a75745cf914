"""encode_text_deltas writes each delta's TEXT_MESSAGE_CONTENT as encode_event writes the event."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agui_core.errors import EncodeError
from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_event, encode_text_deltas, encode_text_deltas_framed


@given(st.text(), st.lists(st.text(), max_size=8))
def test_each_line_is_the_event_encoded(message_id: str, deltas: list[str]) -> None:
    expected = [encode_event(ev.TextMessageContentEvent(message_id=message_id, delta=d)) for d in deltas]
    assert encode_text_deltas(message_id, deltas) == expected


def test_a_delta_that_is_not_text_is_an_encode_error() -> None:
    with pytest.raises(EncodeError):
        encode_text_deltas("m", ["fine", "\ud800"])  # a lone surrogate is not UTF-8


@given(st.text(), st.lists(st.text(), max_size=8), st.sampled_from([b"\n", b"\n\n", b""]))
def test_framed_is_each_line_then_its_frame_end(message_id: str, deltas: list[str], after: bytes) -> None:
    assert encode_text_deltas_framed(message_id, deltas, after) == b"".join(
        line + after for line in encode_text_deltas(message_id, deltas)
    )
