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
