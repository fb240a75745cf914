"""The client reads today's LangGraph servers: ``on_interrupt`` + an outcome-less ``RUN_FINISHED``.

The recordings in ``tests/fixtures/ag_ui_langgraph`` are real streams of ag-ui-langgraph 0.0.47
(``record.py`` beside them makes them again): ``legacy-*`` in its default mode (the ``CUSTOM``
event ``on_interrupt``, no outcome), ``structured-*`` with ``emit_interrupt_outcome=True``.
Both modes must leave a client with the same pending interrupts.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agui_core.app.cli import _frames, main, run_endings
from agui_core.machine.client import LEGACY_INTERRUPT_EVENT, ClientMachine, check_stream, legacy_interrupt
from agui_core.protocol import events as ev
from agui_core.protocol.codec import decode_event

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ag_ui_langgraph"
NOW = datetime(2026, 12, 2, tzinfo=UTC)


def recorded(name: str) -> tuple[bytes, list[dict[str, Any]]]:
    data = (FIXTURES / name).read_bytes()
    return data, [json.loads(body) for _, body in _frames(data)[1]]


def follow(name: str) -> ClientMachine:
    data, raw = recorded(name)
    client = ClientMachine(raw[0]["threadId"])
    for _, body in _frames(data)[1]:
        client.receive_event(decode_event(body), now=NOW)
    return client


def on_interrupt_ids(raw: list[dict[str, Any]]) -> list[str]:
    return [e["rawEvent"]["id"] for e in raw if e["type"] == "CUSTOM" and e["name"] == LEGACY_INTERRUPT_EVENT]


def shape(client: ClientMachine) -> list[tuple[str, str | None, Any]]:
    return [(i.reason, i.message, i.response_schema) for i in client.open_interrupts]


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.sse")))
def test_every_recording_is_a_valid_stream(name: str) -> None:
    data, _ = recorded(name)
    events = [decode_event(body) for _, body in _frames(data)[1]]
    assert check_stream(events, now=NOW) == []


@pytest.mark.parametrize("kind", ["approval-pending", "parallel"])
def test_a_legacy_run_leaves_the_interrupts_its_on_interrupt_events_announce(kind: str) -> None:
    _, raw = recorded(f"legacy-{kind}.sse")
    finished = raw[-1]
    assert finished["type"] == "RUN_FINISHED" and "outcome" not in finished  # what makes it legacy
    client = follow(f"legacy-{kind}.sse")
    assert [i.id for i in client.open_interrupts] == on_interrupt_ids(raw)
    assert client.awaiting_input and client.legacy_interrupts
    assert client.outcome is not None and client.outcome.type == "interrupt"


@pytest.mark.parametrize("kind", ["approval-pending", "parallel"])
def test_both_modes_leave_the_same_pending_interrupts(kind: str) -> None:
    legacy, structured = follow(f"legacy-{kind}.sse"), follow(f"structured-{kind}.sse")
    assert not structured.legacy_interrupts
    assert shape(legacy) == shape(structured)
    assert len(legacy.open_interrupts) == (2 if kind == "parallel" else 1)
    _, raw = recorded(f"structured-{kind}.sse")
    # The structured outcome wins, and names the same LangGraph ids as the legacy events.
    assert [i.id for i in structured.open_interrupts] == on_interrupt_ids(raw)


@pytest.mark.parametrize("mode", ["legacy", "structured"])
def test_a_resumed_thread_ends_with_nothing_pending(mode: str) -> None:
    client = follow(f"{mode}-approval.sse")
    assert client.open_interrupts == () and not client.legacy_interrupts
    assert client.outcome is not None and client.outcome.type == "success"


def test_the_legacy_interrupt_reads_reason_message_and_schema_from_the_value() -> None:
    event = ev.CustomEvent(
        name=LEGACY_INTERRUPT_EVENT,
        value='{"message": "Pick a quarter", "responseSchema": {"type": "string"}}',
        raw_event={"id": "lg-1"},
    )
    interrupt = legacy_interrupt(event, fallback_id="x")
    assert (interrupt.id, interrupt.reason, interrupt.message) == ("lg-1", "input_required", "Pick a quarter")
    plain = legacy_interrupt(ev.CustomEvent(name=LEGACY_INTERRUPT_EVENT, value="Go on?"), fallback_id="run-1:0")
    assert (plain.id, plain.reason, plain.message) == ("run-1:0", "langgraph:interrupt", "Go on?")


def test_a_custom_event_of_another_name_opens_nothing() -> None:
    client = ClientMachine("t")
    for event in (
        ev.RunStartedEvent(thread_id="t", run_id="r"),
        ev.CustomEvent(name="on_something_else", value={"message": "hi"}),
        ev.RunFinishedEvent(thread_id="t", run_id="r"),
    ):
        client.receive_event(event, now=NOW)
    assert client.open_interrupts == () and client.outcome is not None and client.outcome.type == "success"


def test_agui_check_says_how_each_recorded_run_ended(capsys: pytest.CaptureFixture[str]) -> None:
    _, raw = recorded("legacy-parallel.sse")
    assert main(["check", str(FIXTURES / "legacy-parallel.sse")]) == 0
    out = capsys.readouterr().out.splitlines()
    (ending,) = (line for line in out if line.startswith("run run-1"))
    assert ending.endswith(
        "interrupt, pending " + ", ".join(on_interrupt_ids(raw)) + " (legacy on_interrupt, no outcome)"
    )
    data, _ = recorded("structured-approval.sse")
    endings = run_endings(data, now=NOW)
    assert [e.split(": ", 1)[1].split(",")[0] for e in endings] == ["interrupt", "success"]
    assert "legacy" not in endings[0]
