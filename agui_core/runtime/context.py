"""The agent API: what an agent function gets to read the run and to act in it.

An agent is ``async def agent(ctx: RunContext) -> JSON``. It reads the input, the thread's
messages and state and, on a resumed run, the answers and what became of its gated tool
calls; it streams text, proposes tool calls, sets or patches state, opens steps and
subagents; and it ends the run by returning (success, with the return value as ``result``)
or with :meth:`RunContext.interrupt`. Every act goes through the thread machine, so an agent
that breaks a rule gets :class:`~agui_core.errors.LocalProtocolError` at the call that broke it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Protocol

import orjson

from agui_core.errors import LocalProtocolError, RunErrorCode
from agui_core.machine.effects import Answer, Effect, Emit
from agui_core.machine.record import Proposal, ToolJournalEntry
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, Interrupt, Message, RunAgentInput
from agui_core.runtime.tools import NO_EDITS, Tool, ToolOutcome

__all__ = ["RunContext", "TextStream"]

Carry = Callable[[list[Effect]], Awaitable[None]]


class _Send(Protocol):
    """Where a run's events go (the host's outlet): ``await send(event)``, or first ``offer``."""

    def offer(self, event: ev.Event) -> bool:
        """Hand ``event`` over if that takes no waiting; ``False``: await the call instead."""

    async def __call__(self, event: ev.Event) -> None: ...


class TextStream:
    """One assistant message being streamed; see :meth:`RunContext.message`."""

    def __init__(self, ctx: RunContext, message_id: str) -> None:
        self._ctx = ctx
        self.message_id = message_id

    def delta(self, text: str) -> Coroutine[Any, Any, None]:
        """Append ``text`` to the message (``await`` it)."""
        # The emit's own coroutine, not one around it: a delta is the commonest event of all.
        return self._ctx.emit(ev.TextMessageContentEvent(message_id=self.message_id, delta=text))


class RunContext:
    """One run of an agent, as the agent sees it."""

    def __init__(
        self,
        *,
        machine: ThreadMachine,
        run_input: RunAgentInput,
        answers: tuple[Answer, ...],
        tools: Mapping[str, Tool],
        tool_outcomes: Mapping[str, ToolOutcome],
        carry: Carry,
        new_id: Callable[[], str],
        now: Callable[[], Any],
        send: _Send | None = None,
    ) -> None:
        self._machine = machine
        self._carry = carry
        self._send = send
        self._new_id = new_id
        self._now = now
        self._tools = tools
        self._pending: list[Interrupt] = []
        self._ended = False
        self._last_message_id: str | None = None
        self.input = run_input
        self.answers = answers
        self.tool_outcomes = dict(tool_outcomes)

    # -- reading -------------------------------------------------------------------------

    @property
    def thread_id(self) -> str:
        return self.input.thread_id

    @property
    def run_id(self) -> str:
        return self.input.run_id

    @property
    def resumed(self) -> bool:
        """Whether this run carries answers to interrupts of an earlier run."""
        return bool(self.answers)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The thread's messages as they stand now (the input's, plus what this run streamed)."""
        return self._machine.messages

    @property
    def state(self) -> JSON:
        """The thread's agent state as it stands now."""
        return self._machine.agent_state

    def now(self) -> datetime:
        """The host's clock: the instant to reckon expiry from (``expiresAt``) in agent code."""
        instant: datetime = self._now()
        return instant

    @property
    def ended(self) -> bool:
        """Whether the run has ended (by :meth:`interrupt` or :meth:`finish`)."""
        return self._ended

    @property
    def continuation(self) -> JSON:
        """The agent's own data kept, server-side, with the interrupts this run answers.

        Set it before the run interrupts, and the run that answers those interrupts reads it
        back here. It is never sent to a client, so a resumed agent routes by it (what it was
        doing, which step comes next), never by client-writable state or messages. A resumed
        run that does not set it keeps the one it was handed (for chained interrupts).
        """
        return self._machine.continuation

    @continuation.setter
    def continuation(self, value: JSON) -> None:
        self._check_open()
        self._machine.continuation = value

    @property
    def tool_journal(self) -> Mapping[str, ToolJournalEntry]:
        """The tools run for answered calls of this thread, by tool call id: started, and their result.

        Kept with the thread and never rolled back: an entry written by an attempt at a run
        that then failed is still here for the retry, so an agent that runs tools itself (see
        :meth:`tool_started`) can give back a recorded result instead of running a tool twice.
        """
        return self._machine.tool_journal

    async def tool_started(self, tool_call_id: str, name: str, args: Mapping[str, JSON]) -> None:
        """Record, durably, that the agent is about to run ``name`` with ``args`` for ``tool_call_id``.

        For an agent that runs an answered call's tool itself (a framework's own tool
        executor) rather than through the host's tools: the entry is saved before this
        returns, and the ``TOOL_CALL_RESULT`` the agent sends for the call afterwards is saved
        with it before it goes out, as the host does for its own gated tools. One entry per
        call: a second is a :class:`~agui_core.errors.LocalProtocolError`.
        """
        self._check_open()
        ran = Proposal(tool_call_id=tool_call_id, name=name, arguments=orjson.dumps(dict(args)).decode())
        await self._carry(self._machine.tool_started(tool_call_id, now=self._now(), ran=ran))

    def answer(self, interrupt_id: str) -> Answer | None:
        """The answer this run carries for ``interrupt_id``, if any."""
        return next((a for a in self.answers if a.interrupt.id == interrupt_id), None)

    def new_id(self, prefix: str) -> str:
        """A fresh id for a message, tool call or interrupt of this run."""
        return f"{prefix}-{self._new_id()}"

    # -- streaming -----------------------------------------------------------------------

    async def emit(self, event: ev.Event) -> None:
        """Send any AG-UI event through the machine's rules."""
        if self._ended:
            self._check_open()  # raises
        effects = self._machine.emit(event)
        if len(effects) == 1 and effects[0].__class__ is Emit and self._send is not None:
            # Most events: one to send and nothing to save, straight to the caller's stream,
            # without a coroutine when there is room in it.
            if not self._send.offer(effects[0].event):
                await self._send(effects[0].event)
        else:
            await self._carry(effects)

    async def text(self, content: str, *, message_id: str | None = None) -> str:
        """Send a whole assistant text message; returns its id."""
        async with self.message(message_id=message_id) as stream:
            await stream.delta(content)
        return stream.message_id

    @asynccontextmanager
    async def message(self, *, message_id: str | None = None) -> AsyncIterator[TextStream]:
        """Stream an assistant message by deltas: ``async with ctx.message() as m: await m.delta(..)``."""
        message_id = message_id or self.new_id("msg")
        await self.emit(ev.TextMessageStartEvent(message_id=message_id, role="assistant"))
        self._last_message_id = message_id
        yield TextStream(self, message_id)
        await self.emit(ev.TextMessageEndEvent(message_id=message_id))

    async def propose_tool_call(
        self,
        name: str,
        args: Mapping[str, JSON],
        *,
        tool_call_id: str | None = None,
        parent_message_id: str | None = None,
    ) -> str:
        """Send ``TOOL_CALL_START/ARGS/END`` for a call of ``name``; returns the tool call id.

        The call belongs to ``parent_message_id``, by default the last message this run
        streamed, so a text and the tool calls after it make one assistant message.
        """
        tool_call_id = tool_call_id or self.new_id("call")
        parent_message_id = parent_message_id or self._last_message_id
        await self.emit(
            ev.ToolCallStartEvent(tool_call_id=tool_call_id, tool_call_name=name, parent_message_id=parent_message_id)
        )
        await self.emit(ev.ToolCallArgsEvent(tool_call_id=tool_call_id, delta=orjson.dumps(dict(args)).decode()))
        await self.emit(ev.ToolCallEndEvent(tool_call_id=tool_call_id))
        return tool_call_id

    async def tool_result(self, tool_call_id: str, content: str, *, message_id: str | None = None) -> None:
        """Send the result of a tool call as ``TOOL_CALL_RESULT``."""
        await self.emit(
            ev.ToolCallResultEvent(
                message_id=message_id or self.new_id("result"), tool_call_id=tool_call_id, content=content
            )
        )

    async def call_tool(
        self,
        name: str,
        args: Mapping[str, JSON],
        *,
        parent_message_id: str | None = None,
        tool_call_id: str | None = None,
        interrupt_id: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSON] | None = None,
    ) -> ToolOutcome | None:
        """Call a registered tool.

        A tool without approval runs at once and its outcome is returned. A tool that needs
        approval is proposed and ``None`` is returned: when the agent ends this run, it
        interrupts with one approval per gated call, and the next run finds the outcomes in
        :attr:`tool_outcomes`. ``tool_call_id`` and ``interrupt_id`` default to fresh ids;
        ``message`` (the prompt a person reads) and ``metadata`` go on the approval.
        """
        registered = self._tools.get(name)
        if registered is None:
            raise LocalProtocolError(f"no tool named {name!r} is registered with the host")
        tool_call_id = await self.propose_tool_call(
            name, args, tool_call_id=tool_call_id, parent_message_id=parent_message_id
        )
        if registered.needs_approval:
            self._pending.append(
                Interrupt(
                    id=interrupt_id or self.new_id("approval"),
                    reason="tool_call",
                    message=message if message is not None else f"Run {name} with {orjson.dumps(dict(args)).decode()}?",
                    tool_call_id=tool_call_id,
                    response_schema=registered.approval_schema,
                    metadata=metadata,
                )
            )
            return None
        try:
            result = await registered.invoke(args)
        except Exception as exc:  # the tool's failure is the agent's to handle, not the run's
            outcome = ToolOutcome(tool_call_id=tool_call_id, name=name, status="failed", args=args, error=repr(exc))
            await self.tool_result(tool_call_id, f"error: {type(exc).__name__}")
        else:
            outcome = ToolOutcome(tool_call_id=tool_call_id, name=name, status="executed", args=args, result=result)
            await self.tool_result(tool_call_id, result if isinstance(result, str) else orjson.dumps(result).decode())
        self.tool_outcomes[tool_call_id] = outcome
        return outcome

    async def set_state(self, state: JSON) -> None:
        """Replace the agent state (``STATE_SNAPSHOT``)."""
        await self.emit(ev.StateSnapshotEvent(snapshot=state))

    async def patch_state(self, operations: Sequence[Mapping[str, JSON]]) -> None:
        """Change the agent state by a JSON Patch (``STATE_DELTA``)."""
        await self.emit(ev.StateDeltaEvent(delta=tuple(operations)))

    @asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        """A named step: ``STEP_STARTED`` on entry, ``STEP_FINISHED`` on exit."""
        await self.emit(ev.StepStartedEvent(step_name=name))
        yield
        await self.emit(ev.StepFinishedEvent(step_name=name))

    @asynccontextmanager
    async def subagent(self, name: str, *, subagent_run_id: str | None = None) -> AsyncIterator[str]:
        """A subagent invocation; yields its ``subagentRunId`` for attributing its events.

        A subagent left open when the run ends (for example because it raised an interrupt)
        is closed by the machine: suspended with its interrupts, or finished.
        """
        subagent_run_id = subagent_run_id or self.new_id("sub")
        await self.emit(ev.SubagentStartedEvent(subagent_run_id=subagent_run_id, name=name))
        yield subagent_run_id
        if not self._ended and subagent_run_id in self._machine_open_subagents():
            await self.emit(ev.SubagentFinishedEvent(subagent_run_id=subagent_run_id))

    def _machine_open_subagents(self) -> frozenset[str]:
        return self._machine.open_subagents

    # -- ending --------------------------------------------------------------------------

    def approval(self, tool_call_id: str, message: str | None = None, *, allow_edits: bool = True) -> Interrupt:
        """An interrupt asking to approve ``tool_call_id`` (closed in this run)."""
        from agui_core.runtime.tools import APPROVE_SCHEMA, APPROVE_WITH_EDITS_SCHEMA

        return Interrupt(
            id=self.new_id("approval"),
            reason="tool_call",
            message=message,
            tool_call_id=tool_call_id,
            response_schema=APPROVE_WITH_EDITS_SCHEMA if allow_edits else APPROVE_SCHEMA,
        )

    def ask(self, message: str, schema: Mapping[str, JSON], *, expires_at: str | None = None) -> Interrupt:
        """An ``input_required`` interrupt: a form described by ``schema``."""
        return Interrupt(
            id=self.new_id("input"),
            reason="input_required",
            message=message,
            response_schema=schema,
            expires_at=expires_at,
        )

    def confirm(self, message: str) -> Interrupt:
        """A ``confirmation`` interrupt: a yes/no, answered with a boolean."""
        return Interrupt(id=self.new_id("confirm"), reason="confirmation", message=message)

    async def interrupt(self, *interrupts: Interrupt) -> None:
        """End the run waiting for a person (with any gated tool calls still pending)."""
        self._check_open()
        raised = [*self._pending, *interrupts]
        await self._end(self._machine.interrupt(raised, now=self._now(), edit_schemas=self._edit_schemas(raised)))

    def _edit_schemas(self, interrupts: Sequence[Interrupt]) -> dict[str, Mapping[str, JSON]]:
        """What the edits of each approval of a host-run tool must pass: the tool's parameters.

        Whoever wrote the approval (``call_tool`` or the agent itself), edits of a tool that
        allows none are refused, and edits of one that does must fit its parameters.
        """
        schemas: dict[str, Mapping[str, JSON]] = {}
        for interrupt in interrupts:
            call_id = interrupt.tool_call_id
            proposed = self._machine.proposed_tool_call(call_id) if call_id is not None else None
            registered = self._tools.get(proposed[0]) if proposed is not None else None
            if call_id is not None and registered is not None:
                schemas[call_id] = registered.parameters if registered.allow_edits else NO_EDITS
        return schemas

    async def refuse(self, code: RunErrorCode, message: str) -> None:
        """End the run with ``RUN_ERROR`` ``code``: the input it carries is refused.

        For a refusal only the agent can see (the answers contradict what its own journal says
        already happened): the thread goes back to where it stood before the run, so the
        interrupts it answered are open again, as for any failed run.
        """
        self._check_open()
        await self._end(self._machine.fail(message, code))

    async def finish(self, result: JSON = None) -> None:
        """End the run with success. Returning from the agent does the same."""
        self._check_open()
        if self._pending:
            await self.interrupt()
            return
        await self._end(self._machine.finish(result))

    async def _end(self, effects: list[Effect]) -> None:
        self._ended = True
        await self._carry(effects)

    def _check_open(self) -> None:
        if self._ended:
            raise LocalProtocolError("the run has already ended", state=self._machine.state)
