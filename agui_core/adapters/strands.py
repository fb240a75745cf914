"""Host an AWS Strands agent (``strands-agents``) as an agui-core agent.

``StrandsAdapter(factory)`` is an agent function for :class:`~agui_core.runtime.Host` (and
``agui serve``): each run builds a fresh Strands ``Agent`` from ``factory`` (or from a
snapshot of a template ``Agent``), streams it, and turns what it does into AG-UI events: its
text as ``TEXT_MESSAGE_*``, its tool uses as ``TOOL_CALL_START/ARGS/END``, their results as
``TOOL_CALL_RESULT``, its ``agent.state`` as ``STATE_SNAPSHOT``.

Theory of operation. Strands pauses with native interrupts: a hook's
``BeforeToolCallEvent.interrupt()`` (before a tool runs), a tool's
``ToolContext.interrupt()`` (inside it), and others; the invocation then stops with
``stop_reason == "interrupt"``. The adapter ends the AG-UI run with one
:class:`~agui_core.protocol.types.Interrupt` per Strands interrupt, under the same id, and
keeps the Strands agent's session snapshot (messages, state, interrupt state, the pending tool
execution) as the run's *continuation*: the thread machine stores it with the interrupts,
server-side, never sends it, and hands it back to the run that answers them. That run, on any
host sharing the store, loads the snapshot into a fresh agent and resumes it with Strands'
own ``interruptResponse`` blocks, each carrying the resume payload exactly as the person sent
it. Every rule (coverage, replay, expiry, ownership, payload schemas) is the machine's; no
Strands agent outlives its run.

Mapping of an interrupt (``reason`` given to Strands' ``interrupt(name, reason=...)``; a dict
may say ``message``, ``responseSchema``, ``expiresAt``, ``metadata`` and ``reason``):

- raised by a hook before a tool call: ``reason: "tool_call"`` with the tool use's id as
  ``toolCallId``; without a ``responseSchema`` of its own it gets the approval schema
  (``{"approved": boolean}``, plus ``editedArgs`` (the tool's input schema, its definitions
  moved to the root) when the adapter allows edits of that tool). :class:`ToolApproval` is such a hook, edits included;
- raised inside a tool: bound to that tool call too (``toolCallId``), ``input_required``
  when it declares a ``responseSchema``, otherwise ``strands:<name>``;
- anything else: ``input_required`` with a ``responseSchema``, otherwise ``strands:<name>``.

A dict ``reason`` of its own overrides these reasons. AG-UI binds an interrupt only to a tool
call of its own run, so one raised for a call an earlier run proposed (a question asked inside
a tool after its approval: a chained interrupt) names the call in ``metadata.strands.toolUseId``
instead of ``toolCallId``. A cancelled answer reaches Strands as
:data:`CANCELLED` (Strands reads ``None`` as "not answered"), and the tool call it was bound to
is not run: the adapter cancels it before it starts, whatever the hooks do. A resolved answer
without a payload reaches Strands as ``{}``.

At most once. The tool of a call an answer decides (an approval, or a question asked inside
it) runs under the thread's tool journal (:attr:`RunContext.tool_journal`), as the host's own
gated tools do: the adapter records it as started before Strands runs it, and its result as
soon as it returns. If that run then fails (the model fails on the next turn, the host dies,
the run times out), the retried resume gives Strands the recorded result instead of running
the tool again (a tool cut short, with no result, gets an ``unknown`` error result), and the
recorded ``TOOL_CALL_RESULT`` is sent again. Only the decision that ran the tool can resume
it: a retry that cancels it, denies it or approves other edits is refused by the thread machine
with ``INTERRUPT_ALREADY_RESOLVED`` before the run starts, as for every agent, and the interrupt
stays open; whether a call runs or has its recorded result given back is the machine's decision
(:meth:`RunContext.tool_decision`). Limits: a retried answer to a
question asked inside a tool is not compared (the tool's recorded result stands whatever it
says); a tool that asked a question is journaled from its first start, so if its host dies
while it runs on after the answer, the retry runs it again; a replayed result reaches Strands
as text (the journal keeps the AG-UI result).
"""

from __future__ import annotations

import contextvars
import copy
import inspect
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import UTC, timedelta
from typing import Any, Final, cast

import anyio
import orjson
from strands import Agent as StrandsAgent
from strands import Snapshot
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry
from strands.hooks.registry import HookOrder
from strands.interrupt import Interrupt as StrandsInterrupt
from strands.types.tools import ToolResult

from agui_core.adapters.approval import approval_schema, tool_arguments
from agui_core.errors import LocalProtocolError
from agui_core.machine.effects import Answer, RunTool
from agui_core.machine.record import ToolJournalEntry
from agui_core.protocol import events as ev
from agui_core.protocol.types import (
    JSON,
    AssistantMessage,
    Interrupt,
    Message,
    ToolMessage,
    UserMessage,
)
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import NOT_RUN_AGAIN, approval_message

__all__ = ["CANCELLED", "Cancelled", "StrandsAdapter", "ToolApproval", "approval_schema", "is_strands_agent"]

_BEFORE_TOOL_CALL: Final = "v1:before_tool_call:"
_TOOL_CALL: Final = "v1:tool_call:"
_KEY: Final = "strands"
_NOT_RUN: Final = "The person cancelled this tool call; it was not run."
_RAN_BEFORE: Final = "This tool call already ran in an earlier attempt at this run; its recorded result stands."
_SNAPSHOT_FIELDS: Final = ("messages", "state", "conversation_manager_state", "interrupt_state")


class Cancelled:
    """The type of :data:`CANCELLED`: one value, kept by identity through copies."""

    _instance: Cancelled | None = None

    def __new__(cls) -> Cancelled:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "CANCELLED"

    def __copy__(self) -> Cancelled:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Cancelled:
        return self


CANCELLED: Final = Cancelled()
"""What a Strands ``interrupt()`` returns when the person cancelled the interrupt."""

_current_run: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("agui_core_strands_run", default=None)


def _input_schema(event: BeforeToolCallEvent) -> Mapping[str, JSON] | None:
    selected = event.selected_tool
    if selected is None:
        return None
    schema = selected.tool_spec.get("inputSchema", {})
    found = schema.get("json") if isinstance(schema, dict) else None
    return found if isinstance(found, dict) else None


class ToolApproval(HookProvider):
    """A hook that asks a person before each call of ``tools`` (all tools when empty).

    The approval is a Strands interrupt named ``approval`` whose reason carries a message and
    the approval schema; with ``allow_edits``, an approval's ``editedArgs`` replace the tool's
    input whole. A denial or a cancellation cancels the call.
    """

    def __init__(self, *tools: str, allow_edits: bool = False, message: str | None = None) -> None:
        self.tools = frozenset(tools)
        self.allow_edits = allow_edits
        self.message = message

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

    def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        name = event.tool_use["name"]
        if self.tools and name not in self.tools:
            return
        answer = event.interrupt(
            "approval",
            reason={
                "message": self.message or approval_message(name, event.tool_use["input"]),
                "responseSchema": approval_schema(_input_schema(event), allow_edits=self.allow_edits),
            },
        )
        if not isinstance(answer, dict) or answer.get("approved") is not True:
            event.cancel_tool = "The person did not approve this tool call."
            return
        edited = answer.get("editedArgs")
        if self.allow_edits and isinstance(edited, dict):
            event.tool_use["input"] = edited


def is_strands_agent(value: object) -> bool:
    """Whether ``value`` is a Strands ``Agent``."""
    return isinstance(value, StrandsAgent)


async def _before_tool_call(event: BeforeToolCallEvent) -> None:
    """The adapter's own hook, run last: a cancelled call does not run, an answered one is journaled."""
    run = _current_run.get()
    if run is not None:
        await run.before_tool_call(event)


async def _after_tool_call(event: AfterToolCallEvent) -> None:
    run = _current_run.get()
    if run is not None:
        await run.after_tool_call(event)


class StrandsAdapter:
    """An agui-core agent that runs a Strands agent (see the module docstring).

    ``agent`` is a factory (a callable with no arguments returning a fresh Strands ``Agent``
    per run; runs of different threads go on at once) or an ``Agent`` used as a template
    (reset from its snapshot before each run; runs on one host then take turns, because a
    Strands agent serves one invocation at a time). ``allow_edits`` (``True`` or tool names)
    offers ``editedArgs`` on the default approvals of those tools. ``ttl`` gives every
    interrupt without its own ``expiresAt`` one that much after it is raised.
    """

    def __init__(
        self,
        agent: StrandsAgent | Callable[[], StrandsAgent],
        *,
        allow_edits: bool | Collection[str] = False,
        ttl: timedelta | None = None,
    ) -> None:
        self._template: StrandsAgent | None = None
        self._factory: Callable[[], StrandsAgent] | None = None
        if isinstance(agent, StrandsAgent):
            self._template = agent
            self._initial = agent.take_snapshot(include=list(_SNAPSHOT_FIELDS))
            self._turn = anyio.Lock()
            self.__name__ = getattr(agent, "name", None) or "strands_agent"
        elif callable(agent) and not inspect.iscoroutinefunction(agent):
            self._factory = agent
            self.__name__ = getattr(agent, "__name__", "strands_agent")
        else:
            raise TypeError(f"StrandsAdapter needs a Strands Agent or a function returning one, not {agent!r}")
        if ttl is not None and not ttl > timedelta(0):
            raise ValueError(f"ttl must be more than zero, not {ttl}")
        self.allow_edits = allow_edits
        self.ttl = ttl
        self._hooked: weakref.WeakSet[StrandsAgent] = weakref.WeakSet()

    async def __call__(self, ctx: RunContext) -> JSON:
        if self._template is None:
            return await _Run(self, ctx, self._build()).run()
        async with self._turn:
            return await _Run(self, ctx, self._build()).run()

    def _build(self) -> StrandsAgent:
        if self._template is not None:
            agent = self._template
            agent.load_snapshot(self._initial)
        else:
            assert self._factory is not None
            agent = self._factory()
            if not isinstance(agent, StrandsAgent):
                raise TypeError(f"the Strands agent factory returned {type(agent).__name__}, not a Strands Agent")
        if agent not in self._hooked:
            agent.hooks.add_callback(BeforeToolCallEvent, _before_tool_call, order=HookOrder.SDK_LAST)
            agent.hooks.add_callback(AfterToolCallEvent, _after_tool_call, order=HookOrder.SDK_LAST)
            self._hooked.add(agent)
        return agent

    def edits_allowed(self, tool_name: str) -> bool:
        if isinstance(self.allow_edits, bool):
            return self.allow_edits
        return tool_name in self.allow_edits


class _Run:
    """One AG-UI run of one Strands invocation."""

    def __init__(self, adapter: StrandsAdapter, ctx: RunContext, agent: StrandsAgent) -> None:
        self.adapter = adapter
        self.ctx = ctx
        self.agent = agent
        self.text_id: str | None = None
        self.parent_id: str | None = None
        self.known_calls = {call for m in ctx.messages if isinstance(m, AssistantMessage) for call in _call_ids(m)}
        self.tool_uses: dict[str, Mapping[str, Any]] = {}
        """Every tool use of the conversation, by id (what a tool-bound interrupt names)."""
        self.cancelled_calls: set[str] = set()
        self.proposed: set[str] = set()
        """The tool calls this run proposed: the only ones its interrupts can be bound to."""
        self.interrupt_calls: dict[str, Mapping[str, Any]] = {}
        """The tool use each tool-bound Strands interrupt of this run was raised for."""
        self.answered_calls = {call for a in ctx.answers if (call := _answered_call(a)) is not None}
        """The tool calls the answers of this run decide: their tools run journaled."""
        self.resumable: set[str] = set()
        """Journaled calls whose tool stopped with an interrupt of its own: they run on when answered."""
        self.journaled: set[str] = set()
        """The calls whose tools this run runs under a journal entry."""
        self.reported: set[str] = set()
        """The journaled calls whose result this run has sent."""
        self.replayed: dict[str, ToolJournalEntry] = {}
        """The calls an earlier attempt already ran: not run again, their recorded result given back."""
        # Taken around every event of the stream: uncontended, it must not also yield to the
        # event loop as anyio's default lock does (a loop trip an event). A release still
        # hands the lock to the oldest waiter: a tool's hook that waits for it gets it after
        # the event in progress (a hook whose task has not run yet starts when the stream
        # next waits for Strands).
        self.acting = anyio.Lock(fast_acquire=True)
        """Tools run at once (Strands' concurrent executor): their hooks take turns with the context."""

    async def run(self) -> JSON:
        ctx = self.ctx
        kept = ctx.continuation if ctx.resumed else None
        cancelled_ids: set[str] = set()
        cancelled_calls: set[str] = set()
        if isinstance(kept, dict) and isinstance(kept.get(_KEY), dict):
            held = kept[_KEY]
            cancelled_ids = set(_strings(held.get("cancelledInterrupts")))
            cancelled_calls = set(_strings(held.get("cancelledCalls")))
            self.resumable = set(_strings(held.get("interruptedCalls")))
            snapshot = copy.deepcopy(held["snapshot"])
            prompt = self._responses(snapshot, cancelled_ids, cancelled_calls)
            _restore_cancelled(snapshot, cancelled_ids)
            self.agent.load_snapshot(Snapshot.from_dict(snapshot))
        elif ctx.resumed:
            raise LocalProtocolError("a resumed run of a Strands agent carries no Strands snapshot to resume from")
        else:
            if isinstance(ctx.state, dict) and ctx.state:
                for key, value in ctx.state.items():
                    self.agent.state.set(key, value)
            prompt = _strands_messages(ctx.messages)
        for message in self.agent.messages:
            for block in message.get("content", []):
                if "toolUse" in block:
                    self.tool_uses[block["toolUse"]["toolUseId"]] = block["toolUse"]
        state_before = self.agent.state.get()
        self.cancelled_calls = cancelled_calls
        token = _current_run.set(self)
        result: Any = None
        try:
            async for event in self.agent.stream_async(cast(Any, prompt or None)):
                async with self.acting:
                    result = await self._on(event, result)
        finally:
            _current_run.reset(token)
        await self._close_text()
        state = self.agent.state.get()
        if state != state_before or (not ctx.resumed and state != ctx.state):
            await ctx.set_state(state)
        if result is None:
            raise LocalProtocolError("the Strands agent ended without a result")
        if result.stop_reason == "interrupt":
            await self._interrupt(list(result.interrupts or ()), cancelled_ids, cancelled_calls)
            return None
        return str(result).strip() or None

    def _responses(
        self, snapshot: dict[str, Any], cancelled_ids: set[str], cancelled_calls: set[str]
    ) -> list[dict[str, Any]]:
        """The ``interruptResponse`` blocks that answer the snapshot's open interrupts."""
        waiting = snapshot.get("data", {}).get("interrupt_state", {}).get("interrupts", {})
        answers = {a.interrupt.id: a for a in self.ctx.answers}
        responses = []
        for interrupt_id, held in waiting.items():
            if held.get("response") is not None or interrupt_id in cancelled_ids:
                continue  # answered in an earlier run of this cycle
            answer = answers.get(interrupt_id)
            # An interrupt the machine no longer holds open expired unanswered: it is treated
            # as cancelled, so the thread goes on and its tool call does not run.
            response = _response(answer)
            if response is CANCELLED:
                cancelled_ids.add(interrupt_id)
                call = (answer.interrupt.tool_call_id if answer is not None else None) or _bound_call(interrupt_id)
                if call is not None:
                    cancelled_calls.add(call)
            responses.append({"interruptResponse": {"interruptId": interrupt_id, "response": response}})
        return responses

    async def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        """Last of the hooks: what becomes of a tool call before Strands runs its tool."""
        call = event.tool_use["toolUseId"]
        if call in self.cancelled_calls:
            event.cancel_tool = _NOT_RUN
            return
        if event.cancel_tool or call not in self.answered_calls:
            return
        # What becomes of the call is the thread machine's decision, as for the host's own tools.
        # (A call no approval binds, one whose tool asked a question, goes by the journal alone.)
        decision = self.ctx.tool_decision(call)
        entry = self.ctx.tool_journal.get(call)
        if isinstance(decision, RunTool) or (decision is None and entry is None):
            async with self.acting:
                await self.ctx.tool_started(call, event.tool_use["name"], tool_arguments(event.tool_use.get("input")))
            self.journaled.add(call)
        elif entry is None or (entry.result is None and call in self.resumable):
            self.journaled.add(call)  # its tool asked a question, now answered: it runs on
        else:
            # An earlier attempt at this resume ran it (or was cut short while it ran): never twice.
            self.replayed[call] = entry
            event.cancel_tool = _RAN_BEFORE

    async def after_tool_call(self, event: AfterToolCallEvent) -> None:
        """Last of the hooks: a journaled result is saved and sent as soon as the tool returns."""
        call = event.tool_use["toolUseId"]
        replayed = self.replayed.get(call)
        if replayed is not None:
            event.result = _recorded_result(call, replayed)
        elif call in self.journaled and call not in self.reported:
            async with self.acting:
                await self.ctx.tool_result(call, _result_text(event.result))
            self.reported.add(call)

    async def _on(self, event: Mapping[str, Any], result: Any) -> Any:
        if "data" in event and isinstance(event["data"], str) and not event.get("reasoning"):
            if self.text_id is None:
                self.text_id = self.ctx.new_id("msg")
                self.parent_id = self.text_id
                await self.ctx.emit(ev.TextMessageStartEvent(message_id=self.text_id, role="assistant"))
            if event["data"]:
                await self.ctx.emit(ev.TextMessageContentEvent(message_id=self.text_id, delta=event["data"]))
        elif "message" in event and isinstance(event["message"], dict):
            await self._on_message(event["message"])
        elif "tool_interrupt_event" in event:
            raised = event["tool_interrupt_event"]
            for interrupt in raised.get("interrupts", ()):
                self.interrupt_calls[interrupt.id] = raised["tool_use"]
        elif "result" in event:
            return event["result"]
        return result

    async def _on_message(self, message: Mapping[str, Any]) -> None:
        await self._close_text()
        parent, self.parent_id = self.parent_id, None
        for block in message.get("content", []):
            use = block.get("toolUse")
            if message.get("role") == "assistant" and use is not None:
                self.tool_uses[use["toolUseId"]] = use
                if use["toolUseId"] in self.known_calls:
                    continue
                self.known_calls.add(use["toolUseId"])
                self.proposed.add(use["toolUseId"])
                parent = parent or self.ctx.new_id("msg")
                await self.ctx.propose_tool_call(
                    use["name"],
                    tool_arguments(use.get("input")),
                    tool_call_id=use["toolUseId"],
                    parent_message_id=parent,
                )
            done = block.get("toolResult")
            if (
                message.get("role") == "user"
                and done is not None
                and done["toolUseId"] in self.known_calls
                and done["toolUseId"] not in self.cancelled_calls  # not run: no result to show
                and done["toolUseId"] not in self.reported  # sent as soon as its tool returned
            ):
                replayed = self.replayed.get(done["toolUseId"])
                if replayed is not None and replayed.result is not None:
                    await self.ctx.emit(replayed.result)  # the recorded result, under its own id
                elif replayed is not None:
                    await self.ctx.tool_result(done["toolUseId"], NOT_RUN_AGAIN)
                else:
                    await self.ctx.tool_result(done["toolUseId"], _result_text(done))

    async def _close_text(self) -> None:
        if self.text_id is not None:
            await self.ctx.emit(ev.TextMessageEndEvent(message_id=self.text_id))
            self.text_id = None

    async def _interrupt(
        self, raised: Sequence[StrandsInterrupt], cancelled_ids: set[str], cancelled_calls: set[str]
    ) -> None:
        ctx = self.ctx
        interrupts = [self._interrupt_of(i) for i in raised]
        snapshot = self.agent.take_snapshot(include=list(_SNAPSHOT_FIELDS)).to_dict()
        try:
            held: JSON = orjson.loads(orjson.dumps(snapshot, default=_encode_extra))
        except TypeError as exc:
            raise LocalProtocolError(f"the Strands agent's session does not encode as JSON: {exc}") from None
        ctx.continuation = {
            _KEY: {
                "snapshot": held,
                "cancelledInterrupts": sorted(cancelled_ids),
                "cancelledCalls": sorted(cancelled_calls),
                # Started under the journal and stopped by an interrupt of their own: not lost.
                "interruptedCalls": sorted(self.journaled - self.reported),
            }
        }
        await ctx.interrupt(*interrupts)

    def _interrupt_of(self, raised: StrandsInterrupt) -> Interrupt:
        reason = raised.reason
        said: Mapping[str, Any] = reason if isinstance(reason, dict) else {}
        message = said.get("message") if isinstance(said.get("message"), str) else None
        if message is None and isinstance(reason, str):
            message = reason
        schema = said.get("responseSchema") if isinstance(said.get("responseSchema"), dict) else None
        use = self.interrupt_calls.get(raised.id)
        call_id = use["toolUseId"] if use is not None else _bound_call(raised.id)
        if use is None and call_id is not None:
            use = self.tool_uses.get(call_id)
        metadata: dict[str, JSON] = {}
        strands_said: dict[str, JSON] = {"name": raised.name}
        if call_id is not None and call_id not in self.proposed:
            # Raised for a tool call an earlier run proposed (a chained interrupt): AG-UI binds
            # an interrupt only to a call of its own run, so the call is named in metadata.
            strands_said["toolUseId"] = call_id
            call_id = None
        before_call = raised.id.startswith(_BEFORE_TOOL_CALL) and call_id is not None
        if before_call and schema is None:
            name = use["name"] if use is not None else ""
            schema = approval_schema(self._input_schema(name), allow_edits=self.adapter.edits_allowed(name))
        if isinstance(said.get("reason"), str) and said["reason"]:
            kind = said["reason"]
        elif before_call:
            kind = "tool_call"
        elif schema is not None:
            kind = "input_required"
        else:
            kind = f"strands:{raised.name}"
        if isinstance(said.get("metadata"), dict):
            metadata.update(said["metadata"])
        if not isinstance(reason, dict | str) and reason is not None:
            strands_said["reason"] = _json(reason)
        metadata[_KEY] = strands_said
        expires = said.get("expiresAt") if isinstance(said.get("expiresAt"), str) else None
        if expires is None and self.adapter.ttl is not None:
            instant = self.ctx.now().astimezone(UTC) + self.adapter.ttl
            expires = instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return Interrupt(
            id=raised.id,
            reason=kind,
            message=message,
            tool_call_id=call_id,
            response_schema=schema,
            expires_at=expires,
            metadata=metadata,
        )

    def _input_schema(self, tool_name: str) -> Mapping[str, JSON] | None:
        registered = self.agent.tool_registry.registry.get(tool_name)
        if registered is None:
            return None
        schema = registered.tool_spec.get("inputSchema", {})
        found = schema.get("json") if isinstance(schema, dict) else None
        return found if isinstance(found, dict) else None


# -- conversions -----------------------------------------------------------------------------


def _response(answer: Answer | None) -> Any:
    if answer is None or answer.entry.status == "cancelled":
        return CANCELLED
    payload = answer.entry.payload
    return {} if payload is None else payload


def _answered_call(answer: Answer) -> str | None:
    """The tool call an answer decides: the interrupt's ``toolCallId``, or the call its Strands id names."""
    return answer.interrupt.tool_call_id or _bound_call(answer.interrupt.id)


def _recorded_result(call: str, entry: ToolJournalEntry) -> ToolResult:
    """The Strands tool result of a call an earlier attempt ran, from its journal entry.

    The journal keeps the AG-UI result (text): a tool's JSON content comes back as its text.
    """
    if entry.result is None:
        return {"toolUseId": call, "status": "error", "content": [{"text": NOT_RUN_AGAIN}]}
    content = entry.result.content
    text = content if isinstance(content, str) else orjson.dumps(content, default=str).decode()
    failed = text.startswith("error: ")
    return {
        "toolUseId": call,
        "status": "error" if failed else "success",
        "content": [{"text": text.removeprefix("error: ")}],
    }


def _bound_call(interrupt_id: str) -> str | None:
    """The tool use id a Strands interrupt id names (``v1:...:<toolUseId>:<uuid>``), if any."""
    for prefix in (_BEFORE_TOOL_CALL, _TOOL_CALL):
        if interrupt_id.startswith(prefix):
            call, sep, _ = interrupt_id[len(prefix) :].rpartition(":")
            return call if sep and call else None
    return None


def _restore_cancelled(snapshot: dict[str, Any], cancelled_ids: set[str]) -> None:
    """Put :data:`CANCELLED` back where the stored snapshot holds ``null`` for a cancelled answer."""
    state = snapshot.get("data", {}).get("interrupt_state", {})
    for interrupt_id, held in state.get("interrupts", {}).items():
        if interrupt_id in cancelled_ids:
            held["response"] = CANCELLED
    for content in state.get("context", {}).get("responses", []) or []:
        response = content.get("interruptResponse", {}) if isinstance(content, dict) else {}
        if response.get("interruptId") in cancelled_ids:
            response["response"] = CANCELLED


def _encode_extra(value: object) -> Any:
    if value is CANCELLED:
        return None
    if isinstance(value, bytes | bytearray):
        raise TypeError("binary content (images, documents) is not kept across an interrupt")
    raise TypeError(f"{type(value).__name__} is not JSON")


def _json(value: object) -> JSON:
    try:
        decoded: JSON = orjson.loads(orjson.dumps(value, default=str))
    except TypeError:
        return repr(value)
    return decoded


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, str))


def _call_ids(message: AssistantMessage) -> Iterator[str]:
    for call in message.tool_calls or ():
        yield call.id


def _result_text(result: Mapping[str, Any]) -> str:
    parts = []
    for content in result.get("content", []):
        if "text" in content:
            parts.append(str(content["text"]))
        elif "json" in content:
            parts.append(orjson.dumps(content["json"], default=str).decode())
    text = "\n".join(parts)
    return text if result.get("status") != "error" else f"error: {text}"


def _strands_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The thread's AG-UI messages as Strands messages (a new run rebuilds from these).

    System and developer messages are left out (the Strands agent has its own system prompt);
    a tool use with no result is left out (Strands needs each answered).
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    converted: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if converted and converted[-1]["role"] == role:
            converted[-1]["content"].extend(blocks)
        else:
            converted.append({"role": role, "content": blocks})

    for message in messages:
        if isinstance(message, UserMessage):
            if isinstance(message.content, str):
                add("user", [{"text": message.content}])
            else:
                texts = [getattr(part, "text", None) for part in message.content]
                add("user", [{"text": t} for t in texts if isinstance(t, str)])
        elif isinstance(message, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"text": message.content})
            for call in message.tool_calls or ():
                if call.id in answered:
                    use = {
                        "toolUseId": call.id,
                        "name": call.function.name,
                        "input": tool_arguments(call.function.arguments),
                    }
                    blocks.append({"toolUse": use})
            add("assistant", blocks)
        elif isinstance(message, ToolMessage):
            result = {"toolUseId": message.tool_call_id, "status": "success", "content": [{"text": message.content}]}
            add("user", [{"toolResult": result}])
    return converted
