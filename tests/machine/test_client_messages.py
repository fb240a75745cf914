"""The conversation a client assembles from events, as the published spec's consumer rules say."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from agui_core.machine.client import ClientMachine
from agui_core.machine.client_messages import MessageAssembly
from agui_core.protocol.codec import converter, event_from_dict
from agui_core.protocol.types import Message

T0 = datetime(2026, 4, 20, 12, tzinfo=UTC)
TID = "t-1"


def wire(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    return [converter.unstructure(m, Message) for m in messages]


def assembled(*events: dict[str, Any]) -> list[dict[str, Any]]:
    assembly = MessageAssembly()
    for event in events:
        assert assembly.apply(event_from_dict(event)) is None  # type: ignore[arg-type]
    return wire(assembly.messages)


def test_text_is_streamed_into_its_message_and_a_reopened_message_is_appended_to() -> None:
    assert assembled(
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hel"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "lo"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": " again"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    ) == [{"id": "m", "role": "assistant", "content": "Hello again"}]


def test_chunks_are_expanded_and_metadata_merged() -> None:
    assert assembled(
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "role": "assistant", "delta": "a", "metadata": {"x": 1}},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "b", "metadata": {"y": 2}},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r", "delta": "think"},
    ) == [
        {"id": "m", "role": "assistant", "content": "ab", "metadata": {"x": 1, "y": 2}},
        {"id": "r", "role": "reasoning", "content": "think"},
    ]


def test_tool_calls_join_their_parent_and_results_become_tool_messages() -> None:
    assert assembled(
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "send", "parentMessageId": "m"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"to":'},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "send", "parentMessageId": "m"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '"ann"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "d", "toolCallName": "look", "delta": "{}"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c", "content": "sent"},
    ) == [
        {
            "id": "m",
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "c", "type": "function", "function": {"name": "send", "arguments": '{"to":"ann"}'}}],
        },
        {
            "id": "d",
            "role": "assistant",
            "toolCalls": [{"id": "d", "type": "function", "function": {"name": "look", "arguments": "{}"}}],
        },
        {"id": "t", "role": "tool", "toolCallId": "c", "content": "sent"},
    ]


def test_activity_snapshots_and_deltas() -> None:
    assembly = MessageAssembly()
    for event in [
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {"steps": []}},
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a",
            "activityType": "plan",
            "patch": [{"op": "add", "path": "/steps/-", "value": "x"}],
        },
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a",
            "activityType": "plan",
            "content": {"gone": 1},
            "replace": False,
        },
    ]:
        assert assembly.apply(event_from_dict(event)) is None  # type: ignore[arg-type]
    assert wire(assembly.messages) == [
        {"id": "a", "role": "activity", "activityType": "plan", "content": {"steps": ["x"]}}
    ]
    bad = {
        "type": "ACTIVITY_DELTA",
        "messageId": "a",
        "activityType": "plan",
        "patch": [{"op": "remove", "path": "/nope"}],
    }
    problem = assembly.apply(event_from_dict(bad))  # type: ignore[arg-type]
    assert problem is not None and "'a'" in problem
    assert wire(assembly.messages)[0]["content"] == {"steps": ["x"]}


def test_a_messages_snapshot_is_reconciled_by_id() -> None:
    assert assembled(
        {"type": "TEXT_MESSAGE_START", "messageId": "old", "role": "assistant"},
        {"type": "TEXT_MESSAGE_START", "messageId": "kept", "role": "assistant"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r", "role": "reasoning"},
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {}},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "new", "role": "user", "content": "hi"},
                {"id": "kept", "role": "assistant", "content": "final"},
                {"id": "a2", "role": "activity", "activityType": "plan", "content": {}},
            ],
        },
    ) == [
        # "old" is dropped (the snapshot is the complete set), "kept" replaced in place, the
        # reasoning message survives (the snapshot carries none), the activity does not (it
        # carries one: the complete activity set), new ones come last in snapshot order.
        {"id": "kept", "role": "assistant", "content": "final"},
        {"id": "r", "role": "reasoning", "content": ""},
        {"id": "new", "role": "user", "content": "hi"},
        {"id": "a2", "role": "activity", "activityType": "plan", "content": {}},
    ]


def test_messages_and_state_accumulate_across_the_runs_of_one_stream() -> None:
    client = ClientMachine(TID)
    stream = [
        {"type": "RUN_STARTED", "threadId": TID, "runId": "r-1"},
        {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m-1", "role": "assistant", "delta": "one"},
        {"type": "RUN_FINISHED", "threadId": TID, "runId": "r-1"},
        {"type": "RUN_STARTED", "threadId": TID, "runId": "r-2"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "x"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m-2", "role": "assistant", "delta": "two"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "!"},
        {"type": "RUN_FINISHED", "threadId": TID, "runId": "r-2"},
    ]
    for event in stream[:6]:
        client.receive_event(event_from_dict(event), now=T0)  # type: ignore[arg-type]
    # An id-less chunk with no stream open is refused; the run is failed and passed over.
    for event in stream[6:]:
        try:
            client.receive_event(event_from_dict(event), now=T0)  # type: ignore[arg-type]
        except Exception:
            client.fail_run()
    assert client.state == {"n": 2}
    assert [(m.id, m.content) for m in client.messages] == [("m-1", "one")]  # type: ignore[union-attr]
    # The same stream without the stray chunk: m-2's id-less continuation lands in m-2.
    client = ClientMachine(TID)
    for event in [*stream[:6], *stream[7:]]:
        client.receive_event(event_from_dict(event), now=T0)  # type: ignore[arg-type]
    assert [(m.id, m.content) for m in client.messages] == [("m-1", "one"), ("m-2", "two!")]  # type: ignore[union-attr]
    assert client.state == {"n": 2} and client.warnings == ()


def test_the_clients_own_input_messages_start_the_conversation() -> None:
    from agui_core.protocol.types import RunAgentInput, UserMessage

    client = ClientMachine(TID)
    client.sending(RunAgentInput(thread_id=TID, run_id="r-1", messages=(UserMessage(id="u", content="hi"),)))
    for event in [
        {"type": "RUN_STARTED", "threadId": TID, "runId": "r-1"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "role": "assistant", "delta": "hello"},
        {"type": "RUN_FINISHED", "threadId": TID, "runId": "r-1"},
    ]:
        client.receive_event(event_from_dict(event), now=T0)  # type: ignore[arg-type]
    assert [m.id for m in client.messages] == ["u", "m"]
    # A bare input (a resume with no messages) leaves the conversation as it is.
    client.sending(RunAgentInput(thread_id=TID, run_id="r-2"))
    assert [m.id for m in client.messages] == ["u", "m"]


def test_subagent_attribution_and_tool_call_metadata_land_where_they_belong() -> None:
    assert assembled(
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant", "subagentRunId": "s-1"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c",
            "toolCallName": "look",
            "parentMessageId": "m",
            "metadata": {"a": 1},
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}", "metadata": {"b": 2}},
        {"type": "TOOL_CALL_END", "toolCallId": "c", "metadata": {"a": 3}},
    ) == [
        {
            "id": "m",
            "role": "assistant",
            "content": "",
            "subagentRunId": "s-1",
            "toolCalls": [
                {
                    "id": "c",
                    "type": "function",
                    "function": {"name": "look", "arguments": "{}"},
                    "metadata": {"a": 3, "b": 2},
                }
            ],
        }
    ]
