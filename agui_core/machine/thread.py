"""ThreadMachine: the agent side of AG-UI's interrupt lifecycle for one thread, sans-IO.

Theory of operation
-------------------
A thread lives through runs. A run starts when a client input is accepted and ends with
``RUN_FINISHED`` (success, interrupt or cancelled) or ``RUN_ERROR``. A run that ends with
interrupts leaves the thread ``INTERRUPTED``; the next accepted input must carry a ``resume``
answering every open interrupt, and starts a ``RESUMED`` run that hands those answers to the
agent. Every state change is looked up in :mod:`agui_core.machine.transitions`.

The machine is fed two kinds of input and answers each with the list of effects to carry out,
in order (:mod:`agui_core.machine.effects`):

- the client's ``RunAgentInput`` (:meth:`ThreadMachine.receive_input`), with the instant it
  arrived. Every contract rule of SPEC section 3 is checked here, before anything changes: an
  input that breaks one gets a lone ``Reject`` (its ``RUN_ERROR``) whose ``code`` names the rule, and the
  thread is exactly as it was. An input that repeats a resume already carried out is a replay:
  the recorded tool results and outcome are sent again and nothing runs twice. So is the
  thread's size (:class:`ThreadLimits`): an input whose messages would take it past its
  limits is ``THREAD_TOO_LARGE``.
- the agent's acts during a run (:meth:`emit`, :meth:`interrupt`, :meth:`finish`,
  :meth:`fail`, :meth:`cancel`). A broken rule here is a bug in the agent code and raises
  :class:`~agui_core.errors.LocalProtocolError` at once, leaving the machine unchanged; the
  host then fails the run cleanly with :meth:`fail`.

The machine applies every event it lets through to its copy of the thread's messages and
state, so that it can emit the ``STATE_SNAPSHOT`` and ``MESSAGES_SNAPSHOT`` the interrupt
boundary needs and so that :meth:`record` can hand a store everything needed to bring the
thread back. The record is persisted (a ``Persist`` effect) before the ``RUN_FINISHED`` that
announces interrupts, so no interrupt is announced that a crash could lose.

Where the rest lives (each a module of its own, named for its seam):

- :mod:`~agui_core.machine.transitions`: the table of every state change (this module
  takes each one there, and is the only one that assigns the state);
- :mod:`~agui_core.machine.admission`: resume admission, the rules that decide a client's
  input before anything changes (coverage, unknown and expired ids, replay, payloads);
- :mod:`~agui_core.machine.facts`: what the host hands in with an input (where an interrupt
  id was raised), from which admission decides ``THREAD_MISMATCH``;
- :mod:`~agui_core.machine.interrupts`: what makes an interrupt or an answer well formed,
  shared with :class:`~agui_core.machine.client.ClientMachine`;
- :mod:`~agui_core.machine.transcript`: the thread's messages and state, as events left them;
- :mod:`~agui_core.machine.history`: merging the messages a client sends back.

This module keeps the run lifecycle: a run's start, the agent's acts, its end, and the record.

No clock, no randomness, no I/O: time comes in as ``now``, ids come from the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, get_args

import attrs
import orjson

from agui_core.errors import (
    EncodeError,
    InvalidEventError,
    LocalProtocolError,
    OrderingError,
    PayloadError,
    RemoteProtocolError,
    RunErrorCode,
    format_path,
)
from agui_core.machine.admission import (
    EXPIRED_MARK,
    MAX_INTERRUPTS,
    bind_answers,
    check_entries,
    check_entry_count,
    find_replay,
    find_retry,
    fingerprint,
    partition_open,
    raised_elsewhere,
)
from agui_core.machine.effects import (
    Answer,
    Effect,
    LeaveUnrun,
    Persist,
    Reject,
    ReportDenied,
    RunTool,
    SendRecorded,
    ToolDecision,
    make_answer,
    make_emit,
    make_persist,
    make_start_agent,
)
from agui_core.machine.facts import InterruptHome
from agui_core.machine.history import (
    HistoryUpdate,
    bad_id,
    check_input_depth,
    check_input_ids,
    merge_history,
    message_id_fault,
)
from agui_core.machine.interrupts import (
    CORE_REASONS,
    BoundAnswer,
    answer_fault,
    check_answer_payload,
    check_interrupt,
    format_ids,
    make_bound_answer,
)
from agui_core.machine.journal import MAX_STEPS, Replay, StepJournal, execution_id
from agui_core.machine.jsonpatch import JsonPatchError, apply_patch
from agui_core.machine.occupancy import check_free
from agui_core.machine.ordering import StreamVerifier
from agui_core.machine.ownership import forbidden, may_write
from agui_core.machine.policy import DecisionPolicy
from agui_core.machine.quorum import cast, deciding_vote, repeats_votes
from agui_core.machine.record import (
    ANONYMOUS,
    CompletedResume,
    ExpiryDefault,
    OpenInterrupt,
    Proposal,
    ResolvedInterrupt,
    ThreadRecord,
    ToolJournalEntry,
    Vote,
    make_active_run,
    make_completed_resume,
    make_open_interrupt,
    make_proposal,
    make_resolved_interrupt,
    make_thread_record,
)
from agui_core.machine.transcript import Transcript, own_json, tool_message, wire_size
from agui_core.machine.transitions import TRANSITIONS, MachineInput, ThreadState, next_state
from agui_core.protocol import events as ev
from agui_core.protocol.codec import (
    SURROGATE,
    event_to_dict,
    json_fault,
    sendable_text,
    text_fault,
    text_fields,
    wire_keys,
)
from agui_core.protocol.frozen import maker
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import (
    JSON,
    PROTOCOL_VERSION,
    InputContent,
    Interrupt,
    Message,
    ResumeEntry,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
)
from agui_core.protocol.validation import validate_event

__all__ = [
    "CORE_REASONS",
    "DEFAULT_MAX_THREAD_BYTES",
    "DEFAULT_MAX_THREAD_MESSAGES",
    "EXPIRED_MARK",
    "MAX_INTERRUPTS",
    "RESUMES_KEPT",
    "ThreadLimits",
    "ThreadMachine",
]

# MAX_INTERRUPTS (re-exported here) is the most interrupts one run may end with, so the most
# entries a resume may carry: the codec's MAX_RESUME_ENTRIES, so that the decoder refuses a
# longer resume before the machine would. Its home is admission, which the client shares.

RESUMES_KEPT = 16
"""How many completed resumes a thread keeps for replay (rule 5), the most recent ones.

A resume older than that, sent again, is ``INTERRUPT_ALREADY_RESOLVED``: its interrupts
stay in the audit trail, which is what says they were answered. A kept resume holds its
identity (a digest per answer), outcome, result and tool results, never the conversation:
a replay that ends on an interrupt is sent the thread's current snapshots, so a thread's
record grows with its conversation and its audit trail, not with how many runs it had."""

DEFAULT_MAX_THREAD_MESSAGES = 10_000
"""The most messages a client's inputs may bring a thread to (:class:`ThreadLimits`)."""

DEFAULT_MAX_THREAD_BYTES = 32 * 1024 * 1024
"""The most bytes of messages a client's inputs may bring a thread to, 32 MiB (:class:`ThreadLimits`)."""


def _at_least_one(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{attribute.name} is a number, 1 or more, or None for no limit; not {value!r}")


@attrs.frozen(kw_only=True)
class ThreadLimits:
    """What a client may make one thread hold: ``None`` is no limit.

    An input whose new messages would take the thread past ``max_messages`` messages, or past
    ``max_bytes`` bytes of messages, is refused with ``THREAD_TOO_LARGE`` and changes nothing.
    A thread's size in bytes is the sum of its messages' sizes, each as its compact wire JSON
    (what a store keeps of it), kept as messages join and change, never by encoding the whole
    thread again; its agent state is not counted (an input replaces it, within the transport's
    frame limit, and does not add to it).

    The limits bound what clients add. The agent's own messages are the server's: a run is
    never cut short for them, so a thread may end past a limit by what its agent said; it then
    takes no more messages from clients, but an input that adds none (a resume answering its
    open interrupts, a retry, a replay) is still taken, so nothing is left unanswerable.
    """

    max_messages: int | None = attrs.field(default=DEFAULT_MAX_THREAD_MESSAGES, validator=_at_least_one)
    max_bytes: int | None = attrs.field(default=DEFAULT_MAX_THREAD_BYTES, validator=_at_least_one)


_DEFAULT_LIMITS: Final = ThreadLimits()
"""The limits of a machine given none (frozen, so one for all: a host makes a machine a run)."""

_RETRIES_KEPT = 4
"""How many ended runs that answered nothing are kept for clients retrying them by run id."""

# Events that belong to the machine, not to the agent's stream.
_RUN_EVENTS = (ev.RunStartedEvent, ev.RunFinishedEvent, ev.RunErrorEvent)
_CHUNK_EVENTS = (ev.TextMessageChunkEvent, ev.ToolCallChunkEvent, ev.ReasoningMessageChunkEvent)
_AGENT_EVENTS = frozenset(ev.EVENT_CLASSES) - {*_RUN_EVENTS, *_CHUNK_EVENTS}
"""What ``emit`` lets through (checked by class, once per event: this is the hot path)."""
_TOOL_CALL_STREAM = (ev.ToolCallStartEvent, ev.ToolCallArgsEvent, ev.ToolCallEndEvent)
_MESSAGE_EVENTS = frozenset(
    {
        ev.TextMessageStartEvent,
        ev.TextMessageContentEvent,
        ev.ToolCallStartEvent,
        ev.ToolCallArgsEvent,
        ev.ToolCallResultEvent,
        ev.ReasoningMessageStartEvent,
        ev.ReasoningMessageContentEvent,
        ev.ActivitySnapshotEvent,
    }
)
"""Events that change the thread's messages (``ACTIVITY_DELTA`` too, handled on its own)."""
_CHANGE_THE_TRANSCRIPT = frozenset(
    {ev.StateSnapshotEvent, ev.StateDeltaEvent, ev.MessagesSnapshotEvent, ev.ActivityDeltaEvent}
)
"""Events besides ``_MESSAGE_EVENTS`` that change the thread's messages or state."""
_ID: Final = "id"
_OPTIONAL_ID: Final = "optional id"
_HELD_ID: Final = "held id"
_OPTIONAL_HELD_ID: Final = "optional held id"
_TEXT: Final = "text"
_OPTIONAL_TEXT: Final = "optional text"
_OBJECT: Final = "object"
_RESULT: Final = "result"
_ROLE: Final = "role"
_MAY_BE_NONE: Final = frozenset({_OPTIONAL_ID, _OPTIONAL_HELD_ID, _OPTIONAL_TEXT, _ROLE})
"""The kinds that take ``None`` (for a role: ``assistant``)."""
_TEXT_ROLES: Final = ("developer", "system", "assistant", "user")
"""The roles a ``TEXT_MESSAGE_START`` may give its message (none: ``assistant``)."""
_KEPT: Final[Mapping[type[Any], tuple[tuple[str, str, str], ...]]] = {
    ev.TextMessageStartEvent: (
        ("message_id", "messageId", _ID),
        ("role", "role", _ROLE),
        ("name", "name", _OPTIONAL_TEXT),
    ),
    ev.TextMessageContentEvent: (("delta", "delta", _TEXT),),
    ev.ReasoningMessageStartEvent: (("message_id", "messageId", _ID),),
    ev.ReasoningMessageContentEvent: (("delta", "delta", _TEXT),),
    ev.ToolCallStartEvent: (
        ("tool_call_id", "toolCallId", _ID),
        ("tool_call_name", "toolCallName", _TEXT),
        ("parent_message_id", "parentMessageId", _OPTIONAL_HELD_ID),
    ),
    ev.ToolCallArgsEvent: (("delta", "delta", _TEXT),),
    ev.ToolCallResultEvent: (
        ("message_id", "messageId", _ID),
        ("tool_call_id", "toolCallId", _HELD_ID),
        ("content", "content", _RESULT),
    ),
    ev.ActivitySnapshotEvent: (
        ("message_id", "messageId", _ID),
        ("activity_type", "activityType", _TEXT),
        ("content", "content", _OBJECT),
    ),
}
"""What the events that write the thread's messages put in them, as (attribute, wire name, kind),
judged before anything is applied: clients send the thread's messages back with their later
inputs, so a message must be one an input can carry. An id (:data:`_ID`) is a string the input
rule takes (:func:`~agui_core.machine.history.bad_id`), :data:`_OPTIONAL_ID` one or ``None``;
:data:`_HELD_ID` (:data:`_OPTIONAL_HELD_ID`) one that names what the thread may hold already,
which it takes too (a thread saved before agents' ids were judged may hold others);
:data:`_TEXT` a string (a name, a delta, which the messages join); :data:`_OBJECT` a JSON
object; :data:`_RESULT` a tool result's content, text or content parts; :data:`_ROLE` one of
:data:`_TEXT_ROLES` or ``None``. An agent's ``MESSAGES_SNAPSHOT`` is held to its wire schema
and the id rule whole."""
_INTERRUPT_TEXT: Final = (
    ("id", "id", _TEXT),
    ("reason", "reason", _TEXT),
    ("message", "message", _OPTIONAL_TEXT),
    ("tool_call_id", "toolCallId", _OPTIONAL_TEXT),
    ("subagent_run_id", "subagentRunId", _OPTIONAL_TEXT),
)
"""An interrupt's fields that are strings on the wire, as :data:`_KEPT` has them (the id's
rule is judged next, but for an empty id, which the interrupt's own checks name as they always
did; ``toolCallId`` must also be one of the run's closed calls, and ``expiresAt`` a date-time)."""
_TEXT_OR_NONE: Final = (str, type(None))
"""The classes of an optional string, exactly (a subclass of ``str`` goes the long way)."""
_CHECKED_BEFORE_APPLIED = frozenset(
    {ev.StateDeltaEvent, ev.ActivityDeltaEvent, ev.ActivitySnapshotEvent, ev.MessagesSnapshotEvent}
)
"""Events whose result (a patched value, a nested activity) or messages (an agent's snapshot)
are checked before the ordering rules."""
_FREE_JSON_EVENTS = frozenset(
    {
        ev.ToolCallResultEvent,
        ev.StateSnapshotEvent,
        ev.StateDeltaEvent,
        ev.MessagesSnapshotEvent,
        ev.ActivitySnapshotEvent,
        ev.ActivityDeltaEvent,
        ev.RawEvent,
        ev.CustomEvent,
        ev.SubagentFinishedEvent,
    }
)
"""Events with fields of free JSON, whose nesting ``emit`` checks (any event with a
``rawEvent``, ``metadata`` or unknown keys too)."""
_WIRE_TEXT: Final[Mapping[type[Any], tuple[tuple[str, str], ...]]] = {
    cls: tuple((n, w) for n, w in text_fields(cls) if n != "type" and n not in {k[0] for k in _KEPT.get(cls, ())})
    for cls in _AGENT_EVENTS
    if cls not in _FREE_JSON_EVENTS or cls is ev.ToolCallResultEvent
}
"""The text fields of the agent's events that :data:`_KEPT` does not judge, by class: judged
for what JSON cannot carry (:func:`~agui_core.protocol.codec.text_fault`) before the event is
applied or sent, since an event that cannot be encoded would end the connection. The events
with free JSON are judged whole by :func:`~agui_core.protocol.codec.json_fault` (but a tool
result of text, which is not)."""
_EMITTING = frozenset(state for state, what in TRANSITIONS if what is MachineInput.EMIT)
"""The states a run emits in (``emit`` looks this up rather than the whole table)."""
_STATE_LEVEL = 2
"""The level of the state in the ``STATE_SNAPSHOT`` that announces it."""
_MESSAGE_CONTENT_LEVEL = 4
"""The level of a message's content in a ``MESSAGES_SNAPSHOT`` (event, messages, message)."""
_INTERRUPT_FIELD_LEVEL = 5
"""The level of an interrupt's fields in the ``RUN_FINISHED`` that raises it (event, outcome,
interrupts, interrupt)."""

# The events the machine builds itself at the boundaries of every run, built as their classes
# build them, faster (see agui_core.protocol.frozen); outcomes without fields are shared.
_run_started = maker(ev.RunStartedEvent)
_run_finished = maker(ev.RunFinishedEvent)
_state_snapshot = maker(ev.StateSnapshotEvent)
_messages_snapshot = maker(ev.MessagesSnapshotEvent)
_interrupt_outcome = maker(RunFinishedInterruptOutcome)
_SUCCESS: Final = RunFinishedSuccessOutcome()
_CANCELLED: Final = RunFinishedCancelledOutcome()


def _shown_id(value: str) -> str:
    """``value`` quoted for an error message, cut short when long (an id may be any length)."""
    return repr(value) if len(value) <= 64 else f"{value[:48]!r}... ({len(value):,} characters)"


def _unsendable(why: str) -> str:
    """Why an agent's id is refused: the rule it breaks, and what breaking it would do."""
    return f"{why} (clients send a thread's ids back with their later inputs, which could not carry this one)"


_PARTS: Final = get_args(InputContent)
"""The classes of a tool result's content parts."""


def _text_fault(wire: str, value: str) -> str | None:
    """Why the string ``value`` of the field ``wire`` is no text the wire can carry; ``None``: it is."""
    why = text_fault(value)
    return None if why is None else f"{wire} {why}"


def _kept_fault(kind: str, wire: str, value: object) -> str | None:
    """Why ``value``, given for the field ``wire`` of the :data:`_KEPT` kind ``kind``, cannot go
    into the thread (its messages, an interrupt); ``None``: it can."""
    if value is None and kind in _MAY_BE_NONE:
        return None
    if kind is _OBJECT:
        return None if isinstance(value, Mapping) else f"{wire} must be a JSON object, not {type(value).__name__}"
    if kind is _RESULT:
        if isinstance(value, str):
            return _text_fault(wire, value)
        if not isinstance(value, tuple | list):
            return f"{wire} must be a string or content parts, not {type(value).__name__}"
        for part in value:
            if not isinstance(part, _PARTS):
                kind_of = f"a {type(value).__name__} holding {type(part).__name__}"
                return f"{wire} must be a string or content parts, not {kind_of}"
        return None
    if kind is _ROLE:
        if value in _TEXT_ROLES:
            return None
        return f"{wire} must be one of {', '.join(map(repr, _TEXT_ROLES))}, not {value!r:.40}"
    if not isinstance(value, str):
        return f"{wire} must be a string, not {type(value).__name__}"
    if kind is _TEXT or kind is _OPTIONAL_TEXT:
        return _text_fault(wire, value)
    why = bad_id(value)
    return None if why is None else f"{wire} {_shown_id(value)}: {_unsendable(why)}"


def _extra_clash(messages: Sequence[Message]) -> str | None:
    """Where a message of ``messages`` (or a tool call of one) holds one of its own fields in
    ``extra``, which would overwrite that field on the wire; ``None``: none does. The wire
    schema judges the written form, and the thread keeps the objects: the two must agree."""
    for index, message in enumerate(messages):
        owners: list[tuple[tuple[str | int, ...], Any]] = [((index,), message)]
        for number, call in enumerate(getattr(message, "tool_calls", None) or ()):
            owners += [((index, "toolCalls", number), call), ((index, "toolCalls", number, "function"), call.function)]
        for path, owner in owners:
            clash = _extra_clash_of(owner)
            if clash is not None:
                return f"{format_path(('messages', *path))[2:]}: {clash}"
    return None


def _extra_clash_of(owner: Any, whose: str = "its") -> str | None:
    """Why ``owner`` (a wire object) cannot be written as it is: its ``extra`` holds one of its
    own fields' keys, which would overwrite that field on the wire; ``None``: it does not."""
    if not owner.extra:
        return None
    own = wire_keys(type(owner))
    if own.isdisjoint(owner.extra):
        return None
    return f"extra holds {format_ids(sorted(own.intersection(owner.extra)))}, {whose} own fields: set those instead"


def _answering(run: _Run, call_id: str) -> str | None:
    """The interrupt among ``run``'s answers that is bound to the tool call ``call_id``, if any."""
    for answer in run.answers:
        if answer.interrupt.tool_call_id == call_id:
            return answer.interrupt.id
    return None


def _of_this_call(entry: ToolJournalEntry, run: _Run) -> bool:
    """Whether the tool journal's ``entry`` is of the call ``run`` knows by its id, and not of an
    earlier call the agent gave the same id.

    The tool of a call behind an approval ran on the answer to one interrupt; a run whose
    answers bind the id to another interrupt is about another call (interrupt ids are never
    used twice on a thread), and so is one whose answer approves another tool than the one
    that ran under the id without an approval. A straight-line agent's step that took the id in this run's
    execution is another call than one a step of another execution started (a retry of a run
    is in the run's own execution: see :meth:`ThreadMachine._replay_for`; a call a framework
    made, which no step took, is not judged so). Entries saved before either was kept are
    taken as the call's, as they were then.
    """
    if entry.answered is not None:
        answering = _answering(run, entry.tool_call_id)
        if answering is not None:
            return answering == entry.answered
    elif entry.ran is not None:  # saved before ``answered`` was kept
        bound = run.proposals.get(entry.tool_call_id)
        if bound is not None and bound.name != entry.ran.name:
            return False  # a tool no approval gates ran under the id; the run's answer approves another
    replay = run.replay
    if entry.execution is not None and replay is not None and entry.execution != replay.execution:
        return not any(step.id == entry.tool_call_id for step in replay.taken)
    return True


def _declared(entry: ResumeEntry) -> bool:
    """Whether ``entry`` is the host's answer to an expired interrupt (see :func:`_declared_answer`)."""
    return entry.metadata is not None and entry.metadata.get(EXPIRED_MARK) == entry.status


def _declared_answer(item: OpenInterrupt) -> BoundAnswer:
    """The answer the agent declared for ``item``'s expiry, marked as the host's (:data:`EXPIRED_MARK`)."""
    default = item.on_expiry
    assert default is not None
    entry = ResumeEntry(
        interrupt_id=item.interrupt.id,
        status=default.status,
        payload=default.payload,
        metadata={EXPIRED_MARK: default.status},
    )
    return make_bound_answer(interrupt=item.interrupt, entry=entry, raised_in=item.run_id)


def _plain_result(event: ev.Event) -> bool:
    """A ``TOOL_CALL_RESULT`` whose content is text: no free JSON of its own to nest too deep."""
    return event.__class__ is ev.ToolCallResultEvent and isinstance(event.content, str)


def _without_parameters(proposal: Proposal | None) -> Proposal | None:
    if proposal is None or proposal.parameters is None:
        return proposal
    return attrs.evolve(proposal, parameters=None)


class _Run:
    """The live, mutable side of the run in progress (the record holds its frozen form).

    A plain class, not an attrs one: every event reads it, and compiled (mypyc) a plain class
    is a native one, whose fields are read as a C struct's rather than looked up by name.
    """

    __slots__ = (
        "answer_view",
        "answers",
        "bound",
        "bytes_before",
        "continuation",
        "continuation_in",
        "decided_by",
        "decided_keys",
        "decided_roles",
        "events",
        "expiry_defaults",
        "input_messages",
        "input_state",
        "lease_until",
        "messages_before",
        "messages_fresh",
        "parent_run_id",
        "proposals",
        "raised_at",
        "received_at",
        "replay",
        "run_id",
        "state_before",
        "state_fresh",
        "text_spans",
        "tool_results",
        "verifier",
        "votes",
    )

    # Not keyword-only, though always called with keywords: CPython does not specialise calls
    # to a function with keyword-only parameters.
    def __init__(
        self,
        run_id: str,
        parent_run_id: str | None,
        answers: tuple[BoundAnswer, ...],
        received_at: str,
        messages_before: tuple[Message, ...],
        bytes_before: int | None,
        state_before: JSON,
        input_messages: tuple[Message, ...] | None,
        input_state: JSON,
        verifier: StreamVerifier,
        raised_at: dict[str, str] | None = None,
        proposals: dict[str, Proposal] | None = None,
        continuation: JSON = None,
        continuation_in: JSON = None,
        lease_until: str | None = None,
        replay: Replay | None = None,
        decided_by: str | None = None,
        decided_roles: tuple[str, ...] = (),
        expiry_defaults: dict[str, ExpiryDefault] | None = None,
        decided_keys: dict[str, str] | None = None,
        votes: dict[str, tuple[Vote, ...]] | None = None,
    ) -> None:
        self.run_id = run_id
        self.parent_run_id = parent_run_id
        self.answers = answers
        self.received_at = received_at
        self.messages_before = messages_before
        self.bytes_before: int | None = bytes_before
        """The size of ``messages_before`` (see :class:`ThreadLimits`), if known."""
        self.state_before = state_before
        self.input_messages = input_messages
        self.input_state = input_state
        self.verifier = verifier
        self.raised_at: dict[str, str] = {} if raised_at is None else raised_at
        self.events: list[ev.Event] = []
        self.text_spans: list[tuple[int, str, list[str]]] = []
        """The text deltas let through by :meth:`ThreadMachine.take_text_delta`, not built as events:
        runs of them, each with the length ``events`` had before it, its message id and its deltas."""
        self.tool_results: list[ev.Event] = []
        self.messages_fresh = False
        self.state_fresh = False
        self.proposals: dict[str, Proposal] = {} if proposals is None else proposals
        """The proposals bound to the answered interrupts, by tool call id."""
        self.continuation = continuation
        """What the interrupted run kept with its interrupts; what this run keeps with its own."""
        self.continuation_in = continuation_in
        """The continuation the answered interrupts came with: what a failed run hands back."""
        self.lease_until = lease_until
        """Until when the run's host holds the thread, as the run started (renewals go to the store)."""
        self.replay = replay
        """The steps the agent takes in this run: replayed from the thread's step journal, then new."""
        self.decided_by = decided_by
        """The principal whose input started the run (who decided its answers)."""
        self.decided_roles = decided_roles
        self.expiry_defaults: dict[str, ExpiryDefault] = {} if expiry_defaults is None else expiry_defaults
        """The declared answers for expiry of the interrupts this run answers (see :meth:`ThreadMachine.fail`)."""
        self.decided_keys: dict[str, str] = {} if decided_keys is None else decided_keys
        """By interrupt id, the key whose signature on the decision verified."""
        self.votes: dict[str, tuple[Vote, ...]] = {} if votes is None else votes
        """By interrupt id, the quorum behind its answer (the last vote decided it; see
        :mod:`~agui_core.machine.quorum`)."""
        self.answer_view: tuple[Answer, ...] | None = None
        """The answers as the agent is handed them, built when first asked for."""
        self.bound: dict[str, BoundAnswer] = {
            a.interrupt.tool_call_id: a for a in answers if a.interrupt.tool_call_id is not None
        }
        """The answered tool-bound interrupts of this run, by tool call id."""


def _emitted(run: _Run) -> list[ev.Event]:
    """Every event ``run`` let through, in order: the deltas of its text spans built as events
    (once: from then on they are events of the run like the others)."""
    spans = run.text_spans
    if spans:
        events: list[ev.Event] = []
        taken = 0
        content = ev.TextMessageContentEvent
        for at, message_id, deltas in spans:
            events += run.events[taken:at]
            events += [content(message_id=message_id, delta=delta) for delta in deltas]
            taken = at
        events += run.events[taken:]
        run.events = events
        spans.clear()
    return run.events


class ThreadMachine:
    """The interrupt lifecycle of one thread. See the module docstring for how to drive it."""

    def __init__(
        self,
        thread_id: str,
        *,
        payload_validators: PayloadValidators | None = None,
        limits: ThreadLimits | None = None,
    ) -> None:
        self._thread_id = thread_id
        self._validators = payload_validators if payload_validators is not None else PayloadValidators()
        self._limits = limits if limits is not None else _DEFAULT_LIMITS
        self._version = 0
        self._state = ThreadState.IDLE
        self._transcript = Transcript()
        """The thread's messages and agent state, as the machine has applied them."""
        self._open: tuple[OpenInterrupt, ...] = ()
        self._resolved: list[ResolvedInterrupt] = []
        self._completed: list[CompletedResume] = []
        self._journal: dict[str, ToolJournalEntry] = {}
        self._displaced: list[ToolJournalEntry] = []
        """Entries of :attr:`_journal` a later call under the same id took the place of, kept
        while a retry of their run may come (see :meth:`_journaled`)."""
        self._run: _Run | None = None
        self._owner: str | None = None
        self._steps: StepJournal | None = None
        """The step journal of the execution waiting on the open interrupts (outside a run)."""
        self._acted_on: tuple[tuple[str, str, str], ...] = ()
        """The answers a failed resumed run acted on: a retry must carry the same."""
        self._acted_in: str | None = None
        """The execution of the attempt that acted on :attr:`_acted_on` (see :meth:`_replay_for`)."""
        self._acted: tuple[ResumeEntry, ...] = ()
        """The entries of :attr:`_acted_on`, for a retry of them (see :meth:`_acted_answers`)."""
        self._acted_retried = False
        """Whether the host retried :attr:`_acted` at expiry (it does once)."""

    # -- reading -------------------------------------------------------------------------

    @property
    def thread_id(self) -> str:
        return self._thread_id

    @property
    def state(self) -> ThreadState:
        return self._state

    @property
    def version(self) -> int:
        """The version of the record last handed out in a ``Persist`` effect."""
        return self._version

    @property
    def run_id(self) -> str | None:
        """The id of the run in progress, if any."""
        return self._run.run_id if self._run is not None else None

    @property
    def open_interrupts(self) -> tuple[Interrupt, ...]:
        """The interrupts waiting for an answer (none while a run is in progress)."""
        return tuple(o.interrupt for o in self._open)

    @property
    def answers(self) -> tuple[Answer, ...]:
        """The answers the run in progress carries (empty unless ``RESUMED``)."""
        run = self._run
        if run is None:
            return ()
        answers = run.answer_view
        if answers is None:
            answers = run.answer_view = tuple(self._answer(run, a.interrupt, a.entry) for a in run.answers)
        return answers

    @staticmethod
    def _answer(run: _Run, interrupt: Interrupt, entry: ResumeEntry) -> Answer:
        call_id = interrupt.tool_call_id
        return make_answer(
            interrupt=interrupt,
            entry=entry,
            proposal=run.proposals.get(call_id) if call_id is not None else None,
            continuation=run.continuation,
        )

    @property
    def owner(self) -> str | None:
        """The principal the thread belongs to (``None`` until its first accepted input)."""
        return self._owner

    def admits(
        self,
        principal: str,
        run_input: RunAgentInput | None = None,
        *,
        roles: Iterable[str] = (),
        policy: DecisionPolicy | None = None,
    ) -> bool:
        """Whether ``principal``'s input may touch this thread (see :mod:`~agui_core.machine.ownership`):
        its owner's, or, under ``policy``, an approver's resume of ``run_input`` (see
        :mod:`~agui_core.machine.policy`)."""
        if may_write(self._owner, principal):
            return True
        if run_input is None or policy is None:
            return False
        try:
            self._check_decider(run_input, principal, frozenset(roles), policy)
        except RemoteProtocolError:
            return False
        return True

    def may_decide_any(self, principal: str, *, roles: Iterable[str] = (), policy: DecisionPolicy | None) -> bool:
        """Whether ``principal`` may answer at least one open interrupt of the thread (what an
        approver may read of a thread it does not own)."""
        if policy is None:
            return False
        return bool(policy.decidable(self._open, principal=principal, roles=roles, owner=self._owner))

    def _check_decider(
        self, run_input: RunAgentInput, principal: str, roles: frozenset[str], policy: DecisionPolicy | None
    ) -> None:
        """Refuse (``FORBIDDEN``, naming nothing) an input its principal may not send: a stranger's,
        unless it is a resume whose every entry names an open interrupt the policy lets that
        principal decide; the owner's resume of an interrupt the policy keeps from the owner."""
        stranger = not may_write(self._owner, principal)
        entries = run_input.resume or ()
        if policy is None or not entries:
            if stranger:
                raise forbidden()
            return
        open_by_id = {o.interrupt.id: o for o in self._open}
        # What this principal already decided (its retry of that resume is a replay, or, when
        # the run is in progress or its host died, THREAD_BUSY or a recovery): the same resume
        # again, from the same run id.
        run_id = run_input.run_id
        mine = {
            r.interrupt.id
            for r in self._resolved
            if (r.decided_by == principal and r.answered_in == run_id)
            or any(v.principal == principal and v.run_id == run_id for v in r.votes)
        }
        run = self._run
        if run is not None and run.decided_by == principal and run.run_id == run_input.run_id:
            mine |= {a.interrupt.id for a in run.answers}
        for entry in entries:
            opened = open_by_id.get(entry.interrupt_id)
            if opened is None:
                if stranger and entry.interrupt_id not in mine:
                    raise forbidden()
                continue  # the owner's, or this principal's own decision again: the usual rules decide
            tool = opened.proposal.name if opened.proposal is not None else None
            if not policy.may_decide(opened.interrupt, tool, principal=principal, roles=roles, owner=self._owner):
                raise forbidden()

    def _check_signed(
        self, entries: Sequence[ResumeEntry], policy: DecisionPolicy, signatures: Mapping[str, str]
    ) -> None:
        """Refuse (``INVALID_SIGNATURE``) an answer to an open interrupt whose rule wants signed
        decisions, when the host found no valid signature of its decider on it."""
        open_by_id = {o.interrupt.id: o for o in self._open}
        unsigned = []
        for entry in entries:
            opened = open_by_id.get(entry.interrupt_id)
            if opened is None:
                continue  # not open: the other rules say what it is
            tool = opened.proposal.name if opened.proposal is not None else None
            if policy.rule_for(opened.interrupt, tool).signed and entry.interrupt_id not in signatures:
                unsigned.append(entry.interrupt_id)
        if unsigned:
            raise RemoteProtocolError(
                RunErrorCode.INVALID_SIGNATURE,
                f"the decision of interrupt {format_ids(unsigned)} must carry its decider's signature "
                "(metadata 'ag-ui:signature', over this thread, interrupt, status and payload, by a registered key)",
                interrupt_ids=unsigned,
            )

    @property
    def continuation(self) -> JSON:
        """The run in progress's continuation: the one its answers came with, or what it set since."""
        return None if self._run is None else self._run.continuation

    @continuation.setter
    def continuation(self, value: JSON) -> None:
        run = self._live_run(MachineInput.EMIT)
        self._check_depth(value, 1, value, "the continuation")
        run.continuation = own_json(value)
        run.answer_view = None  # the answers carry the continuation

    @property
    def messages(self) -> tuple[Message, ...]:
        """The thread's messages as the machine has tracked them."""
        return self._transcript.messages

    @property
    def limits(self) -> ThreadLimits:
        """What a client may make this thread hold."""
        return self._limits

    @property
    def message_bytes(self) -> int:
        """The size of the thread's messages in bytes, as :class:`ThreadLimits` counts it."""
        return self._transcript.size

    @property
    def agent_state(self) -> JSON:
        """The thread's agent state as the machine has tracked it."""
        return self._transcript.state

    @property
    def resolved(self) -> tuple[ResolvedInterrupt, ...]:
        """The audit trail: every interrupt closed on this thread, in order."""
        return tuple(self._resolved)

    @property
    def run_received_at(self) -> datetime | None:
        """When the input of the run in progress was received, if a run is in progress."""
        return None if self._run is None else datetime.fromisoformat(self._run.received_at)

    @property
    def run_lease_until(self) -> datetime | None:
        """Until when the run in progress holds the thread, as recorded (``None``: no lease)."""
        run = self._run
        return None if run is None or run.lease_until is None else datetime.fromisoformat(run.lease_until)

    @property
    def open_subagents(self) -> frozenset[str]:
        """The subagents the run in progress has started and not yet closed."""
        return frozenset() if self._run is None else frozenset(self._run.verifier.open_subagents)

    @property
    def tool_journal(self) -> Mapping[str, ToolJournalEntry]:
        """The tools the host ran for approved calls, by tool call id: while a run is in
        progress, only those of the calls it knows by those ids (see :meth:`_journaled`)."""
        run = self._run
        if run is None:
            return dict(self._journal)
        entries = ((call_id, self._journaled(run, call_id)) for call_id in self._journal)
        return {call_id: entry for call_id, entry in entries if entry is not None}

    def _journaled(self, run: _Run, call_id: str) -> ToolJournalEntry | None:
        """The journal's entry for ``call_id`` if it is of the call ``run`` knows by that id.

        A thread may hold two calls with one id: an agent reusing the id it gave a call (a fixed
        one, or a model provider that numbers its calls afresh every round). The tool of the
        earlier call ran; the later one is another call, whose tool has not. An earlier call's
        entry stays (:attr:`_displaced`) while its run may be retried, which finds it.
        """
        entry = self._journal.get(call_id)
        if entry is not None and _of_this_call(entry, run):
            return entry
        for earlier in reversed(self._displaced):
            if earlier.tool_call_id == call_id and _of_this_call(earlier, run):
                return earlier
        return None

    def _rewrite(self, entry: ToolJournalEntry, new: ToolJournalEntry) -> None:
        """Put ``new`` in the place of the journal's ``entry``, wherever that is kept."""
        if self._journal.get(entry.tool_call_id) is entry:
            self._journal[entry.tool_call_id] = new
        else:
            self._displaced = [new if e is entry else e for e in self._displaced]

    @property
    def replay(self) -> Replay:
        """The steps the run in progress takes (see :mod:`agui_core.machine.journal`)."""
        run = self._live_run(MachineInput.EMIT)
        assert run.replay is not None
        return run.replay

    @property
    def step_journal(self) -> StepJournal | None:
        """The step journal of the execution waiting on the open interrupts, if any."""
        return self._steps

    def knows_interrupt(self, interrupt_id: str) -> bool:
        """Whether ``interrupt_id`` was raised on this thread (open, answered or expired)."""
        return (
            any(o.interrupt.id == interrupt_id for o in self._open)
            or any(r.interrupt.id == interrupt_id for r in self._resolved)
            or (self._run is not None and any(a.interrupt.id == interrupt_id for a in self._run.answers))
        )

    def has_message(self, message_id: str) -> bool:
        """Whether the thread holds a message with id ``message_id``."""
        return self._transcript.find_message(message_id) is not None

    def holds_id(self, ident: str) -> bool:
        """Whether the thread holds a message or a tool call with id ``ident``."""
        return self._transcript.find_message(ident) is not None or self._transcript.find_tool_call(ident) is not None

    def _proposal(self, tool_call_id: str, parameters: Mapping[str, JSON] | None) -> Proposal | None:
        """The tool call ``tool_call_id`` as the thread holds it now (the agent's own, this run)."""
        return self._transcript.proposal(tool_call_id, parameters)

    def proposed_tool_call(self, tool_call_id: str) -> tuple[str, dict[str, Any]] | None:
        """The name and arguments of a tool call the thread's messages hold.

        Arguments that are not a JSON object read as ``{}``: a tool is called with keywords.
        """
        self._transcript.settle()
        call = self._transcript.find_tool_call(tool_call_id)
        if call is None:
            return None
        try:
            args = orjson.loads(call["function"]["arguments"] or "{}")
        except orjson.JSONDecodeError:
            args = {}
        return call["function"]["name"], args if isinstance(args, dict) else {}

    def record(self) -> ThreadRecord:
        """Everything about the thread, frozen; :meth:`from_record` brings it back."""
        run = self._run
        return make_thread_record(
            thread_id=self._thread_id,
            version=self._version,
            state=self._state,
            messages=self.messages if run is None else run.messages_before,
            message_bytes=self._transcript.size if run is None else run.bytes_before,
            agent_state=self._transcript.state if run is None else run.state_before,
            open_interrupts=self._open,
            resolved=tuple(self._resolved),
            completed_resumes=tuple(self._completed),
            tool_journal=(*self._displaced, *self._journal.values()),
            owner=self._owner,
            step_journal=self._steps,
            acted_on=self._acted_on,
            acted_in=self._acted_in,
            acted=self._acted,
            acted_retried=self._acted_retried,
            active_run=None
            if run is None
            else make_active_run(
                run_id=run.run_id,
                parent_run_id=run.parent_run_id,
                answers=run.answers,
                received_at=run.received_at,
                raised_at=tuple(run.raised_at.items()),
                messages_before=run.messages_before,
                state_before=run.state_before,
                input_messages=run.input_messages,
                input_state=run.input_state,
                events=tuple(_emitted(run)),
                proposals=tuple(run.proposals.values()),
                continuation=run.continuation_in,
                lease_until=run.lease_until,
                decided_by=run.decided_by,
                decided_roles=run.decided_roles,
                expiry_defaults=tuple(run.expiry_defaults.items()),
                decided_keys=tuple(run.decided_keys.items()),
                votes=tuple(run.votes.items()),
            ),
        )

    @classmethod
    def from_record(
        cls,
        record: ThreadRecord,
        *,
        payload_validators: PayloadValidators | None = None,
        limits: ThreadLimits | None = None,
    ) -> ThreadMachine:
        """A machine that continues exactly where ``record`` stood, in the middle of a run too."""
        machine = cls(record.thread_id, payload_validators=payload_validators, limits=limits)
        machine._version = record.version
        machine._state = record.state
        machine._transcript.replace(record.messages, record.message_bytes)
        machine._transcript.state = record.agent_state
        machine._open = record.open_interrupts
        machine._resolved = list(record.resolved)
        machine._completed = list(record.completed_resumes)
        for entry in record.tool_journal:  # a later entry of an id is the later call's
            earlier = machine._journal.get(entry.tool_call_id)
            if earlier is not None:
                machine._displaced.append(earlier)
            machine._journal[entry.tool_call_id] = entry
        machine._owner = record.owner
        machine._steps = record.step_journal
        machine._acted_on = record.acted_on
        machine._acted_in = record.acted_in
        machine._acted = record.acted
        machine._acted_retried = record.acted_retried
        run = record.active_run
        if run is not None:
            machine._run = _Run(
                run_id=run.run_id,
                parent_run_id=run.parent_run_id,
                answers=run.answers,
                received_at=run.received_at,
                raised_at=dict(run.raised_at),
                messages_before=run.messages_before,
                bytes_before=record.message_bytes if run.messages_before is record.messages else None,
                state_before=run.state_before,
                input_messages=run.input_messages,
                input_state=run.input_state,
                verifier=StreamVerifier(),
                proposals={p.tool_call_id: p for p in run.proposals},
                continuation=run.continuation,
                continuation_in=run.continuation,
                lease_until=run.lease_until,
                replay=machine._replay_for(run.run_id, bool(run.answers), run.answers),
                decided_by=run.decided_by,
                decided_roles=run.decided_roles,
                expiry_defaults=dict(run.expiry_defaults),
                decided_keys=dict(run.decided_keys),
                votes=dict(run.votes),
            )
            machine._adopt(run.input_messages, run.input_state)
            # What the run emitted is replayed through the same bookkeeping, so the ordering
            # checker, the tracked messages and state all stand where they stood.
            for event in run.events:
                machine._track(event)
        return machine

    # -- the client's side ----------------------------------------------------------------

    def receive_input(
        self,
        run_input: RunAgentInput,
        *,
        now: datetime,
        principal: str = ANONYMOUS,
        busy: bool = False,
        interrupt_homes: Mapping[str, InterruptHome] | None = None,
        lease_until: datetime | None = None,
        roles: Iterable[str] = (),
        policy: DecisionPolicy | None = None,
        signatures: Mapping[str, str] | None = None,
    ) -> list[Effect]:
        """Accept ``run_input`` (a new run, a resumed run or a replay) or reject it.

        A rejection returns a single :class:`~agui_core.machine.effects.Reject` whose ``code``
        names the rule (its ``event`` is the ``RUN_ERROR`` to send) and changes nothing. The
        caller hands in the facts the machine cannot know: ``now``; the ``principal`` the input
        comes from (a thread belongs to the principal whose input created it; anyone else gets
        ``FORBIDDEN``); whether another run holds the thread (``busy``: a run of this host, or
        another host's lease on it: ``THREAD_BUSY``); and, for resume entries naming interrupt
        ids this thread never raised, the thread each was raised on (``interrupt_homes``, by
        interrupt id, as the store knows it). The machine decides ``THREAD_MISMATCH`` from
        those: an id raised on another thread of the same principal is a mismatch, an id of
        another principal's thread reads as unknown, so a stranger learns nothing of it. A run
        the input starts holds the thread ``lease_until`` that instant, unless its host renews
        the lease in the store (see :meth:`close_abandoned_run`). Under a decision ``policy``
        (:mod:`~agui_core.machine.policy`), the principal's ``roles`` say which interrupts it
        may answer: an approver's resume on another's thread is taken (the resume alone: its
        messages, state, context, tools and props are not), and the owner's resume of what the
        policy keeps from the owner is ``FORBIDDEN``. The audit trail records who decided, with those roles.
        Where a rule wants signed decisions, ``signatures`` names, by interrupt id, the key
        whose signature on the entry verified (the host checks them: ``INVALID_SIGNATURE``
        for a decision without one).
        """
        if now.tzinfo is None or (lease_until is not None and lease_until.tzinfo is None):
            raise LocalProtocolError("receive_input needs aware datetimes for now and lease_until", state=self._state)
        principal = str(principal)  # the name alone: a principal object of a transport stays out of the record
        try:
            return self._accept(
                run_input,
                now,
                principal,
                busy,
                interrupt_homes or {},
                lease_until,
                frozenset(roles),
                policy,
                signatures or {},
            )
        except RemoteProtocolError as exc:
            return [Reject.from_error(exc)]

    def _accept(
        self,
        run_input: RunAgentInput,
        now: datetime,
        principal: str,
        busy: bool,
        homes: Mapping[str, InterruptHome],
        lease_until: datetime | None,
        roles: frozenset[str] = frozenset(),
        policy: DecisionPolicy | None = None,
        signatures: Mapping[str, str] | None = None,
    ) -> list[Effect]:
        # Everything up to the first mutation only reads: a rejection leaves no trace.
        if run_input.thread_id != self._thread_id:
            raise RemoteProtocolError(
                RunErrorCode.THREAD_MISMATCH,
                f"input for thread {run_input.thread_id!r} reached thread {self._thread_id!r}",
            )
        approver = not may_write(self._owner, principal)
        if policy is not None or approver:
            # Before every other rule, and naming nothing: a stranger learns nothing of the thread.
            self._check_decider(run_input, principal, roles, policy)
            if approver:
                # An approver answers, and that is all it does: the conversation, the state, the
                # context, tools and props the agent reads stay the owner's.
                run_input = RunAgentInput(
                    thread_id=run_input.thread_id,
                    run_id=run_input.run_id,
                    resume=run_input.resume,
                    protocol_version=run_input.protocol_version,
                )
        decider = (principal, tuple(sorted(roles)), dict(signatures or {}))
        in_flight = self._run.run_id if self._run is not None else None
        check_free(self._thread_id, run_input.run_id, running=in_flight, held=busy)
        entries = tuple(run_input.resume or ())
        check_entry_count(entries)
        check_input_ids(run_input)
        check_input_depth(run_input)
        check_entries(entries)
        if policy is not None and entries:
            self._check_signed(entries, policy, signatures or {})
        strangers = [
            e.interrupt_id
            for e in entries
            if raised_elsewhere(
                e.interrupt_id, thread_id=self._thread_id, homes=homes, principal=principal, known=self.knows_interrupt
            )
        ]
        if strangers:
            raise RemoteProtocolError(
                RunErrorCode.THREAD_MISMATCH,
                f"interrupt {format_ids(strangers)} belongs to another thread; resume it on the thread that raised it",
                interrupt_ids=strangers,
            )
        if entries and self._acted_on:
            self._check_acted_on(entries)
        live, expired = partition_open(self._open, now)
        if not entries:
            retried = find_retry(run_input.run_id, self._completed)
            if retried is not None:
                return self._replay(run_input, retried)
            settled = None if policy is None else self._decided_answers(live, policy)
            if settled is not None:
                # Every open interrupt was decided (by votes; a policy edit or an expiry left
                # nothing to wait for): the waiting agent resumes with those answers.
                settled, expired = self._with_declared(settled, expired, (), policy)
                return self._begin(
                    run_input,
                    now,
                    expired,
                    answers=settled,
                    principal=principal,
                    lease_until=lease_until,
                    decider=decider,
                    resumed=True,
                )
            if live:
                raise RemoteProtocolError(
                    RunErrorCode.PENDING_INTERRUPTS,
                    f"thread {self._thread_id!r} has open interrupts {format_ids(o.interrupt.id for o in live)}; "
                    "the input must carry a resume answering them",
                )
            return self._begin(
                run_input,
                now,
                expired,
                answers=(),
                principal=principal,
                lease_until=lease_until,
                decider=decider,
            )
        replay = find_replay(entries, self._resolved, self._completed)
        if replay is not None:
            return self._replay(run_input, replay)
        retry = self._acted_answers(entries, policy)
        if retry is not None:
            return self._begin(
                run_input, now, [], answers=retry, principal=principal, lease_until=lease_until, decider=decider
            )
        if policy is not None and self._in_turns(live, policy, principal, roles):
            return self._vote(run_input, now, entries, live, expired, policy, principal, roles, lease_until, decider)
        answers = bind_answers(
            entries,
            thread_id=self._thread_id,
            live=live,
            expired=expired,
            resolved=self._resolved,
            validators=self._validators,
        )
        if approver and not answers:
            # Cancelling what expired is how the owner moves on; an approver has nothing to decide.
            raise RemoteProtocolError(
                RunErrorCode.INTERRUPT_EXPIRED,
                f"interrupt {format_ids(e.interrupt_id for e in entries)} expired before the resume arrived",
                interrupt_ids=[e.interrupt_id for e in entries],
            )
        if not answers:
            # It only dismissed what expired: like an input that answers nothing, it is the
            # same run again by its runId (a client that lost the stream sends it again).
            retried = find_retry(run_input.run_id, self._completed)
            if retried is not None:
                return self._replay(run_input, retried)
        answers, expired = self._with_declared(answers, expired, entries, policy)
        return self._begin(
            run_input,
            now,
            expired,
            answers=answers,
            principal=principal,
            lease_until=lease_until,
            decider=decider,
        )

    def _with_declared(
        self,
        answers: tuple[BoundAnswer, ...],
        expired: list[OpenInterrupt],
        entries: Sequence[ResumeEntry],
        policy: DecisionPolicy | None,
    ) -> tuple[tuple[BoundAnswer, ...], list[OpenInterrupt]]:
        """``answers`` with the answers the expired interrupts the resume does not dismiss still
        get, in the order the interrupts were raised; and the expired interrupts left to close
        as expired.

        The answer a failed attempt acted on stands (a retry :meth:`_acted_answers` did not
        bind); else the one the agent declared for the expiry (see :meth:`expire`). Under a
        decision ``policy`` a person's acted answer is not filled in: whose decision it was is
        not kept, and the audit would name this resume's sender; the interrupt closes as
        expired, as before answers stood (a declared one, which is nobody's, is filled in).
        """
        if not expired:
            return answers, expired
        given = {e.interrupt_id for e in entries}
        acted = {e.interrupt_id: e for e in self._acted}
        added: list[BoundAnswer] = []
        for item in expired:
            iid = item.interrupt.id
            if iid in given:
                continue
            if iid in acted:
                if policy is None or _declared(acted[iid]):
                    added.append(make_bound_answer(interrupt=item.interrupt, entry=acted[iid], raised_in=item.run_id))
            elif item.on_expiry is not None:
                added.append(_declared_answer(item))
        if not added:
            return answers, expired
        index = {o.interrupt.id: n for n, o in enumerate(self._open)}
        ordered = sorted((*answers, *added), key=lambda a: index.get(a.interrupt.id, -1))
        kept = {a.interrupt.id for a in added}
        return tuple(ordered), [o for o in expired if o.interrupt.id not in kept]

    def _in_turns(
        self, live: Sequence[OpenInterrupt], policy: DecisionPolicy, principal: str, roles: frozenset[str]
    ) -> bool:
        """Whether the live interrupts are answered in turns (:mod:`~agui_core.machine.quorum`):
        some needs several deciders or already has votes, or this principal may not decide them all."""
        if any(o.votes or policy.rule_of(o).approvals > 1 for o in live):
            return True
        return len(policy.decidable(live, principal=principal, roles=roles, owner=self._owner)) < len(live)

    def _vote(
        self,
        run_input: RunAgentInput,
        now: datetime,
        entries: Sequence[ResumeEntry],
        live: list[OpenInterrupt],
        expired: list[OpenInterrupt],
        policy: DecisionPolicy,
        principal: str,
        roles: frozenset[str],
        lease_until: datetime | None,
        decider: tuple[str, tuple[str, ...], dict[str, str]],
    ) -> list[Effect]:
        """A resume whose answers are votes: kept, then either the agent resumed with every
        answer (the last undecided interrupt was decided) or a run of the machine's own that
        ends with the interrupts still undecided."""
        needed = {o.interrupt.id: policy.rule_of(o).approvals for o in live}
        if repeats_votes(entries, live, principal):
            settled = self._decided_answers(live, policy)
            if settled is None:
                # This decider's vote again (a retry of its run): sent what stands, counted once.
                self._state = next_state(self._state, MachineInput.REPLAY)
                return self._vote_events(run_input, policy.undecided(live), policy)
            # Everything was decided meanwhile (a policy edit lowered a quorum, say): the
            # retry resumes the agent with the answers.
            settled, expired = self._with_declared(settled, expired, entries, policy)
            return self._begin(
                run_input,
                now,
                expired,
                answers=settled,
                principal=principal,
                lease_until=lease_until,
                decider=decider,
            )
        required = [o.interrupt.id for o in policy.awaiting(live, principal=principal, roles=roles, owner=self._owner)]
        bound = bind_answers(
            entries,
            thread_id=self._thread_id,
            live=live,
            expired=expired,
            resolved=self._resolved,
            validators=self._validators,
            required=required,
        )
        if not bound and not may_write(self._owner, principal):
            raise RemoteProtocolError(
                RunErrorCode.INTERRUPT_EXPIRED,
                f"interrupt {format_ids(e.interrupt_id for e in entries)} expired before the resume arrived",
                interrupt_ids=[e.interrupt_id for e in entries],
            )
        ballot = cast(
            bound,
            open_interrupts=self._open,
            live=live,
            needed=needed,
            principal=principal,
            roles=decider[1],
            keys=decider[2],
            run_id=run_input.run_id,
            at=now.isoformat(),
        )
        history = self._merge_history(run_input)
        sizes = self._check_room(history)
        # From here on the input is accepted and the machine changes.
        self._open = ballot.open
        if ballot.answers:
            answers, expired = self._with_declared(ballot.answers, expired, entries, policy)
            return self._start(
                run_input,
                now,
                expired,
                answers=answers,
                history=history,
                sizes=sizes,
                principal=principal,
                lease_until=lease_until,
                decider=decider,
            )
        dismissed = {e.interrupt_id for e in entries}
        # One with a declared answer waits for the agent's next run (see expire), unless dismissed here.
        self._close_expired([o for o in expired if o.on_expiry is None or o.interrupt.id in dismissed])
        self._adopt(history.added or None, own_json(history.state), sizes)
        self._state = next_state(self._state, MachineInput.VOTE)
        return [self._persist(), *self._vote_events(run_input, ballot.waiting, policy)]

    def _decided_answers(self, live: Sequence[OpenInterrupt], policy: DecisionPolicy) -> tuple[BoundAnswer, ...] | None:
        """The answers of the live interrupts, in the order they were raised, when every one of
        them has been decided by its votes under ``policy``; else ``None``."""
        answers = []
        for item in live:
            decided = deciding_vote(item.votes, policy.rule_of(item).approvals) if item.votes else None
            if decided is None:
                return None
            entry = ResumeEntry(
                interrupt_id=item.interrupt.id,
                status=decided.status,
                payload=decided.payload,
                metadata=decided.metadata,
            )
            answers.append(make_bound_answer(interrupt=item.interrupt, entry=entry, raised_in=item.run_id))
        return tuple(answers) or None

    def _vote_events(
        self, run_input: RunAgentInput, waiting: Sequence[OpenInterrupt], policy: DecisionPolicy
    ) -> list[Effect]:
        """The run a vote gets: started, the thread's snapshots, and the interrupts still
        undecided, with their tallies (:meth:`~agui_core.machine.policy.DecisionPolicy.announced`)."""
        self._transcript.settle()
        verifier = StreamVerifier()
        out: list[ev.Event] = [
            _run_started(
                thread_id=self._thread_id,
                run_id=run_input.run_id,
                parent_run_id=run_input.parent_run_id,
                protocol_version=PROTOCOL_VERSION,
            ),
            _state_snapshot(snapshot=self._transcript.state),
            _messages_snapshot(messages=self.messages),
            _run_finished(
                thread_id=self._thread_id,
                run_id=run_input.run_id,
                outcome=_interrupt_outcome(interrupts=tuple(policy.announced(o) for o in waiting)),
            ),
        ]
        for event in out:
            verifier.check(event)
        return [make_emit(event=e) for e in out]

    def _check_acted_on(self, entries: Sequence[ResumeEntry]) -> None:
        """Refuse (``INTERRUPT_ALREADY_RESOLVED``) a resume that answers otherwise what an earlier
        attempt at it acted on: a tool it started ran on those answers, and a different answer
        now could not undo it, nor be told apart by the agent from the one that ran."""
        given = {identity[0]: identity for identity in fingerprint(entries)}
        changed = [acted[0] for acted in self._acted_on if acted[0] in given and given[acted[0]] != acted]
        if changed:
            raise RemoteProtocolError(
                RunErrorCode.INTERRUPT_ALREADY_RESOLVED,
                f"interrupt {format_ids(changed)} was already answered otherwise, by an attempt at this resume that "
                "acted on that answer (a tool already ran, or the agent's framework took it); send that answer again",
                interrupt_ids=changed,
            )

    def _acted_answers(
        self, entries: Sequence[ResumeEntry] | None, policy: DecisionPolicy | None
    ) -> tuple[BoundAnswer, ...] | None:
        """The answers an attempt acted on, bound to the open interrupts, when a resume of
        ``entries`` retries it (or when the host does, ``entries`` ``None``); else ``None``.

        A retry carries those answers, all or some (:meth:`_check_acted_on` refused any other):
        the attempt's fill in what it leaves out, and a deadline passed since does not refuse
        them, since they were given in time and a tool ran on them. Under a decision policy,
        where each answer is a decider's, a retry is judged by the votes as any resume is.
        """
        if not self._acted or policy is not None:
            return None
        acted = {e.interrupt_id: e for e in self._acted}
        if entries is not None:
            # A dismissal of what expired before the attempt is no answer (as for a replay).
            held = {o.interrupt.id for o in self._open}
            named = [e for e in entries if e.status != "cancelled" or e.interrupt_id in held]
            if not named or not all(e.interrupt_id in acted for e in named):
                return None
        if not all(o.interrupt.id in acted for o in self._open):
            return None
        return tuple(
            make_bound_answer(interrupt=o.interrupt, entry=acted[o.interrupt.id], raised_in=o.run_id)
            for o in self._open
        )

    def _merge_history(self, run_input: RunAgentInput) -> HistoryUpdate:
        gated = {o.interrupt.tool_call_id for o in self._open if o.interrupt.tool_call_id is not None}
        gated |= {r.interrupt.tool_call_id for r in self._resolved if r.interrupt.tool_call_id is not None}
        gated |= set(self._journal)
        entries = (*self._displaced, *self._journal.values())
        host_results = {j.result.message_id: tool_message(j.result) for j in entries if j.result}
        self._transcript.settle()
        transcript = self._transcript
        return merge_history(transcript.raw, transcript.state, run_input, gated_calls=gated, host_results=host_results)

    def _check_room(self, history: HistoryUpdate) -> tuple[int, ...] | None:
        """Refuse (``THREAD_TOO_LARGE``) messages that would take the thread past its limits.

        Returns the size of each message added, when measured (for a byte limit).
        """
        added = history.added
        if not added:
            return None  # an input that adds nothing is taken whatever the thread holds
        limits = self._limits
        held = len(self._transcript.raw)
        if limits.max_messages is not None and held + len(added) > limits.max_messages:
            raise RemoteProtocolError(
                RunErrorCode.THREAD_TOO_LARGE,
                f"thread {self._thread_id!r} holds {held} messages; the {len(added)} this input adds would take "
                f"it past its limit of {limits.max_messages} messages",
            )
        if limits.max_bytes is None:
            return None
        sizes = tuple(map(wire_size, history.wire))
        size = self._transcript.size
        if size + sum(sizes) > limits.max_bytes:
            raise RemoteProtocolError(
                RunErrorCode.THREAD_TOO_LARGE,
                f"thread {self._thread_id!r} holds {size} bytes of messages; the {sum(sizes)} bytes this input "
                f"adds would take it past its limit of {limits.max_bytes} bytes",
            )
        return sizes

    def _begin(
        self,
        run_input: RunAgentInput,
        now: datetime,
        expired: list[OpenInterrupt],
        *,
        answers: tuple[BoundAnswer, ...],
        principal: str,
        lease_until: datetime | None,
        decider: tuple[str, tuple[str, ...], dict[str, str]],
        resumed: bool | None = None,
    ) -> list[Effect]:
        """Start the run of an accepted input, once its history is merged and fits the thread's room."""
        history = self._merge_history(run_input)
        sizes = self._check_room(history)
        return self._start(
            run_input,
            now,
            expired,
            answers=answers,
            history=history,
            sizes=sizes,
            principal=principal,
            lease_until=lease_until,
            decider=decider,
            resumed=resumed,
        )

    def _start(
        self,
        run_input: RunAgentInput,
        now: datetime,
        expired: list[OpenInterrupt],
        *,
        answers: tuple[BoundAnswer, ...],
        history: HistoryUpdate,
        sizes: tuple[int, ...] | None,
        principal: str,
        lease_until: datetime | None = None,
        decider: tuple[str, tuple[str, ...], dict[str, str]] | None = None,
        resumed: bool | None = None,
        by_expiry: bool = False,
    ) -> list[Effect]:
        # From here on the input is accepted and the machine changes.
        if self._owner is None:
            self._owner = principal
        state = self._state
        raised_at: dict[str, str] = {}
        proposals: dict[str, Proposal] = {}
        continuation: JSON = None
        expiry_defaults: dict[str, ExpiryDefault] = {}
        votes: dict[str, tuple[Vote, ...]] = {}
        if answers:
            answered_ids = {a.interrupt.id for a in answers}
            answered_open = [o for o in self._open if o.interrupt.id in answered_ids]
            # Kept for a failure to give back; not for the host's own run at expiry: if that
            # fails, the interrupts come back without them and the next look closes them (no
            # retry loop).
            for item in answered_open:
                iid, call_id = item.interrupt.id, item.interrupt.tool_call_id
                if item.raised_at:
                    raised_at[iid] = item.raised_at
                # A record saved before proposals were bound has none: the thread's own copy of
                # the call stands in (clients cannot rewrite it), without parameters to check edits by.
                proposal = item.proposal or (self._proposal(call_id, None) if call_id is not None else None)
                if proposal is not None:
                    proposals[proposal.tool_call_id] = proposal
                if continuation is None:
                    continuation = item.continuation
                if item.on_expiry is not None and not by_expiry:
                    expiry_defaults[iid] = item.on_expiry
                if item.votes:
                    votes[iid] = item.votes
            self._open = tuple(o for o in self._open if o.interrupt.id not in answered_ids)
        self._close_expired(expired)
        if answers:
            state = next_state(state, MachineInput.RESUME)
        else:
            if state is ThreadState.INTERRUPTED:
                state = next_state(state, MachineInput.EXPIRE)
            state = next_state(state, MachineInput.START_RUN)
        self._state = state
        # The thread as it stood before the input: what a failed run goes back to.
        messages_before, state_before = self.messages, self._transcript.state
        bytes_before = self._transcript.size
        input_messages = history.added or None
        input_state = own_json(history.state)
        self._adopt(input_messages, input_state, sizes)
        self._run = _Run(
            run_id=run_input.run_id,
            parent_run_id=run_input.parent_run_id,
            answers=answers,
            received_at=now.isoformat(),
            raised_at=raised_at,
            messages_before=messages_before,
            bytes_before=bytes_before,
            state_before=state_before,
            input_messages=input_messages,
            input_state=input_state,
            verifier=StreamVerifier(),
            proposals=proposals,
            continuation=continuation,
            continuation_in=continuation,
            lease_until=None if lease_until is None else lease_until.isoformat(),
            # A resume replays even when all it did was dismiss questions that had expired.
            replay=self._replay_for(run_input.run_id, bool(run_input.resume) if resumed is None else resumed, answers),
            decided_by=decider[0] if decider is not None and answers else None,
            decided_roles=decider[1] if decider is not None and answers else (),
            expiry_defaults=expiry_defaults,
            decided_keys=decider[2] if decider is not None and answers else {},
            votes=votes,
        )
        started = _run_started(
            thread_id=self._thread_id,
            run_id=run_input.run_id,
            parent_run_id=run_input.parent_run_id,
            protocol_version=PROTOCOL_VERSION,
        )
        self._track(started)
        persist = self._persist()
        return [
            persist,
            make_emit(event=started),
            make_start_agent(run_input=run_input, answers=self.answers),
        ]

    def _replay_for(self, run_id: str, resumed: bool, answers: Sequence[BoundAnswer] = ()) -> Replay:
        """The steps a run takes: a resume of a waiting execution's questions replays its
        journal; any other run (a new input, even once those questions expired) starts an
        execution of its own, made from its ``runId`` so that a retry of the run is the same.

        A resume is retried by its answers, under any ``runId``: one whose answers are those an
        attempt that failed acted on (all of them, or those still open) continues that
        attempt's execution, and finds what its tools did. Other answers (the host's at expiry,
        say) start their own.
        """
        if resumed and self._steps is not None:
            return Replay(self._steps)
        execution = execution_id(self._thread_id, run_id)
        if (
            resumed
            and answers
            and self._acted_in is not None
            and set(fingerprint(a.entry for a in answers)) <= set(self._acted_on)
        ):
            execution = self._acted_in
        if not resumed:
            self._forget_acted()  # a new input: the answers an earlier attempt acted on are no one's to retry now
        self._keep_recent_executions(execution)
        return Replay(StepJournal(execution=execution))

    def _keep_recent_executions(self, starting: str) -> None:
        """Forget the tool journal entries of all but a few executions before ``starting``.

        They are what a retry of a run of theirs needs (a client sending the same ``runId``
        again after its host died); the few most recent are kept, with the execution waiting on
        the open interrupts, so a thread's record does not grow with every run that failed.
        """
        journal = self._journal
        if not journal:
            return  # no tool ran through the host yet: nothing to forget
        recent: list[str] = []
        for entry in reversed((*self._displaced, *journal.values())):
            if entry.execution is not None and entry.execution not in recent:
                recent.append(entry.execution)
        keep = {starting, *recent[:_RETRIES_KEPT]}
        if self._steps is not None:
            keep.add(self._steps.execution)
        if any(e.execution is not None and e.execution not in keep for e in journal.values()):
            self._journal = {k: e for k, e in journal.items() if e.execution is None or e.execution in keep}
        self._displaced = [e for e in self._displaced if e.execution in keep]

    def _replay(self, run_input: RunAgentInput, completed: CompletedResume) -> list[Effect]:
        # A replay sends what the run did; it takes nothing. Copies of the thread's messages
        # are what a client catching up sends, a changed one is refused as for any input, and
        # a new one would be dropped unseen: the client is told to send it on its own.
        added = self._merge_history(run_input).added
        if added:
            index = next(i for i, m in enumerate(run_input.messages) if m.id == added[0].id)
            raise RemoteProtocolError(
                RunErrorCode.HISTORY_CONFLICT,
                f"messages[{index}] (id {added[0].id!r}) is new to the thread, and this input replays run "
                f"{completed.run_id!r}, which takes no messages; send new messages in an input without that resume",
            )
        self._state = next_state(self._state, MachineInput.REPLAY)
        verifier = StreamVerifier()
        out: list[ev.Event] = [
            _run_started(
                thread_id=self._thread_id,
                run_id=run_input.run_id,
                parent_run_id=run_input.parent_run_id,
                protocol_version=PROTOCOL_VERSION,
            ),
            *completed.tool_results,
            *self._replay_snapshots(completed),
            _run_finished(
                thread_id=self._thread_id,
                run_id=run_input.run_id,
                outcome=completed.outcome,
                result=completed.result,
            ),
        ]
        for event in out:
            verifier.check(event)
        return [make_emit(event=e) for e in out]

    def _adopt(
        self,
        messages: tuple[Message, ...] | None,
        state: JSON,
        sizes: tuple[int, ...] | None = None,
    ) -> None:
        """Take what an accepted input adds: new messages appended (``sizes``: theirs, if
        measured), and a new state (``None``: keep)."""
        if messages:
            self._transcript.extend(messages, sizes)
        if state is not None:
            self._transcript.state = state

    def _replay_snapshots(self, completed: CompletedResume) -> Sequence[ev.Event]:
        """The snapshots a replay sends before an interrupt ``RUN_FINISHED``: the thread's current ones.

        Keeping each run's own would keep the conversation once per run; a client that
        replays is catching up, and the current snapshots are what it needs to answer now.
        """
        if completed.outcome.type != "interrupt":
            return ()
        return (
            _state_snapshot(snapshot=self._transcript.state),
            _messages_snapshot(messages=self.messages),
        )

    # -- the agent's side -----------------------------------------------------------------

    def _live_run(self, what: MachineInput) -> _Run:
        next_state(self._state, what)  # raises, naming the state, when there is no run
        assert self._run is not None
        return self._run

    def emit(self, event: ev.Event) -> list[Effect]:
        """Let one event of the agent's stream through, or raise ``LocalProtocolError``."""
        cls = event.__class__
        if (cls is ev.TextMessageContentEvent or cls is ev.ToolCallArgsEvent) and self._take_delta(event):
            return [make_emit(event=event)]
        run = self._run if self._state in _EMITTING else self._live_run(MachineInput.EMIT)
        assert run is not None
        if event.__class__ not in _AGENT_EVENTS:
            if isinstance(event, _RUN_EVENTS):
                why = "the run's own events come from interrupt(), finish(), fail() and cancel()"
            elif isinstance(event, _CHUNK_EVENTS):
                why = "emit START/CONTENT/END events; chunks are a transport shorthand"
            else:
                why = "not an AG-UI 1.0 event"
            raise self._refuse(event, why)
        tool_call_id = getattr(event, "tool_call_id", None)
        bound = run.bound.get(tool_call_id) if tool_call_id is not None else None
        if bound is not None:
            interrupt, entry = bound.interrupt, bound.entry
            if isinstance(event, _TOOL_CALL_STREAM):
                raise self._refuse(
                    event,
                    f"tool call {tool_call_id!r} was proposed in an earlier run and answered by "
                    f"interrupt {interrupt.id!r}; the resumed run sends only its TOOL_CALL_RESULT",
                )
            if isinstance(event, ev.ToolCallResultEvent) and entry.status == "cancelled":
                raise self._refuse(
                    event,
                    f"interrupt {interrupt.id!r} was cancelled, so tool call {tool_call_id!r} is not executed",
                )
        kept = _KEPT.get(cls)
        if kept is not None:
            for name, wire, kind in kept:
                value = getattr(event, name)
                if value.__class__ is str:  # the common cases, without a call
                    if kind is _TEXT or kind is _OPTIONAL_TEXT or kind is _RESULT:
                        if value.isascii() or SURROGATE.search(value) is None:
                            continue
                    else:
                        if kind is not _OBJECT and kind is not _ROLE and bad_id(value) is None:
                            continue
                        if (kind is _HELD_ID or kind is _OPTIONAL_HELD_ID) and self.holds_id(value):
                            continue
                elif value is None and kind in _MAY_BE_NONE:
                    continue
                fault = _kept_fault(kind, wire, value)
                if fault is not None:
                    raise self._refuse(event, fault)
        for name, wire in _WIRE_TEXT.get(cls, ()):
            value = getattr(event, name)
            if value is not None and not (value.__class__ is str and value.isascii()) and isinstance(value, str):
                fault = _text_fault(wire, value)
                if fault is not None:
                    raise self._refuse(event, fault)
        if (
            (event.__class__ in _FREE_JSON_EVENTS and not _plain_result(event))
            or event.raw_event is not None
            or event.metadata
            or event.extra
        ):
            clash = _extra_clash_of(event, "the event's")
            if clash is not None:
                raise self._refuse(event, clash)
            data = event_to_dict(event)
            self._check_depth(data, 1, event)
            if cls is ev.ToolCallResultEvent and not _plain_result(event):
                try:  # content parts: each part's fields, which the thread's tool message keeps
                    validate_event(data)
                except InvalidEventError as invalid:
                    raise self._refuse(event, invalid.message) from None
        self._track(event)
        if isinstance(event, ev.ToolCallResultEvent):
            journal = self._journaled(run, event.tool_call_id)
            if journal is not None and journal.result is None:
                self._rewrite(journal, attrs.evolve(journal, result=event))
                return [self._persist(), make_emit(event=event)]
        return [make_emit(event=event)]

    def _take_delta(self, event: ev.Event) -> bool:
        """Apply a ``TEXT_MESSAGE_CONTENT`` or ``TOOL_CALL_ARGS`` exactly as :meth:`emit` does,
        when no rule can refuse it: the streamed deltas of an open message or call, of the
        parent agent, with nothing but the delta set. ``False``: nothing was done; the event
        takes the way of every event, which applies every rule and refuses what breaks one.

        The commonest events of all, where the general path cost more than the rules it ran.
        """
        run = self._run
        # Free JSON (raw_event, metadata, unknown fields) is checked for depth by the general path.
        if run is None or self._state not in _EMITTING or event.raw_event is not None or event.metadata or event.extra:
            return False
        # A delta that is no string goes the general way too, which names what it is.
        if isinstance(event, ev.TextMessageContentEvent):
            delta = event.delta
            if (
                event.subagent_run_id is not None
                or delta.__class__ is not str
                or not (delta.isascii() or SURROGATE.search(delta) is None)
                or not run.verifier.take_text_delta(event.message_id)
            ):
                return False
            key = ("content", event.message_id)
        elif isinstance(event, ev.ToolCallArgsEvent):
            call_id = event.tool_call_id
            # A call answered by an interrupt is never open here (emit refuses its TOOL_CALL_START
            # in the resumed run), so its arguments go the general way, which refuses them.
            delta = event.delta
            if (
                event.subagent_run_id is not None
                or delta.__class__ is not str
                or not (delta.isascii() or SURROGATE.search(delta) is None)
                or not run.verifier.take_args_delta(call_id)
            ):
                return False
            key = ("arguments", call_id)
        else:
            return False
        run.events.append(event)
        self._transcript.stream_delta(key, event.delta)
        run.messages_fresh = False
        return True

    def take_text_delta(self, message_id: str, delta: str) -> bool:
        """Let ``TEXT_MESSAGE_CONTENT`` ``delta`` of ``message_id`` (of the parent agent, nothing
        else set) through without the event, when no rule can refuse it; ``True`` once it is
        applied, exactly as :meth:`emit` applies the event (the one ``Emit`` effect is left to
        the caller: send the delta). ``False``: nothing was done; :meth:`emit` the event, which
        applies every rule and raises for the one it breaks.

        For text streamed a delta at a time, where building an event and an effect per delta
        cost more than the rules. The record built while the run goes on holds the events.
        """
        run = self._run
        if (
            run is None
            or self._state not in _EMITTING
            or delta.__class__ is not str  # emit() names what else it is
            or not (delta.isascii() or SURROGATE.search(delta) is None)
            or not run.verifier.take_text_delta(message_id)
        ):
            return False
        spans = run.text_spans
        at = len(run.events)
        last = spans[-1] if spans else None
        if last is not None and last[0] == at and last[1] == message_id:
            last[2].append(delta)
        else:
            spans.append((at, message_id, [delta]))
        self._transcript.stream_text(message_id, delta)
        run.messages_fresh = False
        return True

    def tool_started(self, tool_call_id: str, *, now: datetime, ran: Proposal | None = None) -> list[Effect]:
        """Record that the host is about to run the tool of ``tool_call_id`` (``ran``: the tool
        and the arguments it runs with, for the audit trail).

        Returns the ``Persist`` that must be durable before the tool runs; the
        ``TOOL_CALL_RESULT`` emitted for it later is persisted before it is sent. Together
        they make a host that restarts never run an approved tool twice.
        """
        run = self._live_run(MachineInput.EMIT)
        if self._journaled(run, tool_call_id) is not None:
            raise LocalProtocolError(f"tool call {tool_call_id!r} was already started", state=self._state)
        if self._transcript.find_tool_call(tool_call_id) is None or tool_call_id in run.verifier.open_tool_calls:
            raise LocalProtocolError(
                f"tool call {tool_call_id!r} is not a closed tool call of this thread", state=self._state
            )
        earlier = self._journal.get(tool_call_id)
        if earlier is not None and not earlier.answered and earlier.execution is not None:
            # Another call's under the same id, whose run a client may retry: kept for it (one that
            # ran on an answer is done with: a later call under its id is bound once it was committed).
            self._displaced.append(earlier)
        self._journal[tool_call_id] = ToolJournalEntry(
            tool_call_id=tool_call_id,
            run_id=run.run_id,
            started_at=now.isoformat(),
            ran=ran,
            execution=None if run.replay is None else run.replay.execution,
            answered=_answering(run, tool_call_id) or "",
        )
        self._pin_answers(run)
        return [self._persist()]

    def _pin_answers(self, run: _Run) -> None:
        """The run acts on its answers (a side effect starts): a retry of it must carry the same."""
        if run.answers and not self._acted_on:
            self._acted_on = fingerprint(a.entry for a in run.answers)
            self._acted_in = None if run.replay is None else run.replay.execution
            self._acted = tuple(a.entry for a in run.answers)

    def _forget_acted(self) -> None:
        """No attempt's answers are pinned any more (committed, or closed without them)."""
        self._acted_on = ()
        self._acted_in = None
        self._acted = ()
        self._acted_retried = False

    @property
    def acted_retried(self) -> bool:
        """Whether the host retried, at expiry, answers a failed attempt acted on (once; see :meth:`expire`)."""
        return self._acted_retried

    def tool_decisions(self) -> tuple[ToolDecision, ...]:
        """What becomes of each gated tool call the run in progress answers, in the answers' order.

        The one place that decides it, for the host's own tools and for an adapter running a
        framework's: a call whose tool an earlier attempt at this run started is never run again
        (:class:`~agui_core.machine.effects.SendRecorded`); otherwise an approval runs what was
        proposed, or the approved edits (:class:`~agui_core.machine.effects.RunTool`), a denial
        is reported (:class:`~agui_core.machine.effects.ReportDenied`) and a cancel leaves the
        tool unrun (:class:`~agui_core.machine.effects.LeaveUnrun`). A retry that answers
        otherwise than an attempt whose tool already ran never gets here: admission refuses it
        (``INTERRUPT_ALREADY_RESOLVED``). Answers to anything but a bound tool call decide no tool.
        """
        decisions: list[ToolDecision] = []
        run = self._run
        for answer in self.answers:
            proposal = answer.proposal
            if proposal is None or answer.interrupt.reason != "tool_call":
                continue
            call_id, name = proposal.tool_call_id, proposal.name
            args = answer.tool_args or {}
            edited = answer.edited_args is not None
            started = None if run is None else self._journaled(run, call_id)
            if started is not None:
                ran = started.ran.args if started.ran is not None else args
                decisions.append(
                    SendRecorded(
                        call_id=call_id,
                        name=name,
                        args=ran,
                        result=started.result,
                        value=started.value,
                        edited=edited,
                        cancelled=answer.entry.status == "cancelled",
                    )
                )
            elif answer.entry.status == "cancelled":
                decisions.append(LeaveUnrun(call_id=call_id, name=name, args=args, status="cancelled"))
            elif answer.approved is True:
                decisions.append(RunTool(call_id=call_id, name=name, args=args, edited=edited))
            else:
                decisions.append(ReportDenied(call_id=call_id, name=name, args=args))
        return tuple(decisions)

    def bound_proposal(self, tool_call_id: str) -> Proposal | None:
        """The proposal the run in progress's answers bind to ``tool_call_id``, if any."""
        return None if self._run is None else self._run.proposals.get(tool_call_id)

    def act_on_answers(self) -> list[Effect]:
        """Say the agent is about to act on the run's answers (a framework's graph takes them).

        Returns the ``Persist`` that must be durable before it does: from then on a retry of
        this resume must carry the same answers (``INTERRUPT_ALREADY_RESOLVED`` otherwise), as
        once a tool of it started.
        """
        run = self._live_run(MachineInput.EMIT)
        if not run.answers or self._acted_on:
            return []
        self._pin_answers(run)
        return [self._persist()]

    def tool_value(self, tool_call_id: str, value: JSON) -> None:
        """Keep what the tool of ``tool_call_id`` returned (as JSON) with its journal entry.

        Saved with the ``TOOL_CALL_RESULT`` that follows, so a retry after a crash hands the
        agent the very value again, not only the text the client was sent.
        """
        run = self._live_run(MachineInput.EMIT)
        entry = self._journaled(run, tool_call_id)
        if entry is None:
            raise LocalProtocolError(f"tool call {tool_call_id!r} was not started", state=self._state)
        try:
            kept = orjson.loads(orjson.dumps(value))
        except (TypeError, orjson.JSONEncodeError):
            return  # not JSON: the result's text stands for it
        self._rewrite(entry, attrs.evolve(entry, value=kept))

    def kept_value(self, step_id: str, *, name: str, value: JSON, now: datetime) -> list[Effect]:
        """Record what the function a step ran (``ctx.once``) returned, before the agent goes on.

        Returns the ``Persist`` that must be durable before the value is used: kept with the
        thread's tool journal (never rolled back), so a retry of the run after a crash gets
        the value back instead of running the function again.
        """
        run = self._live_run(MachineInput.EMIT)
        if step_id in self._journal:
            raise LocalProtocolError(f"step {step_id!r} already has a value", state=self._state)
        try:
            kept = orjson.loads(orjson.dumps(value))
        except (TypeError, orjson.JSONEncodeError):
            fault = json_fault(value)
            why = f" ({format_path(fault[0])}: {fault[1]})" if fault is not None else ""
            raise LocalProtocolError(
                f"ctx.once({name!r}) returned {type(value).__name__}: the thread keeps its value, so it must be "
                f"JSON{why}",
                state=self._state,
            ) from None
        self._check_depth(kept, 1, kept, f"the value of {name!r}")
        self._journal[step_id] = ToolJournalEntry(
            tool_call_id=step_id,
            run_id=run.run_id,
            started_at=now.isoformat(),
            ran=make_proposal(tool_call_id=step_id, name=name, arguments="{}"),
            value=kept,
            execution=None if run.replay is None else run.replay.execution,
        )
        self._pin_answers(run)
        return [self._persist()]

    def _check_interrupt_depth(self, interrupts: Sequence[Interrupt], finished: ev.RunFinishedEvent) -> None:
        """Refuse an interrupt whose JSON would take ``finished`` past the nesting limit.

        The machine builds the rest of the event, flat; only the agent's values in each
        interrupt (its schema, metadata and unknown fields, at level 5 of the event: in
        ``outcome.interrupts[i]``) can nest, so only they are walked.
        """
        for index, interrupt in enumerate(interrupts):
            for key in interrupt.extra:  # only their values are walked below
                if not isinstance(key, str):
                    where = format_path(("outcome", "interrupts", index))
                    raise self._refuse(
                        finished, f"at {where}: not JSON: an object key that is not a string ({type(key).__name__})"
                    )
        fields = [
            (index, name, value)
            for index, interrupt in enumerate(interrupts)
            for name, value in (
                ("responseSchema", interrupt.response_schema),
                ("metadata", interrupt.metadata),
                *interrupt.extra.items(),
            )
            if value is not None
        ]
        # One walk for them all (each a member of an array in the interrupt's place); only a
        # refusal looks again, one by one, for the path to name.
        if json_fault([value for _, _, value in fields], level=_INTERRUPT_FIELD_LEVEL - 1) is None:
            return
        for index, name, value in fields:
            fault = json_fault(value, level=_INTERRUPT_FIELD_LEVEL)
            if fault is not None:
                at, why = fault
                raise self._refuse(finished, f"at {format_path(('outcome', 'interrupts', index, name, *at))}: {why}")

    def _check_depth(self, value: JSON, level: int, event: object, what: str = "") -> None:
        """Refuse ``value`` if, at ``level`` of the document that carries it, it nests too deep
        or holds what JSON cannot (a set, an object key that is not a string, ...).

        What the machine keeps it must be able to save and announce: an agent's value that
        could not be is refused here, before anything is kept, rather than fail when saved or sent.
        """
        fault = json_fault(value, level=level)
        if fault is not None:
            at, why = fault
            where = f"{what} at {format_path(at)}" if what else f"at {format_path(at)}"
            raise self._refuse(event, f"{where}: {why}")

    def _refuse(self, event: object, why: str) -> LocalProtocolError:
        name = getattr(event, "type", type(event).__name__)
        return LocalProtocolError(f"in state {self._state.name}, {name}: {why}", state=self._state, event=event)

    def _track(self, event: ev.Event) -> None:
        """Check ``event`` against the ordering rules, then apply it; all or nothing."""
        run = self._run
        assert run is not None
        cls = event.__class__
        new_state = self._transcript.state
        if cls not in _CHECKED_BEFORE_APPLIED:
            pass  # the common case: nothing to check but the ordering rules
        elif isinstance(event, ev.MessagesSnapshotEvent):
            if event.messages is not self._transcript.structured:  # the machine's own was judged as it grew
                try:
                    event_to_dict(event, validate=True)
                except EncodeError as invalid:
                    raise self._refuse(event, invalid.message) from None
                clash = _extra_clash(event.messages)
                if clash is not None:
                    raise self._refuse(event, clash)
                fault = message_id_fault(event.messages, held=self.holds_id)
                if fault is not None:
                    path, why = fault
                    raise self._refuse(event, f"{format_path(('messages', *path))[2:]}: {_unsendable(why)}")
        elif isinstance(event, ev.StateDeltaEvent):
            try:
                new_state = apply_patch(self._transcript.state, event.delta)
            except JsonPatchError as exc:
                raise self._refuse(event, f"the JSON Patch does not apply to the state: {exc}") from None
            self._check_depth(new_state, _STATE_LEVEL, event, "the patched state (as its STATE_SNAPSHOT)")
        elif isinstance(event, ev.ActivityDeltaEvent):
            target = self._transcript.find_message(event.message_id)
            if target is None:
                raise self._refuse(event, f"no activity message {event.message_id!r} to patch")
            try:
                patched = apply_patch(target.get("content"), event.patch)
            except JsonPatchError as exc:
                raise self._refuse(event, f"the JSON Patch does not apply to the activity: {exc}") from None
            if not isinstance(patched, Mapping):
                raise self._refuse(event, f"the patched activity must be a JSON object, not {type(patched).__name__}")
            self._check_depth(patched, _MESSAGE_CONTENT_LEVEL, event, "the patched activity (in MESSAGES_SNAPSHOT)")
        elif isinstance(event, ev.ActivitySnapshotEvent):
            self._check_depth(event.content, _MESSAGE_CONTENT_LEVEL, event, "the activity (in MESSAGES_SNAPSHOT)")
        try:
            run.verifier.check(event)
        except OrderingError as ordering_error:
            raise LocalProtocolError(
                f"in state {self._state.name}: {ordering_error.message}", state=self._state, event=event
            ) from None
        run.events.append(event)
        if cls in _MESSAGE_EVENTS:
            self._transcript.apply_message_event(event)
            run.messages_fresh = False
            if cls is ev.ToolCallResultEvent:
                run.tool_results.append(event)
        elif cls not in _CHANGE_THE_TRANSCRIPT:
            pass  # ends, steps, runs, custom and raw events: the ordering rules were all
        elif isinstance(event, ev.StateSnapshotEvent):
            self._transcript.state = own_json(event.snapshot)
            run.state_fresh = True
        elif isinstance(event, ev.StateDeltaEvent):
            self._transcript.state = new_state
            run.state_fresh = False
        elif isinstance(event, ev.MessagesSnapshotEvent):
            if event.messages is not self._transcript.structured:  # the machine's own snapshot is current
                self._transcript.replace(tuple(event.messages))
            run.messages_fresh = True
        elif isinstance(event, ev.ActivityDeltaEvent):
            target = self._transcript.find_message(event.message_id)
            assert target is not None
            target["content"] = patched
            self._transcript.touch(target)
            run.messages_fresh = False

    def _check_closable(self, run: _Run, what: str) -> None:
        verifier = run.verifier
        if not (
            verifier.open_text_messages
            or verifier.open_tool_calls
            or verifier.open_steps
            or verifier.open_reasoning_messages
            or verifier.open_reasoning_spans
        ):
            return  # the usual end of a run: nothing left open
        still_open = {
            "text message": verifier.open_text_messages,
            "tool call": verifier.open_tool_calls,
            "step": {name for _, name in verifier.open_steps},
            "reasoning message": verifier.open_reasoning_messages,
            "reasoning span": verifier.open_reasoning_spans,
        }
        problems = [f"{kind} {format_ids(sorted(ids))}" for kind, ids in still_open.items() if ids]
        if problems:
            raise LocalProtocolError(
                f"in state {self._state.name}: cannot {what} while {'; '.join(problems)} still open",
                state=self._state,
            )

    def _close_subagents(self, run: _Run, suspended: Mapping[str, list[str]] | None) -> list[Effect]:
        """``SUBAGENT_FINISHED`` for every subagent still open, suspended ones with their interrupts."""
        effects: list[Effect] = []
        for subagent in list(run.verifier.open_subagents):
            if suspended is None:
                closing = ev.SubagentFinishedEvent(subagent_run_id=subagent)
            else:
                ids = suspended.get(subagent)
                closing = ev.SubagentFinishedEvent(
                    subagent_run_id=subagent,
                    outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=tuple(ids) if ids else None),
                )
            self._track(closing)
            effects.append(make_emit(event=closing))
        return effects

    def _check_interrupts(self, run: _Run, interrupts: Sequence[Interrupt]) -> None:
        if not interrupts:
            raise LocalProtocolError("interrupt() needs at least one interrupt", state=self._state)
        taken = {o.interrupt.id for o in self._open} | {r.interrupt.id for r in self._resolved}
        taken |= {a.interrupt.id for a in run.answers}
        seen: set[str] = set()
        closed_calls = run.verifier.closed_tool_calls_this_run
        for interrupt in interrupts:
            if not isinstance(interrupt, Interrupt):
                raise LocalProtocolError(f"not an Interrupt: {interrupt!r}", state=self._state)
            if not (
                interrupt.id.__class__ is str
                and interrupt.reason.__class__ is str
                and interrupt.message.__class__ in _TEXT_OR_NONE
                and interrupt.tool_call_id.__class__ in _TEXT_OR_NONE
                and interrupt.subagent_run_id.__class__ in _TEXT_OR_NONE
                and interrupt.reason.isascii()
                and (interrupt.message is None or interrupt.message.isascii())
                and (interrupt.subagent_run_id is None or interrupt.subagent_run_id.isascii())
            ):  # the common case at a glance; the loop names the field
                for name, wire, kind in _INTERRUPT_TEXT:
                    fault = _kept_fault(kind, wire, getattr(interrupt, name))
                    if fault is not None:
                        raise LocalProtocolError(f"an interrupt's {fault}", state=self._state, event=interrupt)
            iid = interrupt.id

            def bad(why: str, interrupt: Interrupt = interrupt) -> LocalProtocolError:
                return LocalProtocolError(
                    f"interrupt {_shown_id(interrupt.id)}: {why}", state=self._state, event=interrupt
                )

            if iid and (iid in seen or iid in taken):
                raise bad("the id is already used on this thread; interrupt ids are unique per thread")
            seen.add(iid)
            # A client answers it by this id. (An empty one is named by the interrupt's own checks.)
            why = bad_id(iid) if iid else None
            if why is not None:
                raise bad(_unsendable(why))
            malformed = check_interrupt(interrupt, self._validators)
            if malformed is not None:
                if malformed.schema_error is not None:
                    raise malformed.schema_error  # the agent declared a schema that does not compile
                raise bad(malformed.why)
            if interrupt.tool_call_id is not None and interrupt.tool_call_id not in closed_calls:
                raise bad(
                    f"toolCallId {_shown_id(interrupt.tool_call_id)} is not a closed tool call of run "
                    f"{run.run_id!r} (send TOOL_CALL_END before interrupting)"
                )

    def _commit_answers(self, run: _Run, outcome: RunFinishedOutcome, result: JSON) -> None:
        # Kept for replay, the last few of each kind: resumes, and runs that answered nothing
        # (kept only for a client that retries the same run id).
        same_kind = [c for c in self._completed if bool(c.answers) == bool(run.answers)]
        limit = RESUMES_KEPT if run.answers else _RETRIES_KEPT
        for dropped in same_kind[: max(0, len(same_kind) - limit + 1)]:
            self._completed.remove(dropped)
        for answer in run.answers:
            interrupt, entry = answer.interrupt, answer.entry
            call_id = interrupt.tool_call_id
            journal = self._journaled(run, call_id) if call_id is not None else None
            by_expiry = _declared(entry)
            votes = run.votes.get(interrupt.id, ())
            decided_by, decided_roles, decided_key = (
                (votes[-1].principal, votes[-1].roles, votes[-1].key)
                if votes
                else (run.decided_by, run.decided_roles, run.decided_keys.get(interrupt.id))
            )
            self._resolved.append(
                make_resolved_interrupt(
                    interrupt=interrupt,
                    run_id=answer.raised_in,
                    raised_at=run.raised_at.get(interrupt.id),
                    status="expired" if by_expiry else entry.status,
                    payload=entry.payload,
                    metadata=entry.metadata,
                    answered_in=run.run_id,
                    answered_at=run.received_at,
                    outcome=outcome.type,
                    # The audit trail keeps what was proposed, not the schema its edits had to pass.
                    proposal=_without_parameters(run.proposals.get(call_id) if call_id is not None else None),
                    ran=_without_parameters(journal.ran if journal is not None else None),
                    decided_by=None if by_expiry else decided_by,
                    decided_roles=() if by_expiry else decided_roles,
                    decided_key=None if by_expiry else decided_key,
                    votes=votes,
                )
            )
        if run.answers and run.decided_by is None:
            return  # the host's own run at expiry, with declared answers: no client sent it, so none may replay it
        # The same input again is a replay: after a quorum, that input is the last decider's votes.
        cast_here = [
            ResumeEntry(interrupt_id=iid, status=v.status, payload=v.payload)
            for iid, votes in run.votes.items()
            for v in votes
            if v.run_id == run.run_id
        ]
        self._completed.append(
            make_completed_resume(
                run_id=run.run_id,
                # The host's declared answers are not what a client sends again: left out.
                answers=fingerprint(
                    cast_here if run.votes else (a.entry for a in run.answers if not _declared(a.entry))
                ),
                outcome=outcome,
                result=result,
                tool_results=tuple(run.tool_results),
            )
        )

    def _end_execution(self, run: _Run) -> None:
        """The agent's execution is over: its step journal goes, and so do the tool journal's
        entries of its steps (a retry of a run that ended is a replay of its outcome)."""
        self._steps = None
        assert run.replay is not None
        mark = f"-{run.replay.execution}-"
        if any(mark in call_id for call_id in self._journal):
            self._journal = {call_id: entry for call_id, entry in self._journal.items() if mark not in call_id}
        if self._displaced:
            self._displaced = [e for e in self._displaced if e.execution != run.replay.execution]

    def _end(self, run: _Run, finished: ev.Event, target: MachineInput) -> list[Effect]:
        self._forget_acted()  # the answers are committed: a resume of them again is a replay
        self._track(finished)
        self._state = next_state(self._state, target)
        self._run = None
        return [self._persist(), make_emit(event=finished)]

    def interrupt(
        self,
        interrupts: Sequence[Interrupt],
        *,
        now: datetime,
        continuation: JSON = None,
        edit_schemas: Mapping[str, Mapping[str, JSON]] | None = None,
        keep_steps: bool = False,
        on_expiry: Mapping[str, ExpiryDefault] | None = None,
    ) -> list[Effect]:
        """End the run with interrupts: snapshots, then persist, then ``RUN_FINISHED``.

        ``now`` is recorded as the instant the interrupts were raised. ``keep_steps``: the
        interrupts were raised by steps of a straight-line agent, whose journal is kept for
        the run that answers them to replay (otherwise it is dropped: the execution ended).
        ``continuation`` (default: the run's :attr:`continuation`) is kept with the
        interrupts, never sent, and handed back with their answers. Each ``tool_call``
        interrupt is bound to its tool call as proposed in this run; ``edit_schemas`` (by tool
        call id, the tool's parameters) are what an approval's ``editedArgs`` must then pass.
        ``on_expiry`` (by interrupt id) is the answer to give an interrupt that expires
        unanswered (see :meth:`expire`): each needs the interrupt's ``expiresAt``, and a
        resolved one a payload its schema accepts.
        """
        run = self._live_run(MachineInput.INTERRUPT)
        if now.tzinfo is None:  # before anything changes, as every refusal here is
            raise LocalProtocolError("interrupt needs an aware datetime for now", state=self._state)
        interrupts = tuple(interrupts)
        if len(interrupts) > MAX_INTERRUPTS:
            raise LocalProtocolError(
                f"a run ends with at most {MAX_INTERRUPTS} interrupts, not {len(interrupts)}", state=self._state
            )
        self._check_closable(run, "interrupt")
        self._check_interrupts(run, interrupts)
        assert run.replay is not None
        if keep_steps and len(run.replay.taken) > MAX_STEPS:
            raise LocalProtocolError(
                f"the agent waits for a person after {len(run.replay.taken)} steps; an execution keeps at most "
                f"{MAX_STEPS} (write a long conversation as one execution per input)",
                state=self._state,
            )
        outcome = _interrupt_outcome(interrupts=interrupts)
        finished = _run_finished(thread_id=self._thread_id, run_id=run.run_id, outcome=outcome)
        self._check_interrupt_depth(interrupts, finished)
        if continuation is not None:
            self._check_depth(continuation, 1, finished, "the continuation")
        kept = own_json(continuation) if continuation is not None else run.continuation
        edit_schemas = edit_schemas or {}
        for call_id, schema in edit_schemas.items():
            self._validators.check_schema(call_id, schema)
        defaults = dict(on_expiry or {})
        self._check_expiry_defaults(interrupts, defaults, edit_schemas, finished)
        suspended: dict[str, list[str]] = {}
        for interrupt in interrupts:
            if interrupt.subagent_run_id is not None:
                suspended.setdefault(interrupt.subagent_run_id, []).append(interrupt.id)
        effects = self._close_subagents(run, suspended)
        snapshots: list[ev.Event] = []
        if not run.state_fresh:
            snapshots.append(_state_snapshot(snapshot=self._transcript.state))
        if not run.messages_fresh:
            snapshots.append(_messages_snapshot(messages=self.messages))
        for snapshot in snapshots:
            self._track(snapshot)
            effects.append(make_emit(event=snapshot))
        self._commit_answers(run, outcome, None)
        raised_at = now.isoformat()
        self._open = tuple(
            make_open_interrupt(
                interrupt=i,
                run_id=run.run_id,
                raised_at=raised_at,
                proposal=self._proposal(i.tool_call_id, edit_schemas.get(i.tool_call_id))
                if i.tool_call_id is not None
                else None,
                continuation=kept,
                on_expiry=defaults.get(i.id),
            )
            for i in interrupts
        )
        assert run.replay is not None
        if keep_steps:
            self._steps = run.replay.journal()
        else:
            self._end_execution(run)
        return effects + self._end(run, finished, MachineInput.INTERRUPT)

    def finish(self, result: JSON = None) -> list[Effect]:
        """End the run with success and an optional ``result``."""
        run = self._live_run(MachineInput.FINISH)
        self._check_closable(run, "finish")
        outcome = _SUCCESS
        finished = _run_finished(thread_id=self._thread_id, run_id=run.run_id, outcome=outcome, result=result)
        if result is not None:  # the one part of this event the machine does not build itself
            fault = json_fault(result, level=2)
            if fault is not None:
                at, why = fault
                raise self._refuse(finished, f"at {format_path(('result', *at))}: {why}")
        effects = self._close_subagents(run, None)
        self._commit_answers(run, outcome, result)
        self._end_execution(run)
        return effects + self._end(run, finished, MachineInput.FINISH)

    def cancel(self) -> list[Effect]:
        """Stop the run: close what it left open, end with the ``cancelled`` outcome."""
        run = self._live_run(MachineInput.CANCEL)
        effects: list[Effect] = []
        verifier = run.verifier
        closing: list[ev.Event] = [
            *(ev.TextMessageEndEvent(message_id=m) for m in sorted(verifier.open_text_messages)),
            *(ev.ToolCallEndEvent(tool_call_id=t) for t in sorted(verifier.open_tool_calls)),
            *(ev.ReasoningMessageEndEvent(message_id=r) for r in sorted(verifier.open_reasoning_messages)),
            *(ev.ReasoningEndEvent(message_id=r) for r in sorted(verifier.open_reasoning_spans)),
            *(
                ev.StepFinishedEvent(step_name=name, subagent_run_id=owner)
                for owner, name in sorted(verifier.open_steps, key=lambda s: (s[0] or "", s[1]))
            ),
        ]
        for event in closing:
            self._track(event)
            effects.append(make_emit(event=event))
        effects += self._close_subagents(run, None)
        outcome = _CANCELLED
        self._commit_answers(run, outcome, None)
        self._end_execution(run)
        finished = _run_finished(thread_id=self._thread_id, run_id=run.run_id, outcome=outcome)
        return effects + self._end(run, finished, MachineInput.CANCEL)

    def fail(self, message: str, code: RunErrorCode = RunErrorCode.AGENT_ERROR) -> list[Effect]:
        """End the run with ``RUN_ERROR`` with ``code``; the thread goes back to where it stood before the run."""
        if not isinstance(code, RunErrorCode):
            raise TypeError(f"fail() takes a RunErrorCode, not {code!r}")
        run = self._live_run(MachineInput.FAIL)
        # An exception's text may hold what JSON cannot carry.
        error = ev.RunErrorEvent(message=sendable_text(message), code=code.value)
        run.verifier.check(error)
        self._state = next_state(self._state, MachineInput.FAIL)
        self._transcript.replace(run.messages_before, run.bytes_before)
        self._transcript.state = run.state_before
        self._open = self._open + tuple(
            make_open_interrupt(
                interrupt=a.interrupt,
                run_id=a.raised_in,
                raised_at=run.raised_at.get(a.interrupt.id),
                proposal=run.proposals.get(a.interrupt.tool_call_id) if a.interrupt.tool_call_id is not None else None,
                continuation=run.continuation_in,
                on_expiry=run.expiry_defaults.get(a.interrupt.id),
                # The votes cast before this run's input stand; its own go with the run.
                votes=tuple(
                    v
                    for v in run.votes.get(a.interrupt.id, ())
                    if not (v.run_id == run.run_id and v.principal == run.decided_by)
                ),
            )
            for a in run.answers
        )
        self._run = None
        return [self._persist(), make_emit(event=error)]

    def _close_expired(self, expired: Sequence[OpenInterrupt]) -> None:
        """Close ``expired`` (open interrupts whose ``expiresAt`` has passed) in the audit trail."""
        if not expired:
            return
        for item in expired:
            self._resolved.append(
                make_resolved_interrupt(
                    interrupt=item.interrupt,
                    run_id=item.run_id,
                    raised_at=item.raised_at,
                    status="expired",
                    answered_at=item.interrupt.expires_at,
                    votes=item.votes,
                )
            )
        self._open = tuple(o for o in self._open if o not in expired)

    def _check_expiry_defaults(
        self,
        interrupts: Sequence[Interrupt],
        defaults: Mapping[str, ExpiryDefault],
        edit_schemas: Mapping[str, Mapping[str, JSON]],
        finished: ev.RunFinishedEvent,
    ) -> None:
        by_id = {i.id: i for i in interrupts}
        for iid, default in defaults.items():
            interrupt = by_id.get(iid)
            if interrupt is None:
                raise self._refuse(finished, f"on_expiry names interrupt {iid!r}, which this run does not raise")
            if interrupt.expires_at is None:
                raise self._refuse(finished, f"interrupt {iid!r} has an answer for its expiry but no expiresAt")
            fault = answer_fault(default.status, default.payload, None)
            if fault is None and default.payload is not None:  # kept in the record until it is used
                found = json_fault(default.payload, level=2)
                fault = None if found is None else f"at {format_path(('payload', *found[0]))}: {found[1]}"
            if fault is not None:
                raise self._refuse(finished, f"the answer for the expiry of interrupt {iid!r}: {fault}")
            if default.status == "resolved":
                parameters = edit_schemas.get(interrupt.tool_call_id) if interrupt.tool_call_id is not None else None
                try:
                    check_answer_payload(interrupt, default.payload, self._validators, edit_parameters=parameters)
                except PayloadError as exc:
                    refused = self._refuse(
                        finished, f"the answer for the expiry of interrupt {iid!r} fails its schema: {exc.message}"
                    )
                    # Set as well as raised ``from``: compiled (mypyc), ``raise ... from`` drops the cause.
                    refused.__cause__ = exc
                    raise refused from exc

    def expire(
        self,
        now: datetime,
        *,
        run_id: str | None = None,
        lease_until: datetime | None = None,
        policy: DecisionPolicy | None = None,
    ) -> list[Effect]:
        """Close the open interrupts whose ``expiresAt`` has passed at ``now``, with no input.

        What a host does by itself when an interrupt expires (active expiry): the same closing
        an input would bring (each one ``expired`` in the audit trail, at its ``expiresAt``),
        and the thread ``IDLE`` once none is left open. A late resume of one of them is still
        refused with ``INTERRUPT_EXPIRED``. Nothing while a run holds the thread or none has
        expired (no effects); else the one effect is the record to persist.

        When the last open interrupts have all expired and the agent declared an answer for the
        expiry of some (``on_expiry`` of :meth:`interrupt`), and the host names a new run
        (``run_id``, held until ``lease_until``), the run starts instead: the agent is resumed
        with those answers (their metadata names their status under :data:`EXPIRED_MARK`), the others closed as expired;
        the effects are those of an accepted resume, :class:`StartAgent` last. While others are
        still live, an expired interrupt with a declared answer stays open, and the agent's next
        resume (a person's of the others, or this one once they expire) carries that answer. Each answered
        interrupt is ``expired`` in the audit trail, with its answer, once the run ends. Under
        a decision ``policy``, the interrupts still open that their votes decided count as
        answered (:mod:`~agui_core.machine.quorum`): once the others expire, the run resumes the
        agent with their answers too.

        After a resume that acted on a person's answers failed, none of this applies: the run
        is the host's retry of those answers, at the first deadline (see :meth:`_expire_acted`).
        """
        if now.tzinfo is None or (lease_until is not None and lease_until.tzinfo is None):
            raise LocalProtocolError("expire needs aware datetimes for now and lease_until", state=self._state)
        if self._run is not None or self._state is not ThreadState.INTERRUPTED:
            return []
        live, expired = partition_open(self._open, now)
        if not expired:
            return []
        if self._acted_on:
            return self._expire_acted(now, run_id, expired, lease_until, policy)
        defaulted = [o for o in expired if o.on_expiry is not None]
        # With interrupts still live, the run starts only if their votes decided them all.
        settled = () if not live else None if policy is None else self._decided_answers(live, policy)
        if run_id is not None and (defaulted or settled) and settled is not None:
            return self._resume_on_expiry(run_id, now, defaulted, expired, lease_until, settled)
        if live:
            # One with an answer declared for its expiry stays open until the agent resumes
            # (when the others are answered, or expire too), and gets that answer then.
            expired = [o for o in expired if o.on_expiry is None]
            if not expired:
                return []
        self._close_expired(expired)
        if not self._open:
            self._state = next_state(self._state, MachineInput.EXPIRE)
        return [self._persist()]

    def _expire_acted(
        self,
        now: datetime,
        run_id: str | None,
        expired: list[OpenInterrupt],
        lease_until: datetime | None,
        policy: DecisionPolicy | None,
    ) -> list[Effect]:
        """:meth:`expire` when a person answered the open interrupts in time and an attempt
        acted on the answers before it failed: the deadline does not undo them, and no answer
        declared for expiry applies (it would contradict what already ran).

        The host's run retries the resume with those answers, once (as the thread's owner, who
        gave them): the agent continues the attempt and finds what its tools did. After that
        (it failed too, or it could not be made: the answers were not kept, or a decision
        policy's deciders gave them), a client may still retry them while an interrupt is
        live; once every one has expired, they all close as expired.
        """
        answers = None if run_id is None or self._acted_retried else self._acted_answers(None, policy)
        if run_id is not None and answers is not None:
            self._acted_retried = True
            run_input = RunAgentInput(thread_id=self._thread_id, run_id=run_id, resume=tuple(a.entry for a in answers))
            owner = self._owner if self._owner is not None else ANONYMOUS
            return self._start(
                run_input,
                now,
                [],
                answers=answers,
                history=self._merge_history(run_input),
                sizes=None,
                principal=owner,
                lease_until=lease_until,
                decider=(owner, (), {}),
            )
        if len(expired) < len(self._open):
            return []
        self._close_expired(expired)
        self._forget_acted()
        self._state = next_state(self._state, MachineInput.EXPIRE)
        return [self._persist()]

    def _resume_on_expiry(
        self,
        run_id: str,
        now: datetime,
        defaulted: list[OpenInterrupt],
        expired: list[OpenInterrupt],
        lease_until: datetime | None,
        settled: tuple[BoundAnswer, ...] = (),
    ) -> list[Effect]:
        answers = (*(_declared_answer(o) for o in defaulted), *settled)
        run_input = RunAgentInput(thread_id=self._thread_id, run_id=run_id, resume=tuple(a.entry for a in answers))
        history = self._merge_history(run_input)
        rest = [o for o in expired if o.on_expiry is None]
        return self._start(
            run_input,
            now,
            rest,
            answers=answers,
            history=history,
            sizes=None,
            principal=self._owner if self._owner is not None else ANONYMOUS,
            lease_until=lease_until,
            by_expiry=True,
        )

    def close_abandoned_run(self, now: datetime, *, run_timeout: timedelta | None = None) -> list[Effect]:
        """Fail the run in progress if its host is gone, as :meth:`fail` does; else do nothing.

        A run's host is gone once the run's lease has run out at ``now``: a live host renews
        it. A run saved without a lease (by a host from before leases) is taken for gone once
        ``run_timeout`` has passed since it was received (``None``: never). What the host
        learns from the store goes in with the record: the lease and the run holding it.
        """
        if now.tzinfo is None:
            raise LocalProtocolError("close_abandoned_run needs an aware datetime for now", state=self._state)
        run = self._run
        if run is None:
            return []
        if run.lease_until is not None:
            if now < datetime.fromisoformat(run.lease_until):
                return []
        elif run_timeout is None or now - datetime.fromisoformat(run.received_at) < run_timeout:
            return []
        return self.fail("the host running this run stopped before it ended", RunErrorCode.AGENT_ERROR)

    def _persist(self) -> Persist:
        self._version += 1
        return make_persist(record=self.record())
