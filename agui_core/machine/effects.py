"""What the thread machine asks the world to do, in the order it must be done.

Every input of :class:`~agui_core.machine.thread.ThreadMachine` returns a list of these. The
host carries them out one by one: a :class:`Persist` that comes before an :class:`Emit` must be
durable before that event leaves, which is how an interrupt is never announced before it is
saved. An input the machine refuses returns a lone :class:`Reject`: it keeps the rule that was
broken (its code, the interrupt ids, the JSON path) and carries the ``RUN_ERROR`` to send.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from agui_core.errors import RemoteProtocolError, RunErrorCode
from agui_core.machine.record import Proposal, ThreadRecord
from agui_core.protocol.events import Event, RunErrorEvent, ToolCallResultEvent
from agui_core.protocol.frozen import maker
from agui_core.protocol.types import JSON, Interrupt, ResumeEntry, RunAgentInput

__all__ = [
    "Answer",
    "Effect",
    "Emit",
    "LeaveUnrun",
    "Persist",
    "Reject",
    "ReportDenied",
    "RunTool",
    "SendRecorded",
    "StartAgent",
    "ToolDecision",
]


@attrs.frozen(kw_only=True)
class Answer:
    """One resume entry bound to the interrupt it answers.

    ``interrupt``, ``proposal`` and ``continuation`` come from the thread's record, never from
    the client: ``proposal`` is the tool call a ``tool_call`` interrupt gates, as the agent
    proposed it, and ``continuation`` the agent's own data kept with the interrupt.
    """

    interrupt: Interrupt
    entry: ResumeEntry
    proposal: Proposal | None = None
    continuation: JSON = None

    @property
    def approved(self) -> bool | None:
        """For an approval payload (``{"approved": bool}``), the decision; otherwise ``None``."""
        payload = self.entry.payload
        if self.entry.status != "resolved" or not isinstance(payload, dict):
            return None
        approved = payload.get("approved")
        return approved if isinstance(approved, bool) else None

    @property
    def edited_args(self) -> dict[str, Any] | None:
        """The ``editedArgs`` of an approval that carries them, else ``None``.

        The machine accepts ``editedArgs`` only where the interrupt offered edits and the
        payload passed the interrupt's ``responseSchema``.
        """
        payload = self.entry.payload
        if self.approved is not True or not isinstance(payload, dict):
            return None
        edited = payload.get("editedArgs")
        return edited if isinstance(edited, dict) else None

    @property
    def tool_args(self) -> dict[str, Any] | None:
        """What an approved tool call runs with: the edits if any, else the proposal's arguments."""
        if self.proposal is None:
            return None
        edited = self.edited_args
        return dict(edited) if edited is not None else self.proposal.args


@attrs.frozen(kw_only=True)
class Emit:
    """Send ``event`` to the client."""

    event: Event


@attrs.frozen(kw_only=True)
class Persist:
    """Save ``record``; its ``version`` is one more than the version last saved."""

    record: ThreadRecord


@attrs.frozen(kw_only=True)
class StartAgent:
    """Run the agent for ``run_input``; ``answers`` holds the resume, bound to its interrupts."""

    run_input: RunAgentInput
    answers: tuple[Answer, ...] = ()


# The makers of what a machine hands out at every boundary and for every event (see
# agui_core.protocol.frozen): built through their classes, they cost several times as much.
make_answer = maker(Answer)
make_emit = maker(Emit)
make_persist = maker(Persist)
make_start_agent = maker(StartAgent)


@attrs.frozen(kw_only=True)
class Reject:
    """Refuse the input: send ``event`` (its ``RUN_ERROR``) and nothing else; the thread is unchanged.

    ``code`` names the contract rule the input broke, ``interrupt_ids`` the interrupts it
    concerns (empty when none is named, as for ``FORBIDDEN``) and ``path`` the JSON location of
    a payload that failed its schema. ``event`` is exactly what goes on the wire.
    """

    code: RunErrorCode
    message: str
    interrupt_ids: tuple[str, ...] = ()
    path: tuple[str | int, ...] | None = None
    event: RunErrorEvent

    @classmethod
    def from_error(cls, error: RemoteProtocolError) -> Reject:
        """The rejection for ``error``, with the ``RUN_ERROR`` that names its code."""
        ids = error.details.get("interrupt_ids") or ()
        path = error.details.get("path")
        return cls(
            code=error.code,
            message=error.message,
            interrupt_ids=tuple(ids),
            path=tuple(path) if path is not None else None,
            event=RunErrorEvent(message=error.message, code=error.code.value),
        )


Effect: TypeAlias = Emit | Persist | Reject | StartAgent


@attrs.frozen(kw_only=True)
class RunTool:
    """Run the tool ``name`` of ``call_id`` with ``args``: what was proposed, or the approved edits."""

    call_id: str
    name: str
    args: dict[str, Any]
    edited: bool = False


@attrs.frozen(kw_only=True)
class SendRecorded:
    """The tool of ``call_id`` was started by an earlier attempt at this run: never run it again.

    Send its recorded ``result`` again; ``None``: it never finished, so what it did is unknown.
    ``args`` is what it ran with. ``cancelled``: this answer cancels the call, so nothing is sent.
    """

    call_id: str
    name: str
    args: dict[str, Any]
    result: ToolCallResultEvent | None
    value: JSON = None
    edited: bool = False
    cancelled: bool = False


@attrs.frozen(kw_only=True)
class ReportDenied:
    """A person said no to ``call_id``: its tool does not run, and its result says so."""

    call_id: str
    name: str
    args: dict[str, Any]


@attrs.frozen(kw_only=True)
class LeaveUnrun:
    """Nobody decided ``call_id`` (``cancelled``, or ``expired``): its tool does not run, no result is sent."""

    call_id: str
    name: str
    args: dict[str, Any]
    status: str


ToolDecision: TypeAlias = RunTool | SendRecorded | ReportDenied | LeaveUnrun
"""What becomes of one gated tool call the run in progress answers (see
:meth:`~agui_core.machine.thread.ThreadMachine.tool_decisions`)."""
