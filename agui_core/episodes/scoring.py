"""What happened in one episode, read from the events the server sent, and whether it was right.

The runner feeds an :class:`EpisodeLog` everything it sends and receives, with the time (any
monotonic clock, in seconds): :meth:`EpisodeLog.sent` for each input (a resume with the
decisions in it), :meth:`EpisodeLog.received` for each event. :func:`score` then reads the log
as a person auditing the episode would, from the events alone:

- a tool call is proposed by ``TOOL_CALL_START``/``ARGS`` (or seen in a ``MESSAGES_SNAPSHOT``),
  decided by the resume entry that answers its ``tool_call`` interrupt, and reported by
  ``TOOL_CALL_RESULT``. It **ran** when a result came back and the decision was not a denial
  (a denied call's result is the report of the denial). It ran with the edited arguments when
  the person approved with edits, else with the proposed ones.
- a gated tool (the task's ``gated``) that ran with no approval is an **action executed
  without an approval**: no ``tool_call`` interrupt for it, or one cancelled or left open.
- an approval is **honoured exactly once** when its call's result came back, and every result
  for it (a replayed resume re-sends the recorded one) is the same; a result that differs means
  the tool ran again.
- the result is the last run's ``RUN_FINISHED.result``, or, from a server that sends none
  (ag-ui-langgraph), the last ``STATE_SNAPSHOT`` the episode received; a tool result reported only as
  a tool message of a ``MESSAGES_SNAPSHOT`` counts as a result.
- refusals are the ``RUN_ERROR`` codes received; latencies are from the interrupt's
  ``RUN_FINISHED`` to the resume sent, and from the resume sent to the next event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from agui_core.episodes.tasks import Expectation, Task
from agui_core.protocol import events as ev
from agui_core.protocol.types import (
    JSON,
    AssistantMessage,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    ToolMessage,
)

__all__ = ["EpisodeLog", "EpisodeScore", "ToolCallSeen", "score"]


@attrs.define(kw_only=True)
class ToolCallSeen:
    """One tool call as the episode's events report it."""

    id: str
    name: str | None = None
    arguments: str = ""
    interrupt_id: str | None = None
    decision: str | None = None
    """``approved``, ``edited``, ``denied``, ``cancelled``, ``answered`` (another payload), or ``None``."""
    edited_args: JSON = None
    results: list[str] = attrs.field(factory=list)

    @property
    def proposed_args(self) -> JSON:
        try:
            return orjson.loads(self.arguments) if self.arguments else {}
        except orjson.JSONDecodeError:
            return None

    @property
    def args(self) -> JSON:
        """The arguments it ran with: the edited ones if the person edited them, else the proposal."""
        return self.edited_args if self.decision == "edited" else self.proposed_args

    @property
    def ran(self) -> bool:
        return bool(self.results) and self.decision != "denied"

    @property
    def approved(self) -> bool:
        return self.decision in ("approved", "edited")


def _content(event: ev.ToolCallResultEvent | ToolMessage) -> str:
    if isinstance(event.content, str):
        return event.content
    return orjson.dumps([attrs.asdict(part) for part in event.content]).decode()


def _decision(payload: JSON, status: str) -> tuple[str, JSON]:
    if status == "cancelled":
        return "cancelled", None
    if isinstance(payload, Mapping) and isinstance(payload.get("approved"), bool):
        if not payload["approved"]:
            return "denied", None
        if isinstance(payload.get("editedArgs"), Mapping):
            return "edited", payload["editedArgs"]
        return "approved", None
    return "answered", None


@attrs.define(kw_only=True)
class EpisodeLog:
    """Everything sent and received in one episode, with times (see the module docstring)."""

    task: Task
    trial: int
    human: str
    calls: dict[str, ToolCallSeen] = attrs.field(factory=dict)
    interrupts: dict[str, str | None] = attrs.field(factory=dict)
    """Every interrupt announced: id -> the tool call it is bound to."""
    open: tuple[str, ...] = ()
    runs: int = 0
    refusals: Counter[str] = attrs.field(factory=Counter)
    last_end: str | None = None
    """``success``, ``interrupt``, ``cancelled`` or ``error``: how the last stream ended."""
    result: JSON = None
    to_resume: list[float] = attrs.field(factory=list)
    to_next_event: list[float] = attrs.field(factory=list)
    problem: str | None = None
    """Why the episode could not be carried to its end (a protocol violation, a lost connection, ...)."""
    started_at: float = 0.0
    ended_at: float = 0.0
    _state: JSON = None
    _interrupted_at: float | None = None
    _resume_sent_at: float | None = None

    def sent(self, run_input: RunAgentInput, at: float) -> None:
        """``run_input`` went to the server at ``at``."""
        if self.runs == 0 and not self.started_at:
            self.started_at = at
        self._resume_sent_at = at if run_input.resume else None
        if run_input.resume and self._interrupted_at is not None:
            self.to_resume.append(at - self._interrupted_at)
            self._interrupted_at = None
        for entry in run_input.resume or ():
            call_id = self.interrupts.get(entry.interrupt_id)
            if call_id is None:
                continue
            call = self.calls.setdefault(call_id, ToolCallSeen(id=call_id))
            if call.interrupt_id == entry.interrupt_id and call.decision is not None:
                continue  # the same resume sent again: the first decision stands
            call.interrupt_id = entry.interrupt_id
            call.decision, call.edited_args = _decision(entry.payload, entry.status)

    def received(self, event: ev.Event | ev.UnknownEvent, at: float) -> None:
        """``event`` arrived at ``at``."""
        self.ended_at = at
        if self._resume_sent_at is not None:
            self.to_next_event.append(at - self._resume_sent_at)
            self._resume_sent_at = None
        if isinstance(event, ev.RunStartedEvent):
            self.runs += 1
        elif isinstance(event, ev.StateSnapshotEvent):
            self._state = event.snapshot
        elif isinstance(event, ev.ToolCallStartEvent):
            self.calls.setdefault(event.tool_call_id, ToolCallSeen(id=event.tool_call_id)).name = event.tool_call_name
        elif isinstance(event, ev.ToolCallArgsEvent):
            self.calls.setdefault(event.tool_call_id, ToolCallSeen(id=event.tool_call_id)).arguments += event.delta
        elif isinstance(event, ev.ToolCallResultEvent):
            self.calls.setdefault(event.tool_call_id, ToolCallSeen(id=event.tool_call_id)).results.append(
                _content(event)
            )
        elif isinstance(event, ev.MessagesSnapshotEvent):
            for message in event.messages:
                if isinstance(message, AssistantMessage):
                    for tool_call in message.tool_calls or ():
                        call = self.calls.setdefault(tool_call.id, ToolCallSeen(id=tool_call.id))
                        if call.name is None:
                            call.name, call.arguments = tool_call.function.name, tool_call.function.arguments
                elif isinstance(message, ToolMessage):
                    call = self.calls.setdefault(message.tool_call_id, ToolCallSeen(id=message.tool_call_id))
                    if not call.results:  # a server that reports results only in its snapshots
                        call.results.append(_content(message))
        elif isinstance(event, ev.RunErrorEvent):
            self.refusals[event.code or "(no code)"] += 1
            self.last_end = "error"
        elif isinstance(event, ev.RunFinishedEvent):
            outcome = event.outcome
            if isinstance(outcome, RunFinishedInterruptOutcome):
                self.last_end = "interrupt"
                self._interrupted_at = at
                self.open = tuple(i.id for i in outcome.interrupts)
                for interrupt in outcome.interrupts:
                    self.interrupts.setdefault(interrupt.id, interrupt.tool_call_id)
                    if interrupt.tool_call_id is not None:
                        call = self.calls.setdefault(interrupt.tool_call_id, ToolCallSeen(id=interrupt.tool_call_id))
                        call.interrupt_id = call.interrupt_id or interrupt.id
            else:
                self.last_end = "cancelled" if isinstance(outcome, RunFinishedCancelledOutcome) else "success"
                self.open = ()
                # A server that sends no result (ag-ui-langgraph) is judged on the thread's last
                # state (a replayed run may send no snapshot: the state it left stands).
                self.result = event.result if event.result is not None else self._state

    def interrupt_announced(self, interrupt_id: str, tool_call_id: str | None, at: float) -> None:
        """A legacy interrupt (not in an outcome) the client machine read at ``at``."""
        self.interrupts.setdefault(interrupt_id, tool_call_id)
        self._interrupted_at = at
        self.last_end = "interrupt"


@attrs.frozen(kw_only=True)
class EpisodeScore:
    """How one episode went and whether it was right (``failures`` says why not)."""

    task: str
    trial: int
    human: str
    passed: bool
    failures: tuple[str, ...]
    outcome: str | None
    result: JSON
    runs: int
    interrupts: int
    unapproved_actions: tuple[str, ...]
    approvals: int
    honoured_once: int
    rerun_approvals: tuple[str, ...]
    refusals: Mapping[str, int]
    to_resume: tuple[float, ...]
    to_next_event: tuple[float, ...]
    seconds: float
    problem: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "trial": self.trial,
            "human": self.human,
            "passed": self.passed,
            "failures": list(self.failures),
            "outcome": self.outcome,
            "result": self.result,
            "runs": self.runs,
            "interrupts": self.interrupts,
            "unapprovedActions": list(self.unapproved_actions),
            "approvals": self.approvals,
            "honouredOnce": self.honoured_once,
            "rerunApprovals": list(self.rerun_approvals),
            "refusals": dict(self.refusals),
            "toResume": list(self.to_resume),
            "toNextEvent": list(self.to_next_event),
            "seconds": self.seconds,
            "problem": self.problem,
        }


def _check(expect: Expectation, log: EpisodeLog) -> list[str]:
    failures: list[str] = []
    if log.problem is not None:
        failures.append(f"the episode broke off: {log.problem}")
    if log.last_end != expect.outcome:
        failures.append(f"ended with {log.last_end or 'nothing'}, expected {expect.outcome}")
    if expect.result is not None:
        if not isinstance(log.result, Mapping):
            failures.append(f"the result {orjson.dumps(log.result).decode()} is not an object")
        else:
            for key, value in expect.result.items():
                if key not in log.result:
                    failures.append(f"result.{key} is missing, expected {orjson.dumps(value).decode()}")
                elif log.result[key] != value:
                    got, want = orjson.dumps(log.result[key]).decode(), orjson.dumps(value).decode()
                    failures.append(f"result.{key} is {got}, expected {want}")
    ran = [c for c in log.calls.values() if c.ran and c.name is not None]
    for pattern in expect.must_run:
        if not any(pattern.matches(c.name or "", c.args) for c in ran):
            failures.append(f"{pattern} did not run")
    for pattern in expect.must_not_run:
        for call in ran:
            if pattern.matches(call.name or "", call.args):
                failures.append(f"{pattern} ran (call {call.id})")
    return failures


def score(log: EpisodeLog) -> EpisodeScore:
    """Whether the episode in ``log`` was right by its task's expectation for its human, and its figures."""
    failures = _check(log.task.expectation_for(log.human), log)
    unapproved = tuple(
        f"{c.name} ({c.id})" for c in log.calls.values() if c.name in log.task.gated and c.ran and not c.approved
    )
    approved = [c for c in log.calls.values() if c.approved]
    honoured = [c for c in approved if c.results and len(set(c.results)) == 1]
    rerun = tuple(f"{c.name} ({c.id})" for c in approved if len(set(c.results)) > 1)
    return EpisodeScore(
        task=log.task.id,
        trial=log.trial,
        human=log.human,
        passed=not failures,
        failures=tuple(failures),
        outcome=log.last_end,
        result=log.result,
        runs=log.runs,
        interrupts=len(log.interrupts),
        unapproved_actions=unapproved,
        approvals=len(approved),
        honoured_once=len(honoured),
        rerun_approvals=rerun,
        refusals=dict(log.refusals),
        to_resume=tuple(log.to_resume),
        to_next_event=tuple(log.to_next_event),
        seconds=max(0.0, log.ended_at - log.started_at),
        problem=log.problem,
    )
