"""The host: runs agents on thread machines and carries out what the machines decide.

``async with Host(agent, store=...) as host:`` then ``async for event in host.run(run_input)``.
For each input the host loads the thread from its store, hands the input to the thread's
:class:`~agui_core.machine.thread.ThreadMachine` and carries out the effects in order: a
``Persist`` is saved (a compare-and-set on the record's version) before anything after it is
emitted, an ``Emit`` goes to the caller, a ``StartAgent`` runs the agent.

The host owns the clock (injectable) and makes sure one run at a time goes on per thread:
in this process by a set of busy threads, across processes and machines by the store's
compare-and-set, which makes exactly one of two hosts win a thread. A run outlives its
caller: if the caller stops listening, the run goes on and its outcome is saved.

Crash safety. A run left in progress by a host that died is closed once its time is up
(``run_timeout``, which also bounds every run): it fails, and the thread goes back to where
it stood, so the interrupts it answered are open again. Approved tools run at most once: the
host records a tool as started before it runs it, and its result before sending it; on a
retry a recorded result is sent again, and a tool that started but left no result is
reported as ``unknown`` rather than run a second time.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta, timezone
from types import TracebackType

import anyio
import anyio.abc
import orjson
from anyio.streams.memory import MemoryObjectSendStream

from agui_core.errors import AguiError, LocalProtocolError, RunErrorCode
from agui_core.machine.effects import Answer, Effect, Emit, Persist, StartAgent
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import JSON, RunAgentInput
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import Tool, ToolOutcome
from agui_core.store.base import ThreadStore, VersionConflict
from agui_core.store.memory import MemoryThreadStore

__all__ = ["Agent", "Host"]

log = logging.getLogger("agui_core.host")

Agent = Callable[[RunContext], Awaitable[JSON]]
"""An agent: an async function of its run context; its return value is the run's result."""


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Host:
    """Runs ``agent`` for every input, one run at a time per thread, over ``store``."""

    def __init__(
        self,
        agent: Agent,
        *,
        store: ThreadStore | None = None,
        tools: Sequence[Tool] = (),
        clock: Callable[[], datetime] = _utcnow,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex[:12],
        run_timeout: float = 300.0,
        buffer: int = 256,
        payload_validators: PayloadValidators | None = None,
    ) -> None:
        self.agent = agent
        self.store: ThreadStore = store if store is not None else MemoryThreadStore()
        self.tools: Mapping[str, Tool] = {t.name: t for t in tools}
        self.clock = clock
        self.new_id = new_id
        self.run_timeout = run_timeout
        self._buffer = buffer
        self._validators = payload_validators if payload_validators is not None else PayloadValidators()
        self._busy: set[str] = set()
        self._group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Host:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        group, self._group = self._group, None
        assert group is not None
        return await group.__aexit__(exc_type, exc, tb)

    async def run(self, run_input: RunAgentInput) -> AsyncIterator[ev.Event]:
        """Carry out ``run_input`` and yield the events for its caller, in order.

        The run goes on in the host's task group: a caller that stops iterating loses the
        rest of the stream, not the run.
        """
        if self._group is None:
            raise RuntimeError("use the host as `async with Host(...) as host:`")
        thread_id = run_input.thread_id
        if thread_id in self._busy:
            yield ev.RunErrorEvent(
                message=f"thread {thread_id!r} is busy with another run", code=RunErrorCode.THREAD_BUSY.value
            )
            return
        self._busy.add(thread_id)
        send, receive = anyio.create_memory_object_stream[ev.Event](self._buffer)
        self._group.start_soon(self._carry_run, run_input, send)
        async with receive:
            async for event in receive:
                yield event

    async def _carry_run(self, run_input: RunAgentInput, send: MemoryObjectSendStream[ev.Event]) -> None:
        listening = True

        async def out(event: ev.Event) -> None:
            nonlocal listening
            if listening:
                try:
                    await send.send(event)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    listening = False  # the caller left; the run goes on and is saved

        try:
            async with send:
                await self._handle(run_input, out)
        finally:
            self._busy.discard(run_input.thread_id)

    async def _load(self, thread_id: str) -> ThreadMachine:
        record = await self.store.load(thread_id)
        if record is None:
            return ThreadMachine(thread_id, payload_validators=self._validators)
        return ThreadMachine.from_record(record, payload_validators=self._validators)

    async def _save(self, effect: Persist) -> None:
        await self.store.save(effect.record)

    async def _handle(self, run_input: RunAgentInput, out: Callable[[ev.Event], Awaitable[None]]) -> None:
        thread_id = run_input.thread_id
        try:
            machine = await self._load(thread_id)
            now = self.clock()
            await self._recover_abandoned(machine, now)
            mismatch = await self._foreign_interrupts(machine, run_input)
            if mismatch is not None:
                await out(mismatch)
                return
            effects = machine.receive_input(run_input, now=now)
            await self._carry(machine, run_input, effects, out)
        except VersionConflict as exc:
            log.info("lost the race for thread %r: %s", thread_id, exc)
            await out(
                ev.RunErrorEvent(
                    message=f"thread {thread_id!r} is busy: another host took it", code=RunErrorCode.THREAD_BUSY.value
                )
            )

    async def _recover_abandoned(self, machine: ThreadMachine, now: datetime) -> None:
        """Close a run a dead host left in progress, once no live host could still be in it."""
        started = machine.run_received_at
        if started is None or now - started < timedelta(seconds=self.run_timeout):
            return
        log.warning("closing run %r of thread %r: its host stopped before it ended", machine.run_id, machine.thread_id)
        for effect in machine.fail("the host running this run stopped before it ended", RunErrorCode.AGENT_ERROR.value):
            if isinstance(effect, Persist):
                await self._save(effect)

    async def _foreign_interrupts(self, machine: ThreadMachine, run_input: RunAgentInput) -> ev.RunErrorEvent | None:
        """``THREAD_MISMATCH`` when a resume names interrupts another thread raised (rule 1)."""
        foreign = []
        for entry in run_input.resume or ():
            if machine.knows_interrupt(entry.interrupt_id):
                continue
            owner = await self.store.thread_of_interrupt(entry.interrupt_id)
            if owner is not None and owner != machine.thread_id:
                foreign.append((entry.interrupt_id, owner))
        if not foreign:
            return None
        named = ", ".join(f"{iid!r} (thread {owner!r})" for iid, owner in foreign)
        return ev.RunErrorEvent(
            message=f"the resume on thread {machine.thread_id!r} names interrupts of another thread: {named}",
            code=RunErrorCode.THREAD_MISMATCH.value,
        )

    async def _carry(
        self,
        machine: ThreadMachine,
        run_input: RunAgentInput,
        effects: list[Effect],
        out: Callable[[ev.Event], Awaitable[None]],
    ) -> None:
        for effect in effects:
            if isinstance(effect, Persist):
                await self._save(effect)
            elif isinstance(effect, Emit):
                await out(effect.event)
            elif isinstance(effect, StartAgent):
                await self._run_agent(machine, run_input, effect.answers, out)

    async def _run_agent(
        self,
        machine: ThreadMachine,
        run_input: RunAgentInput,
        answers: tuple[Answer, ...],
        out: Callable[[ev.Event], Awaitable[None]],
    ) -> None:
        async def carry(effects: list[Effect]) -> None:
            for effect in effects:
                if isinstance(effect, Persist):
                    await self._save(effect)
                elif isinstance(effect, Emit):
                    await out(effect.event)

        ctx: RunContext | None = None
        try:
            with anyio.fail_after(self.run_timeout if math.isfinite(self.run_timeout) else None):
                outcomes = await self._carry_out_decisions(machine, answers, carry)
                ctx = RunContext(
                    machine=machine,
                    run_input=run_input,
                    answers=answers,
                    tools=self.tools,
                    tool_outcomes=outcomes,
                    carry=carry,
                    new_id=self.new_id,
                    now=self.clock,
                )
                result = await self.agent(ctx)
                if not ctx.ended:
                    await ctx.finish(result)
        except VersionConflict:
            raise
        except TimeoutError:
            await self._fail(machine, f"the run took longer than {self.run_timeout:g} s", carry)
        except LocalProtocolError as exc:
            log.warning("agent broke a protocol rule in run %r: %s", run_input.run_id, exc.message)
            await self._fail(machine, f"the agent broke a protocol rule: {exc.message}", carry)
        except AguiError as exc:
            log.warning("agent error in run %r: %s", run_input.run_id, exc.message)
            await self._fail(machine, exc.message, carry)
        except Exception as exc:
            log.exception("the agent failed in run %r of thread %r", run_input.run_id, run_input.thread_id)
            await self._fail(machine, f"the agent failed ({type(exc).__name__}); the host's log has the details", carry)

    async def _fail(self, machine: ThreadMachine, message: str, carry: Callable[[list[Effect]], Awaitable[None]]) -> None:
        if machine.run_id is None:
            return  # the run ended before the failure: nothing to undo
        await carry(machine.fail(message, RunErrorCode.AGENT_ERROR.value))

    async def _carry_out_decisions(
        self, machine: ThreadMachine, answers: tuple[Answer, ...], carry: Callable[[list[Effect]], Awaitable[None]]
    ) -> dict[str, ToolOutcome]:
        """Run, skip or report each gated tool call the answers decide, before the agent runs."""
        outcomes: dict[str, ToolOutcome] = {}
        for answer in answers:
            call_id = answer.interrupt.tool_call_id
            if call_id is None or answer.interrupt.reason != "tool_call":
                continue
            proposed = machine.proposed_tool_call(call_id)
            if proposed is None or proposed[0] not in self.tools:
                continue  # not one of the host's gated tools: the agent decides what to do
            name, args = proposed
            registered = self.tools[name]
            payload = answer.entry.payload
            if answer.entry.status == "cancelled":
                outcomes[call_id] = ToolOutcome(tool_call_id=call_id, name=name, status="cancelled", args=args)
                continue
            if answer.approved is not True:
                outcomes[call_id] = ToolOutcome(tool_call_id=call_id, name=name, status="denied", args=args)
                await carry(machine.emit(self._result(call_id, "the user denied this call")))
                continue
            edited = isinstance(payload, dict) and isinstance(payload.get("editedArgs"), dict)
            if edited:
                args = payload["editedArgs"]
            journal = machine.tool_journal.get(call_id)
            if journal is not None:
                # A host died around this call: never run it twice.
                if journal.result is not None:
                    await carry(machine.emit(journal.result))
                    outcomes[call_id] = ToolOutcome(
                        tool_call_id=call_id, name=name, status="executed", args=args, result=journal.result.content, edited=edited
                    )
                else:
                    outcomes[call_id] = ToolOutcome(tool_call_id=call_id, name=name, status="unknown", args=args, edited=edited)
                    await carry(machine.emit(self._result(call_id, "the host stopped while this call ran; it was not run again")))
                continue
            await carry(machine.tool_started(call_id, now=self.clock()))
            try:
                value = await registered.invoke(args)
            except Exception as exc:
                log.exception("tool %r failed for tool call %r", name, call_id)
                outcomes[call_id] = ToolOutcome(
                    tool_call_id=call_id, name=name, status="failed", args=args, error=f"{type(exc).__name__}: {exc}", edited=edited
                )
                await carry(machine.emit(self._result(call_id, f"the tool failed ({type(exc).__name__})")))
                continue
            content = value if isinstance(value, str) else orjson.dumps(value).decode()
            await carry(machine.emit(self._result(call_id, content)))
            outcomes[call_id] = ToolOutcome(tool_call_id=call_id, name=name, status="executed", args=args, result=value, edited=edited)
        return outcomes

    def _result(self, call_id: str, content: str) -> ev.ToolCallResultEvent:
        return ev.ToolCallResultEvent(message_id=f"result-{call_id}", tool_call_id=call_id, content=content)
