"""The 31 AG-UI 1.0 events, a generic event for types this version does not know, and a
translator for the retired ``THINKING_*`` events of older producers.

Events are frozen, slotted, keyword-only attrs classes named as in the reference Python SDK.
``type`` is fixed by the class. Fields shared by every event (``timestamp``, ``raw_event``,
``metadata``) and the subagent attribution (``subagent_run_id``) come last, so the fields that
make each event what it is read first in a repr.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeAlias

import attrs

from agui_core.protocol.types import (
    EMPTY,
    JSON,
    InputContent,
    Message,
    RunAgentInput,
    RunFinishedOutcome,
    SubagentFinishedOutcome,
    TokenUsage,
)

__all__ = [
    "EVENT_CLASSES",
    "EVENT_CLASS_BY_TYPE",
    "RUN_END_CLASSES",
    "ActivityDeltaEvent",
    "ActivitySnapshotEvent",
    "CustomEvent",
    "Event",
    "EventType",
    "MessagesSnapshotEvent",
    "RawEvent",
    "ReasoningEncryptedValueEvent",
    "ReasoningEndEvent",
    "ReasoningMessageChunkEvent",
    "ReasoningMessageContentEvent",
    "ReasoningMessageEndEvent",
    "ReasoningMessageStartEvent",
    "ReasoningStartEvent",
    "RunErrorEvent",
    "RunFinishedEvent",
    "RunStartedEvent",
    "StateDeltaEvent",
    "StateSnapshotEvent",
    "StepFinishedEvent",
    "StepStartedEvent",
    "SubagentErrorEvent",
    "SubagentFinishedEvent",
    "SubagentStartedEvent",
    "TextMessageChunkEvent",
    "TextMessageContentEvent",
    "TextMessageEndEvent",
    "TextMessageRole",
    "TextMessageStartEvent",
    "ThinkingTranslator",
    "ToolCallArgsEvent",
    "ToolCallChunkEvent",
    "ToolCallEndEvent",
    "ToolCallResultEvent",
    "ToolCallStartEvent",
    "UnknownEvent",
]

TextMessageRole: TypeAlias = Literal["developer", "system", "assistant", "user"]


def _extra() -> Any:
    return attrs.field(default=EMPTY, repr=False)


@attrs.frozen(kw_only=True)
class TextMessageStartEvent:
    """Opens a streamed text message."""

    type: Literal["TEXT_MESSAGE_START"] = attrs.field(default="TEXT_MESSAGE_START", init=False)
    message_id: str
    role: TextMessageRole | None = None
    name: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class TextMessageContentEvent:
    """Appends a fragment to a streamed text message."""

    type: Literal["TEXT_MESSAGE_CONTENT"] = attrs.field(default="TEXT_MESSAGE_CONTENT", init=False)
    message_id: str
    delta: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class TextMessageEndEvent:
    """Closes a streamed text message."""

    type: Literal["TEXT_MESSAGE_END"] = attrs.field(default="TEXT_MESSAGE_END", init=False)
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class TextMessageChunkEvent:
    """Shorthand for a start, content and end sequence."""

    type: Literal["TEXT_MESSAGE_CHUNK"] = attrs.field(default="TEXT_MESSAGE_CHUNK", init=False)
    message_id: str | None = None
    role: TextMessageRole | None = None
    delta: str | None = None
    name: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolCallStartEvent:
    """Opens a tool call."""

    type: Literal["TOOL_CALL_START"] = attrs.field(default="TOOL_CALL_START", init=False)
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolCallArgsEvent:
    """Appends a fragment of a tool call's JSON arguments."""

    type: Literal["TOOL_CALL_ARGS"] = attrs.field(default="TOOL_CALL_ARGS", init=False)
    tool_call_id: str
    delta: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolCallEndEvent:
    """Closes a tool call: its arguments are complete."""

    type: Literal["TOOL_CALL_END"] = attrs.field(default="TOOL_CALL_END", init=False)
    tool_call_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolCallChunkEvent:
    """Shorthand for a tool call's start, args and end sequence."""

    type: Literal["TOOL_CALL_CHUNK"] = attrs.field(default="TOOL_CALL_CHUNK", init=False)
    tool_call_id: str | None = None
    tool_call_name: str | None = None
    parent_message_id: str | None = None
    delta: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolCallResultEvent:
    """Carries what a tool returned, as a new tool message."""

    type: Literal["TOOL_CALL_RESULT"] = attrs.field(default="TOOL_CALL_RESULT", init=False)
    message_id: str
    tool_call_id: str
    content: str | tuple[InputContent, ...]
    role: Literal["tool"] | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class StateSnapshotEvent:
    """Replaces the agent state whole."""

    type: Literal["STATE_SNAPSHOT"] = attrs.field(default="STATE_SNAPSHOT", init=False)
    snapshot: JSON
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class StateDeltaEvent:
    """Changes the agent state by a JSON Patch (RFC 6902)."""

    type: Literal["STATE_DELTA"] = attrs.field(default="STATE_DELTA", init=False)
    delta: tuple[Mapping[str, JSON], ...]
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MessagesSnapshotEvent:
    """The complete list of messages the producer owns, in order."""

    type: Literal["MESSAGES_SNAPSHOT"] = attrs.field(default="MESSAGES_SNAPSHOT", init=False)
    messages: tuple[Message, ...]
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ActivitySnapshotEvent:
    """Reports structured progress that is not conversation content."""

    type: Literal["ACTIVITY_SNAPSHOT"] = attrs.field(default="ACTIVITY_SNAPSHOT", init=False)
    message_id: str
    activity_type: str
    content: Mapping[str, JSON]
    replace: bool | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ActivityDeltaEvent:
    """Changes an activity message's content by a JSON Patch."""

    type: Literal["ACTIVITY_DELTA"] = attrs.field(default="ACTIVITY_DELTA", init=False)
    message_id: str
    activity_type: str
    patch: tuple[Mapping[str, JSON], ...]
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RawEvent:
    """Passes a provider-native event through untranslated."""

    type: Literal["RAW"] = attrs.field(default="RAW", init=False)
    event: JSON
    source: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class CustomEvent:
    """An application's own event."""

    type: Literal["CUSTOM"] = attrs.field(default="CUSTOM", init=False)
    name: str
    value: JSON
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RunStartedEvent:
    """Opens a run."""

    type: Literal["RUN_STARTED"] = attrs.field(default="RUN_STARTED", init=False)
    thread_id: str
    run_id: str
    protocol_version: str | None = None
    parent_run_id: str | None = None
    input: RunAgentInput | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RunFinishedEvent:
    """Closes a run that did not fail; ``outcome`` says why it ended (absent = success)."""

    type: Literal["RUN_FINISHED"] = attrs.field(default="RUN_FINISHED", init=False)
    thread_id: str
    run_id: str
    result: JSON = None
    outcome: RunFinishedOutcome | None = None
    usage: tuple[TokenUsage, ...] | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RunErrorEvent:
    """Ends a run that failed. The only error event."""

    type: Literal["RUN_ERROR"] = attrs.field(default="RUN_ERROR", init=False)
    message: str
    code: str | None = None
    usage: tuple[TokenUsage, ...] | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class StepStartedEvent:
    """Opens a named step."""

    type: Literal["STEP_STARTED"] = attrs.field(default="STEP_STARTED", init=False)
    step_name: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class StepFinishedEvent:
    """Closes a named step."""

    type: Literal["STEP_FINISHED"] = attrs.field(default="STEP_FINISHED", init=False)
    step_name: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningStartEvent:
    """Opens a span of reasoning."""

    type: Literal["REASONING_START"] = attrs.field(default="REASONING_START", init=False)
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningMessageStartEvent:
    """Opens a streamed reasoning message."""

    type: Literal["REASONING_MESSAGE_START"] = attrs.field(default="REASONING_MESSAGE_START", init=False)
    message_id: str
    role: Literal["reasoning"] = attrs.field(default="reasoning", init=False)
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningMessageContentEvent:
    """Appends a fragment to a reasoning message."""

    type: Literal["REASONING_MESSAGE_CONTENT"] = attrs.field(default="REASONING_MESSAGE_CONTENT", init=False)
    message_id: str
    delta: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningMessageEndEvent:
    """Closes a reasoning message."""

    type: Literal["REASONING_MESSAGE_END"] = attrs.field(default="REASONING_MESSAGE_END", init=False)
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningMessageChunkEvent:
    """Shorthand for a reasoning message's start, content and end."""

    type: Literal["REASONING_MESSAGE_CHUNK"] = attrs.field(default="REASONING_MESSAGE_CHUNK", init=False)
    message_id: str | None = None
    delta: str | None = None
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningEndEvent:
    """Closes a span of reasoning."""

    type: Literal["REASONING_END"] = attrs.field(default="REASONING_END", init=False)
    message_id: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningEncryptedValueEvent:
    """A provider's opaque, encrypted reasoning artefact."""

    type: Literal["REASONING_ENCRYPTED_VALUE"] = attrs.field(default="REASONING_ENCRYPTED_VALUE", init=False)
    subtype: Literal["tool-call", "message"]
    entity_id: str
    encrypted_value: str
    subagent_run_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SubagentStartedEvent:
    """Announces that a subagent invocation has begun."""

    type: Literal["SUBAGENT_STARTED"] = attrs.field(default="SUBAGENT_STARTED", init=False)
    subagent_run_id: str
    name: str
    description: str | None = None
    parent_subagent_run_id: str | None = None
    parent_tool_call_id: str | None = None
    parent_message_id: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SubagentFinishedEvent:
    """Ends a subagent's segment of this run: completed, or suspended on interrupts."""

    type: Literal["SUBAGENT_FINISHED"] = attrs.field(default="SUBAGENT_FINISHED", init=False)
    subagent_run_id: str
    result: JSON = None
    outcome: SubagentFinishedOutcome | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SubagentErrorEvent:
    """Reports that a subagent invocation failed; the run may go on."""

    type: Literal["SUBAGENT_ERROR"] = attrs.field(default="SUBAGENT_ERROR", init=False)
    subagent_run_id: str
    message: str
    code: str | None = None
    timestamp: int | None = None
    raw_event: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


EVENT_CLASSES = (
    TextMessageStartEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageChunkEvent,
    ToolCallStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallChunkEvent,
    ToolCallResultEvent,
    StateSnapshotEvent,
    StateDeltaEvent,
    MessagesSnapshotEvent,
    ActivitySnapshotEvent,
    ActivityDeltaEvent,
    RawEvent,
    CustomEvent,
    RunStartedEvent,
    RunFinishedEvent,
    RunErrorEvent,
    StepStartedEvent,
    StepFinishedEvent,
    ReasoningStartEvent,
    ReasoningMessageStartEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningEndEvent,
    ReasoningEncryptedValueEvent,
    SubagentStartedEvent,
    SubagentFinishedEvent,
    SubagentErrorEvent,
)
"""Every event class of AG-UI 1.0, in the order of ``@ag-ui/core``'s ``EventType``."""

EVENT_CLASS_BY_TYPE: Mapping[str, type[Any]] = {attrs.fields(cls).type.default: cls for cls in EVENT_CLASSES}
"""The event class for each wire ``type``."""

RUN_END_CLASSES: frozenset[type[Any]] = frozenset({RunFinishedEvent, RunErrorEvent})
"""The classes of the events that end a run (looked up by an event's exact class: cheaper than
``isinstance`` once per event, and event classes are not subclassed)."""

EventType: TypeAlias = str
"""The wire ``type`` of an event; the known values are the keys of ``EVENT_CLASS_BY_TYPE``."""


@attrs.frozen(kw_only=True)
class UnknownEvent:
    """An event whose ``type`` this version does not know, kept whole.

    Newer producers must not break us: the event decodes to this and encodes back to the
    same JSON object. ``data`` is the whole object, ``type`` included.
    """

    type: str
    data: Mapping[str, JSON]


Event: TypeAlias = (
    TextMessageStartEvent
    | TextMessageContentEvent
    | TextMessageEndEvent
    | TextMessageChunkEvent
    | ToolCallStartEvent
    | ToolCallArgsEvent
    | ToolCallEndEvent
    | ToolCallChunkEvent
    | ToolCallResultEvent
    | StateSnapshotEvent
    | StateDeltaEvent
    | MessagesSnapshotEvent
    | ActivitySnapshotEvent
    | ActivityDeltaEvent
    | RawEvent
    | CustomEvent
    | RunStartedEvent
    | RunFinishedEvent
    | RunErrorEvent
    | StepStartedEvent
    | StepFinishedEvent
    | ReasoningStartEvent
    | ReasoningMessageStartEvent
    | ReasoningMessageContentEvent
    | ReasoningMessageEndEvent
    | ReasoningMessageChunkEvent
    | ReasoningEndEvent
    | ReasoningEncryptedValueEvent
    | SubagentStartedEvent
    | SubagentFinishedEvent
    | SubagentErrorEvent
)

_THINKING_TYPES = frozenset(
    {
        "THINKING_START",
        "THINKING_END",
        "THINKING_TEXT_MESSAGE_START",
        "THINKING_TEXT_MESSAGE_CONTENT",
        "THINKING_TEXT_MESSAGE_END",
    }
)


class ThinkingTranslator:
    """Turns the retired ``THINKING_*`` events of a pre-1.0 producer into ``REASONING_*`` ones.

    The old events carry no message ids, so the translator follows one stream and names the
    span and its messages with ids from ``new_id`` (the sans-IO layers never invent ids on
    their own). Events of any other type pass through unchanged. Translation is one way:
    agui-core never writes a ``THINKING_*`` event.
    """

    def __init__(self, new_id: Callable[[], str]) -> None:
        self._new_id = new_id
        self._span_id: str | None = None
        self._message_id: str | None = None

    @staticmethod
    def handles(event: object) -> bool:
        """Whether ``event`` is a retired ``THINKING_*`` event this translator rewrites."""
        return isinstance(event, UnknownEvent) and event.type in _THINKING_TYPES

    def translate(self, event: Event | UnknownEvent) -> Event | UnknownEvent:
        """The 1.0 event that stands for ``event`` (``event`` itself when it is not legacy)."""
        if not isinstance(event, UnknownEvent) or event.type not in _THINKING_TYPES:
            return event
        data = event.data
        common: dict[str, Any] = {
            "timestamp": data.get("timestamp"),
            "raw_event": data.get("rawEvent"),
            "metadata": data.get("metadata"),
        }
        if event.type == "THINKING_START":
            self._span_id = self._new_id()
            return ReasoningStartEvent(message_id=self._span_id, **common)
        if event.type == "THINKING_END":
            span_id = self._span_id or self._new_id()
            self._span_id = None
            return ReasoningEndEvent(message_id=span_id, **common)
        if event.type == "THINKING_TEXT_MESSAGE_START":
            self._message_id = self._new_id()
            return ReasoningMessageStartEvent(message_id=self._message_id, **common)
        if event.type == "THINKING_TEXT_MESSAGE_CONTENT":
            message_id = self._message_id or self._new_id()
            self._message_id = message_id
            delta = data.get("delta")
            return ReasoningMessageContentEvent(
                message_id=message_id, delta=delta if isinstance(delta, str) else "", **common
            )
        message_id = self._message_id or self._new_id()
        self._message_id = None
        return ReasoningMessageEndEvent(message_id=message_id, **common)
