"""The interrupt and answer rules both machines share: one check, the same verdict on each side."""

from __future__ import annotations

from typing import Any

import pytest

from agui_core.errors import LocalProtocolError, PayloadError, ResponseSchemaError, RunErrorCode
from agui_core.machine.client import DEFAULT_CONFIRMATION_SCHEMA, ClientMachine, Reply
from agui_core.machine.interrupts import (
    CONFIRMATION_SCHEMA,
    BoundAnswer,
    answer_fault,
    answer_schema,
    check_answer_payload,
    check_interrupt,
)
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import Interrupt, ResumeEntry
from tests.machine.driver import NOW
from tests.machine.test_client import SNAPSHOTS, T0, TID, client_with, feed, interrupted, started, violation
from tests.machine.test_thread import running

BAD = [
    (Interrupt(id="", reason="confirmation"), "interrupt-id-empty"),
    (Interrupt(id="i-1", reason=""), "interrupt-reason-empty"),
    (Interrupt(id="i-1", reason="core:approval"), "interrupt-reason-reserved"),
    (Interrupt(id="i-1", reason="tool_call"), "interrupt-tool-call-missing"),
    (Interrupt(id="i-1", reason="confirmation", expires_at="tomorrow"), "interrupt-expires-at-invalid"),
    (Interrupt(id="i-1", reason="confirmation", metadata=["not", "an", "object"]), "outcome-invalid"),  # type: ignore[arg-type]
    (Interrupt(id="i-1", reason="confirmation", response_schema={"type": 12}), "interrupt-schema-invalid"),
]


@pytest.mark.parametrize(("interrupt", "rule"), BAD)
def test_both_machines_refuse_the_same_interrupts_for_the_same_reason(interrupt: Interrupt, rule: str) -> None:
    fault = check_interrupt(interrupt, PayloadValidators())
    assert fault is not None and fault.rule == rule
    # The agent side: the agent's bug, raised at once.
    machine = running()
    before = machine.record()
    with pytest.raises((LocalProtocolError, ResponseSchemaError)) as info:
        machine.interrupt([interrupt], now=NOW)
    assert fault.why in str(info.value)
    assert machine.record() == before
    # The client side: the producer broke the rule of the same name.
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    error = violation(client, interrupted(interrupt))
    assert error.rule == rule and fault.why in error.message


def test_a_well_formed_interrupt_has_no_fault() -> None:
    assert check_interrupt(Interrupt(id="i", reason="acme:review", metadata={"k": None}), PayloadValidators()) is None


@pytest.mark.parametrize(
    ("status", "payload", "metadata", "words"),
    [
        ("denied", None, None, "status 'denied'"),
        ("cancelled", True, None, "no payload"),
        ("resolved", True, "sig", "metadata must be an object"),
    ],
)
def test_both_machines_refuse_a_malformed_answer_alike(status: str, payload: Any, metadata: Any, words: str) -> None:
    fault = answer_fault(status, payload, metadata)
    assert fault is not None and words in fault
    client = client_with(Interrupt(id="a", reason="acme:x"))
    with pytest.raises(LocalProtocolError) as info:
        client.resume({"a": Reply(status=status, payload=payload, metadata=metadata)}, now=T0, run_id="r")  # type: ignore[arg-type]
    assert info.value.code is RunErrorCode.INVALID_RESUME and fault in info.value.message


def test_a_confirmation_is_answered_yes_or_no_on_both_sides() -> None:
    assert DEFAULT_CONFIRMATION_SCHEMA is CONFIRMATION_SCHEMA
    confirmation = Interrupt(id="c", reason="confirmation")
    assert answer_schema(confirmation) is CONFIRMATION_SCHEMA
    assert answer_schema(Interrupt(id="c", reason="acme:x")) is None
    with pytest.raises(PayloadError):
        check_answer_payload(confirmation, "yes", PayloadValidators())
    check_answer_payload(confirmation, True, PayloadValidators())


def test_edits_are_refused_where_none_are_offered_with_their_path() -> None:
    gate = Interrupt(id="g", reason="tool_call", tool_call_id="tc-1")
    with pytest.raises(PayloadError) as info:
        check_answer_payload(gate, {"approved": True, "editedArgs": {}}, PayloadValidators())
    assert info.value.path == ("editedArgs",)


def test_an_answer_is_a_named_triple() -> None:
    interrupt = Interrupt(id="i", reason="confirmation")
    entry = ResumeEntry(interrupt_id="i", status="resolved", payload=True)
    bound = BoundAnswer(interrupt=interrupt, entry=entry, raised_in="run-1")
    assert (bound.interrupt, bound.entry, bound.raised_in) == (interrupt, entry, "run-1")
