"""A thread driven through a real ThreadMachine, and every record it asked to be saved.

The scenario: a user asks, the agent proposes a tool call and interrupts for approval (with the
approve-with-edits schema), the client approves with edits, the host runs the tool (journaled
before it starts and when its result is in), the agent asks for a confirmation (a chained
interrupt), the client cancels it, the agent finishes. Its eight ``Persist`` records (see
:data:`STATES`) cover every state, an active run with events, open and closed interrupts with
their times, the tool journal, messages, agent state and replay data.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agui_core.machine.effects import Effect, Persist
from agui_core.machine.record import ThreadRecord
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.types import RunAgentInput
from tests.machine.driver import NOW, make_input, make_interrupt
from tests.seed import APPROVE_WITH_ANY_EDITS_SCHEMA

__all__ = [
    "ANSWERED",
    "APPROVAL_SCHEMA",
    "CANCELLED",
    "RAISED",
    "STATES",
    "after_approval",
    "approval_resume",
    "persisted",
    "scenario_records",
]

APPROVAL_SCHEMA: dict[str, Any] = APPROVE_WITH_ANY_EDITS_SCHEMA

STATES = (
    ThreadState.RUNNING,  # v1: run-1 started
    ThreadState.INTERRUPTED,  # v2: the approval is open
    ThreadState.RESUMED,  # v3: run-2 carries the approval
    ThreadState.RESUMED,  # v4: the tool is about to run (journaled)
    ThreadState.RESUMED,  # v5: the tool's result is in (journaled)
    ThreadState.INTERRUPTED,  # v6: the confirmation is open, the approval closed
    ThreadState.RESUMED,  # v7: run-3 cancels the confirmation
    ThreadState.IDLE,  # v8: run-3 finished
)
"""The state of each record :func:`scenario_records` returns, in order."""

RAISED = NOW
"""When run-1 raises the approval."""
ANSWERED = NOW + timedelta(minutes=5)
"""When the approval arrives (run-2 starts); the tool runs and the confirmation is raised then."""
CANCELLED = NOW + timedelta(minutes=9)
"""When the cancellation of the confirmation arrives (run-3 starts)."""


def persisted(effects: list[Effect]) -> list[ThreadRecord]:
    """The records of the ``Persist`` effects, in order."""
    return [e.record for e in effects if isinstance(e, Persist)]


def approval_resume(thread_id: str, run_id: str) -> RunAgentInput:
    """The client's answer to the scenario's first interrupt: approved, with edited arguments."""
    return make_input(
        thread_id,
        run_id,
        resume=[
            {
                "interruptId": f"{thread_id}-approve",
                "status": "resolved",
                "payload": {"approved": True, "editedArgs": {"to": "ops@example.com", "cc": None}},
                "metadata": {"reviewer": "dana", "note": None},
            }
        ],
    )


def after_approval(machine: ThreadMachine, thread_id: str) -> list[ThreadRecord]:
    """The resumed run-2 from its start on: run the tool, then ask for a confirmation (v4 to v6)."""
    call = f"{thread_id}-call"
    records = persisted(machine.tool_started(call, now=ANSWERED))
    result = ev.ToolCallResultEvent(message_id=f"{thread_id}-t1", tool_call_id=call, content='{"delivered":true}')
    records += persisted(machine.emit(result))
    machine.emit(ev.StateDeltaEvent(delta=[{"op": "replace", "path": "/sent", "value": 1}]))
    confirm = make_interrupt({"id": f"{thread_id}-confirm", "reason": "confirmation", "message": "Archive?"})
    records += persisted(machine.interrupt([confirm], now=ANSWERED))
    return records


def scenario_records(thread_id: str) -> list[ThreadRecord]:
    """The eight records (versions 1 to 8) the scenario persists, in order.

    Interrupt, run and message ids start with ``thread_id`` so several threads never share one.
    """
    machine = ThreadMachine(thread_id)
    call = f"{thread_id}-call"
    user = {"id": f"{thread_id}-u1", "role": "user", "content": "Mail the report to ops, ünïcode ✓"}
    first = make_input(thread_id, f"{thread_id}-run-1", messages=[user], state={"drafts": [], "sent": 0})
    records = persisted(machine.receive_input(first, now=RAISED))
    for event in (
        ev.TextMessageStartEvent(message_id=f"{thread_id}-a1", role="assistant"),
        ev.TextMessageContentEvent(message_id=f"{thread_id}-a1", delta="I will send it."),
        ev.TextMessageEndEvent(message_id=f"{thread_id}-a1"),
        ev.ToolCallStartEvent(tool_call_id=call, tool_call_name="sendEmail", parent_message_id=f"{thread_id}-a1"),
        ev.ToolCallArgsEvent(tool_call_id=call, delta='{"to":"ops@example.com"}'),
        ev.ToolCallEndEvent(tool_call_id=call),
    ):
        machine.emit(event)
    approve = make_interrupt(
        {
            "id": f"{thread_id}-approve",
            "reason": "tool_call",
            "toolCallId": call,
            "message": "Send this email?",
            "responseSchema": APPROVAL_SCHEMA,
            "metadata": {"risk": "low", "trace": [1, 2.5, None, True]},
        }
    )
    records += persisted(machine.interrupt([approve], now=RAISED))
    resume = approval_resume(thread_id, f"{thread_id}-run-2")
    records += persisted(machine.receive_input(resume, now=ANSWERED))
    records += after_approval(machine, thread_id)
    cancel = make_input(
        thread_id,
        f"{thread_id}-run-3",
        resume=[{"interruptId": f"{thread_id}-confirm", "status": "cancelled"}],
    )
    records += persisted(machine.receive_input(cancel, now=CANCELLED))
    records += persisted(machine.finish({"archived": False}))
    assert [r.version for r in records] == list(range(1, 9))
    assert tuple(r.state for r in records) == STATES
    return records
