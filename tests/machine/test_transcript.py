"""The transcript on its own: events applied to messages, streams joined when read."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agui_core.machine.transcript import Transcript, message_size, own_json
from agui_core.protocol import events as ev
from agui_core.protocol.codec import converter
from agui_core.protocol.types import ActivityMessage, AssistantMessage, FunctionCall, Message, ToolCall, UserMessage
from tests.strategies import texts


def test_streamed_text_is_joined_when_the_messages_are_read() -> None:
    transcript = Transcript()
    transcript.apply_message_event(ev.TextMessageStartEvent(message_id="m", role="assistant"))
    for piece in ("Hel", "lo"):
        transcript.apply_message_event(ev.TextMessageContentEvent(message_id="m", delta=piece))
    transcript.structured = None
    (message,) = transcript.messages
    assert message.id == "m" and message.content == "Hello"  # type: ignore[union-attr]


def test_a_delta_does_not_rebuild_the_text_streamed_so_far() -> None:
    # Rebuilding the text on every delta copies it every time: quadratic in its length (57 s
    # for a 16 MB message once). The pieces wait, and are joined once, when the text is read.
    transcript = Transcript()
    transcript.apply_message_event(ev.TextMessageStartEvent(message_id="m", role="assistant"))
    (held,) = transcript.raw
    for _ in range(1_000):
        transcript.apply_message_event(ev.TextMessageContentEvent(message_id="m", delta="y" * 64))
    assert not held.get("content")  # nothing joined yet
    transcript.settle()
    assert held["content"] == "y" * 64_000


def test_a_tool_call_becomes_a_proposal() -> None:
    transcript = Transcript()
    start = ev.ToolCallStartEvent(tool_call_id="tc", tool_call_name="send", parent_message_id="a")
    transcript.apply_message_event(start)
    transcript.apply_message_event(ev.ToolCallArgsEvent(tool_call_id="tc", delta='{"to":'))
    transcript.apply_message_event(ev.ToolCallArgsEvent(tool_call_id="tc", delta='"x"}'))
    proposal = transcript.proposal("tc", None)
    assert proposal is not None and (proposal.name, proposal.arguments) == ("send", '{"to":"x"}')
    assert transcript.proposal("nope", None) is None


def test_replace_takes_a_whole_conversation() -> None:
    transcript = Transcript()
    transcript.apply_message_event(ev.TextMessageStartEvent(message_id="m", role="assistant"))
    transcript.replace((UserMessage(id="u", content="hi"),))
    assert [m.id for m in transcript.messages] == ["u"]


def test_own_json_copies_containers() -> None:
    value = {"a": [1, {"b": 2}]}
    copy = own_json(value)
    assert copy == value and copy is not value and copy["a"] is not value["a"]  # type: ignore[index]


def test_reading_restructures_only_the_messages_that_changed() -> None:
    transcript = Transcript()
    transcript.extend((UserMessage(id="u", content="hi"),))
    transcript.apply_message_event(ev.TextMessageStartEvent(message_id="a", role="assistant"))
    transcript.apply_message_event(ev.TextMessageContentEvent(message_id="a", delta="Sure"))
    user, _ = transcript.messages
    transcript.apply_message_event(ev.TextMessageContentEvent(message_id="a", delta=", done"))
    again_user, again_assistant = transcript.messages
    assert again_user is user  # unchanged: the structured form is kept
    assert again_assistant.content == "Sure, done"  # type: ignore[union-attr]


def test_every_change_to_a_kept_message_reaches_its_structured_form() -> None:
    transcript = Transcript()
    transcript.apply_message_event(ev.TextMessageStartEvent(message_id="a", role="assistant"))
    transcript.apply_message_event(ev.TextMessageContentEvent(message_id="a", delta="Sending."))
    transcript.apply_message_event(ev.TextMessageEndEvent(message_id="a"))
    assert transcript.messages[0].tool_calls is None  # type: ignore[union-attr]
    # A call added to a message already read, its arguments streamed after the read.
    start = ev.ToolCallStartEvent(tool_call_id="tc", tool_call_name="send", parent_message_id="a")
    transcript.apply_message_event(start)
    (message,) = transcript.messages
    assert [c.id for c in message.tool_calls] == ["tc"]  # type: ignore[union-attr]
    transcript.apply_message_event(ev.ToolCallArgsEvent(tool_call_id="tc", delta='{"to":'))
    (message,) = transcript.messages
    assert [c.function.arguments for c in message.tool_calls] == ['{"to":']  # type: ignore[union-attr]
    transcript.apply_message_event(ev.ToolCallArgsEvent(tool_call_id="tc", delta='"x"}'))
    (message,) = transcript.messages
    assert [c.function.arguments for c in message.tool_calls] == ['{"to":"x"}']  # type: ignore[union-attr]
    # An activity replaced in place.
    transcript.apply_message_event(
        ev.ActivitySnapshotEvent(message_id="act", activity_type="plan", content={"step": 1})
    )
    assert transcript.messages[1].content == {"step": 1}  # type: ignore[union-attr]
    transcript.apply_message_event(
        ev.ActivitySnapshotEvent(message_id="act", activity_type="plan", content={"step": 2}, replace=True)
    )
    assert transcript.messages[1].content == {"step": 2}  # type: ignore[union-attr]
    # A whole conversation replaced: nothing structured before survives.
    transcript.replace((UserMessage(id="a", content="other"),))
    assert [(m.id, m.content) for m in transcript.messages] == [("a", "other")]  # type: ignore[union-attr]


_STRAY = {"id": "c2", "type": "function", "function": {"name": "g", "arguments": ""}}
"""A call among a user message's unknown keys: kept as it came, and never taken for the agent's."""

# A conversation as a record holds it: wire objects, one of each kind an event can reach.
_HELD = (
    UserMessage(id="u1", content="hi", extra={"toolCalls": [_STRAY]}),
    AssistantMessage(
        id="a1", content="Sure", tool_calls=(ToolCall(id="c1", function=FunctionCall(name="send", arguments="{}")),)
    ),
    ActivityMessage(id="act1", activity_type="plan", content={"step": 1}),
)


def test_a_conversation_taken_whole_is_held_as_it_came_until_an_event_needs_a_message() -> None:
    transcript = Transcript()
    transcript.replace(_HELD)
    assert all(mine is held for mine, held in zip(transcript.messages, _HELD, strict=True))
    transcript.apply_message_event(
        ev.ToolCallStartEvent(tool_call_id="c9", tool_call_name="look", parent_message_id="a1")
    )
    user, assistant, activity = transcript.messages
    assert user is _HELD[0] and activity is _HELD[2]  # untouched: never made dicts
    assert [c.id for c in assistant.tool_calls] == ["c1", "c9"]  # type: ignore[union-attr]
    assert [c.id for c in _HELD[1].tool_calls] == ["c1"]  # type: ignore[union-attr]  # the record's stays
    # A call held in a wire object is found, and becomes a proposal; one among another role's
    # unknown keys is the client's JSON, not the agent's call.
    proposal = transcript.proposal("c1", None)
    assert proposal is not None and (proposal.name, proposal.arguments) == ("send", "{}")
    assert transcript.find_tool_call("c2") is None
    assert transcript.size == sum(map(message_size, transcript.messages))


_REACHING = st.one_of(
    st.builds(ev.TextMessageStartEvent, message_id=st.just("n1"), role=st.just("assistant")),
    st.builds(ev.TextMessageContentEvent, message_id=st.sampled_from(["u1", "a1", "n1"]), delta=texts(max_size=3)),
    st.builds(ev.TextMessageEndEvent, message_id=st.sampled_from(["a1", "n1"])),
    st.builds(
        ev.ToolCallStartEvent,
        tool_call_id=st.sampled_from(["c1", "c9"]),
        tool_call_name=st.just("f"),
        parent_message_id=st.sampled_from(["a1", "n1", "u1"]),
    ),
    st.builds(ev.ToolCallArgsEvent, tool_call_id=st.sampled_from(["c1", "c2", "c9"]), delta=texts(max_size=3)),
    st.builds(ev.ToolCallEndEvent, tool_call_id=st.sampled_from(["c1", "c9"])),
    st.builds(ev.ToolCallResultEvent, message_id=st.just("r1"), tool_call_id=st.just("c1"), content=st.just("ok")),
    st.builds(
        ev.ActivitySnapshotEvent,
        message_id=st.sampled_from(["act1", "act2"]),
        activity_type=st.just("plan"),
        content=st.fixed_dictionaries({"step": st.integers(0, 3)}),
        replace=st.sampled_from([None, True, False]),
    ),
    st.sampled_from(["read", "size"]),
)


@given(st.lists(_REACHING, max_size=20), st.booleans())
def test_messages_held_as_they_came_end_as_if_every_one_were_a_dict_from_the_start(
    steps: list[Any], sized: bool
) -> None:
    before = [converter.unstructure(m, Message) for m in _HELD]
    size = sum(map(message_size, _HELD)) if sized else None
    held, dicts = Transcript(), Transcript()
    held.replace(_HELD, size)
    dicts.replace(_HELD, size)
    for index in range(len(_HELD)):
        dicts._wire(index)  # the form every message had before the transcript held wire objects
    for step in steps:
        for transcript in (held, dicts):
            if step == "read":
                transcript.structured = None
                _ = transcript.messages
            elif step == "size":
                _ = transcript.size
            else:
                transcript.apply_message_event(step)
    assert held.messages == dicts.messages
    assert held.size == dicts.size == sum(map(message_size, held.messages))
    assert [converter.unstructure(m, Message) for m in _HELD] == before  # the record's messages never change


_STREAM_STEPS = st.lists(
    st.tuples(
        # Deltas most of all: each other step matters only between two deltas of one message.
        st.sampled_from(["delta"] * 4 + ["start", "reasoning start", "reasoning delta", "read", "size", "replace"]),
        st.sampled_from(["m", "n"]),
        texts(min_size=1, max_size=3),
    ),
    max_size=30,
)


def _stream_both(steps: list[tuple[str, str, str]]) -> tuple[Transcript, Transcript]:
    """``steps`` applied to two transcripts: deltas through ``stream_text`` to the first, as
    events to the second; every other step as the same call to both."""
    fast, slow = Transcript(), Transcript()
    for kind, message_id, text in steps:
        for transcript in (fast, slow):
            if kind == "delta" and transcript is fast:
                transcript.stream_text(message_id, text)
            elif kind == "delta":
                transcript.apply_message_event(ev.TextMessageContentEvent(message_id=message_id, delta=text))
            elif kind == "start":
                transcript.apply_message_event(ev.TextMessageStartEvent(message_id=message_id, role="assistant"))
            elif kind == "reasoning start":
                transcript.apply_message_event(ev.ReasoningMessageStartEvent(message_id=message_id))
            elif kind == "reasoning delta":
                transcript.apply_message_event(ev.ReasoningMessageContentEvent(message_id=message_id, delta=text))
            elif kind == "read":
                transcript.settle()
            elif kind == "size":
                _ = transcript.size  # measuring joins what is streamed
            else:
                transcript.replace((AssistantMessage(id=message_id, content=text),))
    return fast, slow


@pytest.mark.parametrize(
    "between",
    [
        [("read", "m", "")],
        [("size", "m", "")],
        [("start", "m", "")],
        [("replace", "m", "was")],
        [("start", "n", ""), ("delta", "n", "x")],
        [("reasoning start", "m", ""), ("reasoning delta", "m", "r")],
    ],
    ids=["read", "measured", "started again", "replaced", "another message", "reasoning under the id"],
)
def test_a_delta_after_its_stream_was_joined_or_dropped_lands_where_its_event_would(
    between: list[tuple[str, str, str]],
) -> None:
    # stream_text finds the stream it last added to without looking it up: whatever joins,
    # ends or drops that stream in between must not leave a later delta in text already joined.
    steps = [("start", "m", ""), ("delta", "m", "a"), *between, ("delta", "m", "b")]
    fast, slow = _stream_both(steps)
    assert fast.messages == slow.messages
    assert "b" in [m.content for m in fast.messages if m.id == "m"][-1]  # type: ignore[union-attr]


def test_a_message_streamed_a_delta_at_a_time_keeps_its_pieces_at_hand() -> None:
    # The short cut itself: after the first delta, the next ones find the stream's own pieces
    # without a lookup (a tail never set would leave every test above passing, and slower).
    transcript = Transcript()
    transcript.apply_message_event(ev.TextMessageStartEvent(message_id="m", role="assistant"))
    transcript.stream_text("m", "a")
    message_id, pieces = transcript.text_tail
    assert message_id == "m" and pieces is transcript.streams[("content", "m")][2]
    transcript.stream_text("m", "b")
    assert pieces[-1] == "b"
    transcript.stream_text("nobody", "x")  # no such message: nothing to stream into
    assert transcript.text_tail == ("m", pieces)


@given(_STREAM_STEPS)
def test_text_streamed_without_its_event_ends_as_the_events_leave_it(steps: list[tuple[str, str, str]]) -> None:
    fast, slow = _stream_both(steps)
    assert fast.messages == slow.messages
    assert fast.size == slow.size
