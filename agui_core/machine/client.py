"""ClientMachine: the client side of AG-UI's interrupt lifecycle for one thread, sans-IO.

Theory of operation
-------------------
A client follows the runs of one thread. It is fed every event the agent sends
(:meth:`ClientMachine.receive_event`), checks it, and keeps what a client needs to answer an
interrupt: the open interrupts, the messages and state the snapshots carried, the last outcome
and result. When the person has decided, :meth:`ClientMachine.resume` builds the
``RunAgentInput`` that answers every open interrupt, refusing before anything is sent an answer
the agent would refuse. :meth:`ClientMachine.route` says which UI an interrupt needs.

Each response stream (one per input sent) is checked with a fresh
:class:`~agui_core.machine.ordering.StreamVerifier`, as the reference client runs
``verifyEvents`` once per run: a stream begins with ``RUN_STARTED`` or with a lone
``RUN_ERROR`` (the agent refused the input), whenever no run is in progress. On top of the
ordering rules the machine checks what a client can see of the interrupt contract (SPEC
sections 1, 3, 4 and 5). A violation raises :class:`~agui_core.errors.OrderingError` whose
``index`` is the event's position in everything this machine was fed (unknown event types
included), whose message names the event type, and whose ``rule`` is one of
:data:`CLIENT_RULES` or a rule of the verifier. A rejected event changes nothing.

Rules added to the verifier's, by ``OrderingError.rule``:

``thread-mismatch``
    ``RUN_STARTED`` or ``RUN_FINISHED`` names another thread than the machine's.
``run-id-mismatch``
    ``RUN_FINISHED`` names another run than the ``RUN_STARTED`` it closes.
``outcome-invalid``
    An outcome that is not success, interrupt or cancelled (absent reads as success), or an
    interrupt outcome holding something that is not an interrupt. An outcome whose ``type`` is
    merely unknown never gets here on the client path: it is stripped (``outcome-unknown``).
``interrupt-empty``
    An interrupt outcome with no interrupts.
``interrupt-id-empty``, ``interrupt-reason-empty``
    An interrupt whose ``id`` or ``reason`` is the empty string.
``interrupt-duplicate-id``
    An id used twice in one outcome, or already announced earlier on this thread (but for an
    interrupt the run answered, announced again as still open: a vote of a quorum).
``interrupt-reason-reserved``
    A reason in the ``core:`` namespace that is not a core reason (the prefix is reserved).
``interrupt-tool-call-missing``
    A ``tool_call`` interrupt without ``toolCallId``.
``interrupt-tool-call-unknown``
    A ``toolCallId`` that names no tool call this run closed, nor one the run's
    ``MESSAGES_SNAPSHOT`` carries (a replayed run re-sends the snapshot, not the tool call).
``interrupt-expires-at-invalid``
    An ``expiresAt`` that is not an RFC 3339 date-time with a time zone. ISO 8601 forms that
    RFC 3339 excludes (week dates, the basic format, hour-only offsets) are refused: the
    reference client cannot read them and would never treat them as expired.
``interrupt-schema-invalid``
    A ``responseSchema`` that cannot be compiled, so no answer could be checked against it.

Warnings (:attr:`ClientMachine.warnings`, :class:`ClientWarning`) are kept apart from
rejections: the event is accepted, and the warning names its rule and index.

``snapshot-missing``
    An interrupt ``RUN_FINISHED`` in a run that sent no ``STATE_SNAPSHOT`` or no
    ``MESSAGES_SNAPSHOT`` before it. The seed asks an agent for both; the published spec does
    not make a client reject a stream without them.
``event-unknown``
    An event of a type this version does not describe: accepted (it cannot abort the run) and
    never delivered.
``property-unknown``
    An event property this version does not describe: stripped from what
    :meth:`ClientMachine.receive_event` returns (nested objects keep theirs in ``extra``).
``activity-delta-unapplicable``
    An ``ACTIVITY_DELTA`` whose patch does not apply to its activity (left as it was).
``state-delta-unapplicable``
    A ``STATE_DELTA`` that does not apply to :attr:`ClientMachine.state` (left as it was,
    :attr:`ClientMachine.state_stale` set).
``outcome-unknown``, ``patch-op-unknown``, ``content-part-unknown``
    An unrecognised union member the client's decoding stripped before strict decoding
    (:mod:`~agui_core.machine.client_strip`): an outcome of unknown type (the run finishes), a
    patch operation of unknown ``op`` (the rest applies), a ``MESSAGES_SNAPSHOT`` content part of
    unknown type (the message stays without it). :meth:`ClientMachine.receive_frame` decodes
    that way; a caller decoding itself passes the notices as ``stripped``.

Interrupts move as the agent's thread machine moves them: they open with the ``RUN_FINISHED``
that announces them; a ``RUN_STARTED`` takes every open interrupt as answered by that run
(an agent starts no run on a thread with open interrupts unless the input answered them); the
run's ``RUN_FINISHED`` closes them, its ``RUN_ERROR`` opens them again. A lone ``RUN_ERROR``
(an input refused) changes nothing. :meth:`ClientMachine.abandon_run` handles a stream that
broke off: the interrupts open again, so the same resume can be sent again (the agent replays
a resume it already carried out).

Legacy servers. ``ag-ui-langgraph`` (by default) announces an interrupt with the ``CUSTOM``
event named :data:`LEGACY_INTERRUPT_EVENT` (``on_interrupt``) and ends the run with a
``RUN_FINISHED`` that has no ``outcome``. The machine reads such a run as one that ended with
an interrupt outcome holding one interrupt per ``on_interrupt`` event (see
:func:`legacy_interrupt`); :attr:`ClientMachine.legacy_interrupts` tells that the open
interrupts came that way. A structured interrupt outcome, when the run sends one too, wins.

The client side is cut along its jobs: this module follows the stream and builds resumes;
:mod:`~agui_core.machine.client_messages` assembles the conversation,
:mod:`~agui_core.machine.replies` holds the answers (:class:`Reply` and its helpers),
:mod:`~agui_core.machine.routing` says which UI an interrupt needs,
:mod:`~agui_core.machine.legacy_langgraph` reads ``on_interrupt`` events,
:mod:`~agui_core.machine.outcome_rules` judges the interrupts an outcome announces,
:mod:`~agui_core.machine.admission` (shared with the agent side) decides what a resume may
carry, and :mod:`~agui_core.machine.stream_lint` grades a whole recording. The names they
export are re-exported here, where callers have always found them.

Time comes in as ``now`` (an aware datetime); run ids come from the caller. The machine reads
``expiresAt`` to the millisecond, as a JavaScript client does, so an interrupt the reference
client calls expired is expired here too (never the reverse).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
import orjson

from agui_core.errors import (
    InvalidInputError,
    LocalProtocolError,
    OrderingError,
    PayloadError,
    RemoteProtocolError,
    RunErrorCode,
)
from agui_core.machine.admission import bind_answers, check_entries, check_entry_count, partition_open
from agui_core.machine.client_messages import MessageAssembly
from agui_core.machine.client_strip import STRIP_RULES, Stripped, decode_client_event
from agui_core.machine.expiry import is_interrupt_expired, read_expires_at
from agui_core.machine.interrupts import (
    answer_fault,
    format_ids,
    offers_edits,
)
from agui_core.machine.jsonpatch import JsonPatchError, apply_patch
from agui_core.machine.legacy_langgraph import LEGACY_INTERRUPT_EVENT, legacy_interrupt
from agui_core.machine.occupancy import check_free
from agui_core.machine.ordering import StreamVerifier
from agui_core.machine.outcome_rules import interrupt_outcome_fault
from agui_core.machine.record import OpenInterrupt
from agui_core.machine.replies import (
    REPLY_KEYS,
    Reply,
    approve,
    approve_with_edits,
    cancel,
    deny,
    plain_json,
    resolve,
)
from agui_core.machine.routing import DEFAULT_CONFIRMATION_SCHEMA, ProposedToolCall, Route, RouteKind, route_interrupt
from agui_core.protocol import events as ev
from agui_core.protocol.codec import input_to_dict
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import (
    EMPTY,
    JSON,
    PROTOCOL_VERSION,
    AssistantMessage,
    Context,
    Interrupt,
    Message,
    ResumeEntry,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    Tool,
)
from agui_core.protocol.validation import validate_input

__all__ = [
    "CLIENT_RULES",
    "CLIENT_WARNINGS",
    "DEFAULT_CONFIRMATION_SCHEMA",
    "LEGACY_INTERRUPT_EVENT",
    "ClientMachine",
    "ClientWarning",
    "ProposedToolCall",
    "Reply",
    "Route",
    "RouteKind",
    "RunStatus",
    "approve",
    "approve_with_edits",
    "cancel",
    "check_stream",
    "deny",
    "is_interrupt_expired",
    "legacy_interrupt",
    "offers_edits",
    "read_expires_at",
    "resolve",
]

CLIENT_RULES = frozenset(
    {
        "thread-mismatch",
        "run-id-mismatch",
        "outcome-invalid",
        "interrupt-empty",
        "interrupt-id-empty",
        "interrupt-reason-empty",
        "interrupt-duplicate-id",
        "interrupt-reason-reserved",
        "interrupt-tool-call-missing",
        "interrupt-tool-call-unknown",
        "interrupt-expires-at-invalid",
        "interrupt-schema-invalid",
    }
)
"""The rules the client machine checks beyond the reference client's ``verifyEvents``."""

CLIENT_WARNINGS = frozenset(
    {
        "snapshot-missing",
        "event-unknown",
        "property-unknown",
        "activity-delta-unapplicable",
        "state-delta-unapplicable",
        *STRIP_RULES,
    }
)
"""What the client machine warns about (:attr:`ClientMachine.warnings`) and never rejects: the
published spec does not make them a MUST of the producer."""


@attrs.frozen(kw_only=True)
class ClientWarning:
    """Something the client noticed in an accepted event and did not reject.

    ``rule`` is one of :data:`CLIENT_WARNINGS`, ``index`` the event's position in everything the
    machine was fed, ``message`` what was seen, naming the event type.
    """

    rule: str
    index: int
    message: str


# --- the machine ---------------------------------------------------------------------------


class RunStatus(enum.StrEnum):
    """Where the thread's latest run stands, as the client saw it."""

    IDLE = "idle"
    """No event yet."""
    RUNNING = "running"
    """``RUN_STARTED`` seen, no end yet."""
    FINISHED = "finished"
    """The run ended with ``RUN_FINISHED``; :attr:`ClientMachine.outcome` says how."""
    ERRORED = "errored"
    """The run ended with ``RUN_ERROR``; the interrupts it answered are open again."""
    REJECTED = "rejected"
    """The last input got a lone ``RUN_ERROR``: no run started, nothing changed."""
    ABANDONED = "abandoned"
    """The run's stream broke off (:meth:`ClientMachine.abandon_run`), or ended with the run
    still open (:meth:`ClientMachine.end_of_stream`)."""
    FAILED = "failed"
    """The client rejected an event of the run (:meth:`ClientMachine.fail_run`): the rest of
    the run is not judged, its answered interrupts are open again."""


@attrs.frozen
class _Open:
    interrupt: Interrupt
    run_id: str
    received_at: datetime


class _ToolCallDraft:
    __slots__ = ("arguments", "name")

    def __init__(self, name: str | None, arguments: str = "") -> None:
        self.name = name
        self.arguments = arguments


def _bare_message(error: OrderingError) -> str:
    """The message of a verifier's error without the index and rule it added around it."""
    text = error.message
    prefix = f"event {error.index}: " if error.index is not None else ""
    suffix = f" [{error.rule}]"
    return text.removeprefix(prefix).removesuffix(suffix)


class ClientMachine:
    """The client side of one thread's runs. See the module docstring for how to drive it."""

    def __init__(self, thread_id: str, *, payload_validators: PayloadValidators | None = None) -> None:
        self._thread_id = thread_id
        self._validators = payload_validators if payload_validators is not None else PayloadValidators()
        self._index = 0
        self._verifier: StreamVerifier | None = None
        self._run_id: str | None = None
        self._status = RunStatus.IDLE
        self._open: tuple[_Open, ...] = ()
        self._answering: tuple[_Open, ...] = ()
        self._seen_ids: set[str] = set()
        self._outcome: RunFinishedOutcome | None = None
        self._result: JSON = None
        self._last_error: ev.RunErrorEvent | None = None
        self._assembly = MessageAssembly()
        self._state: JSON = None
        self._state_stale = False
        self._tool_calls: dict[str, _ToolCallDraft] = {}
        # What the current run has shown, for the interrupt boundary rules.
        self._run_snapshots: set[str] = set()
        self._run_snapshot_tool_calls: set[str] = set()
        self._legacy_run: list[Interrupt] = []  # on_interrupt events of the run in progress
        self._legacy_open = False
        self._warnings: list[ClientWarning] = []
        self._skipping = False  # the rest of a failed run is passed over, not judged
        self._run_started_at = 0  # the index of the current run's RUN_STARTED
        self._pending_warnings: list[ClientWarning] = []

    # -- reading -------------------------------------------------------------------------

    @property
    def thread_id(self) -> str:
        return self._thread_id

    @property
    def index(self) -> int:
        """How many events the machine has been fed: the index the next one gets."""
        return self._index

    @property
    def warnings(self) -> tuple[ClientWarning, ...]:
        """Every warning so far, in order: what was accepted but not as the seed asks."""
        return tuple(self._warnings)

    @property
    def run_id(self) -> str | None:
        """The ``runId`` of the current or latest run (``None`` before any ``RUN_STARTED``)."""
        return self._run_id

    @property
    def run_status(self) -> RunStatus:
        """Where the latest run stands (see :class:`RunStatus`)."""
        return self._status

    @property
    def outcome(self) -> RunFinishedOutcome | None:
        """The outcome of the latest ``RUN_FINISHED`` (an absent outcome reads as success);
        ``None`` before any."""
        return self._outcome

    @property
    def result(self) -> JSON:
        """The ``result`` of the latest ``RUN_FINISHED``."""
        return self._result

    @property
    def last_error(self) -> ev.RunErrorEvent | None:
        """The latest ``RUN_ERROR``, whether it ended a run or refused an input."""
        return self._last_error

    @property
    def open_interrupts(self) -> tuple[Interrupt, ...]:
        """The interrupts waiting for an answer, in the order they were announced (none while
        a run is in progress)."""
        return tuple(o.interrupt for o in self._open)

    @property
    def legacy_interrupts(self) -> bool:
        """Whether the open interrupts were announced the legacy way (``on_interrupt`` events
        and a ``RUN_FINISHED`` without outcome)."""
        return self._legacy_open and bool(self._open)

    @property
    def awaiting_input(self) -> bool:
        """Whether the thread waits for a resume: interrupts are open and no run is going."""
        return bool(self._open)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation as the accepted events built it (see
        :mod:`agui_core.machine.client_messages`): streamed text, reasoning, tool calls and
        results, activity, reconciled with each ``MESSAGES_SNAPSHOT`` by id, across runs."""
        return self._assembly.messages

    @property
    def state(self) -> JSON:
        """The state of the latest ``STATE_SNAPSHOT`` with the ``STATE_DELTA``s after it."""
        return self._state

    @property
    def state_stale(self) -> bool:
        """A ``STATE_DELTA`` since the latest snapshot did not apply to :attr:`state` (as the
        reference client does, the state was left as it was); the next snapshot clears this."""
        return self._state_stale

    def interrupt(self, interrupt_id: str) -> Interrupt | None:
        """The open interrupt with this id, if any."""
        for item in self._open:
            if item.interrupt.id == interrupt_id:
                return item.interrupt
        return None

    def expired_interrupts(self, now: datetime) -> tuple[Interrupt, ...]:
        """The open interrupts that can only be cancelled at ``now``."""
        self._check_now(now, "expired_interrupts")
        return tuple(o.interrupt for o in self._open if is_interrupt_expired(o.interrupt, now))

    def open_since(self, interrupt_id: str) -> datetime | None:
        """When the open interrupt with this id reached the client (the ``now`` it came with)."""
        for item in self._open:
            if item.interrupt.id == interrupt_id:
                return item.received_at
        return None

    def proposed_tool_call(self, tool_call_id: str) -> ProposedToolCall | None:
        """The tool call with this id as the client saw it streamed or snapshotted."""
        draft = self._tool_calls.get(tool_call_id)
        if draft is None:
            return None
        try:
            args = orjson.loads(draft.arguments)
        except orjson.JSONDecodeError:
            args = None
        return ProposedToolCall(id=tool_call_id, name=draft.name, arguments=draft.arguments, args=args)

    # -- routing -------------------------------------------------------------------------

    def route(self, interrupt: Interrupt) -> Route:
        """The UI ``interrupt`` needs. Never raises: an unknown reason gets the fallback."""
        call_id = interrupt.tool_call_id
        call = self.proposed_tool_call(call_id) if isinstance(call_id, str) else None
        return route_interrupt(interrupt, call)

    # -- events --------------------------------------------------------------------------

    def receive_frame(self, data: bytes | bytearray | memoryview | str, *, now: datetime) -> ev.Event | None:
        """Decode one frame as a client does and take it (:meth:`receive_event`).

        Unrecognised union members are stripped before strict decoding, each with its warning
        (:func:`~agui_core.machine.client_strip.decode_client_event`). Raises
        :class:`~agui_core.errors.InvalidEventError` for a frame that is not a valid event
        (nothing changes: call :meth:`fail_run`), or ``OrderingError`` as :meth:`receive_event`.
        """
        event, stripped = decode_client_event(data)
        return self.receive_event(event, now=now, stripped=stripped)

    def receive_event(
        self, event: ev.Event | ev.UnknownEvent, *, now: datetime, stripped: Sequence[Stripped] = ()
    ) -> ev.Event | None:
        """Take the next event of the thread, or raise ``OrderingError`` and change nothing.

        Returns what application code may see of it: the event with the properties this
        version does not describe stripped (``property-unknown`` warns about each), or ``None``
        for an event that is not delivered (an unknown type, the rest of a failed run).
        ``stripped``: what the client's decoding removed from the event
        (:func:`~agui_core.machine.client_strip.decode_client_event`); each becomes a warning
        of its rule once the event is accepted.
        """
        self._check_now(now, "receive_event")
        self._pending_warnings = [
            ClientWarning(rule=notice.rule, index=self._index, message=notice.message) for notice in stripped
        ]
        verifier = self._verifier
        etype = event.type
        if self._skipping:
            if etype != "RUN_STARTED":
                # The failed run's own events, up to its end: counted, never judged again.
                self._index += 1
                if etype in ("RUN_FINISHED", "RUN_ERROR"):
                    self._skipping = False
                return None
            self._skipping = False
        starts_stream = (verifier is None or not verifier.run_active) and etype in (
            "RUN_STARTED",
            "RUN_ERROR",
        )
        if starts_stream or verifier is None:
            verifier = StreamVerifier()
        if isinstance(event, ev.RunStartedEvent):
            self._check_started(verifier, event)
        elif isinstance(event, ev.RunFinishedEvent):
            self._check_finished(verifier, event)
        try:
            verifier.check(event)
        except OrderingError as exc:
            raise OrderingError(exc.rule, _bare_message(exc), event=event, index=self._index) from None
        if isinstance(event, ev.UnknownEvent):
            self._warn("event-unknown", f"an event of unknown type {etype!r} was dropped")
        elif event.extra:
            for key in sorted(event.extra):
                self._warn(
                    "property-unknown", f"{etype} carries /{key}, which this version does not describe; stripped"
                )
        # Accepted: from here on the machine changes.
        self._warnings.extend(self._pending_warnings)
        self._pending_warnings = []
        self._verifier = verifier
        self._index += 1
        self._apply(event, verifier, now)
        if isinstance(event, ev.UnknownEvent):
            return None
        return attrs.evolve(event, extra=EMPTY) if event.extra else event

    def fail_run(self) -> None:
        """The event just refused fails its run; call it after ``receive_event`` raised.

        A malformed known value is fatal to the run (the spec's processing model), and the
        events after it would only be judged against a run the client no longer follows: each
        would be a follow-on error. So the run ends here as :attr:`RunStatus.FAILED`, the
        interrupts it was answering open again, and the rest of its events, up to its
        ``RUN_FINISHED`` or ``RUN_ERROR`` or the next ``RUN_STARTED``, are counted and passed
        over. The refused event itself takes its place in the numbering.
        """
        self._index += 1
        if self._verifier is not None and self._verifier.run_active:
            self._open = self._answering + self._open
            self._answering = ()
        self._verifier = None
        self._status = RunStatus.FAILED
        self._skipping = True

    def end_of_stream(self) -> OrderingError | None:
        """The stream ended here. Returns the error when a run is still open, else ``None``.

        A run whose stream ends before its ``RUN_FINISHED`` or ``RUN_ERROR`` did not end: it is
        treated as abandoned (see :meth:`abandon_run`) and the error, rule ``run-not-ended``,
        names it with the index of its ``RUN_STARTED``. The rest of a failed run ending with
        the stream is no new error: it was reported once.
        """
        self._skipping = False
        verifier = self._verifier
        if verifier is None or not verifier.run_active:
            return None
        run_id = verifier.run_id
        self.abandon_run()
        return OrderingError(
            "run-not-ended",
            f"the stream ended with run {run_id!r} still open: no RUN_FINISHED or RUN_ERROR",
            index=self._run_started_at,
        )

    def sending(self, run_input: RunAgentInput) -> None:
        """``run_input`` is about to be sent on this thread: its ``messages``, when it has any,
        become the conversation the run continues (the client's own messages, which no event
        carries back), and its ``state``, when it has one, the baseline the run's deltas apply
        to. An input without messages (a bare resume) leaves the conversation as it is."""
        if run_input.thread_id != self._thread_id:
            raise LocalProtocolError(f"input for thread {run_input.thread_id!r} on thread {self._thread_id!r}")
        if run_input.messages:
            self._assembly.reconcile(run_input.messages, keep_client_only=True)
        if run_input.state is not None:
            self._state = run_input.state
            self._state_stale = False

    def abandon_run(self) -> None:
        """The stream of the run in progress broke off before its end.

        The interrupts the run was answering are open again, so the same resume can be sent
        again; the next event starts a new stream. Does nothing when no run is in progress.
        """
        if self._verifier is None or not self._verifier.run_active:
            return
        self._open = self._answering + self._open
        self._answering = ()
        self._verifier = None
        self._status = RunStatus.ABANDONED

    def _warn(self, rule: str, message: str) -> None:
        """Keep a warning about the event being received; it counts once the event is accepted."""
        self._pending_warnings.append(ClientWarning(rule=rule, index=self._index, message=message))

    def _fail(self, rule: str, message: str, event: object) -> OrderingError:
        return OrderingError(rule, message, event=event, index=self._index)

    def _check_started(self, verifier: StreamVerifier, event: ev.RunStartedEvent) -> None:
        error = verifier.would_accept(event)
        if error is not None:
            raise OrderingError(error.rule, _bare_message(error), event=event, index=self._index)
        if event.thread_id != self._thread_id:
            raise self._fail(
                "thread-mismatch",
                f"RUN_STARTED for thread {event.thread_id!r} on thread {self._thread_id!r}",
                event,
            )

    def _check_finished(self, verifier: StreamVerifier, event: ev.RunFinishedEvent) -> None:
        error = verifier.would_accept(event)
        if error is not None:
            raise OrderingError(error.rule, _bare_message(error), event=event, index=self._index)
        label = "RUN_FINISHED"
        if event.thread_id != self._thread_id:
            raise self._fail(
                "thread-mismatch",
                f"{label} for thread {event.thread_id!r} on thread {self._thread_id!r}",
                event,
            )
        if event.run_id != verifier.run_id:
            raise self._fail(
                "run-id-mismatch",
                f"{label} for run {event.run_id!r} closes run {verifier.run_id!r}",
                event,
            )
        outcome = event.outcome
        if outcome is None or isinstance(outcome, (RunFinishedSuccessOutcome, RunFinishedCancelledOutcome)):
            return
        if not isinstance(outcome, RunFinishedInterruptOutcome):
            kind = getattr(outcome, "type", type(outcome).__name__)
            raise self._fail(
                "outcome-invalid",
                f"{label} with outcome type {kind!r}; it is success, interrupt or cancelled",
                event,
            )
        self._check_interrupts(verifier, event, outcome.interrupts)

    def _check_interrupts(
        self, verifier: StreamVerifier, event: ev.RunFinishedEvent, interrupts: Sequence[Interrupt]
    ) -> None:
        # A chunk-streamed tool call still open is closed by RUN_FINISHED itself.
        closed = set(verifier.closed_tool_calls_this_run) | {
            entity for kind, entity in verifier.chunk_streams.values() if kind == "tool"
        }
        fault = interrupt_outcome_fault(
            interrupts,
            thread_id=self._thread_id,
            run_id=verifier.run_id,
            # An interrupt this run answered may be announced again, still open: its answer was
            # one vote of several (a quorum, agui_core.machine.quorum), and the rest are awaited.
            announced=self._seen_ids.difference(o.interrupt.id for o in self._answering),
            tool_calls=closed | self._run_snapshot_tool_calls,
            validators=self._validators,
        )
        if fault is not None:
            raise self._fail(fault[0], fault[1], event)
        missing = [k for k in ("STATE_SNAPSHOT", "MESSAGES_SNAPSHOT") if k not in self._run_snapshots]
        if missing:
            self._warn(
                "snapshot-missing",
                f"RUN_FINISHED with interrupts {format_ids(i.id for i in interrupts)} in a run that sent no "
                f"{' and no '.join(missing)}; the seed's interrupt boundary carries both",
            )

    def _apply(self, event: ev.Event | ev.UnknownEvent, verifier: StreamVerifier, now: datetime) -> None:
        if isinstance(event, ev.UnknownEvent):
            return
        lane_call = self._chunk_lane(event, verifier) if isinstance(event, ev.ToolCallChunkEvent) else None
        if isinstance(event, ev.TextMessageChunkEvent | ev.ReasoningMessageChunkEvent) and event.message_id is None:
            lane_message = self._chunk_lane(event, verifier)
            if lane_message is not None:
                event = attrs.evolve(event, message_id=lane_message)
        problem = self._assembly.apply(event, tool_call_id=lane_call)
        if problem is not None:
            index = self._index - 1
            self._warnings.append(ClientWarning(rule="activity-delta-unapplicable", index=index, message=problem))
        if isinstance(event, ev.RunStartedEvent):
            self._status = RunStatus.RUNNING
            self._run_id = event.run_id
            self._run_started_at = self._index - 1
            self._answering = self._open
            self._open = ()
            self._run_snapshots = set()
            self._run_snapshot_tool_calls = set()
            self._legacy_run = []
        elif isinstance(event, ev.CustomEvent) and event.name == LEGACY_INTERRUPT_EVENT:
            fallback = f"{self._run_id}:{LEGACY_INTERRUPT_EVENT}:{len(self._legacy_run)}"
            self._legacy_run.append(legacy_interrupt(event, fallback_id=fallback))
        elif isinstance(event, ev.RunFinishedEvent):
            self._status = RunStatus.FINISHED
            self._answering = ()
            self._result = event.result
            legacy = self._legacy_pending(event)
            self._legacy_open = legacy is not None
            self._legacy_run = []
            outcome = event.outcome or legacy or RunFinishedSuccessOutcome()
            self._outcome = outcome
            if isinstance(outcome, RunFinishedInterruptOutcome):
                run_id = event.run_id
                self._open = tuple(_Open(interrupt=i, run_id=run_id, received_at=now) for i in outcome.interrupts)
                self._seen_ids.update(i.id for i in outcome.interrupts)
        elif isinstance(event, ev.RunErrorEvent):
            self._last_error = event
            if self._status is RunStatus.RUNNING:
                self._status = RunStatus.ERRORED
                self._open = self._answering + self._open
                self._answering = ()
            else:
                self._status = RunStatus.REJECTED
        elif isinstance(event, ev.StateSnapshotEvent):
            self._state = event.snapshot
            self._state_stale = False
            self._run_snapshots.add(event.type)
        elif isinstance(event, ev.StateDeltaEvent):
            try:
                self._state = apply_patch(self._state, event.delta)
            except JsonPatchError as exc:
                # The spec's consumer rule: warned about and skipped, the state left as it was.
                self._state_stale = True
                self._warnings.append(
                    ClientWarning(
                        rule="state-delta-unapplicable",
                        index=self._index - 1,
                        message=f"STATE_DELTA does not apply to the state and was skipped: {exc}",
                    )
                )
        elif isinstance(event, ev.MessagesSnapshotEvent):
            self._run_snapshots.add(event.type)
            for message in event.messages:
                if isinstance(message, AssistantMessage):
                    for call in message.tool_calls or ():
                        self._tool_calls[call.id] = _ToolCallDraft(call.function.name, call.function.arguments)
                        self._run_snapshot_tool_calls.add(call.id)
        elif isinstance(event, ev.ToolCallStartEvent):
            self._tool_calls[event.tool_call_id] = _ToolCallDraft(event.tool_call_name)
        elif isinstance(event, ev.ToolCallArgsEvent):
            draft = self._tool_calls.get(event.tool_call_id)
            if draft is not None:
                draft.arguments += event.delta
        elif isinstance(event, ev.ToolCallChunkEvent):
            self._apply_tool_chunk(event, verifier)

    def _legacy_pending(self, event: ev.RunFinishedEvent) -> RunFinishedInterruptOutcome | None:
        """The interrupt outcome a legacy run ends with: its ``on_interrupt`` events, when its
        ``RUN_FINISHED`` has no outcome of its own. A legacy server announces an interrupt
        still pending again on later runs, so an id seen before is taken (once per run)."""
        if event.outcome is not None or not self._legacy_run:
            return None
        announced: dict[str, Interrupt] = {}
        for interrupt in self._legacy_run:
            announced.setdefault(interrupt.id, interrupt)
        return RunFinishedInterruptOutcome(interrupts=tuple(announced.values()))

    @staticmethod
    def _chunk_lane(
        event: ev.ToolCallChunkEvent | ev.TextMessageChunkEvent | ev.ReasoningMessageChunkEvent,
        verifier: StreamVerifier,
    ) -> str | None:
        """The id a chunk continues: its own, else its lane's as the verifier placed it (the
        tagged lane, else the only one of its kind)."""
        if isinstance(event, ev.ToolCallChunkEvent):
            own, kind = event.tool_call_id, "tool"
        else:
            own, kind = event.message_id, "text" if isinstance(event, ev.TextMessageChunkEvent) else "reasoning"
        if own is not None:
            return own
        lanes = [entity for lane_kind, entity in verifier.chunk_streams.values() if lane_kind == kind]
        tagged = verifier.chunk_streams.get(event.subagent_run_id)
        if tagged is not None and tagged[0] == kind:
            return tagged[1]
        return lanes[0] if len(lanes) == 1 else None

    def _apply_tool_chunk(self, event: ev.ToolCallChunkEvent, verifier: StreamVerifier) -> None:
        call_id = self._chunk_lane(event, verifier)
        if call_id is None:
            return
        draft = self._tool_calls.get(call_id)
        if draft is None or (event.tool_call_name is not None and event.tool_call_name != draft.name):
            draft = self._tool_calls[call_id] = _ToolCallDraft(event.tool_call_name)
        if event.delta is not None:
            draft.arguments += event.delta

    # -- resuming ------------------------------------------------------------------------

    def resume(
        self,
        answers: Mapping[str, Reply | Mapping[str, Any]],
        *,
        now: datetime,
        run_id: str,
        messages: Sequence[Message] | None = None,
        state: JSON = None,
        parent_run_id: str | None = None,
        tools: Sequence[Tool] | None = None,
        context: Sequence[Context] | None = None,
        forwarded_props: JSON = None,
        protocol_version: str | None = PROTOCOL_VERSION,
        partial: bool = False,
    ) -> RunAgentInput:
        """The ``RunAgentInput`` that answers every open interrupt with ``answers``.

        ``answers`` maps each open interrupt's id to a :class:`Reply` (see :func:`resolve` and
        its siblings) or to a mapping shaped like the reference client's responses
        (``{"status": ..., "payload"?: ..., "metadata"?: ...}``). Entries follow the order the
        interrupts were announced in. ``messages`` and ``state`` are sent as given (none by
        default); pass :attr:`messages` and :attr:`state` to send back what the interrupt
        boundary's snapshots carried. ``protocol_version`` is declared on the input (the spec's
        versioning page makes it a MUST; pass ``None`` only toward a peer that predates the
        field). Nothing changes in the machine: the run counts as
        started when its ``RUN_STARTED`` arrives. ``partial=True`` answers only the interrupts
        ``answers`` names, for a server whose decision policy has its principals decide in turns
        (:mod:`agui_core.machine.quorum`): the server says whether that is all this principal
        is to answer (``PARTIAL_RESUME`` if not).

        Raises :class:`~agui_core.errors.LocalProtocolError` for an answer the agent would
        refuse, before anything is sent; its ``code`` is the ``RUN_ERROR`` code the agent
        would answer with, its ``event`` the answer at fault (when there is one), and for a
        payload that fails the ``responseSchema`` its ``__cause__`` is the
        :class:`~agui_core.errors.PayloadError` with the JSON path. In order: a run in
        progress (``THREAD_BUSY``); nothing open to answer, an answer that is not a
        :class:`Reply` or a well-formed mapping, a bad status, metadata ``None`` or not an
        object, a cancelled answer with a payload, a value JSON cannot carry, more entries than
        a thread holds interrupts (``INVALID_RESUME``); then the agent side's own admission
        (:mod:`agui_core.machine.admission`, the same functions): an id that is not open
        (``UNKNOWN_INTERRUPT_ID``); a resolved answer at or after ``expiresAt``
        (``INTERRUPT_EXPIRED``; cancelling stays allowed, and an expired interrupt need not be
        answered at all); a live interrupt left unanswered (``PARTIAL_RESUME``); a payload that fails the
        ``responseSchema`` (a ``confirmation`` without one takes a boolean), or that carries
        ``editedArgs`` for an interrupt whose schema does not offer edits (``INVALID_PAYLOAD``);
        an input that fails the wire schema (``INVALID_INPUT``).
        """
        self._check_now(now, "resume")
        if not isinstance(answers, Mapping):
            raise self._refuse(
                RunErrorCode.INVALID_RESUME,
                f"answers is a {type(answers).__name__}; it maps interrupt ids to answers",
            )
        try:
            in_flight = self._verifier.run_id if self._verifier is not None and self._verifier.run_active else None
            check_free(self._thread_id, run_id, running=in_flight)
        except RemoteProtocolError as exc:
            raise self._refuse(exc.code, exc.message) from None
        if not self._open:
            raise self._refuse(
                RunErrorCode.INVALID_RESUME,
                f"thread {self._thread_id!r} has no open interrupts to answer",
            )
        replies = {iid: self._read_reply(iid, answer) for iid, answer in answers.items()}
        # Entries in the order the interrupts were announced; an unknown id after them, for
        # admission to refuse.
        order = {o.interrupt.id: position for position, o in enumerate(self._open)}
        entries = [
            ResumeEntry(
                interrupt_id=iid,
                status=reply.status,
                payload=reply.payload if reply.status == "resolved" else None,
                metadata=reply.metadata,
            )
            for iid, reply in sorted(replies.items(), key=lambda item: order.get(item[0], len(order)))
        ]
        # The agent side's own admission rules, so whatever one accepts the other accepts.
        try:
            check_entry_count(entries)
            check_entries(entries)
            live, expired = partition_open(
                (OpenInterrupt(interrupt=o.interrupt, run_id=o.run_id) for o in self._open), now
            )
            bind_answers(
                entries,
                thread_id=self._thread_id,
                live=live,
                expired=expired,
                resolved=(),
                validators=self._validators,
                required=() if partial else None,
            )
        except RemoteProtocolError as exc:
            ids: list[str] = list(exc.details.get("interrupt_ids") or ())
            at_fault = replies.get(ids[0]) if len(ids) == 1 else None
            cause = exc.__cause__ if isinstance(exc.__cause__, PayloadError) else None
            refused = self._refuse(exc.code, exc.message, at_fault)
            # Set as well as raised ``from``: compiled (mypyc), ``raise ... from`` drops the cause.
            refused.__cause__ = cause
            raise refused from cause
        run_input = RunAgentInput(
            thread_id=self._thread_id,
            run_id=run_id,
            messages=tuple(messages) if messages is not None else (),
            protocol_version=protocol_version,
            parent_run_id=parent_run_id,
            state=state,
            tools=tuple(tools) if tools is not None else None,
            context=tuple(context) if context is not None else None,
            forwarded_props=forwarded_props,
            resume=tuple(entries),
        )
        try:
            validate_input(input_to_dict(run_input))
        except InvalidInputError as invalid:
            raise self._refuse(RunErrorCode.INVALID_INPUT, f"the resume input is invalid: {invalid.message}") from None
        except Exception as unexpected:
            raise self._refuse(
                RunErrorCode.INVALID_INPUT,
                f"the resume input cannot be encoded ({type(unexpected).__name__}: {unexpected})",
            ) from None
        return run_input

    def _read_reply(self, interrupt_id: object, answer: object) -> Reply:
        """``answer`` as a checked :class:`Reply`."""
        if not isinstance(interrupt_id, str):
            raise self._refuse(RunErrorCode.INVALID_RESUME, f"answer key {interrupt_id!r} is not an interrupt id")
        where = f"the answer to interrupt {interrupt_id!r}"
        if isinstance(answer, Reply):
            reply = answer
        elif isinstance(answer, Mapping):
            extra = sorted(str(k) for k in answer if k not in REPLY_KEYS)
            if extra:
                raise self._refuse(
                    RunErrorCode.INVALID_RESUME,
                    f"{where} has unknown key {format_ids(extra)}; it holds status, payload and metadata",
                    answer,
                )
            if "metadata" in answer and answer["metadata"] is None:
                raise self._refuse(
                    RunErrorCode.INVALID_RESUME,
                    f"{where} has metadata null; metadata is an object or left out",
                    answer,
                )
            if answer.get("status") == "cancelled" and "payload" in answer:
                raise self._refuse(
                    RunErrorCode.INVALID_RESUME,
                    f"{where} is cancelled and carries a payload",
                    answer,
                )
            reply = Reply(
                status=answer.get("status"),  # type: ignore[arg-type]  # checked just below
                payload=answer.get("payload"),
                metadata=answer.get("metadata"),
            )
        else:
            raise self._refuse(
                RunErrorCode.INVALID_RESUME,
                f"{where} is a {type(answer).__name__}; use resolve(), approve(), deny(), "
                "approve_with_edits() or cancel()",
                answer,
            )
        fault = answer_fault(reply.status, reply.payload, reply.metadata)
        if fault is not None:
            raise self._refuse(RunErrorCode.INVALID_RESUME, f"{where}: {fault}", answer)
        try:
            # A copy, so the entry is plain JSON and the caller's objects stay theirs.
            reply = Reply(
                status=reply.status,
                payload=plain_json(reply.payload, "payload"),
                metadata=plain_json(reply.metadata, "metadata"),
            )
        except (TypeError, ValueError) as exc:
            raise self._refuse(RunErrorCode.INVALID_RESUME, f"{where}: {exc}", answer) from None
        except RecursionError:
            raise self._refuse(RunErrorCode.INVALID_RESUME, f"{where} is nested too deeply", answer) from None
        return reply

    def _refuse(self, code: RunErrorCode, message: str, answer: object = None) -> LocalProtocolError:
        error = LocalProtocolError(f"resume refused: {message}", state=self._status, event=answer)
        error.code = code
        return error

    @staticmethod
    def _check_now(now: datetime, what: str) -> None:
        if not isinstance(now, datetime) or now.tzinfo is None or now.utcoffset() is None:
            raise LocalProtocolError(f"{what} needs an aware datetime for now, not {now!r}")


def check_stream(
    events: Iterable[ev.Event | ev.UnknownEvent],
    *,
    now: datetime,
    thread_id: str | None = None,
    payload_validators: PayloadValidators | None = None,
    ended: bool = False,
    warnings: list[ClientWarning] | None = None,
) -> list[OrderingError]:
    """Every violation in a recorded stream of decoded events, in order (empty: none).

    The stream is checked as a :class:`ClientMachine` would receive it; each error's
    ``index`` is the event's position in ``events``. A refused event fails its run
    (:meth:`ClientMachine.fail_run`): the rest of that run is passed over and the check goes
    on with the next run, so one fault is reported once, never with follow-on errors.
    ``thread_id`` defaults to the thread the first ``RUN_STARTED`` or ``RUN_FINISHED`` names.
    ``ended``: the recording is the whole stream, so a run still open at its end is an error
    (``run-not-ended``). ``warnings``, when given, receives the machine's warnings.
    """
    items = list(events)
    if thread_id is None:
        thread_id = next(
            (e.thread_id for e in items if isinstance(e, (ev.RunStartedEvent, ev.RunFinishedEvent))),
            "",
        )
    machine = ClientMachine(thread_id, payload_validators=payload_validators)
    violations: list[OrderingError] = []
    for event in items:
        try:
            machine.receive_event(event, now=now)
        except OrderingError as exc:
            violations.append(exc)
            machine.fail_run()
    if ended:
        unended = machine.end_of_stream()
        if unended is not None:
            violations.append(unended)
    if warnings is not None:
        warnings.extend(machine.warnings)
    return violations
