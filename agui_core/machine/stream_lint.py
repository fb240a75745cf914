"""The stream linter: every finding about a recorded stream, each with its rule, severity and source.

:func:`lint_stream` follows a whole recorded stream (one or more runs) with a
:class:`~agui_core.machine.client.ClientMachine` and reports, as :class:`Finding` objects:

- each event the client rejects (a rule of the verifier or of the client machine), once: the
  run it breaks is failed and the rest of it passed over, so no follow-on error is invented;
- a run still open where the recording ends (``run-not-ended``);
- each warning the client machine keeps (``snapshot-missing``, ``event-unknown``, and what the
  client's decoding stripped: ``outcome-unknown``, ``patch-op-unknown``,
  ``content-part-unknown``);
- what only a reader of the whole stream sees: a tool call whose assembled arguments are not
  JSON (``tool-args-invalid-json``), a ``TOOL_CALL_RESULT`` for a tool call the stream never
  shows (``tool-result-unknown-call``), a ``STATE_DELTA`` that does not apply to the state a
  snapshot established (``state-delta-unapplicable``), a ``RUN_ERROR`` right after the
  ``RUN_FINISHED`` of the same run (``run-error-after-finished``), interrupts announced the
  legacy LangGraph way (``interrupt-legacy``).

Each finding's severity comes from :func:`~agui_core.machine.rulebook.severity` for the
profile asked for: ``spec`` (the default, for a stream from someone else) makes only the
published spec's MUSTs errors; ``seed`` makes the seed's rules errors too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

import attrs
import orjson

from agui_core.errors import OrderingError
from agui_core.machine.client import ClientMachine, RunStatus
from agui_core.machine.client_strip import Stripped
from agui_core.machine.rulebook import RULES, Force, Profile, Severity, severity
from agui_core.protocol import events as ev
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import AssistantMessage, Message

__all__ = ["Finding", "finding", "lint_stream"]


@attrs.frozen(kw_only=True)
class Finding:
    """One finding: ``rule`` (an id of :data:`~agui_core.machine.rulebook.RULES`), its
    ``severity`` in the profile judged by, the rule's ``force`` and ``source``, the ``index``
    of the event it concerns (``None``: the stream as a whole) and a ``message``."""

    rule: str
    severity: Severity
    force: Force
    source: str
    index: int | None
    message: str


def finding(rule_id: str, profile: Profile, index: int | None, message: str) -> Finding:
    """A :class:`Finding` under ``rule_id``, its severity that of ``profile``."""
    rule = RULES[rule_id]
    return Finding(
        rule=rule_id,
        severity=severity(rule_id, profile),
        force=rule.force,
        source=rule.source,
        index=index,
        message=message,
    )


def _tool_call_ids(messages: Iterable[Message]) -> set[str]:
    return {
        call.id for message in messages if isinstance(message, AssistantMessage) for call in message.tool_calls or ()
    }


class _Linter:
    def __init__(self, thread_id: str, profile: Profile, validators: PayloadValidators | None) -> None:
        self.machine = ClientMachine(thread_id, payload_validators=validators)
        self.profile = profile
        self.found: list[Finding] = []
        self.known_calls: set[str] = set()
        self.results: list[tuple[int, str]] = []
        self.unjudged_calls: set[str] = set()  # tool calls of the run whose arguments are not judged yet
        self.state_known = False
        self.previous: str | None = None

    def add(self, rule_id: str, index: int | None, message: str) -> None:
        self.found.append(finding(rule_id, self.profile, index, message))

    def feed(
        self, index: int, event: ev.Event | ev.UnknownEvent, now: datetime, stripped: Sequence[Stripped] = ()
    ) -> None:
        machine = self.machine
        stale_before = machine.state_stale
        warned = len(machine.warnings)
        try:
            machine.receive_event(event, now=now, stripped=stripped)
        except OrderingError as exc:
            self.add(exc.rule, index, exc.message.removesuffix(f" [{exc.rule}]"))
            machine.fail_run()
            self.previous = None
            return
        for warning in machine.warnings[warned:]:
            if warning.rule != "state-delta-unapplicable":  # judged below, against a known state only
                self.add(warning.rule, warning.index, f"event {warning.index}: {warning.message}")
        if machine.run_status is RunStatus.FAILED:
            return  # passed over: the rest of a run already reported
        self.observe(index, event, stale_before)
        self.previous = event.type

    def observe(self, index: int, event: ev.Event | ev.UnknownEvent, stale_before: bool) -> None:
        machine = self.machine
        if isinstance(event, ev.RunStartedEvent):
            self.unjudged_calls = set()
            run_input = event.input
            if run_input is not None:
                self.known_calls |= _tool_call_ids(run_input.messages)
                if run_input.state is not None:
                    self.state_known = True
        elif isinstance(event, ev.ToolCallStartEvent):
            self.known_calls.add(event.tool_call_id)
            self.unjudged_calls.add(event.tool_call_id)
        elif isinstance(event, ev.ToolCallChunkEvent):
            if event.tool_call_id is not None:
                self.known_calls.add(event.tool_call_id)
                self.unjudged_calls.add(event.tool_call_id)
        elif isinstance(event, ev.ToolCallEndEvent):
            self.judge_arguments(index, event.tool_call_id)
        elif isinstance(event, ev.ToolCallResultEvent):
            self.results.append((index, event.tool_call_id))
        elif isinstance(event, ev.MessagesSnapshotEvent):
            self.known_calls |= _tool_call_ids(event.messages)
        elif isinstance(event, ev.StateSnapshotEvent):
            self.state_known = True
        elif isinstance(event, ev.StateDeltaEvent):
            if self.state_known and machine.state_stale and not stale_before:
                self.add(
                    "state-delta-unapplicable",
                    index,
                    f"event {index}: STATE_DELTA does not apply to the state the stream established",
                )
        elif isinstance(event, ev.RunFinishedEvent):
            for call_id in sorted(self.unjudged_calls):
                self.judge_arguments(index, call_id)
            if machine.legacy_interrupts:
                ids = ", ".join(i.id for i in machine.open_interrupts)
                self.add(
                    "interrupt-legacy",
                    index,
                    f"event {index}: run {event.run_id!r} announced interrupts {ids} as on_interrupt CUSTOM "
                    "events and ended with no outcome; read as an interrupt outcome",
                )
        elif isinstance(event, ev.RunErrorEvent) and self.previous == "RUN_FINISHED":
            self.add(
                "run-error-after-finished",
                index,
                f"event {index}: RUN_ERROR right after RUN_FINISHED: the run that reported its end fails after all",
            )

    def judge_arguments(self, index: int, call_id: str) -> None:
        self.unjudged_calls.discard(call_id)
        call = self.machine.proposed_tool_call(call_id)
        if call is None or not call.arguments.strip():
            return  # no arguments at all: a tool without parameters
        try:
            orjson.loads(call.arguments)
        except orjson.JSONDecodeError as exc:
            self.add(
                "tool-args-invalid-json",
                index,
                f"event {index}: tool call {call_id!r} ({call.name}) has arguments that are not JSON once "
                f"assembled ({exc}): {call.arguments[:80]!r}",
            )

    def finish(self) -> None:
        unended = self.machine.end_of_stream()
        if unended is not None:
            self.add(unended.rule, unended.index, unended.message.removesuffix(f" [{unended.rule}]"))
        for index, call_id in self.results:
            if call_id not in self.known_calls:
                self.add(
                    "tool-result-unknown-call",
                    index,
                    f"event {index}: TOOL_CALL_RESULT for tool call {call_id!r}, which the stream never shows "
                    "(no TOOL_CALL_START, chunk or snapshot names it)",
                )


def lint_stream(
    events: Iterable[ev.Event | ev.UnknownEvent],
    *,
    now: datetime,
    profile: Profile = "spec",
    thread_id: str | None = None,
    payload_validators: PayloadValidators | None = None,
    stripped: Sequence[Sequence[Stripped]] | None = None,
) -> list[Finding]:
    """Every finding about a whole recorded stream of decoded events, in the stream's order.

    ``index`` is the event's position in ``events``. ``thread_id`` defaults to the thread the
    first ``RUN_STARTED`` or ``RUN_FINISHED`` names; ``now`` is when interrupts are judged.
    ``stripped``, one entry per event, holds what the client's decoding removed from each
    (:func:`~agui_core.machine.client_strip.decode_client_event`): each is a warning finding
    under its rule (``outcome-unknown``, ``patch-op-unknown``, ``content-part-unknown``).
    """
    items = list(events)
    if thread_id is None:
        thread_id = next(
            (e.thread_id for e in items if isinstance(e, (ev.RunStartedEvent, ev.RunFinishedEvent))),
            "",
        )
    linter = _Linter(thread_id, profile, payload_validators)
    for index, event in enumerate(items):
        linter.feed(index, event, now, stripped[index] if stripped is not None and index < len(stripped) else ())
    linter.finish()
    return sorted(linter.found, key=lambda f: (f.index is None, f.index or 0))
