"""Tests for what one thread may hold (agui_core.machine.thread.ThreadLimits): THREAD_TOO_LARGE.

The limits bound what clients add: an input whose new messages would take the thread past its
message count or its bytes of messages is refused, changing nothing, while an input that adds
nothing (a resume, a retry) is taken whatever the thread holds. The agent's own messages are
never refused. The thread's size is kept as messages join and change: each message measured
once, never the whole thread again per input.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest

from agui_core.errors import RunErrorCode
from agui_core.machine import thread as thread_module
from agui_core.machine import transcript as transcript_module
from agui_core.machine.effects import Reject
from agui_core.machine.record import record_from_dict, record_to_dict
from agui_core.machine.thread import (
    DEFAULT_MAX_THREAD_BYTES,
    DEFAULT_MAX_THREAD_MESSAGES,
    ThreadLimits,
    ThreadMachine,
)
from agui_core.machine.transcript import message_size, wire_size
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.codec import converter
from agui_core.protocol.types import Message
from tests.machine.driver import NOW, drive, emit, fail, finish, interrupt, make_input, receive, trace
from tests.machine.test_thread import ACCEPTED, approval, assert_rejected, tool_call, yes


def said(n: int, text: str = "hello") -> dict[str, Any]:
    return {"id": f"u-{n}", "role": "user", "content": f"{text} {n}"}


def size_of(*messages: dict[str, Any]) -> int:
    """The bytes the limit counts for these wire messages."""
    return sum(message_size(converter.structure(m, Message)) for m in messages)  # type: ignore[arg-type]


def holding(limits: ThreadLimits, *messages: dict[str, Any]) -> ThreadMachine:
    """An idle machine under ``limits`` whose thread holds ``messages`` (one run, nothing said back)."""
    machine = ThreadMachine("t", limits=limits)
    drive(machine, [receive(make_input("t", "run-0", messages=list(messages))), finish()])
    assert machine.state is ThreadState.IDLE
    return machine


def test_the_defaults_are_the_contracts() -> None:
    assert ThreadLimits() == ThreadLimits(max_messages=10_000, max_bytes=32 * 1024 * 1024)
    assert (DEFAULT_MAX_THREAD_MESSAGES, DEFAULT_MAX_THREAD_BYTES) == (10_000, 33_554_432)
    assert ThreadMachine("t").limits == ThreadLimits()


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "10"])
def test_a_limit_is_one_or_more_or_none(value: Any) -> None:
    with pytest.raises(ValueError, match="max_messages is a number, 1 or more, or None"):
        ThreadLimits(max_messages=value)
    with pytest.raises(ValueError, match="max_bytes"):
        ThreadLimits(max_bytes=value)
    assert ThreadLimits(max_messages=None, max_bytes=None).max_bytes is None


def test_thread_too_large_past_the_message_limit() -> None:
    machine = holding(ThreadLimits(max_messages=5), said(1), said(2), said(3))
    message = assert_rejected(
        machine,
        make_input("t", "run-1", messages=[said(4), said(5), said(6)]),
        RunErrorCode.THREAD_TOO_LARGE,
        "'t'",
        "holds 3 messages",
        "the 3 this input adds",
        "limit of 5 messages",
    )
    assert "Traceback" not in message
    # Up to the limit exactly is fine; messages the thread already has do not count again.
    effects = machine.receive_input(
        make_input("t", "run-2", messages=[said(1), said(2), said(3), said(4), said(5)]), now=NOW
    )
    assert trace(effects) == ACCEPTED
    drive(machine, [finish()])
    assert len(machine.messages) == 5
    assert_rejected(machine, make_input("t", "run-3", messages=[said(6)]), RunErrorCode.THREAD_TOO_LARGE, "5")


def test_thread_too_large_past_the_byte_limit() -> None:
    first, second = said(1, "x" * 100), said(2, "y" * 100)
    limit = size_of(first, second)
    machine = holding(ThreadLimits(max_messages=None, max_bytes=limit), first)
    assert machine.message_bytes == size_of(first)
    one_more = dict(second, content=second["content"] + "!")
    assert_rejected(
        machine,
        make_input("t", "run-1", messages=[one_more]),
        RunErrorCode.THREAD_TOO_LARGE,
        f"holds {size_of(first)} bytes of messages",
        f"the {size_of(one_more)} bytes this input adds",
        f"limit of {limit} bytes",
    )
    # To the byte exactly is within the limit.
    assert trace(machine.receive_input(make_input("t", "run-2", messages=[second]), now=NOW)) == ACCEPTED
    drive(machine, [finish()])
    assert machine.message_bytes == limit == machine.record().message_bytes


def test_a_full_thread_still_takes_the_resume_that_answers_it() -> None:
    limits = ThreadLimits(max_messages=3)
    machine = ThreadMachine("t", limits=limits)
    drive(
        machine,
        [
            receive(make_input("t", "run-1", messages=[said(1), said(2)])),
            emit(*tool_call("tc-1", "act", "{}", parent="a-1")),
            interrupt(approval("int-1", "tc-1")),
        ],
    )
    assert len(machine.messages) == 3  # full: two said, and the agent's call
    # A resume that would add a message is refused, and the interrupt stays open ...
    assert_rejected(
        machine,
        make_input("t", "run-2", resume=[yes("int-1")], messages=[said(3)]),
        RunErrorCode.THREAD_TOO_LARGE,
        "limit of 3 messages",
    )
    assert [i.id for i in machine.open_interrupts] == ["int-1"]
    # ... and the same resume without it, or with the whole history a client sends back, is taken.
    history = [said(1), said(2)]
    effects = machine.receive_input(make_input("t", "run-2", resume=[yes("int-1")], messages=history), now=NOW)
    assert trace(effects) == ACCEPTED
    assert machine.state is ThreadState.RESUMED


def test_the_agent_is_never_refused_and_a_thread_it_filled_takes_inputs_that_add_nothing() -> None:
    machine = holding(ThreadLimits(max_messages=2, max_bytes=size_of(said(1)) + 10), said(1))
    drive(
        machine,
        [
            receive(make_input("t", "run-1")),
            emit(
                ev.TextMessageStartEvent(message_id="a-1", role="assistant"),
                ev.TextMessageContentEvent(message_id="a-1", delta="a long answer " * 50),
                ev.TextMessageEndEvent(message_id="a-1"),
                ev.TextMessageStartEvent(message_id="a-2", role="assistant"),
                ev.TextMessageContentEvent(message_id="a-2", delta="and more"),
                ev.TextMessageEndEvent(message_id="a-2"),
            ),
            finish(),
        ],
    )
    # Past both limits by what the agent said: kept whole.
    assert len(machine.messages) == 3 and machine.message_bytes > machine.limits.max_bytes  # type: ignore[operator]
    assert_rejected(machine, make_input("t", "run-2", messages=[said(2)]), RunErrorCode.THREAD_TOO_LARGE)
    assert trace(machine.receive_input(make_input("t", "run-3"), now=NOW)) == ACCEPTED


def test_no_limit_is_no_limit() -> None:
    machine = holding(ThreadLimits(max_messages=None, max_bytes=None), *(said(n) for n in range(50)))
    assert len(machine.messages) == 50
    assert machine.message_bytes == size_of(*(said(n) for n in range(50)))


def test_the_size_follows_every_change_the_agent_makes_and_a_failed_run_rolls_it_back() -> None:
    machine = holding(ThreadLimits(), said(1))
    # Through a record, the machine knows the size without measuring the messages again.
    restored = ThreadMachine.from_record(record_from_dict(orjson.loads(orjson.dumps(record_to_dict(machine.record())))))
    assert restored.record().message_bytes == size_of(said(1))

    def check(machine: ThreadMachine) -> None:
        assert machine.message_bytes == sum(message_size(m) for m in machine.messages)

    drive(
        restored,
        [
            receive(make_input("t", "run-1", messages=[said(2)])),
            emit(
                ev.TextMessageStartEvent(message_id="a-1", role="assistant"),
                ev.TextMessageContentEvent(message_id="a-1", delta='quotes " and \\ and é'),
            ),
        ],
    )
    check(restored)  # text streamed and not yet joined counts
    drive(
        restored,
        [
            emit(
                ev.TextMessageContentEvent(message_id="a-1", delta=" more"),
                ev.TextMessageEndEvent(message_id="a-1"),
                *tool_call("tc-1", "act", '{"n": 1}', parent="a-1"),
                ev.ToolCallResultEvent(message_id="r-1", tool_call_id="tc-1", content="done"),
                ev.ActivitySnapshotEvent(message_id="p-1", activity_type="plan", content={"steps": [1]}),
            )
        ],
    )
    check(restored)
    drive(restored, [finish()])
    done = restored.record()
    assert done.message_bytes == sum(message_size(m) for m in done.messages)
    # Messages of a record changed by a later run: a call added to an old assistant message,
    # an old activity patched and replaced, the whole conversation snapshotted shorter.
    again = ThreadMachine.from_record(done)
    drive(
        again,
        [
            receive(make_input("t", "run-2")),
            emit(
                *tool_call("tc-2", "act", '{"n": 2}', parent="a-1"),
                ev.ActivityDeltaEvent(
                    message_id="p-1", activity_type="plan", patch=({"op": "add", "path": "/steps/-", "value": 2},)
                ),
            ),
        ],
    )
    check(again)
    drive(
        again,
        [emit(ev.ActivitySnapshotEvent(message_id="p-1", activity_type="plan", content={"done": True}, replace=True))],
    )
    check(again)
    drive(again, [fail()])  # the run's changes go: the size is the record's again
    assert again.message_bytes == done.message_bytes
    check(again)
    drive(
        again,
        [
            receive(make_input("t", "run-3")),
            emit(ev.MessagesSnapshotEvent(messages=again.messages[:2])),
            finish(),
        ],
    )
    check(again)
    assert again.record().message_bytes == size_of(said(1), said(2))


@pytest.mark.pure_only
def test_an_input_measures_what_it_adds_not_the_whole_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    machine = holding(ThreadLimits(max_messages=None), *(said(n) for n in range(500)))
    record = machine.record()
    measured: list[str] = []

    def counting(message: Message) -> int:
        measured.append(message.id)
        return message_size(message)

    def counting_wire(data: dict[str, Any]) -> int:
        measured.append(data["id"])
        return wire_size(data)

    monkeypatch.setattr(transcript_module, "message_size", counting)
    monkeypatch.setattr(thread_module, "wire_size", counting_wire)
    for n in range(3):  # each input on a machine restored from the last record, as a host does
        machine = ThreadMachine.from_record(record, limits=ThreadLimits(max_messages=None))
        drive(
            machine,
            [receive(make_input("t", f"run-x{n}", messages=[said(1000 + n)])), finish()],
        )
        record = machine.record()
    # The input's message once (for the limit) and nothing else: not the 500 the thread held.
    assert measured == ["u-1000", "u-1001", "u-1002"]
    assert record.message_bytes == size_of(*(said(n) for n in [*range(500), 1000, 1001, 1002]))


def test_a_refused_input_is_a_lone_reject_naming_the_code() -> None:
    machine = holding(ThreadLimits(max_messages=1), said(1))
    (effect,) = machine.receive_input(make_input("t", "run-1", messages=[said(2)]), now=NOW)
    assert isinstance(effect, Reject) and effect.code is RunErrorCode.THREAD_TOO_LARGE
    assert effect.event.code == "THREAD_TOO_LARGE"  # type: ignore[union-attr]


def test_a_limit_changed_between_inputs_applies_from_the_next_one() -> None:
    # The limits are the host's configuration, not the thread's: a record carries none.
    machine = holding(ThreadLimits(max_messages=None), *(said(n) for n in range(5)))
    record = machine.record()
    assert "limits" not in record_to_dict(record) and "maxMessages" not in orjson.dumps(record_to_dict(record)).decode()
    tighter = ThreadMachine.from_record(record, limits=ThreadLimits(max_messages=5))
    assert_rejected(tighter, make_input("t", "run-1", messages=[said(9)]), RunErrorCode.THREAD_TOO_LARGE)
    looser = ThreadMachine.from_record(attrs.evolve(record), limits=ThreadLimits(max_messages=6))
    assert trace(looser.receive_input(make_input("t", "run-1", messages=[said(9)]), now=NOW)) == ACCEPTED
