"""The AG-UI 1.0 wire types that are not events: messages, tools, interrupts, resumes, inputs.

Every class is a frozen, slotted, keyword-only attrs class. Attributes are snake_case; the
codec writes them camelCase. An optional attribute set to ``None`` is absent on the wire
(never written as ``null``). Free JSON (state, payloads, results, metadata values) is kept as
the plain Python value ``orjson`` produced, ``None`` included.

Each class has an ``extra`` mapping: the wire keys this version does not know, kept on decode
and written back unchanged on encode, so a proxy built on agui-core never loses data.
Class names follow the reference Python SDK (``ag_ui.core``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

import attrs

__all__ = [
    "EMPTY",
    "JSON",
    "PROTOCOL_VERSION",
    "ActivityMessage",
    "AgentCapabilities",
    "AssistantMessage",
    "AudioInputContent",
    "Context",
    "DataSource",
    "DeveloperMessage",
    "DocumentInputContent",
    "ExecutionCapabilities",
    "FileSource",
    "FunctionCall",
    "HumanInTheLoopCapabilities",
    "IdentityCapabilities",
    "ImageInputContent",
    "InputContent",
    "InputContentSource",
    "Interrupt",
    "Message",
    "MultiAgentCapabilities",
    "MultimodalCapabilities",
    "MultimodalInputCapabilities",
    "MultimodalOutputCapabilities",
    "OutputCapabilities",
    "ReasoningCapabilities",
    "ReasoningMessage",
    "ResumeEntry",
    "RunAgentInput",
    "RunFinishedCancelledOutcome",
    "RunFinishedInterruptOutcome",
    "RunFinishedOutcome",
    "RunFinishedSuccessOutcome",
    "StateCapabilities",
    "SubagentFinishedOutcome",
    "SubagentFinishedSuccessOutcome",
    "SubagentFinishedSuspendedOutcome",
    "SubagentInfo",
    "SystemMessage",
    "TextInputContent",
    "TokenUsage",
    "Tool",
    "ToolCall",
    "ToolMessage",
    "ToolsCapabilities",
    "TransportCapabilities",
    "UrlSource",
    "UserMessage",
    "VideoInputContent",
]

JSON: TypeAlias = Any
"""Any JSON value as ``orjson`` reads it: dict, list, str, int, float, bool or None."""

EMPTY: Mapping[str, Any] = MappingProxyType({})
"""The shared, immutable ``extra`` of an object that carried no unknown keys."""

PROTOCOL_VERSION = "1.0"
"""The AG-UI protocol version agui-core speaks (``MAJOR.MINOR``, as the spec publishes it).

The published spec's versioning page (1.1) makes declaring it a MUST on both sides: a producer
on ``RUN_STARTED.protocolVersion``, a consumer on ``RunAgentInput.protocolVersion``. The value
is what the wire speaks: the 1.0 schema of ``@ag-ui/core`` and ``ag-ui-protocol`` (declaring
1.1 would claim shapes we do not send, and makes the 1.0 reference client warn on every run)."""


def _extra() -> Any:
    return attrs.field(default=EMPTY, repr=False)


# --- content parts -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class DataSource:
    """Bytes carried inline (base64 in ``value``)."""

    type: Literal["data"] = attrs.field(default="data", init=False)
    value: str
    mime_type: str
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class UrlSource:
    """Bytes referenced by URL."""

    type: Literal["url"] = attrs.field(default="url", init=False)
    value: str
    mime_type: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class FileSource:
    """Bytes already at a provider, named by the handle it issued."""

    type: Literal["file"] = attrs.field(default="file", init=False)
    value: str
    provider: str | None = None
    mime_type: str | None = None
    extra: Mapping[str, Any] = _extra()


InputContentSource: TypeAlias = DataSource | UrlSource | FileSource


@attrs.frozen(kw_only=True)
class TextInputContent:
    """A text part of a message body."""

    type: Literal["text"] = attrs.field(default="text", init=False)
    text: str
    id: str | None = None
    metadata: JSON = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ImageInputContent:
    """An image part."""

    type: Literal["image"] = attrs.field(default="image", init=False)
    source: InputContentSource
    id: str | None = None
    metadata: JSON = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class AudioInputContent:
    """An audio part."""

    type: Literal["audio"] = attrs.field(default="audio", init=False)
    source: InputContentSource
    id: str | None = None
    metadata: JSON = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class VideoInputContent:
    """A video part."""

    type: Literal["video"] = attrs.field(default="video", init=False)
    source: InputContentSource
    id: str | None = None
    metadata: JSON = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class DocumentInputContent:
    """A document part."""

    type: Literal["document"] = attrs.field(default="document", init=False)
    source: InputContentSource
    id: str | None = None
    metadata: JSON = None
    extra: Mapping[str, Any] = _extra()


InputContent: TypeAlias = (
    TextInputContent | ImageInputContent | AudioInputContent | VideoInputContent | DocumentInputContent
)

# --- messages ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class FunctionCall:
    """The name and JSON-encoded arguments of a tool call."""

    name: str
    arguments: str
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolCall:
    """A call an assistant message made."""

    id: str
    type: Literal["function"] = attrs.field(default="function", init=False)
    function: FunctionCall
    encrypted_value: str | None = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class DeveloperMessage:
    """Instructions from the application developer."""

    id: str
    role: Literal["developer"] = attrs.field(default="developer", init=False)
    content: str
    name: str | None = None
    encrypted_value: str | None = None
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SystemMessage:
    """Instructions from the system."""

    id: str
    role: Literal["system"] = attrs.field(default="system", init=False)
    content: str
    name: str | None = None
    encrypted_value: str | None = None
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class AssistantMessage:
    """A message from the agent; may carry only tool calls."""

    id: str
    role: Literal["assistant"] = attrs.field(default="assistant", init=False)
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    name: str | None = None
    encrypted_value: str | None = None
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class UserMessage:
    """A message from the person using the application."""

    id: str
    role: Literal["user"] = attrs.field(default="user", init=False)
    content: str | tuple[InputContent, ...]
    name: str | None = None
    encrypted_value: str | None = None
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolMessage:
    """What a tool returned, as a message of the conversation."""

    id: str
    role: Literal["tool"] = attrs.field(default="tool", init=False)
    content: str | tuple[InputContent, ...]
    tool_call_id: str
    error: str | None = None
    encrypted_value: str | None = None
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ActivityMessage:
    """Structured progress, kept as a message so it keeps its place in the sequence."""

    id: str
    role: Literal["activity"] = attrs.field(default="activity", init=False)
    activity_type: str
    content: Mapping[str, JSON]
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningMessage:
    """A span of the agent's reasoning, as a message."""

    id: str
    role: Literal["reasoning"] = attrs.field(default="reasoning", init=False)
    content: str
    encrypted_value: str | None = None
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


Message: TypeAlias = (
    DeveloperMessage | SystemMessage | AssistantMessage | UserMessage | ToolMessage | ActivityMessage | ReasoningMessage
)

# --- tools and context ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Tool:
    """A tool the agent may call; ``parameters`` is a JSON Schema."""

    name: str
    description: str
    parameters: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class Context:
    """A named piece of ambient information for the run."""

    description: str
    value: str
    extra: Mapping[str, Any] = _extra()


# --- interrupts and resumes ----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Interrupt:
    """Something a run needs from outside before it can continue.

    ``reason`` is ``tool_call``, ``input_required``, ``confirmation`` or a namespaced custom
    string. ``expires_at`` is the RFC 3339 string as sent; the machine parses it.
    """

    id: str
    reason: str
    message: str | None = None
    tool_call_id: str | None = None
    response_schema: Mapping[str, JSON] | None = None
    expires_at: str | None = None
    metadata: Mapping[str, JSON] | None = None
    subagent_run_id: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ResumeEntry:
    """The answer to one interrupt, sent on the run that continues from it.

    A denial is a ``resolved`` payload such as ``{"approved": false}``; ``cancelled`` carries
    no payload. ``metadata`` is envelope data about the answer, never ``None`` when present.
    """

    interrupt_id: str
    status: Literal["resolved", "cancelled"]
    payload: JSON = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RunAgentInput:
    """A request to run an agent; with ``resume`` it continues an interrupted run.

    ``tools`` and ``context`` keep the difference between absent (``None``) and empty, so a
    decoded input re-encodes to the same JSON.
    """

    thread_id: str
    run_id: str
    messages: tuple[Message, ...] = ()
    protocol_version: str | None = None
    parent_run_id: str | None = None
    state: JSON = None
    tools: tuple[Tool, ...] | None = None
    context: tuple[Context, ...] | None = None
    forwarded_props: JSON = None
    resume: tuple[ResumeEntry, ...] | None = None
    extra: Mapping[str, Any] = _extra()


# --- outcomes ------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class RunFinishedSuccessOutcome:
    """The run completed. An absent outcome means the same."""

    type: Literal["success"] = attrs.field(default="success", init=False)
    pending_tool_call_ids: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RunFinishedInterruptOutcome:
    """The run paused for outside input; ``interrupts`` is never empty."""

    type: Literal["interrupt"] = attrs.field(default="interrupt", init=False)
    interrupts: tuple[Interrupt, ...]
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class RunFinishedCancelledOutcome:
    """The run was stopped by its host; nothing was produced and nothing is pending."""

    type: Literal["cancelled"] = attrs.field(default="cancelled", init=False)
    extra: Mapping[str, Any] = _extra()


RunFinishedOutcome: TypeAlias = RunFinishedSuccessOutcome | RunFinishedInterruptOutcome | RunFinishedCancelledOutcome


@attrs.frozen(kw_only=True)
class SubagentFinishedSuccessOutcome:
    """The subagent completed its work."""

    type: Literal["success"] = attrs.field(default="success", init=False)
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class SubagentFinishedSuspendedOutcome:
    """The subagent is paused on the named interrupts; a later run may continue it."""

    type: Literal["suspended"] = attrs.field(default="suspended", init=False)
    interrupt_ids: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = _extra()


SubagentFinishedOutcome: TypeAlias = SubagentFinishedSuccessOutcome | SubagentFinishedSuspendedOutcome


@attrs.frozen(kw_only=True)
class TokenUsage:
    """Token counts for one provider and model."""

    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_input_tokens: int | None = None
    extra: Mapping[str, Any] = _extra()


# --- capabilities --------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SubagentInfo:
    """A subagent a parent agent can invoke."""

    name: str
    description: str | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class IdentityCapabilities:
    """Who the agent is."""

    name: str | None = None
    type: str | None = None
    description: str | None = None
    version: str | None = None
    provider: str | None = None
    documentation_url: str | None = None
    metadata: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class TransportCapabilities:
    """Which transports the agent handles."""

    streaming: bool | None = None
    websocket: bool | None = None
    http_binary: bool | None = None
    push_notifications: bool | None = None
    resumable: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ToolsCapabilities:
    """Tool calling support."""

    supported: bool | None = None
    items: tuple[Tool, ...] | None = None
    parallel_calls: bool | None = None
    client_provided: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class OutputCapabilities:
    """Output format support."""

    structured_output: bool | None = None
    supported_mime_types: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class StateCapabilities:
    """Shared state support."""

    snapshots: bool | None = None
    deltas: bool | None = None
    memory: bool | None = None
    persistent_state: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MultiAgentCapabilities:
    """Multi-agent coordination support."""

    supported: bool | None = None
    delegation: bool | None = None
    handoffs: bool | None = None
    subagents: tuple[SubagentInfo, ...] | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ReasoningCapabilities:
    """Reasoning support."""

    supported: bool | None = None
    streaming: bool | None = None
    encrypted: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MultimodalInputCapabilities:
    """Modalities the agent accepts."""

    image: bool | None = None
    audio: bool | None = None
    video: bool | None = None
    pdf: bool | None = None
    file: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MultimodalOutputCapabilities:
    """Modalities the agent produces."""

    image: bool | None = None
    audio: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class MultimodalCapabilities:
    """Multimodal input and output support."""

    input: MultimodalInputCapabilities | None = None
    output: MultimodalOutputCapabilities | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class ExecutionCapabilities:
    """Execution limits."""

    code_execution: bool | None = None
    sandboxed: bool | None = None
    max_iterations: int | None = None
    max_execution_time: int | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class HumanInTheLoopCapabilities:
    """Human-in-the-loop support; ``interrupts`` and ``approve_with_edits`` are the 1.0 flags."""

    supported: bool | None = None
    approvals: bool | None = None
    interventions: bool | None = None
    feedback: bool | None = None
    interrupts: bool | None = None
    approve_with_edits: bool | None = None
    extra: Mapping[str, Any] = _extra()


@attrs.frozen(kw_only=True)
class AgentCapabilities:
    """The capabilities document an agent publishes. Absent means not declared."""

    identity: IdentityCapabilities | None = None
    transport: TransportCapabilities | None = None
    tools: ToolsCapabilities | None = None
    output: OutputCapabilities | None = None
    state: StateCapabilities | None = None
    multi_agent: MultiAgentCapabilities | None = None
    reasoning: ReasoningCapabilities | None = None
    multimodal: MultimodalCapabilities | None = None
    execution: ExecutionCapabilities | None = None
    human_in_the_loop: HumanInTheLoopCapabilities | None = None
    custom: Mapping[str, JSON] | None = None
    extra: Mapping[str, Any] = _extra()
