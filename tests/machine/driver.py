"""A small driver for ThreadMachine tests: a script of client inputs and agent acts, run in order.

A script is a list of *acts*, each a function of the machine that returns the effects it
caused. ``drive`` runs them and concatenates the effects; ``wire`` and ``trace`` turn effects
into what a test compares (the JSON of every emitted event; the kinds of the effects, in order).
Inputs are built from wire dicts through the codec, so they are exactly what a client sends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from agui_core.errors import RunErrorCode
from agui_core.machine.effects import Effect, Emit, Persist, Reject, StartAgent
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.protocol.codec import converter, decode_input, event_to_dict, input_from_dict
from agui_core.protocol.types import Interrupt, RunAgentInput, UserMessage

__all__ = [
    "NOW",
    "Act",
    "cancel",
    "drive",
    "emit",
    "events_of",
    "fail",
    "finish",
    "interrupt",
    "make_input",
    "make_interrupt",
    "receive",
    "trace",
    "wire",
]

NOW = datetime(2026, 4, 20, 12, 0, 0, tzinfo=UTC)
"""The instant every input arrives at unless a test says otherwise."""

Act = Callable[[ThreadMachine], list[Effect]]


def make_input(
    thread_id: str,
    run_id: str,
    *,
    resume: Sequence[Mapping[str, Any]] | None = None,
    messages: Sequence[Mapping[str, Any]] = (),
    state: Any = None,
    parent_run_id: str | None = None,
) -> RunAgentInput:
    """A ``RunAgentInput`` as a client sends it: its wire dict's bytes, decoded as a transport does."""
    doc: dict[str, Any] = {
        "threadId": thread_id,
        "runId": run_id,
        "messages": [dict(m) for m in messages],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    if resume is not None:
        doc["resume"] = [dict(entry) for entry in resume]
    if state is not None:
        doc["state"] = state
    if parent_run_id is not None:
        doc["parentRunId"] = parent_run_id
    return decode_input(orjson.dumps(doc))


def make_interrupt(value: Mapping[str, Any] | Interrupt) -> Interrupt:
    """An ``Interrupt`` from its wire dict (or the interrupt itself)."""
    if isinstance(value, Interrupt):
        return value
    result: Interrupt = converter.structure(dict(value), Interrupt)
    return result


def receive(run_input: RunAgentInput | Mapping[str, Any], *, now: datetime = NOW) -> Act:
    """The client sends ``run_input`` (a wire dict is decoded first) at ``now``."""
    decoded = run_input if isinstance(run_input, RunAgentInput) else input_from_dict(dict(run_input))
    return lambda machine: machine.receive_input(decoded, now=now)


def emit(*events: ev.Event) -> Act:
    """The agent streams ``events``, one ``emit`` each."""

    def act(machine: ThreadMachine) -> list[Effect]:
        out: list[Effect] = []
        for event in events:
            out += machine.emit(event)
        return out

    return act


def interrupt(*interrupts: Mapping[str, Any] | Interrupt) -> Act:
    """The agent ends the run on ``interrupts`` (wire dicts or ``Interrupt`` objects)."""
    built = [make_interrupt(i) for i in interrupts]
    return lambda machine: machine.interrupt(built, now=NOW)


def finish(result: Any = None) -> Act:
    return lambda machine: machine.finish(result)


def fail(message: str = "the agent failed", code: RunErrorCode = RunErrorCode.AGENT_ERROR) -> Act:
    return lambda machine: machine.fail(message, code)


def cancel() -> Act:
    return lambda machine: machine.cancel()


def drive(machine: ThreadMachine, acts: Iterable[Act]) -> list[Effect]:
    """Run ``acts`` in order on ``machine``; all their effects, concatenated."""
    out: list[Effect] = []
    for act in acts:
        out += act(machine)
    return out


def events_of(effects: Iterable[Effect]) -> list[ev.Event]:
    """The events the effects emit, in order."""
    return [e.event for e in effects if isinstance(e, Emit | Reject)]


def wire(effects: Iterable[Effect]) -> list[dict[str, Any]]:
    """The JSON object of every emitted event, in order, checked against its wire schema.

    Each goes through JSON text once, so tuples the event holds compare equal to JSON arrays.
    """
    return [orjson.loads(orjson.dumps(event_to_dict(e, validate=True))) for e in events_of(effects)]


def trace(effects: Iterable[Effect]) -> list[str]:
    """The effects by kind: ``Persist``, ``StartAgent``, or the emitted event's type."""
    out: list[str] = []
    for effect in effects:
        if isinstance(effect, Emit | Reject):
            out.append(effect.event.type)
        elif isinstance(effect, Persist):
            out.append("Persist")
        elif isinstance(effect, StartAgent):
            out.append("StartAgent")
        else:  # pragma: no cover - the Effect union has four members
            raise TypeError(f"unknown effect {effect!r}")
    return out


def paying_bob() -> ThreadMachine:
    """ann's thread ``t``, its run ``r1`` in progress, having proposed ``pay`` (call ``c1``, 120)."""
    machine = ThreadMachine("t")
    machine.receive_input(
        RunAgentInput(thread_id="t", run_id="r1", messages=(UserMessage(id="u1", content="pay bob"),)),
        now=NOW,
        principal="ann",
    )
    machine.emit(ev.ToolCallStartEvent(tool_call_id="c1", tool_call_name="pay", parent_message_id="a1"))
    machine.emit(ev.ToolCallArgsEvent(tool_call_id="c1", delta='{"amount": 120}'))
    machine.emit(ev.ToolCallEndEvent(tool_call_id="c1"))
    return machine
