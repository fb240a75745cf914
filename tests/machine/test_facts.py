"""The machine alone decides the rules that need facts from outside one thread (rule 1, busy).

A host looks the facts up (which thread raised an interrupt id, who owns it, whether another
run holds the thread) and hands them in; whoever embeds ThreadMachine without a host gets
the same codes by handing in the same facts. Every rejection is a ``Reject`` that keeps the
rule's code, the ids it names and the JSON path, next to the ``RUN_ERROR`` to send.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from agui_core.errors import LocalProtocolError, RunErrorCode
from agui_core.machine import Emit, InterruptHome, Reject, ThreadMachine, ThreadState
from agui_core.machine.record import ANONYMOUS
from agui_core.protocol import events as ev
from agui_core.protocol.types import Interrupt
from tests.machine.driver import NOW, make_input
from tests.machine.test_thread import approval, interrupted, resume, yes


def test_an_id_raised_on_another_thread_of_the_same_principal_is_thread_mismatch() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    before = machine.record()
    (effect,) = machine.receive_input(
        resume("run-2", yes("int-1"), yes("int-b")),
        now=NOW,
        interrupt_homes={"int-b": InterruptHome(thread_id="other", owner=ANONYMOUS)},
    )
    assert isinstance(effect, Reject)
    assert effect.code is RunErrorCode.THREAD_MISMATCH
    assert effect.interrupt_ids == ("int-b",)
    assert effect.event == ev.RunErrorEvent(message=effect.message, code="THREAD_MISMATCH")
    assert machine.record() == before


def test_without_the_fact_the_same_id_is_unknown() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    (effect,) = machine.receive_input(resume("run-2", yes("int-1"), yes("int-b")), now=NOW)
    assert isinstance(effect, Reject) and effect.code is RunErrorCode.UNKNOWN_INTERRUPT_ID
    assert effect.interrupt_ids == ("int-b",)


def test_an_id_of_another_principals_thread_reads_as_unknown_and_names_nothing_of_it() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    (effect,) = machine.receive_input(
        resume("run-2", yes("int-1"), yes("int-b")),
        now=NOW,
        interrupt_homes={"int-b": InterruptHome(thread_id="secret-thread", owner="mallory")},
    )
    assert isinstance(effect, Reject) and effect.code is RunErrorCode.UNKNOWN_INTERRUPT_ID
    assert "secret-thread" not in effect.message


def test_a_home_that_claims_an_id_this_thread_raised_changes_nothing() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    effects = machine.receive_input(
        resume("run-2", yes("int-1")),
        now=NOW,
        interrupt_homes={"int-1": InterruptHome(thread_id="other", owner=ANONYMOUS)},
    )
    assert not any(isinstance(e, Reject) for e in effects)
    assert machine.state is ThreadState.RESUMED


def test_another_run_holding_the_thread_is_thread_busy() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    (effect,) = machine.receive_input(resume("run-2", yes("int-1")), now=NOW, busy=True)
    assert isinstance(effect, Reject) and effect.code is RunErrorCode.THREAD_BUSY
    assert effect.event.code == "THREAD_BUSY"
    assert machine.state is ThreadState.INTERRUPTED


def test_a_run_in_progress_is_thread_busy_without_any_fact() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    machine.receive_input(resume("run-2", yes("int-1")), now=NOW)
    (effect,) = machine.receive_input(resume("run-3", yes("int-1")), now=NOW)
    assert isinstance(effect, Reject) and effect.code is RunErrorCode.THREAD_BUSY


def test_a_payload_rejection_keeps_its_path() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    bad = {"interruptId": "int-1", "status": "resolved", "payload": {"approved": "yes"}}
    (effect,) = machine.receive_input(resume("run-2", bad), now=NOW)
    assert isinstance(effect, Reject) and effect.code is RunErrorCode.INVALID_PAYLOAD
    assert effect.interrupt_ids == ("int-1",)
    assert effect.path == ("approved",)
    assert effect.event.code == "INVALID_PAYLOAD"


def test_fail_takes_a_run_error_code_not_a_string() -> None:
    machine = interrupted(approval("int-1", "tc-1"))
    machine.receive_input(resume("run-2", yes("int-1")), now=NOW)
    with pytest.raises(TypeError, match="RunErrorCode"):
        machine.fail("quota", "RATE_LIMITED")  # type: ignore[arg-type]
    effects = machine.fail("quota", RunErrorCode.RATE_LIMITED)
    assert [e.event.code for e in effects if isinstance(e, Emit)] == ["RATE_LIMITED"]


def test_interrupt_and_tool_started_need_the_time() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-1"), now=NOW)
    confirm = Interrupt(id="int-1", reason="confirmation")
    with pytest.raises(TypeError):
        machine.interrupt([confirm])  # type: ignore[call-arg]
    with pytest.raises(LocalProtocolError, match="aware"):
        machine.interrupt([confirm], now=datetime(2026, 4, 20, 12))
    machine.interrupt([confirm], now=NOW)
    assert machine.record().open_interrupts[0].raised_at == NOW.isoformat()
