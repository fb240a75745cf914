"""The demo: the seed document's scenarios played through a ThreadMachine, end to end.

An in-process host carries out the machine's effects (keeps each persisted record, prints
each emitted event as the JSON line a client would receive, runs the agent step), and a
terminal client answers each interrupt by its reason: interactively, or by itself with
``--auto``. The scenarios: an email behind an approval-gated ``sendEmail`` tool (approve,
deny, edit or cancel), a quarterly-filing form with ``expiresAt``, and three parallel
approvals.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

import orjson

from agui_core.machine.effects import Answer, Effect, Emit, Persist, StartAgent
from agui_core.machine.record import ThreadRecord
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_event
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput, UserMessage

__all__ = ["run_demo"]

APPROVE_WITH_EDITS = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {"type": "object", "description": "Full replacement of the tool args. Not merged."},
    },
    "required": ["approved"],
}
QUARTERLY_FORM = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
        "revenue": {"type": "number"},
    },
    "required": ["quarter", "year", "revenue"],
}


class _Run:
    """What the demo agents write against: the machine, with every effect kept in order."""

    def __init__(self, machine: ThreadMachine) -> None:
        self.machine = machine
        self.effects: list[Effect] = []

    def emit(self, event: ev.Event) -> None:
        self.effects += self.machine.emit(event)

    def interrupt(self, interrupts: list[Interrupt]) -> list[Effect]:
        return self.effects + self.machine.interrupt(interrupts)

    def finish(self, result: Any = None) -> list[Effect]:
        return self.effects + self.machine.finish(result)


Agent = Callable[[_Run, tuple[Answer, ...]], list[Effect]]


def _propose(machine: _Run, call_id: str, args: dict[str, Any]) -> None:
    machine.emit(
        ev.ToolCallStartEvent(tool_call_id=call_id, tool_call_name="sendEmail", parent_message_id="msg-" + call_id)
    )
    machine.emit(ev.ToolCallArgsEvent(tool_call_id=call_id, delta=orjson.dumps(args).decode()))
    machine.emit(ev.ToolCallEndEvent(tool_call_id=call_id))


def _say(machine: _Run, message_id: str, text: str) -> None:
    machine.emit(ev.TextMessageStartEvent(message_id=message_id, role="assistant"))
    for word in text.split(" "):
        machine.emit(ev.TextMessageContentEvent(message_id=message_id, delta=word + " "))
    machine.emit(ev.TextMessageEndEvent(message_id=message_id))


def _run_tools(machine: _Run, answers: tuple[Answer, ...]) -> list[str]:
    """Carry out approved tool calls; tell the agent about denials; skip cancelled ones."""
    done = []
    for answer in answers:
        call_id = answer.interrupt.tool_call_id
        if call_id is None or answer.entry.status == "cancelled":
            continue
        if answer.approved:
            payload = answer.entry.payload
            args = payload.get("editedArgs") if isinstance(payload, dict) else None
            sent = f"sent{' (edited)' if args else ''}"
            machine.emit(ev.ToolCallResultEvent(message_id="result-" + call_id, tool_call_id=call_id, content=sent))
            done.append(call_id)
        else:
            machine.emit(
                ev.ToolCallResultEvent(
                    message_id="result-" + call_id, tool_call_id=call_id, content="denied by the user"
                )
            )
    return done


def email_agent(machine: _Run, answers: tuple[Answer, ...]) -> list[Effect]:
    if not answers:
        _say(machine, "msg-1", "I drafted the email to Bob.")
        _propose(machine, "tc-email", {"to": "bob@example.com", "subject": "Hi", "body": "Hello Bob"})
        return machine.interrupt(
            [
                Interrupt(
                    id="int-email",
                    reason="tool_call",
                    message="Send the email to bob@example.com? You can edit it first.",
                    tool_call_id="tc-email",
                    response_schema=APPROVE_WITH_EDITS,
                )
            ]
        )
    done = _run_tools(machine, answers)
    return machine.finish({"sent": done})


def form_agent(machine: _Run, answers: tuple[Answer, ...]) -> list[Effect]:
    if not answers:
        _say(machine, "msg-form", "I need the quarterly filing details.")
        return machine.interrupt(
            [
                Interrupt(
                    id="int-form",
                    reason="input_required",
                    message="Please provide the quarterly filing details.",
                    response_schema=QUARTERLY_FORM,
                    expires_at="2026-04-20T17:00:00Z",
                )
            ]
        )
    payload = answers[0].entry.payload
    return machine.finish({"filed": payload})


def parallel_agent(machine: _Run, answers: tuple[Answer, ...]) -> list[Effect]:
    if not answers:
        for name in ("a", "b", "c"):
            _propose(machine, "tc-" + name, {"to": f"{name}@example.com", "subject": "Hi"})
        return machine.interrupt(
            [
                Interrupt(
                    id=f"i-{n}",
                    reason="tool_call",
                    tool_call_id=f"tc-{name}",
                    message=f"Approve sendEmail to {name}@example.com?",
                )
                for n, name in enumerate("abc", start=1)
            ]
        )
    return machine.finish({"sent": _run_tools(machine, answers)})


def _auto_answer(interrupt: Interrupt, scenario: str) -> ResumeEntry:
    if interrupt.reason == "input_required":
        return ResumeEntry(
            interrupt_id=interrupt.id, status="resolved", payload={"quarter": "Q1", "year": 2026, "revenue": 4200000}
        )
    if scenario == "parallel" and interrupt.id == "i-3":
        return ResumeEntry(interrupt_id=interrupt.id, status="cancelled")
    if scenario == "email":
        edited = {"to": "bob@example.com", "subject": "Hi", "body": "Hello Bob (revised)"}
        return ResumeEntry(
            interrupt_id=interrupt.id, status="resolved", payload={"approved": True, "editedArgs": edited}
        )
    return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True})


def _ask(interrupt: Interrupt, read: Callable[[str], str], out: TextIO) -> ResumeEntry:
    out.write(f"\n  [{interrupt.reason}] {interrupt.message or interrupt.id}\n")
    if interrupt.reason == "tool_call":
        while True:
            choice = read("  approve / deny / edit / cancel? ").strip().lower()
            if choice in ("approve", "a", "y", "yes"):
                return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True})
            if choice in ("deny", "d", "n", "no"):
                return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": False})
            if choice in ("cancel", "c"):
                return ResumeEntry(interrupt_id=interrupt.id, status="cancelled")
            if choice in ("edit", "e"):
                body = read("  new body: ")
                edited = {"to": "bob@example.com", "subject": "Hi", "body": body}
                return ResumeEntry(
                    interrupt_id=interrupt.id, status="resolved", payload={"approved": True, "editedArgs": edited}
                )
    quarter = read("  quarter (Q1-Q4): ").strip()
    year = read("  year: ").strip()
    revenue = read("  revenue: ").strip()
    try:
        payload: Any = {"quarter": quarter, "year": int(year), "revenue": float(revenue)}
    except ValueError:
        payload = {"quarter": quarter, "year": year, "revenue": revenue}
    return ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload=payload)


def _carry_out(
    effects: list[Effect], agent: Agent, machine: ThreadMachine, saved: list[ThreadRecord], out: TextIO
) -> Iterator[ev.Event]:
    queue = list(effects)
    while queue:
        effect = queue.pop(0)
        if isinstance(effect, Persist):
            saved.append(effect.record)
            out.write(
                f"  (persisted thread {effect.record.thread_id} v{effect.record.version}: {effect.record.state.name})\n"
            )
        elif isinstance(effect, Emit):
            out.write("  <- " + encode_event(effect.event, validate=True).decode() + "\n")
            yield effect.event
        elif isinstance(effect, StartAgent):
            queue.extend(agent(_Run(machine), effect.answers))


def run_demo(*, auto: bool, out: TextIO = sys.stdout, read: Callable[[str], str] = input) -> int:
    """Play every scenario; returns 0 when each ended as expected."""
    scenarios: list[tuple[str, Agent, str]] = [
        ("email", email_agent, "Email Bob that I say hi."),
        ("form", form_agent, "File my quarterly numbers."),
        ("parallel", parallel_agent, "Email a, b and c."),
    ]
    clock = datetime(2026, 4, 20, 16, 0, tzinfo=UTC)
    failures = 0
    for name, agent, prompt in scenarios:
        thread = f"thread-{name}"
        out.write(f"\n=== {name}: {prompt}\n")
        machine = ThreadMachine(thread)
        saved: list[ThreadRecord] = []
        run = 1
        run_input = RunAgentInput(
            thread_id=thread, run_id=f"{name}-run-{run}", messages=(UserMessage(id="u1", content=prompt),)
        )
        while True:
            out.write(f"  -> run {run_input.run_id}" + (" (resume)" if run_input.resume else "") + "\n")
            events = list(_carry_out(machine.receive_input(run_input, now=clock), agent, machine, saved, out))
            last = events[-1]
            if isinstance(last, ev.RunErrorEvent):
                out.write(f"  refused: {last.code}: {last.message}\n")
                if auto:
                    failures += 1
                    break
            elif not (
                isinstance(last, ev.RunFinishedEvent) and last.outcome is not None and last.outcome.type == "interrupt"
            ):
                break
            pending = machine.open_interrupts
            if not pending:
                break
            entries = tuple(_auto_answer(i, name) if auto else _ask(i, read, out) for i in pending)
            run += 1
            clock += timedelta(minutes=1)
            run_input = RunAgentInput(thread_id=thread, run_id=f"{name}-run-{run}", resume=entries)
        out.write(
            f"  thread {thread} ends {machine.state.name}; audit trail: {len(machine.resolved)} answered interrupt(s)\n"
        )
    return 1 if failures else 0
