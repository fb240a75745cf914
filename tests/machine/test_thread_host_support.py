"""What the machine offers a host: retries by run id, interrupt times, the tool journal."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agui_core.errors import LocalProtocolError
from agui_core.machine.effects import Emit, Persist, Reject
from agui_core.machine.record import record_from_dict, record_to_dict
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.types import Interrupt
from tests.machine.driver import NOW, make_input
from tests.seed import APPROVE_SCHEMA


def interrupted(thread: str = "t") -> ThreadMachine:
    """A thread whose run-1 proposed tc-1 and asked for its approval as int-1, at NOW."""
    machine = ThreadMachine(thread)
    machine.receive_input(make_input(thread, "run-1"), now=NOW)
    machine.emit(ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="sendEmail", parent_message_id="m-1"))
    machine.emit(ev.ToolCallArgsEvent(tool_call_id="tc-1", delta='{"to": "bob@example.com"}'))
    machine.emit(ev.ToolCallEndEvent(tool_call_id="tc-1"))
    machine.interrupt(
        [Interrupt(id="int-1", reason="tool_call", tool_call_id="tc-1", response_schema=APPROVE_SCHEMA)], now=NOW
    )
    return machine


def approve(machine: ThreadMachine, run_id: str = "run-2", *, at: timedelta = timedelta(minutes=1)) -> list[object]:
    resume = [{"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}}]
    return list(machine.receive_input(make_input(machine.thread_id, run_id, resume=resume), now=NOW + at))


def emitted(effects: list[object]) -> list[ev.Event]:
    return [e.event for e in effects if isinstance(e, Emit | Reject)]


def test_retrying_a_run_whose_end_was_never_seen_replays_it() -> None:
    machine = interrupted()
    before = machine.record()
    retry = machine.receive_input(make_input("t", "run-1"), now=NOW + timedelta(seconds=5))
    events = emitted(retry)
    assert len(events) == len(retry), "a replay runs nothing and saves nothing"
    assert isinstance(events[0], ev.RunStartedEvent)
    assert isinstance(events[-1], ev.RunFinishedEvent)
    assert events[-1].outcome is not None and events[-1].outcome.type == "interrupt"
    assert [i.id for i in events[-1].outcome.interrupts] == ["int-1"]
    assert {type(e) for e in events[1:-1]} == {ev.StateSnapshotEvent, ev.MessagesSnapshotEvent}
    assert machine.record() == before


def test_a_new_run_id_on_an_interrupted_thread_still_needs_a_resume() -> None:
    machine = interrupted()
    (effect,) = machine.receive_input(make_input("t", "run-9"), now=NOW)
    assert isinstance(effect, Reject) and effect.event.code == "PENDING_INTERRUPTS"


def test_only_the_last_runs_are_kept_for_retries() -> None:
    machine = ThreadMachine("t")
    for n in range(20):
        machine.receive_input(make_input("t", f"run-{n}"), now=NOW)
        machine.finish({"n": n})
    kept = [c.run_id for c in machine.record().completed_resumes]
    assert kept == [f"run-{n}" for n in range(16, 20)]
    (last,) = [
        e
        for e in emitted(machine.receive_input(make_input("t", "run-19"), now=NOW))
        if isinstance(e, ev.RunFinishedEvent)
    ]
    assert last.result == {"n": 19}


def test_interrupts_carry_when_they_were_raised_into_the_audit_trail() -> None:
    machine = interrupted()
    assert machine.record().open_interrupts[0].raised_at == NOW.isoformat()
    approve(machine)
    machine.finish()
    (line,) = machine.resolved
    assert (line.raised_at, line.run_id, line.answered_in, line.outcome) == (
        NOW.isoformat(),
        "run-1",
        "run-2",
        "success",
    )


def test_a_failed_resume_reopens_interrupts_with_their_time() -> None:
    machine = interrupted()
    approve(machine)
    machine.fail("boom")
    assert machine.state is ThreadState.INTERRUPTED
    assert machine.record().open_interrupts[0].raised_at == NOW.isoformat()


def test_knows_interrupt_and_proposed_tool_call() -> None:
    machine = interrupted()
    assert machine.knows_interrupt("int-1") and not machine.knows_interrupt("int-2")
    assert machine.proposed_tool_call("tc-1") == ("sendEmail", {"to": "bob@example.com"})
    assert machine.proposed_tool_call("tc-2") is None
    approve(machine)
    assert machine.knows_interrupt("int-1"), "an interrupt being answered is still known"


def test_the_tool_journal_is_saved_before_the_tool_runs_and_before_its_result_goes_out() -> None:
    machine = interrupted()
    approve(machine)
    started = machine.tool_started("tc-1", now=NOW)
    assert [type(e) for e in started] == [Persist]
    assert started[0].record.tool_journal[0].result is None
    result = ev.ToolCallResultEvent(message_id="r-1", tool_call_id="tc-1", content="sent")
    effects = machine.emit(result)
    assert [type(e) for e in effects] == [Persist, Emit]
    assert effects[0].record.tool_journal[0].result == result
    with pytest.raises(LocalProtocolError, match="already started"):
        machine.tool_started("tc-1", now=NOW)


def test_the_journal_survives_a_failed_run_and_a_restore() -> None:
    machine = interrupted()
    approve(machine)
    machine.tool_started("tc-1", now=NOW)
    machine.fail("the host stopped")
    restored = ThreadMachine.from_record(record_from_dict(record_to_dict(machine.record())))
    assert restored.tool_journal["tc-1"].result is None
    assert restored.tool_journal["tc-1"].run_id == "run-2"


def test_a_tool_cannot_start_before_its_call_is_closed() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-1"), now=NOW)
    machine.emit(ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="x"))
    with pytest.raises(LocalProtocolError, match="not a closed tool call"):
        machine.tool_started("tc-1", now=NOW)
    with pytest.raises(LocalProtocolError, match="not a closed tool call"):
        machine.tool_started("tc-unknown", now=NOW)


def test_run_received_at_and_open_subagents() -> None:
    machine = ThreadMachine("t")
    assert machine.run_received_at is None
    machine.receive_input(make_input("t", "run-1"), now=NOW)
    assert machine.run_received_at == NOW
    machine.emit(ev.SubagentStartedEvent(subagent_run_id="s-1", name="researcher"))
    assert machine.open_subagents == {"s-1"}


# -- leases: the host hands in the time and the record's lease; the machine decides ----------

LEASE = timedelta(seconds=10)


def resumed_with_lease(*, at: timedelta = timedelta(minutes=1)) -> ThreadMachine:
    """``interrupted()``, then run-2 approving int-1, received at NOW + ``at`` with a lease of ``LEASE``."""
    machine = interrupted()
    resume = [{"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}}]
    machine.receive_input(make_input("t", "run-2", resume=resume), now=NOW + at, lease_until=NOW + at + LEASE)
    return machine


def test_a_run_starts_with_the_lease_its_host_gives_it_and_saves_it() -> None:
    machine = resumed_with_lease()
    start = NOW + timedelta(minutes=1)
    assert machine.run_lease_until == start + LEASE
    record = machine.record()
    assert record.active_run is not None and record.active_run.lease_until == (start + LEASE).isoformat()
    assert ThreadMachine.from_record(record_from_dict(record_to_dict(record))).run_lease_until == start + LEASE
    assert ThreadMachine("t").run_lease_until is None


def test_a_run_whose_lease_lasts_is_left_alone_until_the_instant_it_runs_out() -> None:
    machine = resumed_with_lease()
    until = NOW + timedelta(minutes=1) + LEASE
    before = machine.record()
    # A lease is what decides, not run_timeout: a live lease holds the thread however old the run.
    assert machine.close_abandoned_run(until - timedelta(microseconds=1), run_timeout=timedelta(0)) == []
    assert machine.record() == before
    busy = machine.receive_input(make_input("t", "run-3"), now=until - timedelta(microseconds=1))
    assert [e.code for e in emitted(busy) if isinstance(e, ev.RunErrorEvent)] == ["THREAD_BUSY"]

    closed = machine.close_abandoned_run(until)  # the instant itself counts as run out
    (error,) = emitted(closed)
    assert isinstance(error, ev.RunErrorEvent) and error.code == "AGENT_ERROR"
    assert isinstance(closed[0], Persist) and closed[0].record.version == before.version + 1
    # Back where the thread stood: int-1 open again, its proposal still bound.
    assert machine.state is ThreadState.INTERRUPTED and machine.run_id is None
    assert [i.id for i in machine.open_interrupts] == ["int-1"]
    assert machine.record().open_interrupts == interrupted().record().open_interrupts


def test_a_run_saved_without_a_lease_is_closed_once_run_timeout_has_passed() -> None:
    machine = interrupted()
    approve(machine)  # no lease: a record from a host before leases
    received = NOW + timedelta(minutes=1)
    assert machine.run_lease_until is None
    timeout = timedelta(seconds=300)
    assert machine.close_abandoned_run(received + timeout - timedelta(microseconds=1), run_timeout=timeout) == []
    assert machine.close_abandoned_run(received + timedelta(days=365)) == []  # no run_timeout: never
    assert emitted(machine.close_abandoned_run(received + timeout, run_timeout=timeout))[0].type == "RUN_ERROR"
    assert machine.state is ThreadState.INTERRUPTED


def test_no_run_nothing_to_close_and_times_must_be_aware() -> None:
    machine = interrupted()
    assert machine.close_abandoned_run(NOW + timedelta(days=1), run_timeout=timedelta(0)) == []
    with pytest.raises(LocalProtocolError, match="aware"):
        machine.close_abandoned_run(NOW.replace(tzinfo=None))
    with pytest.raises(LocalProtocolError, match="aware"):
        machine.receive_input(make_input("t", "run-2"), now=NOW, lease_until=NOW.replace(tzinfo=None))
