"""The transcript on its own: events applied to messages, streams joined when read."""

from __future__ import annotations

from agui_core.machine.transcript import Transcript, own_json
from agui_core.protocol import events as ev
from agui_core.protocol.types import UserMessage


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
