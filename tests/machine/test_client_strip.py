"""The client's enforcement stage (:mod:`agui_core.machine.client_strip`): unrecognised union
members are stripped, with a notice naming the path, before strict decoding; the host's codec
keeps refusing them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from agui_core.errors import InvalidEventError, InvalidInputError, OrderingError
from agui_core.machine.client import CLIENT_WARNINGS, ClientMachine
from agui_core.machine.client_strip import STRIP_RULES, decode_client_event, strip_unrecognised
from agui_core.machine.rulebook import RULES, Force
from agui_core.protocol import events as ev
from agui_core.protocol.codec import decode_event, decode_input

T0 = datetime(2026, 4, 20, 12, tzinfo=UTC)

UNKNOWN_OUTCOME = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "handoff"}}
UNKNOWN_OP = {
    "type": "STATE_DELTA",
    "delta": [{"op": "add", "path": "/a", "value": 1}, {"op": "merge", "path": "/b", "value": {}}],
}
UNKNOWN_PART = {
    "type": "MESSAGES_SNAPSHOT",
    "messages": [
        {"id": "s", "role": "system", "content": "plain text is no list of parts"},
        {"id": "u", "role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "hologram"}]},
    ],
}


def test_an_unknown_outcome_is_removed_and_named() -> None:
    raw = copy.deepcopy(UNKNOWN_OUTCOME)
    value, (notice,) = strip_unrecognised(raw)
    assert "outcome" not in value and raw == UNKNOWN_OUTCOME  # the caller's object is not changed
    assert (notice.rule, notice.path) == ("outcome-unknown", "/outcome") and "'handoff'" in notice.message


def test_an_unknown_op_is_dropped_from_the_patch_and_the_rest_kept() -> None:
    value, (notice,) = strip_unrecognised(UNKNOWN_OP)
    assert value["delta"] == [{"op": "add", "path": "/a", "value": 1}]
    assert (notice.rule, notice.path) == ("patch-op-unknown", "/delta/1") and "'merge'" in notice.message


def test_an_activity_delta_patch_is_stripped_the_same_way() -> None:
    raw = {
        "type": "ACTIVITY_DELTA",
        "messageId": "a",
        "activityType": "plan",
        "patch": [{"op": "merge", "path": "/x"}, {"op": "remove", "path": "/y"}],
    }
    value, (notice,) = strip_unrecognised(raw)
    assert value["patch"] == [{"op": "remove", "path": "/y"}] and notice.path == "/patch/0"


def test_an_unknown_content_part_is_dropped_and_the_message_kept() -> None:
    value, (notice,) = strip_unrecognised(UNKNOWN_PART)
    assert value["messages"][0] == UNKNOWN_PART["messages"][0]
    assert value["messages"][1]["content"] == [{"type": "text", "text": "hi"}]
    assert (notice.rule, notice.path) == ("content-part-unknown", "/messages/1/content/1")


def test_a_media_part_whose_source_is_unknown_goes_whole() -> None:
    part = {"type": "image", "source": {"type": "hologram-store", "value": "h"}}
    raw = {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": [part]}]}
    value, (notice,) = strip_unrecognised(raw)
    assert value["messages"][0]["content"] == [] and "source" in notice.message


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": "success"}},
        {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/a", "value": "left over"}]},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": [{"type": "text"}]}]},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"},
    ],
)
def test_recognised_material_comes_back_as_it_is(raw: dict[str, Any]) -> None:
    value, notices = strip_unrecognised(raw)
    assert value is raw and notices == ()


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "outcome": {"type": 7}},
        {"type": "STATE_DELTA", "delta": [{"op": None, "path": "/a"}]},
        {"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "u", "role": "user", "content": [{"text": "no type"}]}]},
    ],
)
def test_a_malformed_tag_is_left_for_the_strict_decoder_to_refuse(raw: dict[str, Any]) -> None:
    assert strip_unrecognised(raw) == (raw, ())
    with pytest.raises(InvalidEventError):
        decode_client_event(orjson.dumps(raw))


def test_a_frame_that_is_not_json_is_refused_as_the_codec_words_it() -> None:
    with pytest.raises(InvalidEventError) as client_side:
        decode_client_event(b"{not json")
    with pytest.raises(InvalidEventError) as codec_side:
        decode_event(b"{not json")
    assert client_side.value.message == codec_side.value.message


@pytest.mark.parametrize("raw", [UNKNOWN_OUTCOME, UNKNOWN_OP, UNKNOWN_PART])
def test_the_hosts_codec_keeps_refusing_them(raw: dict[str, Any]) -> None:
    with pytest.raises(InvalidEventError):
        decode_event(orjson.dumps(raw))


def test_an_input_with_an_unknown_content_part_is_still_refused_by_the_host() -> None:
    run_input = {
        "threadId": "t",
        "runId": "r",
        "messages": [{"id": "u", "role": "user", "content": [{"type": "hologram"}]}],
        "state": None,
        "tools": [],
        "context": [],
        "forwardedProps": None,
    }
    with pytest.raises(InvalidInputError):
        decode_input(orjson.dumps(run_input))


def test_receive_frame_strips_warns_and_finishes_the_run() -> None:
    machine = ClientMachine("t")
    machine.receive_frame(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}', now=T0)
    shown = machine.receive_frame(orjson.dumps(UNKNOWN_OUTCOME), now=T0)
    assert isinstance(shown, ev.RunFinishedEvent) and shown.outcome is None
    assert [(w.rule, w.index) for w in machine.warnings] == [("outcome-unknown", 1)]
    assert machine.outcome is not None and machine.outcome.type == "success"


def test_a_refused_event_keeps_none_of_its_strip_warnings() -> None:
    machine = ClientMachine("t")
    event, stripped = decode_client_event(orjson.dumps(UNKNOWN_OUTCOME))
    with pytest.raises(OrderingError):
        machine.receive_event(event, now=T0, stripped=stripped)  # no run to finish
    assert machine.warnings == ()


def test_every_strip_rule_is_a_client_warning_and_a_spec_should() -> None:
    assert STRIP_RULES <= CLIENT_WARNINGS
    assert all(RULES[rule].force is Force.SHOULD for rule in STRIP_RULES)


def test_the_input_a_run_started_echoes_is_stripped_too() -> None:
    message = {"id": "u", "role": "user", "content": [{"type": "hologram"}, {"type": "text", "text": "hi"}]}
    raw = {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "r",
        "input": {"threadId": "t", "runId": "r", "messages": [message], "tools": [], "context": []},
    }
    event, (notice,) = decode_client_event(orjson.dumps(raw))
    assert isinstance(event, ev.RunStartedEvent) and event.input is not None
    assert [part.type for part in event.input.messages[0].content] == ["text"]  # type: ignore[union-attr]
    assert notice.path == "/input/messages/0/content/0" and notice.message.startswith("RUN_STARTED ")
