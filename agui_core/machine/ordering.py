"""The ordering rules of one thread's event stream, as the reference client enforces them.

:class:`StreamVerifier` follows the events of one thread, run after run, and raises
:class:`~agui_core.errors.OrderingError` at the first event that breaks a rule. The rules are
those of ``verifyEvents`` in ``@ag-ui/client`` 1.0.0 (SPEC section 7): where the reference
throws, the verifier raises; where the reference accepts, it accepts. Both machines use it:
the thread machine to refuse emitting a stream the client would reject, the client machine to
check what it receives.

The reference client expands chunk events (``TEXT_MESSAGE_CHUNK``, ``TOOL_CALL_CHUNK``,
``REASONING_MESSAGE_CHUNK``) into start/content/end events before it verifies them
(``transformChunks``). The verifier does the same bookkeeping: it follows one open chunk
stream per *lane* (the subagent a chunk is attributed to, ``None`` for the parent agent),
checks each event the expansion would produce, and closes a lane where the reference would
(an explicit event closes its own lane; ``RUN_STARTED``, ``RUN_FINISHED``, ``RUN_ERROR`` and
``MESSAGES_SNAPSHOT`` close every lane; ``SUBAGENT_FINISHED``/``SUBAGENT_ERROR`` close the
subagent's lane). A message opened by chunks is closed by the expansion, never by an explicit
``TEXT_MESSAGE_END``: the reference synthesises its own end first and the explicit one then
names a message that is no longer open. :attr:`StreamVerifier.chunk_streams` shows the lanes.

An :class:`~agui_core.protocol.events.UnknownEvent` is ignored (it still takes its place in
the stream's numbering): the reference drops unknown types before verifying. Translate retired
``THINKING_*`` events with ``ThinkingTranslator`` first if they should count.

A rejected event changes nothing: the verifier is left as if the event had not been offered.

Rules, by their stable names (``OrderingError.rule``):

Runs
    ``run-not-started``
        The first event of the stream is neither ``RUN_STARTED`` nor ``RUN_ERROR``.
    ``run-errored``
        Anything but ``RUN_STARTED`` after ``RUN_ERROR``.
    ``run-finished``
        Anything but ``RUN_STARTED`` or ``RUN_ERROR`` after ``RUN_FINISHED``.
    ``run-already-active``
        ``RUN_STARTED`` while a run is active.

``RUN_FINISHED`` while something is open (checked in this order)
    ``step-open``, ``text-message-open``, ``reasoning-message-open``, ``reasoning-open``,
    ``tool-call-open``, ``subagent-open``.

Brackets (text messages, tool calls, reasoning spans and messages: by id; steps: by owner and
name, so a subagent's step ``"tools"`` and the parent's are different steps)
    ``text-message-already-open``, ``text-message-not-open``,
    ``tool-call-already-open``, ``tool-call-not-open``,
    ``reasoning-already-open``, ``reasoning-not-open`` (``REASONING_START``/``REASONING_END``),
    ``reasoning-message-already-open``, ``reasoning-message-not-open``,
    ``step-already-open``, ``step-not-open``,
    ``step-owner-mismatch`` (``STEP_FINISHED`` for a step that is open, but under another owner).

Attribution (``subagentRunId``; absent means "whoever owns the entity" and never disagrees)
    ``owner-mismatch``
        An event's ``subagentRunId`` disagrees with the recorded owner of the entity it
        continues, per entity kind (text message, tool call, reasoning, activity), openers
        included: a reopen after close keeps the first owner. Owners live for the whole run;
        they are recorded by the openers, ``TOOL_CALL_RESULT`` (the tool message it mints,
        newest wins), ``ACTIVITY_SNAPSHOT`` (unless ``replace`` is false for a known
        activity), ``MESSAGES_SNAPSHOT`` (replaces recorded owners) and ``RUN_STARTED.input``
        (fills only unrecorded ids); a message's tool calls get the message's owner.
        ``REASONING_ENCRYPTED_VALUE`` is checked against the owner its ``subtype`` names
        (``tool-call``: the tool call; ``message``: the text or reasoning message) and opens
        and closes nothing; ``ACTIVITY_DELTA`` is checked against the activity's owner and
        needs no snapshot before it.
    ``tool-call-parent-mismatch``
        ``TOOL_CALL_START`` whose owner (its tag, or, untagged, the owner it inherits from
        ``parentMessageId``) disagrees with its parent message's owner or with the owner the
        tool call id already has.

Subagents
    ``subagent-missing-field``
        A lifecycle event without its ``subagentRunId`` (or ``SUBAGENT_STARTED`` without
        ``name``, ``SUBAGENT_ERROR`` without ``message``): only an in-process producer that
        bypassed the types can send one.
    ``subagent-outcome-invalid``
        ``SUBAGENT_FINISHED`` whose outcome is not success/suspended, or whose
        ``interruptIds`` hold a non-string (same bypass).
    ``subagent-already-active``, ``subagent-reused`` (one ``subagentRunId`` started twice in
    a run, even after it finished), ``subagent-parent-not-started`` (``parentSubagentRunId``
    never started in this run), ``subagent-not-active`` (finished/error for a subagent that is
    not active).

Chunk expansion
    ``chunk-missing-id`` (a chunk that opens a stream has no id), ``chunk-missing-name`` (a
    ``TOOL_CALL_CHUNK`` that opens a tool call has no ``toolCallName``), ``chunk-ambiguous``
    (an id-less, untagged chunk while several lanes have a stream of its kind open),
    ``chunk-owner-mismatch`` (a chunk's tag disagrees with the lane its id is open in),
    ``chunk-field-mismatch`` (a continuation repeats ``role``, ``name``, ``toolCallName`` or
    ``parentMessageId`` with another value than its opener's).

Accepted, as the reference accepts them: ``RUN_ERROR`` right after ``RUN_FINISHED``;
``TOOL_CALL_RESULT`` for any tool call id, including one opened and closed in an earlier run
(how a resumed run answers a tool-bound interrupt); reopening a closed text message, tool call
or reasoning id under the same owner; state, custom and raw events anywhere in a run; a tag
naming a subagent that has finished or never started.

Not checked here, because a typed event cannot carry them: the reference's refusals of
``null`` on optional fields (``subagentRunId: null`` on events, messages and interrupts, null
lifecycle fields). Decoding rejects those (:mod:`agui_core.protocol.validation`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, ClassVar, Final, Literal, NoReturn, TypeAlias

from agui_core.errors import OrderingError
from agui_core.protocol.events import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    Event,
    MessagesSnapshotEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageRole,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UnknownEvent,
)
from agui_core.protocol.types import Message

__all__ = ["ChunkKind", "Owner", "StreamVerifier"]

ChunkKind: TypeAlias = Literal["text", "tool", "reasoning"]
"""The kind of stream a chunk lane assembles."""

Owner: TypeAlias = str | None
"""Who an entity belongs to: a ``subagentRunId``, or ``None`` for the parent agent."""

_CHUNK_TYPES = frozenset({"TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK"})
# Events that close the chunk lane of their own subagentRunId before they are checked.
_OWN_LANE_CLOSERS = frozenset(
    {
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "CUSTOM",
        "STEP_STARTED",
        "STEP_FINISHED",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
    }
)
# Events about the run as a whole: every lane closes before them.
_ALL_LANE_CLOSERS = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"})
_SUBAGENT_TERMINALS = frozenset({"SUBAGENT_FINISHED", "SUBAGENT_ERROR"})
_OWNER_MAPS = ("message_owners", "tool_call_owners", "activity_owners", "reasoning_owners")


def _who(owner: Owner) -> str:
    return "the parent agent" if owner is None else f"subagent {owner!r}"


def _ids(ids: Iterable[str]) -> str:
    return ", ".join(repr(i) for i in ids)


class _Lane:
    """One chunk stream being assembled: what its opener established."""

    __slots__ = ("entity_id", "kind", "name", "owner", "parent_message_id", "role")

    def __init__(
        self,
        kind: ChunkKind,
        entity_id: str,
        owner: Owner,
        *,
        role: str | None = None,
        name: str | None = None,
        parent_message_id: str | None = None,
    ) -> None:
        self.kind = kind
        self.entity_id = entity_id
        self.owner = owner
        self.role = role
        # The text message's name, or the tool call's toolCallName.
        self.name = name
        self.parent_message_id = parent_message_id


# The verifier state's fields, named once: its slots, and what a copy copies (a compiled class's
# __slots__ cannot be read back, so the copy reads this tuple, not the class).
_STATE_FIELDS: Final = (
    "activity_owners",
    "closed_subagents",
    "closed_tool_calls",
    "errored",
    "finished",
    "index",
    "lanes",
    "message_owners",
    "messages",
    "reasoning_messages",
    "reasoning_owners",
    "reasoning_spans",
    "run_id",
    "seen_first",
    "started",
    "steps",
    "subagents",
    "tool_call_owners",
    "tool_calls",
)


class _State:
    """Everything the verifier knows; copied whole to undo an event that fails midway."""

    __slots__ = _STATE_FIELDS

    def __init__(self) -> None:
        self.index = 0
        self.seen_first = False
        self.started = False
        self.finished = False
        self.errored = False
        self.run_id: str | None = None
        # Open entities; dicts used as insertion-ordered sets, so messages list ids in the
        # order they opened.
        self.messages: dict[str, None] = {}
        self.tool_calls: dict[str, None] = {}
        self.closed_tool_calls: dict[str, None] = {}
        self.reasoning_spans: dict[str, None] = {}
        self.reasoning_messages: dict[str, None] = {}
        self.steps: dict[tuple[Owner, str], None] = {}
        self.subagents: dict[str, None] = {}
        self.closed_subagents: dict[str, None] = {}
        # Owners per entity kind, kept for the whole run (ids are unique only within a kind).
        self.message_owners: dict[str, Owner] = {}
        self.tool_call_owners: dict[str, Owner] = {}
        self.activity_owners: dict[str, Owner] = {}
        self.reasoning_owners: dict[str, Owner] = {}
        self.lanes: dict[Owner, _Lane] = {}

    def copy(self, *, owners: bool = True) -> _State:
        """A copy to work on; with ``owners=False`` the owner maps are shared, not copied.

        The owner maps hold a whole history (seeded from snapshots and the input echo), so an
        undo copies them only when it must: see :meth:`owner_sizes`.
        """
        other = _State.__new__(_State)
        for name in _STATE_FIELDS:
            value = getattr(self, name)
            # Lanes are never changed in place, so a shallow copy of every dict suffices.
            if isinstance(value, dict) and (owners or name not in _OWNER_MAPS):
                value = value.copy()
            setattr(other, name, value)
        return other

    def owner_sizes(self) -> tuple[int, ...]:
        return tuple(len(getattr(self, name)) for name in _OWNER_MAPS)

    def trim_owners(self, sizes: tuple[int, ...]) -> None:
        """Forget the owners recorded since :meth:`owner_sizes` gave ``sizes``.

        Enough to undo a failed expansion: the events an expansion adds before the one that
        fails are closers and openers, which only ever record the owner of an id that had none
        (an insertion, and dicts pop their newest key first); whatever overwrites an owner is
        an event's own handler, which checks everything before it changes anything.
        """
        for name, size in zip(_OWNER_MAPS, sizes, strict=True):
            owners: dict[str, Owner] = getattr(self, name)
            while len(owners) > size:
                owners.popitem()

    def new_run(self) -> None:
        for name in (
            "messages",
            "tool_calls",
            "closed_tool_calls",
            "reasoning_spans",
            "reasoning_messages",
            "steps",
            "subagents",
            "closed_subagents",
            "message_owners",
            "tool_call_owners",
            "activity_owners",
            "reasoning_owners",
        ):
            setattr(self, name, {})
        self.finished = False
        self.errored = False


class StreamVerifier:
    """Follows one thread's event stream (several runs, one after another) and raises
    :class:`~agui_core.errors.OrderingError` at the first event that breaks a rule.

    The read-only views (``open_text_messages`` and the like) describe the current run, or the
    last one once it has ended; they are live views, not copies.
    """

    _HANDLERS: ClassVar[dict[str, Callable[[StreamVerifier, Any, str], None]]]

    def __init__(self) -> None:
        self._s = _State()
        # The event being checked, and its position, for the error.
        self._origin: object = None

    # --- the public surface ----------------------------------------------------------------

    def check(self, event: Event | UnknownEvent) -> None:
        """Take ``event`` as the next event of the stream, or raise ``OrderingError``."""
        state = self._s
        if isinstance(event, UnknownEvent):
            state.index += 1
            return
        self._origin = event
        etype = event.type
        if etype in _CHUNK_TYPES or state.lanes:
            # The event may stand for several checked events (chunk expansion, lanes closed
            # before it); check them on a copy so a failure midway leaves nothing behind.
            sizes = state.owner_sizes()
            self._s = state.copy(owners=False)
            try:
                for expanded in self._expand(event, etype):
                    self._check_one(expanded, expanded.type, etype)
            except BaseException:
                self._s = state
                state.trim_owners(sizes)
                raise
        else:
            # Every handler checks before it changes anything.
            self._check_one(event, etype, etype)
        self._s.index += 1

    def take_text_delta(self, message_id: str) -> bool:
        """Take a ``TEXT_MESSAGE_CONTENT`` of ``message_id`` with no ``subagentRunId`` as the next
        event, without the event, when no rule can refuse it: the run is active, the message is
        open, and no chunk lane is open (an event closes its lane first). ``False``: nothing
        was taken; :meth:`check` the event, which applies every rule."""
        s = self._s
        if s.lanes or not s.seen_first or s.errored or s.finished or message_id not in s.messages:
            return False
        s.index += 1
        return True

    def take_args_delta(self, tool_call_id: str) -> bool:
        """Take a ``TOOL_CALL_ARGS`` of ``tool_call_id`` with no ``subagentRunId`` as the next
        event, without checking the event, when no rule can refuse it: the run is active, the
        call is open, and no chunk lane is open. ``False``: nothing was taken; :meth:`check`
        the event, which applies every rule."""
        s = self._s
        if s.lanes or not s.seen_first or s.errored or s.finished or tool_call_id not in s.tool_calls:
            return False
        s.index += 1
        return True

    def would_accept(self, event: Event | UnknownEvent) -> OrderingError | None:
        """The error ``check(event)`` would raise now, or ``None``; changes nothing."""
        state = self._s
        self._s = state.copy()
        try:
            self.check(event)
        except OrderingError as error:
            return error
        finally:
            self._s = state
        return None

    def would_finish_ok(self) -> OrderingError | None:
        """What ``RUN_FINISHED`` would break right now (``None``: nothing).

        The error's ``event`` is a placeholder ``RUN_FINISHED``; use :meth:`would_accept` with
        the real event to check that one.
        """
        run_id = self._s.run_id or ""
        return self.would_accept(RunFinishedEvent(thread_id="", run_id=run_id))

    @property
    def index(self) -> int:
        """How many events the stream has had so far: the index the next event gets."""
        return self._s.index

    @property
    def run_active(self) -> bool:
        """A run has started and has not finished or errored."""
        s = self._s
        return s.started and not s.finished and not s.errored

    @property
    def run_finished(self) -> bool:
        """The last run ended with ``RUN_FINISHED``."""
        return self._s.finished

    @property
    def run_errored(self) -> bool:
        """The last run (or the stream's lone first event) was ``RUN_ERROR``."""
        return self._s.errored

    @property
    def run_id(self) -> str | None:
        """The ``runId`` of the current (or last) run, ``None`` before any ``RUN_STARTED``."""
        return self._s.run_id

    @property
    def open_text_messages(self) -> AbstractSet[str]:
        """Ids of the text messages open now (chunk-opened ones included)."""
        return self._s.messages.keys()

    @property
    def open_tool_calls(self) -> AbstractSet[str]:
        """Ids of the tool calls open now (chunk-opened ones included)."""
        return self._s.tool_calls.keys()

    @property
    def closed_tool_calls_this_run(self) -> AbstractSet[str]:
        """Ids of the tool calls opened and closed in the current run (and not reopened)."""
        return self._s.closed_tool_calls.keys()

    @property
    def open_steps(self) -> AbstractSet[tuple[Owner, str]]:
        """The open steps, as ``(owner, stepName)`` with ``owner`` ``None`` for the parent."""
        return self._s.steps.keys()

    @property
    def open_subagents(self) -> AbstractSet[str]:
        """``subagentRunId`` of the subagents started and not yet finished in this run."""
        return self._s.subagents.keys()

    @property
    def open_reasoning_spans(self) -> AbstractSet[str]:
        """Ids of the reasoning spans (``REASONING_START``) open now."""
        return self._s.reasoning_spans.keys()

    @property
    def open_reasoning_messages(self) -> AbstractSet[str]:
        """Ids of the reasoning messages (``REASONING_MESSAGE_START``) open now."""
        return self._s.reasoning_messages.keys()

    @property
    def chunk_streams(self) -> Mapping[Owner, tuple[ChunkKind, str]]:
        """The chunk streams being assembled: lane owner -> (kind, entity id)."""
        return {owner: (lane.kind, lane.entity_id) for owner, lane in self._s.lanes.items()}

    # --- chunk expansion -------------------------------------------------------------------

    def _expand(self, event: Event, etype: str) -> list[Event]:
        """The events the reference pipeline would verify in place of ``event``."""
        if etype == "TEXT_MESSAGE_CHUNK":
            return self._expand_text(event)  # type: ignore[arg-type]
        if etype == "TOOL_CALL_CHUNK":
            return self._expand_tool(event)  # type: ignore[arg-type]
        if etype == "REASONING_MESSAGE_CHUNK":
            return self._expand_reasoning(event)  # type: ignore[arg-type]
        if etype in _ALL_LANE_CLOSERS:
            closing: list[Event] = []
            for owner in list(self._s.lanes):
                closing.extend(self._close_lane(owner))
            return [*closing, event]
        if etype in _OWN_LANE_CLOSERS:
            return [*self._close_lane(event.subagent_run_id), event]  # type: ignore[union-attr]
        if etype in _SUBAGENT_TERMINALS:
            owner = event.subagent_run_id  # type: ignore[union-attr]
            if isinstance(owner, str):
                return [*self._close_lane(owner), event]
        return [event]

    def _close_lane(self, owner: Owner) -> list[Event]:
        lane = self._s.lanes.pop(owner, None)
        if lane is None:
            return []
        if lane.kind == "text":
            return [TextMessageEndEvent(message_id=lane.entity_id, subagent_run_id=lane.owner)]
        if lane.kind == "tool":
            return [ToolCallEndEvent(tool_call_id=lane.entity_id, subagent_run_id=lane.owner)]
        return [ReasoningMessageEndEvent(message_id=lane.entity_id, subagent_run_id=lane.owner)]

    def _resolve_lane(self, kind: ChunkKind, entity_id: str | None, tag: Owner, label: str) -> Owner:
        """The lane a chunk belongs to (the reference infers it when the chunk omits its id)."""
        lanes = self._s.lanes
        if entity_id is not None:
            for owner, lane in lanes.items():
                if lane.kind == kind and lane.entity_id == entity_id:
                    if tag is not None and tag != owner:
                        self._fail(
                            "chunk-owner-mismatch",
                            f"{label} for {kind} stream {entity_id!r} attributed to subagent "
                            f"{tag!r}, but that stream is open for {_who(owner)}",
                        )
                    return owner
            return tag
        if tag is not None:
            return tag
        parent = lanes.get(None)
        if parent is not None and parent.kind == kind:
            return None
        candidates = [owner for owner, lane in lanes.items() if lane.kind == kind]
        if len(candidates) > 1:
            self._fail(
                "chunk-ambiguous",
                f"{label} with neither an id nor a subagentRunId while {len(candidates)} lanes "
                f"have an open {kind} stream",
            )
        return candidates[0] if candidates else None

    def _agree(self, label: str, lane: _Lane, field: str, incoming: str | None, established: str | None) -> None:
        if incoming is not None and incoming != established:
            self._fail(
                "chunk-field-mismatch",
                f"{label} repeats {field} {incoming!r} for {lane.kind} stream {lane.entity_id!r}, "
                f"whose opener set {'nothing' if established is None else repr(established)}",
            )

    def _expand_text(self, chunk: TextMessageChunkEvent) -> list[Event]:
        label = chunk.type
        tag = chunk.subagent_run_id
        key = self._resolve_lane("text", chunk.message_id, tag, label)
        lane = self._s.lanes.get(key)
        out: list[Event] = []
        if lane is not None and lane.kind == "text" and chunk.message_id in (None, lane.entity_id):
            self._agree(label, lane, "role", chunk.role, lane.role)
            self._agree(label, lane, "name", chunk.name, lane.name)
        else:
            out.extend(self._close_lane(key))
            if chunk.message_id is None:
                self._fail("chunk-missing-id", f"{label} opens a text message but has no messageId")
            role: TextMessageRole = chunk.role if chunk.role is not None else "assistant"
            lane = _Lane("text", chunk.message_id, tag, role=role, name=chunk.name)
            self._s.lanes[key] = lane
            out.append(
                TextMessageStartEvent(message_id=chunk.message_id, role=role, name=chunk.name, subagent_run_id=tag)
            )
        if chunk.delta is not None or chunk.raw_event is not None or (not out and chunk.metadata is not None):
            out.append(
                TextMessageContentEvent(
                    message_id=lane.entity_id,
                    delta=chunk.delta or "",
                    subagent_run_id=tag if tag is not None else lane.owner,
                )
            )
        return out

    def _expand_tool(self, chunk: ToolCallChunkEvent) -> list[Event]:
        label = chunk.type
        tag = chunk.subagent_run_id
        key = self._resolve_lane("tool", chunk.tool_call_id, tag, label)
        lane = self._s.lanes.get(key)
        out: list[Event] = []
        if lane is not None and lane.kind == "tool" and chunk.tool_call_id in (None, lane.entity_id):
            self._agree(label, lane, "toolCallName", chunk.tool_call_name, lane.name)
            self._agree(label, lane, "parentMessageId", chunk.parent_message_id, lane.parent_message_id)
        else:
            out.extend(self._close_lane(key))
            if chunk.tool_call_id is None:
                self._fail("chunk-missing-id", f"{label} opens a tool call but has no toolCallId")
            if chunk.tool_call_name is None:
                self._fail(
                    "chunk-missing-name",
                    f"{label} opens tool call {chunk.tool_call_id!r} but has no toolCallName",
                )
            lane = _Lane(
                "tool",
                chunk.tool_call_id,
                tag,
                name=chunk.tool_call_name,
                parent_message_id=chunk.parent_message_id,
            )
            self._s.lanes[key] = lane
            out.append(
                ToolCallStartEvent(
                    tool_call_id=chunk.tool_call_id,
                    tool_call_name=chunk.tool_call_name,
                    parent_message_id=chunk.parent_message_id,
                    subagent_run_id=tag,
                )
            )
        if chunk.delta is not None or chunk.raw_event is not None or (not out and chunk.metadata is not None):
            out.append(
                ToolCallArgsEvent(
                    tool_call_id=lane.entity_id,
                    delta=chunk.delta or "",
                    subagent_run_id=tag if tag is not None else lane.owner,
                )
            )
        return out

    def _expand_reasoning(self, chunk: ReasoningMessageChunkEvent) -> list[Event]:
        label = chunk.type
        tag = chunk.subagent_run_id
        key = self._resolve_lane("reasoning", chunk.message_id, tag, label)
        lane = self._s.lanes.get(key)
        out: list[Event] = []
        if lane is None or lane.kind != "reasoning" or chunk.message_id not in (None, lane.entity_id):
            out.extend(self._close_lane(key))
            if chunk.message_id is None:
                self._fail("chunk-missing-id", f"{label} opens a reasoning message but has no messageId")
            lane = _Lane("reasoning", chunk.message_id, tag)
            self._s.lanes[key] = lane
            out.append(ReasoningMessageStartEvent(message_id=chunk.message_id, subagent_run_id=tag))
        if chunk.delta is not None or chunk.raw_event is not None or (not out and chunk.metadata is not None):
            out.append(
                ReasoningMessageContentEvent(
                    message_id=lane.entity_id,
                    delta=chunk.delta or "",
                    subagent_run_id=tag if tag is not None else lane.owner,
                )
            )
        return out

    # --- one event -------------------------------------------------------------------------

    def _fail(self, rule: str, message: str) -> NoReturn:
        raise OrderingError(rule, message, event=self._origin, index=self._s.index)

    def _check_one(self, event: Event, etype: str, origin_type: str) -> None:
        """Check one (possibly synthesised) event, then record it."""
        s = self._s
        label = etype if etype == origin_type else f"{etype} (expanded from {origin_type})"
        if s.errored and etype != "RUN_STARTED":
            self._fail("run-errored", f"{label} after RUN_ERROR; only a new RUN_STARTED may follow")
        if s.finished and etype != "RUN_STARTED" and etype != "RUN_ERROR":
            self._fail(
                "run-finished",
                f"{label} after RUN_FINISHED; only a new RUN_STARTED (or RUN_ERROR) may follow",
            )
        if not s.seen_first:
            if etype != "RUN_STARTED" and etype != "RUN_ERROR":
                self._fail(
                    "run-not-started",
                    f"{label} as the first event; a stream starts with RUN_STARTED (or a lone RUN_ERROR)",
                )
        elif etype == "RUN_STARTED" and s.started and not s.finished and not s.errored:
            self._fail(
                "run-already-active",
                f"RUN_STARTED while run {s.run_id!r} is still active; end it with RUN_FINISHED or RUN_ERROR first",
            )
        handler = self._HANDLERS.get(etype)
        if handler is not None:
            handler(self, event, label)
        s.seen_first = True

    def _tag_error(self, label: str, tag: Owner, owners: dict[str, Owner], kind: str, entity_id: str) -> None:
        """Refuse a tag that disagrees with the entity's recorded owner (absent never does)."""
        if tag is None or entity_id not in owners:
            return
        owner = owners[entity_id]
        if owner != tag:
            self._fail(
                "owner-mismatch",
                f"{label} for {kind} {entity_id!r} attributed to subagent {tag!r}, but the "
                f"{kind} belongs to {_who(owner)}",
            )

    # text messages

    def _text_start(self, event: TextMessageStartEvent, label: str) -> None:
        s = self._s
        mid = event.message_id
        if mid in s.messages:
            self._fail(
                "text-message-already-open",
                f"{label} for text message {mid!r} which is already open",
            )
        self._tag_error(label, event.subagent_run_id, s.message_owners, "text message", mid)
        s.messages[mid] = None
        # First writer keeps the id: an untagged reopen must not hand it to the parent.
        s.message_owners.setdefault(mid, event.subagent_run_id)

    def _text_continue(self, event: TextMessageContentEvent | TextMessageEndEvent, label: str) -> None:
        s = self._s
        mid = event.message_id
        if mid not in s.messages:
            self._fail("text-message-not-open", f"{label} for text message {mid!r} which is not open")
        self._tag_error(label, event.subagent_run_id, s.message_owners, "text message", mid)
        if event.type == "TEXT_MESSAGE_END":
            del s.messages[mid]

    # tool calls

    def _tool_start(self, event: ToolCallStartEvent, label: str) -> None:
        s = self._s
        tid = event.tool_call_id
        tag = event.subagent_run_id
        if tid in s.tool_calls:
            self._fail("tool-call-already-open", f"{label} for tool call {tid!r} which is already open")
        # An untagged call belongs to whoever owns the message that carries it.
        parent = event.parent_message_id
        has_parent_owner = parent is not None and parent in s.message_owners
        inherited = s.message_owners[parent] if parent is not None and has_parent_owner else None
        if has_parent_owner and tag is not None and tag != inherited:
            self._fail(
                "tool-call-parent-mismatch",
                f"{label} for tool call {tid!r} attributed to subagent {tag!r}, but its "
                f"parent message {parent!r} belongs to {_who(inherited)}",
            )
        known = tid in s.tool_call_owners
        if known:
            existing = s.tool_call_owners[tid]
            self._tag_error(label, tag, s.tool_call_owners, "tool call", tid)
            if tag is None and has_parent_owner and inherited != existing:
                self._fail(
                    "tool-call-parent-mismatch",
                    f"{label} for tool call {tid!r}, which belongs to {_who(existing)}, under "
                    f"parent message {parent!r}, which belongs to {_who(inherited)}",
                )
        s.tool_calls[tid] = None
        s.closed_tool_calls.pop(tid, None)
        if not known:
            s.tool_call_owners[tid] = tag if tag is not None else inherited

    def _tool_continue(self, event: ToolCallArgsEvent | ToolCallEndEvent, label: str) -> None:
        s = self._s
        tid = event.tool_call_id
        if tid not in s.tool_calls:
            self._fail("tool-call-not-open", f"{label} for tool call {tid!r} which is not open")
        self._tag_error(label, event.subagent_run_id, s.tool_call_owners, "tool call", tid)
        if event.type == "TOOL_CALL_END":
            del s.tool_calls[tid]
            s.closed_tool_calls[tid] = None

    def _tool_result(self, event: ToolCallResultEvent, label: str) -> None:
        # No ordering rule: a result may name any tool call, of this run or an earlier one.
        # It mints a tool message, whose owner is the result's own tag (newest wins).
        self._s.message_owners[event.message_id] = event.subagent_run_id

    # steps

    def _step_started(self, event: StepStartedEvent, label: str) -> None:
        key = (event.subagent_run_id, event.step_name)
        if key in self._s.steps:
            self._fail(
                "step-already-open",
                f"{label} for step {event.step_name!r} of {_who(key[0])} which is already open",
            )
        self._s.steps[key] = None

    def _step_finished(self, event: StepFinishedEvent, label: str) -> None:
        s = self._s
        owner, name = key = (event.subagent_run_id, event.step_name)
        if key not in s.steps:
            for other, other_name in s.steps:
                if other_name == name and other != owner:
                    self._fail(
                        "step-owner-mismatch",
                        f"{label} for step {name!r} attributed to {_who(owner)}, but that step "
                        f"is open under {_who(other)}",
                    )
            self._fail("step-not-open", f"{label} for step {name!r} of {_who(owner)} which is not open")
        del s.steps[key]

    # activities

    def _activity_snapshot(self, event: ActivitySnapshotEvent, label: str) -> None:
        owners = self._s.activity_owners
        # Only a replacing snapshot (or the first one) re-mints the activity and so re-owns it.
        if event.message_id not in owners or event.replace is not False:
            owners[event.message_id] = event.subagent_run_id

    def _activity_delta(self, event: ActivityDeltaEvent, label: str) -> None:
        self._tag_error(label, event.subagent_run_id, self._s.activity_owners, "activity", event.message_id)

    # reasoning

    def _reasoning_start(self, event: ReasoningStartEvent | ReasoningMessageStartEvent, label: str) -> None:
        s = self._s
        mid = event.message_id
        span = event.type == "REASONING_START"
        open_ = s.reasoning_spans if span else s.reasoning_messages
        if mid in open_:
            rule = "reasoning-already-open" if span else "reasoning-message-already-open"
            what = "reasoning span" if span else "reasoning message"
            self._fail(rule, f"{label} for {what} {mid!r} which is already open")
        # A span and the message inside it share one owner record (often one id).
        self._tag_error(label, event.subagent_run_id, s.reasoning_owners, "reasoning message", mid)
        open_[mid] = None
        s.reasoning_owners.setdefault(mid, event.subagent_run_id)

    def _reasoning_continue(
        self,
        event: ReasoningMessageContentEvent | ReasoningMessageEndEvent | ReasoningEndEvent,
        label: str,
    ) -> None:
        s = self._s
        mid = event.message_id
        span = event.type == "REASONING_END"
        open_ = s.reasoning_spans if span else s.reasoning_messages
        if mid not in open_:
            rule = "reasoning-not-open" if span else "reasoning-message-not-open"
            what = "reasoning span" if span else "reasoning message"
            self._fail(rule, f"{label} for {what} {mid!r} which is not open")
        self._tag_error(label, event.subagent_run_id, s.reasoning_owners, "reasoning message", mid)
        if event.type != "REASONING_MESSAGE_CONTENT":
            del open_[mid]

    def _encrypted_value(self, event: ReasoningEncryptedValueEvent, label: str) -> None:
        s = self._s
        eid = event.entity_id
        if event.subtype == "tool-call":
            self._tag_error(label, event.subagent_run_id, s.tool_call_owners, "tool call", eid)
        elif event.subtype == "message":
            # Ids are unique per kind, so at most one of the two message kinds knows this id.
            owners = s.message_owners if eid in s.message_owners else s.reasoning_owners
            self._tag_error(label, event.subagent_run_id, owners, "message", eid)
        else:
            self._tag_error(label, event.subagent_run_id, s.reasoning_owners, "reasoning message", eid)

    # subagents

    def _subagent_started(self, event: SubagentStartedEvent, label: str) -> None:
        s = self._s
        sid = event.subagent_run_id
        if not isinstance(sid, str):
            self._fail("subagent-missing-field", f"{label} without a subagentRunId")
        if not isinstance(event.name, str):
            self._fail("subagent-missing-field", f"{label} for subagent {sid!r} without a name")
        if sid in s.subagents:
            self._fail("subagent-already-active", f"{label} for subagent {sid!r} which is already active")
        if sid in s.closed_subagents:
            self._fail(
                "subagent-reused",
                f"{label} for subagent {sid!r} which already finished in this run; "
                "a subagentRunId names one invocation",
            )
        parent = event.parent_subagent_run_id
        if parent is not None and parent not in s.subagents and parent not in s.closed_subagents:
            self._fail(
                "subagent-parent-not-started",
                f"{label} for subagent {sid!r} whose parentSubagentRunId {parent!r} has not started in this run",
            )
        s.subagents[sid] = None

    def _subagent_ended(self, event: SubagentFinishedEvent | SubagentErrorEvent, label: str) -> None:
        s = self._s
        sid = event.subagent_run_id
        if not isinstance(sid, str):
            self._fail("subagent-missing-field", f"{label} without a subagentRunId")
        if isinstance(event, SubagentErrorEvent):
            if not isinstance(event.message, str):
                self._fail("subagent-missing-field", f"{label} for subagent {sid!r} without a message")
        elif event.outcome is not None:
            kind = getattr(event.outcome, "type", None)
            ids = getattr(event.outcome, "interrupt_ids", None) or ()
            if kind not in ("success", "suspended"):
                self._fail(
                    "subagent-outcome-invalid",
                    f"{label} for subagent {sid!r} with outcome type {kind!r}; it is success or suspended",
                )
            if any(not isinstance(i, str) for i in ids):
                self._fail(
                    "subagent-outcome-invalid",
                    f"{label} for subagent {sid!r} with a non-string interrupt id",
                )
        if sid not in s.subagents:
            self._fail("subagent-not-active", f"{label} for subagent {sid!r} which is not active")
        del s.subagents[sid]
        s.closed_subagents[sid] = None

    # snapshots and runs

    def _seed_owners(self, messages: Iterable[Message], authoritative: bool) -> None:
        """Record the owners of replayed messages and of their tool calls."""
        s = self._s
        for message in messages:
            role = message.role
            owners = (
                s.reasoning_owners
                if role == "reasoning"
                else s.activity_owners
                if role == "activity"
                else s.message_owners
            )
            owner = message.subagent_run_id
            if authoritative or message.id not in owners:
                owners[message.id] = owner
            for call in getattr(message, "tool_calls", None) or ():
                if authoritative or call.id not in s.tool_call_owners:
                    s.tool_call_owners[call.id] = owner

    def _messages_snapshot(self, event: MessagesSnapshotEvent, label: str) -> None:
        self._seed_owners(event.messages, authoritative=True)

    def _run_started(self, event: RunStartedEvent, label: str) -> None:
        s = self._s
        if s.finished or s.errored:
            s.new_run()
        s.started = True
        s.run_id = event.run_id
        if event.input is not None:
            self._seed_owners(event.input.messages, authoritative=False)

    def _run_finished(self, event: RunFinishedEvent, label: str) -> None:
        s = self._s
        if s.steps:
            names = ", ".join(
                repr(name) if owner is None else f"{name!r} (subagent {owner!r})" for owner, name in s.steps
            )
            self._fail("step-open", f"{label} while steps are still open: {names}")
        if s.messages:
            self._fail(
                "text-message-open",
                f"{label} while text messages are still open: {_ids(s.messages)}",
            )
        if s.reasoning_messages:
            self._fail(
                "reasoning-message-open",
                f"{label} while reasoning messages are still open: {_ids(s.reasoning_messages)}",
            )
        if s.reasoning_spans:
            self._fail(
                "reasoning-open",
                f"{label} while reasoning spans are still open: {_ids(s.reasoning_spans)}",
            )
        if s.tool_calls:
            self._fail("tool-call-open", f"{label} while tool calls are still open: {_ids(s.tool_calls)}")
        if s.subagents:
            self._fail("subagent-open", f"{label} while subagents are still active: {_ids(s.subagents)}")
        s.finished = True

    def _run_error(self, event: object, label: str) -> None:
        self._s.errored = True


# Each event type's check, looked up once per event (a class-level table: building bound
# methods per verifier cost more than the checks of a short run).
StreamVerifier._HANDLERS = {
    "TEXT_MESSAGE_START": StreamVerifier._text_start,
    "TEXT_MESSAGE_CONTENT": StreamVerifier._text_continue,
    "TEXT_MESSAGE_END": StreamVerifier._text_continue,
    "TOOL_CALL_START": StreamVerifier._tool_start,
    "TOOL_CALL_ARGS": StreamVerifier._tool_continue,
    "TOOL_CALL_END": StreamVerifier._tool_continue,
    "TOOL_CALL_RESULT": StreamVerifier._tool_result,
    "STEP_STARTED": StreamVerifier._step_started,
    "STEP_FINISHED": StreamVerifier._step_finished,
    "ACTIVITY_SNAPSHOT": StreamVerifier._activity_snapshot,
    "ACTIVITY_DELTA": StreamVerifier._activity_delta,
    "REASONING_START": StreamVerifier._reasoning_start,
    "REASONING_MESSAGE_START": StreamVerifier._reasoning_start,
    "REASONING_MESSAGE_CONTENT": StreamVerifier._reasoning_continue,
    "REASONING_MESSAGE_END": StreamVerifier._reasoning_continue,
    "REASONING_END": StreamVerifier._reasoning_continue,
    "REASONING_ENCRYPTED_VALUE": StreamVerifier._encrypted_value,
    "SUBAGENT_STARTED": StreamVerifier._subagent_started,
    "SUBAGENT_FINISHED": StreamVerifier._subagent_ended,
    "SUBAGENT_ERROR": StreamVerifier._subagent_ended,
    "MESSAGES_SNAPSHOT": StreamVerifier._messages_snapshot,
    "RUN_STARTED": StreamVerifier._run_started,
    "RUN_FINISHED": StreamVerifier._run_finished,
    "RUN_ERROR": StreamVerifier._run_error,
}
