"""Host a Pydantic AI agent (``pydantic-ai``) as an agui-core agent.

``PydanticAIAdapter(agent)`` is an agent function for :class:`~agui_core.runtime.Host` (and
``agui serve MODULE:AGENT``, which recognises a ``pydantic_ai.Agent`` and hosts it through this
adapter): each run streams the agent (``Agent.run_stream_events``, with ``DeferredToolRequests``
added to its output types) and turns what it does into AG-UI events: its text as
``TEXT_MESSAGE_*``, its tool calls as ``TOOL_CALL_START/ARGS/END``, their returns as
``TOOL_CALL_RESULT``; its output is the run's result.

Theory of operation. Pydantic AI defers a tool call to the outside in two ways, and the run
ends with ``DeferredToolRequests``:

- ``approvals``: a tool with ``requires_approval=True`` (or one raising ``ApprovalRequired``)
  becomes a ``tool_call`` interrupt bound to its call, answered ``{"approved": boolean}``,
  plus ``editedArgs`` (checked against the tool's parameter schema) where the adapter allows
  edits of that tool;
- ``calls``: a tool that raises ``CallDeferred`` (or an external tool) becomes an
  ``input_required`` interrupt bound to its call: a form, whose answer is the tool's return
  value. ``CallDeferred(metadata={"message": ..., "responseSchema": {...}})`` gives the form
  its message and schema (without one, any JSON answer is taken).

The message history (``all_messages()``, as JSON) is kept as the run's *continuation*: the
thread machine stores it with the interrupts, server-side, never sends it, and hands it back to
the run that answers them. That run, on any host sharing the store, gives Pydantic AI the
history and ``DeferredToolResults`` built from the answers, the way Pydantic AI expects them:

- approved: ``True``, or ``ToolApproved(override_args=editedArgs)`` with edits;
- denied: ``ToolDenied()`` (the model reads its message; sent as the call's result);
- cancelled, or expired unanswered: ``ToolDenied(CANCELLED_MESSAGE)``, and no result is sent;
- a form's answer: the payload, as the tool's return value; cancelled: :data:`CANCELLED_MESSAGE`.

At most once. An approved call is journaled as started (:meth:`RunContext.tool_started`)
before Pydantic AI runs it, and its result recorded when it returns. A resume retried after a
failure gives Pydantic AI the recorded result as the call's result (``DeferredToolResults.calls``)
instead of running the tool again; a call whose attempt left no result gets
:data:`~agui_core.runtime.tools.NOT_RUN_AGAIN`. What becomes of each call is the thread
machine's decision (:meth:`RunContext.tool_decision`).

A new run gives the agent the thread's messages as Pydantic AI messages (user prompts,
assistant text and tool calls, tool returns; system and developer messages are left out: the
agent has its instructions). Limits: the journal starts before the run, not at the tool's own
start, so a run that fails before an approved tool started reports it ``NOT_RUN_AGAIN`` on
retry rather than running it; dependencies (``deps``) are not carried across an interrupt.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, timedelta
from typing import Any, Final

import orjson
from pydantic_ai import Agent, AgentRunResultEvent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.messages import (
    FunctionToolResultEvent,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from agui_core.adapters.approval import approval_schema
from agui_core.errors import LocalProtocolError
from agui_core.machine.effects import ReportDenied, RunTool, SendRecorded
from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, AssistantMessage, Interrupt, Message, ToolMessage, UserMessage
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import NOT_RUN_AGAIN, approval_message

__all__ = ["CANCELLED_MESSAGE", "PydanticAIAdapter", "is_pydantic_ai_agent"]

CANCELLED_MESSAGE: Final = "The person cancelled this tool call; it was not run."
"""What the model reads for a call whose approval or form was cancelled or expired."""

_KEY: Final = "pydantic-ai"


def is_pydantic_ai_agent(value: object) -> bool:
    """Whether ``value`` is a Pydantic AI ``Agent`` (without importing Pydantic AI)."""
    return any(
        cls.__module__.startswith("pydantic_ai.agent") and cls.__name__ == "Agent" for cls in type(value).__mro__
    )


class PydanticAIAdapter:
    """An agui-core agent that runs a Pydantic AI ``Agent`` (see the module docstring).

    ``allow_edits`` (``True`` or tool names) offers ``editedArgs`` on the approvals of those
    tools. ``ttl`` gives every interrupt an ``expiresAt`` that much after it is raised. The
    agent (:attr:`pydantic_agent`) is used as it is: runs of different threads go on at once.
    """

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        allow_edits: bool | Collection[str] = False,
        ttl: timedelta | None = None,
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"PydanticAIAdapter needs a pydantic_ai.Agent, not {agent!r}")
        if ttl is not None and not ttl > timedelta(0):
            raise ValueError(f"ttl must be more than zero, not {ttl}")
        self.pydantic_agent = agent
        self.allow_edits = allow_edits
        self.ttl = ttl
        self.__name__ = agent.name or "pydantic_ai_agent"

    async def __call__(self, ctx: RunContext) -> JSON:
        return await _Run(self, ctx).run()

    def edits_allowed(self, tool_name: str) -> bool:
        if isinstance(self.allow_edits, bool):
            return self.allow_edits
        return tool_name in self.allow_edits

    def parameters(self, tool_name: str) -> Mapping[str, JSON] | None:
        toolset = getattr(self.pydantic_agent, "_function_toolset", None)
        tool = getattr(toolset, "tools", {}).get(tool_name)
        schema = getattr(getattr(tool, "function_schema", None), "json_schema", None)
        return schema if isinstance(schema, dict) else None

    def output_types(self) -> list[Any]:
        declared = self.pydantic_agent.output_type
        kinds = list(declared) if isinstance(declared, list | tuple) else [declared]
        return kinds if DeferredToolRequests in kinds else [*kinds, DeferredToolRequests]


class _Run:
    """One AG-UI run of one Pydantic AI run."""

    def __init__(self, adapter: PydanticAIAdapter, ctx: RunContext) -> None:
        self.adapter = adapter
        self.ctx = ctx
        self.known_calls = {c.id for m in ctx.messages if isinstance(m, AssistantMessage) for c in m.tool_calls or ()}
        self.proposed: set[str] = set()
        self.text_id: str | None = None
        self.parent_id: str | None = None
        self.journaled: set[str] = set()
        """The approved calls this run runs under the journal."""
        self.silent: set[str] = set()
        """Calls whose result is not shown: cancelled, or already sent by this run."""
        self.replayed: dict[str, Any] = {}

    async def run(self) -> JSON:
        ctx = self.ctx
        results: DeferredToolResults | None = None
        if ctx.resumed:
            held = ctx.continuation.get(_KEY) if isinstance(ctx.continuation, dict) else None
            if not isinstance(held, dict) or not isinstance(held.get("messages"), list):
                raise LocalProtocolError("a resumed run of a Pydantic AI agent carries no message history")
            history = ModelMessagesTypeAdapter.validate_python(held["messages"])
            results = await self._results(held)
        else:
            history = _model_messages(ctx.messages)
        result: Any = None
        agent: Any = self.adapter.pydantic_agent  # its output type is widened here, by DeferredToolRequests
        stream: Any
        async with agent.run_stream_events(
            message_history=history, deferred_tool_results=results, output_type=self.adapter.output_types()
        ) as stream:
            async for event in stream:
                if isinstance(event, AgentRunResultEvent):
                    result = event.result
                else:
                    await self._on(event)
        await self._close_text()
        if result is None:
            raise LocalProtocolError("the Pydantic AI agent ended without a result")
        output = result.output
        if isinstance(output, DeferredToolRequests):
            await self._interrupt(output, result.all_messages())
            return None
        dump = getattr(output, "model_dump", None)
        decoded: JSON = orjson.loads(orjson.dumps(dump(mode="json") if callable(dump) else output, default=str))
        return decoded

    async def _results(self, held: Mapping[str, Any]) -> DeferredToolResults:
        """The answers as Pydantic AI's ``DeferredToolResults``, each call decided by the thread machine."""
        ctx = self.ctx
        results = DeferredToolResults()
        forms = {str(c) for c in held.get("forms", ())}
        for call in (str(c) for c in held.get("calls", ())):
            answer = next((a for a in ctx.answers if a.interrupt.tool_call_id == call), None)
            if call in forms:
                if answer is None or answer.entry.status != "resolved":
                    results.calls[call] = CANCELLED_MESSAGE
                    self.silent.add(call)
                else:
                    results.calls[call] = answer.entry.payload
                continue
            decision = ctx.tool_decision(call)
            if isinstance(decision, RunTool):
                await ctx.tool_started(call, decision.name, decision.args)
                self.journaled.add(call)
                results.approvals[call] = ToolApproved(override_args=decision.args) if decision.edited else True
            elif isinstance(decision, SendRecorded) and not decision.cancelled:
                # An earlier attempt at this resume started it: never twice.
                recorded = decision.result
                self.replayed[call] = recorded
                content = recorded.content if recorded is not None else NOT_RUN_AGAIN
                results.calls[call] = content
            elif isinstance(decision, ReportDenied):
                results.approvals[call] = ToolDenied()
            else:  # cancelled, or expired unanswered: not run, no result shown
                results.approvals[call] = ToolDenied(CANCELLED_MESSAGE)
                self.silent.add(call)
        return results

    async def _on(self, event: Any) -> None:
        ctx = self.ctx
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart):
                await self._text(part.content)
            elif isinstance(part, ToolCallPart):
                await self._propose(part)
        elif isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
            await self._text(event.delta.content_delta)
        elif isinstance(event, FunctionToolResultEvent):
            call = event.tool_call_id
            if call not in self.known_calls or call in self.silent:
                return
            self.silent.add(call)
            recorded = self.replayed.get(call, False)
            if recorded is None:
                await ctx.tool_result(call, NOT_RUN_AGAIN)
            elif recorded is not False:
                await ctx.emit(recorded)  # the recorded result, under its own id
            else:
                await ctx.tool_result(call, event.part.model_response_str())

    async def _text(self, delta: str) -> None:
        if self.text_id is None:
            self.text_id = self.parent_id = self.ctx.new_id("msg")
            await self.ctx.emit(ev.TextMessageStartEvent(message_id=self.text_id, role="assistant"))
        if delta:
            await self.ctx.emit(ev.TextMessageContentEvent(message_id=self.text_id, delta=delta))

    async def _propose(self, part: ToolCallPart) -> None:
        call = part.tool_call_id
        if call in self.known_calls:
            return
        await self._close_text()
        self.known_calls.add(call)
        self.proposed.add(call)
        self.parent_id = self.parent_id or self.ctx.new_id("msg")
        await self.ctx.propose_tool_call(
            part.tool_name, part.args_as_dict(), tool_call_id=call, parent_message_id=self.parent_id
        )

    async def _close_text(self) -> None:
        if self.text_id is not None:
            await self.ctx.emit(ev.TextMessageEndEvent(message_id=self.text_id))
            self.text_id = None

    async def _interrupt(self, requests: DeferredToolRequests, messages: Sequence[ModelMessage]) -> None:
        ctx = self.ctx
        interrupts: list[Interrupt] = []
        for part in [*requests.approvals, *requests.calls]:
            if part.tool_call_id not in self.proposed:
                self.known_calls.discard(part.tool_call_id)
                await self._propose(part)
        expires = None
        if self.adapter.ttl is not None:
            instant = ctx.now().astimezone(UTC) + self.adapter.ttl
            expires = instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        for part in requests.approvals:
            name, args = part.tool_name, part.args_as_dict()
            interrupts.append(
                Interrupt(
                    id=ctx.new_id("approval"),
                    reason="tool_call",
                    message=approval_message(name, args),
                    tool_call_id=part.tool_call_id,
                    response_schema=approval_schema(
                        self.adapter.parameters(name), allow_edits=self.adapter.edits_allowed(name)
                    ),
                    expires_at=expires,
                    metadata={_KEY: {"tool": name}},
                )
            )
        for part in requests.calls:
            said = requests.metadata.get(part.tool_call_id) or {}
            schema = said.get("responseSchema")
            message = said.get("message")
            interrupts.append(
                Interrupt(
                    id=ctx.new_id("input"),
                    reason="input_required",
                    message=message if isinstance(message, str) else f"{part.tool_name} needs an answer.",
                    tool_call_id=part.tool_call_id,
                    response_schema=schema if isinstance(schema, dict) else None,
                    expires_at=expires,
                    metadata={_KEY: {"tool": part.tool_name, "args": part.args_as_dict()}},
                )
            )
        held: JSON = orjson.loads(ModelMessagesTypeAdapter.dump_json(list(messages)))
        ctx.continuation = {
            _KEY: {
                "messages": held,
                "calls": [p.tool_call_id for p in [*requests.approvals, *requests.calls]],
                "forms": [p.tool_call_id for p in requests.calls],
            }
        }
        await ctx.interrupt(*interrupts)


def _model_messages(messages: Sequence[Message]) -> list[ModelMessage]:
    """The thread's AG-UI messages as Pydantic AI messages (a new run starts from these)."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    names: dict[str, str] = {}
    converted: list[ModelMessage] = []
    for message in messages:
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                text = message.content
            else:
                text = "".join(t for part in message.content if isinstance(t := getattr(part, "text", None), str))
            converted.append(ModelRequest(parts=[UserPromptPart(text)]))
        elif isinstance(message, AssistantMessage):
            parts: list[Any] = [TextPart(message.content)] if message.content else []
            for call in message.tool_calls or ():
                if call.id in answered:
                    names[call.id] = call.function.name
                    parts.append(ToolCallPart(call.function.name, call.function.arguments, tool_call_id=call.id))
            if parts:
                converted.append(ModelResponse(parts=parts))
        elif isinstance(message, ToolMessage) and message.tool_call_id in names:
            part = ToolReturnPart(names[message.tool_call_id], message.content, tool_call_id=message.tool_call_id)
            if converted and isinstance(converted[-1], ModelRequest) and converted[-1].parts:
                if all(isinstance(p, ToolReturnPart) for p in converted[-1].parts):
                    converted[-1].parts = [*converted[-1].parts, part]
                    continue
            converted.append(ModelRequest(parts=[part]))
    return converted
