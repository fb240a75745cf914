"""The streamed deltas' short ways through the machine.

``ThreadMachine.take_text_delta`` lets a TEXT_MESSAGE_CONTENT through without its event; taken or
not, the machine ends where ``emit`` of the event leaves it: the same transcript, the same record
(mid-run too: the record holds the events), the same refusals. It takes a delta only when no
rule can refuse it and leaves everything else to ``emit``.

``emit`` itself applies a TEXT_MESSAGE_CONTENT or TOOL_CALL_ARGS that no rule can refuse without
the general path; the tests below hold it to the ordering rules (``StreamVerifier.check``) and
to the transcript (``Transcript.apply_message_event``) applied one event at a time.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agui_core.errors import LocalProtocolError, OrderingError
from agui_core.machine.effects import Emit
from agui_core.machine.ordering import StreamVerifier
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transcript import Transcript
from agui_core.protocol import events as ev
from agui_core.protocol.codec import MAX_DEPTH
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput
from tests.machine.driver import paying_bob
from tests.strategies import texts

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def running(thread_id: str = "t") -> ThreadMachine:
    machine = ThreadMachine(thread_id)
    machine.receive_input(RunAgentInput(thread_id=thread_id, run_id="run-1"), now=NOW)
    return machine


def stream(machine: ThreadMachine, steps: list[tuple[str, str]], *, fast: bool) -> None:
    """Apply ``steps``: ("start"|"delta"|"end"|"custom", message id) with deltas ``d<n>``."""
    for n, (kind, message_id) in enumerate(steps):
        if kind == "start":
            machine.emit(ev.TextMessageStartEvent(message_id=message_id, role="assistant"))
        elif kind == "end":
            machine.emit(ev.TextMessageEndEvent(message_id=message_id))
        elif kind == "custom":
            machine.emit(ev.CustomEvent(name="c", value=n))
        elif not (fast and machine.take_text_delta(message_id, f"d{n} ")):
            machine.emit(ev.TextMessageContentEvent(message_id=message_id, delta=f"d{n} "))


STEPS = [
    ("start", "a"),
    ("delta", "a"),
    ("delta", "a"),
    ("custom", ""),
    ("delta", "a"),
    ("start", "b"),
    ("delta", "b"),
    ("delta", "a"),
    ("end", "a"),
    ("delta", "b"),
]


def test_deltas_taken_leave_the_transcript_and_the_mid_run_record_as_their_events_do() -> None:
    fast, slow = running(), running()
    stream(fast, STEPS, fast=True)
    stream(slow, STEPS, fast=False)
    assert fast.record() == slow.record()  # the run's events, in order, built for the record
    fast.emit(ev.TextMessageEndEvent(message_id="b"))
    slow.emit(ev.TextMessageEndEvent(message_id="b"))
    assert fast.messages == slow.messages
    assert fast.finish() == slow.finish()
    assert fast.record() == slow.record()


def test_a_record_taken_mid_stream_keeps_taking_deltas_after_it() -> None:
    fast, slow = running(), running()
    stream(fast, STEPS[:3], fast=True)
    stream(slow, STEPS[:3], fast=False)
    assert fast.record() == slow.record()
    stream(fast, STEPS[3:], fast=True)
    stream(slow, STEPS[3:], fast=False)
    assert fast.record() == slow.record()
    restored = ThreadMachine.from_record(fast.record())
    assert restored.take_text_delta("b", "more")  # the restored run goes on where it stood
    assert not restored.take_text_delta("a", "more")


@given(st.lists(texts(max_size=6), max_size=20))
def test_any_deltas_make_the_message_the_events_make(deltas: list[str]) -> None:
    fast, slow = running(), running()
    for machine in (fast, slow):
        machine.emit(ev.TextMessageStartEvent(message_id="m", role="assistant"))
    for delta in deltas:
        assert fast.take_text_delta("m", delta)
        slow.emit(ev.TextMessageContentEvent(message_id="m", delta=delta))
    assert fast.messages == slow.messages
    assert fast.record() == slow.record()


@pytest.mark.parametrize(
    "case",
    ["not started", "ended", "before the run", "after the run"],
)
def test_a_delta_the_rules_refuse_is_left_to_emit_which_refuses_it(case: str) -> None:
    machine = ThreadMachine("t") if case == "before the run" else running()
    if case == "ended":
        machine.emit(ev.TextMessageStartEvent(message_id="m", role="assistant"))
        machine.emit(ev.TextMessageEndEvent(message_id="m"))
    elif case == "after the run":
        machine.finish()
    before = machine.record()
    assert not machine.take_text_delta("m", "x")
    assert machine.record() == before  # nothing changed
    with pytest.raises(LocalProtocolError):
        machine.emit(ev.TextMessageContentEvent(message_id="m", delta="x"))
    with pytest.raises(LocalProtocolError):
        machine.emit(ev.ToolCallArgsEvent(tool_call_id="c", delta="x"))
    assert machine.record() == before


def test_the_verifier_takes_a_delta_only_where_check_would_take_its_event() -> None:
    verifier = StreamVerifier()
    assert not verifier.take_text_delta("m")  # no RUN_STARTED yet
    verifier.check(ev.RunStartedEvent(thread_id="t", run_id="r"))
    verifier.check(ev.TextMessageStartEvent(message_id="m", role="assistant"))
    assert verifier.take_text_delta("m")
    assert verifier.index == 3  # it takes its place in the stream, as the event would
    verifier.check(ev.TextMessageChunkEvent(message_id="c", delta="x"))  # a chunk lane opens
    assert not verifier.take_text_delta("m")  # the event would close the lane first: check() it
    verifier.check(ev.TextMessageContentEvent(message_id="m", delta="y"))
    assert verifier.take_text_delta("m")
    verifier.check(ev.RunErrorEvent(message="stop"))
    assert not verifier.take_text_delta("m")


def _nested(depth: int) -> object:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value


_DEEP = _nested(MAX_DEPTH + 1)
"""Free JSON nested deeper than the wire allows: only the general path of ``emit`` measures it."""

_EVENTS = st.one_of(
    st.sampled_from(["m1", "m2"]).map(lambda m: ev.TextMessageStartEvent(message_id=m, role="assistant")),
    st.sampled_from(["m1", "m2"]).map(lambda m: ev.TextMessageEndEvent(message_id=m)),
    st.builds(
        ev.TextMessageContentEvent,
        message_id=st.sampled_from(["m1", "m2", "m3"]),
        delta=texts(max_size=4),
        subagent_run_id=st.sampled_from([None, None, "sub-1"]),
        raw_event=st.sampled_from([None, None, None, {"k": 1}, _DEEP]),
    ),
    st.sampled_from(["c1", "c2"]).map(
        lambda c: ev.ToolCallStartEvent(tool_call_id=c, tool_call_name="f", parent_message_id="m1")
    ),
    st.sampled_from(["c1", "c2"]).map(lambda c: ev.ToolCallEndEvent(tool_call_id=c)),
    st.builds(
        ev.ToolCallArgsEvent,
        tool_call_id=st.sampled_from(["c1", "c2", "c3"]),
        delta=texts(max_size=4),
        subagent_run_id=st.sampled_from([None, None, "sub-1"]),
        metadata=st.sampled_from([None, None, {}, {"k": _DEEP}]),
    ),
    st.just(ev.CustomEvent(name="c", value=1)),
)


@given(st.lists(_EVENTS, max_size=25))
def test_emit_takes_a_delta_exactly_as_the_rules_and_the_transcript_would(events: list[ev.Event]) -> None:
    machine = running()
    verifier, transcript = StreamVerifier(), Transcript()
    verifier.check(ev.RunStartedEvent(thread_id="t", run_id="run-1"))
    for event in events:
        if event.raw_event is _DEEP or (event.metadata or {}).get("k") is _DEEP:
            with pytest.raises(LocalProtocolError, match="deep"):  # measured before any other rule
                machine.emit(event)
            return
        try:
            verifier.check(event)
        except OrderingError as exc:
            with pytest.raises(LocalProtocolError) as refused:
                machine.emit(event)
            assert exc.message in refused.value.message
            return  # the verifier may have moved on past the refusal; the comparison ends here
        (effect,) = machine.emit(event)
        assert isinstance(effect, Emit) and effect.event is event
        if not isinstance(event, ev.CustomEvent):
            transcript.apply_message_event(event)
    assert machine.messages == transcript.messages


@pytest.mark.parametrize(
    ("event", "why"),
    [
        (ev.TextMessageContentEvent(message_id="m", delta="x", subagent_run_id="sub-1"), "belongs to the parent"),
        (ev.ToolCallArgsEvent(tool_call_id="c", delta="x", subagent_run_id="sub-1"), "belongs to the parent"),
        (ev.TextMessageContentEvent(message_id="m", delta="x", raw_event=_DEEP), "deep"),
        (ev.ToolCallArgsEvent(tool_call_id="c", delta="x", metadata={"k": _DEEP}), "deep"),
        (ev.ToolCallArgsEvent(tool_call_id="c", delta="x", extra={"k": _DEEP}), "deep"),
        (ev.TextMessageContentEvent(message_id="other", delta="x"), "not open"),
        (ev.ToolCallArgsEvent(tool_call_id="other", delta="x"), "not open"),
    ],
)
def test_emit_leaves_a_delta_some_rule_refuses_to_the_rule(event: ev.Event, why: str) -> None:
    machine = running()
    machine.emit(ev.TextMessageStartEvent(message_id="m", role="assistant"))
    machine.emit(ev.ToolCallStartEvent(tool_call_id="c", tool_call_name="f", parent_message_id="m"))
    before = machine.record()
    with pytest.raises(LocalProtocolError, match=why):
        machine.emit(event)
    assert machine.record() == before


def test_emit_refuses_the_arguments_of_a_call_answered_by_an_interrupt() -> None:
    machine = paying_bob()
    machine.interrupt([Interrupt(id="i1", reason="tool_call", tool_call_id="c1")], now=NOW)
    machine.receive_input(
        RunAgentInput(
            thread_id="t", run_id="r2", resume=(ResumeEntry(interrupt_id="i1", status="resolved", payload={}),)
        ),
        now=NOW,
        principal="ann",
    )
    before = machine.record()
    with pytest.raises(LocalProtocolError, match="answered by interrupt 'i1'"):
        machine.emit(ev.ToolCallArgsEvent(tool_call_id="c1", delta="{}"))
    assert machine.record() == before
