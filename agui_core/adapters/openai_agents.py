"""Host an OpenAI Agents SDK agent (``openai-agents``) as an agui-core agent.

``OpenAIAgentsAdapter(agent)`` is an agent function for :class:`~agui_core.runtime.Host` (and
``agui serve MODULE:AGENT``, which recognises an ``agents.Agent`` and hosts it through this
adapter): each run streams the agent with ``Runner.run_streamed`` and turns what it does into
AG-UI events: its text as ``TEXT_MESSAGE_*``, its function calls as
``TOOL_CALL_START/ARGS/END``, their outputs as ``TOOL_CALL_RESULT``; its final output is the
run's result.

Theory of operation. The SDK pauses a run when a tool built with ``needs_approval`` is called:
the run ends with ``interruptions`` (one ``ToolApprovalItem`` per call) and a ``RunState`` that
can be serialised and resumed. The adapter ends the AG-UI run with one ``tool_call``
:class:`~agui_core.protocol.types.Interrupt` per approval item, bound to its call
(``toolCallId`` is the SDK's ``call_id``), and keeps the ``RunState`` (``RunState.to_json()``)
as the run's *continuation*: the thread machine stores it with the interrupts, server-side,
never sends it, and hands it back to the run that answers them. That run, on any host sharing
the store, restores the state (``RunState.from_json``), decides each approval item with the
SDK's own ``approve`` and ``reject``, and streams the agent again from the state. Every rule
(coverage, replay, expiry, ownership, payload schemas) is the machine's.

The answer to an approval is ``{"approved": boolean}``, plus ``editedArgs`` (checked against
the tool's ``params_json_schema``, its definitions moved to the schema's root) when the adapter
allows edits of that tool. What reaches the SDK:

- approved: ``state.approve(item)``; with edits, the tool runs with ``editedArgs`` in place of
  the model's arguments (the model's history keeps what it proposed, the result is the edited
  call's);
- denied (``approved: false``): ``state.reject(item)``, so the model reads the SDK's own
  rejection text (``RunConfig.tool_error_formatter`` shapes it), sent as the call's
  ``TOOL_CALL_RESULT``;
- cancelled, or expired unanswered: ``state.reject(item, rejection_message=...)`` saying the
  call was cancelled and not run; no ``TOOL_CALL_RESULT`` is sent for it (AG-UI: not executed).

At most once. The tool of an approved call runs under the thread's tool journal
(:attr:`RunContext.tool_journal`), as the host's own gated tools do: the adapter records it as
started before the SDK's invoker runs it, and its result as soon as it returns. If that run
then fails (the model fails on the next turn, the host dies), the retried resume gives the SDK
the recorded output instead of running the tool again (a tool cut short, with no result, gets
:data:`~agui_core.runtime.tools.NOT_RUN_AGAIN`), and the recorded ``TOOL_CALL_RESULT`` is sent
again. Which of these happens is the thread machine's decision
(:meth:`RunContext.tool_decision`); a retry that answers otherwise than the attempt whose tool
ran is refused before the run starts (``INTERRUPT_ALREADY_RESOLVED``).

A new run (one that answers nothing) gives the agent the thread's messages as Responses input
items: user and assistant text, and each function call that has a result with its output
(system and developer messages are left out: the agent has its instructions).

Limits: the journal covers the function tools of the served agent itself (tools of agents it
hands off to, or runs as tools, still ask and obey approvals, but are not journaled); the SDK
has no way for a tool to ask a person a question, so this adapter raises no ``input_required``
interrupt; a run context (``Runner.run(context=...)``) is not carried across an interrupt.
"""

from __future__ import annotations

import contextvars
import copy
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from datetime import UTC, timedelta
from typing import Any, Final

import anyio
import orjson
from agents import Agent, FunctionTool, RunConfig, Runner, RunState, ToolCallItem, ToolCallOutputItem
from agents.items import ToolApprovalItem
from agents.run import DEFAULT_MAX_TURNS
from agents.stream_events import RawResponsesStreamEvent, RunItemStreamEvent
from agents.tool_context import ToolContext
from openai.types.responses import ResponseOutputItemDoneEvent, ResponseTextDeltaEvent

from agui_core.adapters.approval import approval_schema, tool_arguments
from agui_core.errors import LocalProtocolError
from agui_core.machine.effects import LeaveUnrun, ReportDenied, RunTool, SendRecorded
from agui_core.machine.record import ToolJournalEntry
from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, AssistantMessage, Interrupt, Message, ToolMessage, UserMessage
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import NOT_RUN_AGAIN, approval_message

__all__ = ["CANCELLED_MESSAGE", "OpenAIAgentsAdapter", "is_openai_agent"]

CANCELLED_MESSAGE: Final = "The person cancelled this tool call; it was not run."
"""The rejection message the model reads for a call whose approval was cancelled or expired."""

_KEY: Final = "openai-agents"

_current_run: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("agui_core_openai_run", default=None)

Invoker = Callable[[ToolContext[Any], str], Awaitable[Any]]


def is_openai_agent(value: object) -> bool:
    """Whether ``value`` is an OpenAI Agents SDK ``Agent`` (without importing the SDK)."""
    return any(cls.__module__ == "agents.agent" and cls.__name__ == "Agent" for cls in type(value).__mro__)


def _journaled(tool: Any) -> Any:
    """``tool`` with its invoker routed through the run in progress (see :meth:`_Run.invoke`)."""
    if not isinstance(tool, FunctionTool):
        return tool
    original: Invoker = tool.on_invoke_tool

    async def invoke(context: ToolContext[Any], arguments: str) -> Any:
        run = _current_run.get()
        if run is None:
            return await original(context, arguments)
        return await run.invoke(tool.name, original, context, arguments)

    wrapped = copy.copy(tool)
    wrapped.on_invoke_tool = invoke
    return wrapped


class OpenAIAgentsAdapter:
    """An agui-core agent that runs an OpenAI Agents SDK ``Agent`` (see the module docstring).

    ``allow_edits`` (``True`` or tool names) offers ``editedArgs`` on the approvals of those
    tools. ``ttl`` gives every approval an ``expiresAt`` that much after it is raised.
    ``run_config`` and ``max_turns`` go to ``Runner.run_streamed``. The agent is used as it is
    (its tools' invokers wrapped once, in a clone, :attr:`sdk_agent`): runs of different threads
    go on at once. The adapter has no ``agent`` attribute, so ``agui serve`` serves it as the
    agent function it is.
    """

    def __init__(
        self,
        agent: Agent[Any],
        *,
        allow_edits: bool | Collection[str] = False,
        ttl: timedelta | None = None,
        run_config: RunConfig | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"OpenAIAgentsAdapter needs an agents.Agent, not {agent!r}")
        if ttl is not None and not ttl > timedelta(0):
            raise ValueError(f"ttl must be more than zero, not {ttl}")
        self.sdk_agent: Agent[Any] = agent.clone(tools=[_journaled(t) for t in agent.tools])
        self.allow_edits = allow_edits
        self.ttl = ttl
        self.run_config = run_config
        self.max_turns = max_turns
        self.__name__ = agent.name or "openai_agent"

    async def __call__(self, ctx: RunContext) -> JSON:
        return await _Run(self, ctx).run()

    def edits_allowed(self, tool_name: str) -> bool:
        if isinstance(self.allow_edits, bool):
            return self.allow_edits
        return tool_name in self.allow_edits

    def parameters(self, tool_name: str) -> Mapping[str, JSON] | None:
        for tool in self.sdk_agent.tools:
            if isinstance(tool, FunctionTool) and tool.name == tool_name:
                schema: Mapping[str, JSON] = tool.params_json_schema
                return schema
        return None


class _Run:
    """One AG-UI run of one SDK run (fresh, or resumed from a ``RunState``)."""

    def __init__(self, adapter: OpenAIAgentsAdapter, ctx: RunContext) -> None:
        self.adapter = adapter
        self.ctx = ctx
        self.known_calls = {c.id for m in ctx.messages if isinstance(m, AssistantMessage) for c in m.tool_calls or ()}
        self.proposed: set[str] = set()
        """The tool calls this run proposed: the only ones its interrupts can be bound to."""
        self.text_id: str | None = None
        self.parent_id: str | None = None
        self.approved: dict[str, dict[str, JSON] | None] = {}
        """The calls this run's answers approve: their tools run journaled (with the edits, if any)."""
        self.replayed: dict[str, ToolJournalEntry] = {}
        """The approved calls an earlier attempt already ran: their recorded result is given back."""
        self.cancelled: set[str] = set()
        self.reported: set[str] = set()
        """The journaled calls whose result this run has sent."""
        self.acting = anyio.Lock(fast_acquire=True)  # as the Strands adapter's: no loop trip per event
        """The SDK runs tools concurrently with the stream being read: they take turns with the context."""

    async def run(self) -> JSON:
        ctx = self.ctx
        adapter = self.adapter
        start: str | list[Any] | RunState[Any, Any]
        if ctx.resumed:
            held = ctx.continuation.get(_KEY) if isinstance(ctx.continuation, dict) else None
            if not isinstance(held, dict) or not isinstance(held.get("state"), dict):
                raise LocalProtocolError("a resumed run of an OpenAI agent carries no RunState to resume from")
            state = await RunState.from_json(adapter.sdk_agent, copy.deepcopy(held["state"]))
            self._decide(state)
            start = state
        else:
            start = _input_items(ctx.messages)
        token = _current_run.set(self)  # before the SDK starts its task: the task copies the context
        try:
            result = Runner.run_streamed(
                adapter.sdk_agent, start, run_config=adapter.run_config, max_turns=adapter.max_turns
            )
            async for event in result.stream_events():
                async with self.acting:
                    await self._on(event)
        finally:
            _current_run.reset(token)
        await self._close_text()
        if result.interruptions:
            await self._interrupt(result.interruptions, result.to_state())
            return None
        output = result.final_output
        if output is None or isinstance(output, str | int | float | bool | list | dict):
            return _json(output)
        return _json(getattr(output, "model_dump", lambda: str(output))())

    def _decide(self, state: RunState[Any, Any]) -> None:
        """Carry out the thread machine's decision on each approval the state waits for."""
        for item in state.get_interruptions():
            call = _call_id(item.raw_item)
            decision = self.ctx.tool_decision(call) if call is not None else None
            if isinstance(decision, RunTool):
                state.approve(item)
                self.approved[decision.call_id] = decision.args if decision.edited else None
            elif isinstance(decision, SendRecorded) and not decision.cancelled:
                state.approve(item)
                entry = self.ctx.tool_journal.get(decision.call_id)
                if entry is not None:
                    self.replayed[decision.call_id] = entry
            elif isinstance(decision, ReportDenied):
                state.reject(item)
            else:  # LeaveUnrun, or expired unanswered: the call is not run, and no result is shown
                assert decision is None or isinstance(decision, LeaveUnrun | SendRecorded)
                state.reject(item, rejection_message=CANCELLED_MESSAGE)
                if call is not None:
                    self.cancelled.add(call)

    async def invoke(self, name: str, original: Invoker, context: ToolContext[Any], arguments: str) -> Any:
        """Run the tool of ``context.tool_call_id`` as the journal allows (the wrapped invoker)."""
        call = context.tool_call_id
        entry = self.replayed.get(call)
        if entry is not None:  # an earlier attempt at this resume ran it: never twice
            return _recorded_output(entry)
        if call not in self.approved:
            return await original(context, arguments)
        edited = self.approved[call]
        args = edited if edited is not None else tool_arguments(arguments)
        async with self.acting:
            await self.ctx.tool_started(call, name, args)
        output = await original(context, orjson.dumps(args).decode() if edited is not None else arguments)
        async with self.acting:
            await self.ctx.tool_result(call, _output_text(output))
        self.reported.add(call)
        return output

    async def _on(self, event: Any) -> None:
        if isinstance(event, RawResponsesStreamEvent):
            data = event.data
            if isinstance(data, ResponseTextDeltaEvent):
                if self.text_id is None:
                    self.text_id = self.parent_id = self.ctx.new_id("msg")
                    await self.ctx.emit(ev.TextMessageStartEvent(message_id=self.text_id, role="assistant"))
                if data.delta:
                    await self.ctx.emit(ev.TextMessageContentEvent(message_id=self.text_id, delta=data.delta))
            elif isinstance(data, ResponseOutputItemDoneEvent) and data.item.type == "message":
                await self._close_text()
            elif data.type == "response.created":
                self.parent_id = None  # a new model response: a new assistant message
        elif isinstance(event, RunItemStreamEvent):
            item = event.item
            if isinstance(item, ToolCallItem) and getattr(item.raw_item, "type", None) == "function_call":
                raw: Any = item.raw_item
                await self._propose(raw.call_id, raw.name, raw.arguments)
            elif isinstance(item, ToolCallOutputItem):
                await self._output(item)

    async def _propose(self, call: str, name: str, arguments: str) -> None:
        if call in self.known_calls:
            return
        await self._close_text()
        self.known_calls.add(call)
        self.proposed.add(call)
        self.parent_id = self.parent_id or self.ctx.new_id("msg")
        await self.ctx.propose_tool_call(
            name, tool_arguments(arguments), tool_call_id=call, parent_message_id=self.parent_id
        )

    async def _output(self, item: ToolCallOutputItem) -> None:
        call = item.call_id
        if call is None or call not in self.known_calls or call in self.cancelled or call in self.reported:
            return
        replayed = self.replayed.get(call)
        if replayed is not None and replayed.result is not None:
            await self.ctx.emit(replayed.result)  # the recorded result, under its own id
        elif replayed is not None:
            await self.ctx.tool_result(call, NOT_RUN_AGAIN)
        else:
            await self.ctx.tool_result(call, _output_text(item.output))
        self.reported.add(call)

    async def _close_text(self) -> None:
        if self.text_id is not None:
            await self.ctx.emit(ev.TextMessageEndEvent(message_id=self.text_id))
            self.text_id = None

    async def _interrupt(self, items: Sequence[ToolApprovalItem], state: RunState[Any, Any]) -> None:
        ctx = self.ctx
        interrupts = []
        for item in items:
            call = _call_id(item.raw_item)
            name = item.tool_name or ""
            arguments = getattr(item.raw_item, "arguments", None) or "{}"
            if call is None:
                raise LocalProtocolError(f"the OpenAI agent asked to approve a {name!r} call without a call id")
            if call not in self.proposed:
                # Raised for a call the stream never showed (a nested agent's): proposed now,
                # since an AG-UI approval binds a tool call of its own run.
                self.known_calls.discard(call)
                await self._propose(call, name, arguments)
            interrupts.append(self._approval(item, call, name, arguments))
        try:
            held: JSON = orjson.loads(orjson.dumps(state.to_json(), default=str))
        except TypeError as exc:
            raise LocalProtocolError(f"the OpenAI agent's RunState does not encode as JSON: {exc}") from None
        ctx.continuation = {_KEY: {"state": held}}
        await ctx.interrupt(*interrupts)

    def _approval(self, item: ToolApprovalItem, call: str, name: str, arguments: str) -> Interrupt:
        adapter = self.adapter
        expires = None
        if adapter.ttl is not None:
            instant = self.ctx.now().astimezone(UTC) + adapter.ttl
            expires = instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        said: dict[str, JSON] = {"tool": name, "agent": item.agent.name}
        return Interrupt(
            id=self.ctx.new_id("approval"),
            reason="tool_call",
            message=approval_message(name, tool_arguments(arguments)),
            tool_call_id=call,
            response_schema=approval_schema(adapter.parameters(name), allow_edits=adapter.edits_allowed(name)),
            expires_at=expires,
            metadata={_KEY: said},
        )


# -- conversions -----------------------------------------------------------------------------


def _call_id(raw: Any) -> str | None:
    found = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    return found if isinstance(found, str) else None


def _json(value: object) -> JSON:
    decoded: JSON = orjson.loads(orjson.dumps(value, default=str))
    return decoded


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return orjson.dumps(output, default=str).decode()
    except TypeError:
        return str(output)


def _recorded_output(entry: ToolJournalEntry) -> str:
    """What the SDK is given for a call an earlier attempt ran: its recorded result's text."""
    if entry.result is None:
        return NOT_RUN_AGAIN
    content = entry.result.content
    return content if isinstance(content, str) else orjson.dumps(content, default=str).decode()


def _input_items(messages: Sequence[Message]) -> list[Any]:
    """The thread's AG-UI messages as Responses input items (a new run starts from these)."""
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    items: list[Any] = []
    for message in messages:
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                text = message.content
            else:
                text = "".join(t for part in message.content if isinstance(t := getattr(part, "text", None), str))
            items.append({"role": "user", "content": text})
        elif isinstance(message, AssistantMessage):
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            for call in message.tool_calls or ():
                if call.id in answered:
                    function = call.function
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": call.id,
                            "name": function.name,
                            "arguments": function.arguments,
                        }
                    )
        elif isinstance(message, ToolMessage):
            items.append({"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content})
    return items
