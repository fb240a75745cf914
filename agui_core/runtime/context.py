"""The agent API: what an agent function gets to read the run and to act in it.

An agent is ``async def agent(ctx: RunContext) -> JSON``, written straight through::

    async def agent(ctx: RunContext) -> JSON:
        await ctx.text("I need the quarterly figures.")
        form = await ctx.ask("The quarterly filing, please.", FILING_SCHEMA)
        if form.cancelled:
            return {"filed": False}
        if not await ctx.confirm(f"File {form.payload['quarter']} now?"):
            return {"filed": False}
        outcome = await ctx.call_tool("fileReport", form.payload)   # a gated tool: approved first
        return {"filed": outcome.status == "executed"}

A step that needs a person (:meth:`~RunContext.ask`, :meth:`~RunContext.confirm`,
:meth:`~RunContext.call_tool` of a tool that needs approval) ends the run with its interrupt
the first time it is reached. The run that carries the answer runs the agent again from the
top: every step the agent already took returns at once what it returned before, and sends
nothing again (texts, tool calls, events), tools already run are not run again, and the step
that asked returns the answer. :meth:`~RunContext.gather` asks several things in one run, as
parallel interrupts. What keeps it safe is the thread's step journal
(:mod:`agui_core.machine.journal`), kept with the interrupts in the store, so a replay works on
another host or after a restart as on the same one.

The one rule an author follows: the code between ``ctx`` calls does the same on every run,
as in a LangGraph node or a Temporal workflow. What may differ between runs (a model's reply,
the time, a random draw, a read of the outside world) goes in :meth:`~RunContext.once`, which
runs it the first time and returns its recorded value ever after. A replay that calls
something else where the journal has a step (another text, another tool or arguments,
another question) ends the run with ``RUN_ERROR`` ``AGENT_ERROR`` naming the step and what
differed; nothing runs twice, and the interrupts stay open to be answered again. Reading
:attr:`~RunContext.messages` or :attr:`~RunContext.state` during a replay sees the thread as it
is now, not as it was when the step was first taken.

Every ``ctx`` call that acts must be awaited: one that is not (a question never asked, a text
never sent) ends the run with ``RUN_ERROR`` ``AGENT_ERROR`` naming the call and its line,
never with a success.

The explicit style stays for adapters and for authors who want it: :attr:`~RunContext.resumed`,
:attr:`~RunContext.answers`, :attr:`~RunContext.continuation`, and ending a run with
:meth:`~RunContext.interrupt` (``await ctx.interrupt(ctx.ask(...))`` asks without waiting for
the answer in this function: the next run reads it from ``ctx.answers``). A run that ends that
way keeps no step journal, and the next run starts the agent afresh. Every act goes through the
thread machine, so an agent that breaks a rule gets
:class:`~agui_core.errors.LocalProtocolError` at the call that broke it.
"""

from __future__ import annotations

import inspect
import itertools
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Generic, Literal, Protocol, TypeVar, cast

import attrs
import orjson

from agui_core.errors import LocalProtocolError, RunErrorCode
from agui_core.machine.admission import EXPIRED_MARK
from agui_core.machine.effects import Answer, Effect, Emit, ToolDecision
from agui_core.machine.history import fitted_id, tool_result_id
from agui_core.machine.journal import Replay, Step, step_key
from agui_core.machine.record import ExpiryDefault, Proposal, ResolvedInterrupt, ToolJournalEntry
from agui_core.machine.replies import Reply as ClientReply
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.protocol.codec import json_fault
from agui_core.protocol.types import JSON, Interrupt, Message, RunAgentInput
from agui_core.runtime.observe import NO_OBSERVER, Observer
from agui_core.runtime.tools import NO_EDITS, NOT_RUN_AGAIN, Tool, ToolOutcome, approval_message, failed_result

__all__ = ["Reply", "RunContext", "Suspend", "TextStream", "run_agent"]

Carry = Callable[[list[Effect]], Awaitable[None]]
_T = TypeVar("_T")


class _Send(Protocol):
    """Where a run's events go (the host's outlet): ``await send(event)``, or first ``offer``."""

    def offer(self, event: ev.Event) -> bool:
        """Hand ``event`` over if that takes no waiting; ``False``: await the call instead."""

    def text_delta(self, message_id: str, delta: str) -> bool:
        """Hand a ``TEXT_MESSAGE_CONTENT`` over without its event if that takes no waiting;
        ``False``: await the call with the event instead."""

    async def __call__(self, event: ev.Event) -> None: ...


class _Sent(tuple[()]):
    """What :meth:`TextStream.delta` returns once the delta is handed over: awaiting it does nothing.

    One object for every delta, and awaiting it runs no Python code (its ``__await__`` is the
    empty tuple's iterator), where a coroutine would be an object and a frame per delta.
    """

    __slots__ = ()
    if TYPE_CHECKING:

        def __await__(self) -> Generator[Any, None, None]: ...

    else:
        __await__ = tuple.__iter__


_SENT: Final = _Sent()


class Suspend(BaseException):
    """Raised by a step that waits for a person: the run ends with the interrupts asked so far.

    It derives from ``BaseException`` so that an agent's ``except Exception`` does not take
    it; an agent never needs to catch it.
    """


@attrs.frozen(kw_only=True)
class Reply:
    """A person's answer to :meth:`RunContext.ask`: ``payload`` already passed the question's schema."""

    interrupt_id: str
    status: Literal["resolved", "cancelled", "expired"]
    """``resolved`` (answered), ``cancelled`` (dismissed) or ``expired`` (not answered before its ``expiresAt``)."""
    payload: JSON = None
    metadata: Mapping[str, JSON] | None = None

    @property
    def cancelled(self) -> bool:
        """Whether there is no answer to act on: the person dismissed the question, or let it expire."""
        return self.status != "resolved"

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"interruptId": self.interrupt_id, "status": self.status, "payload": self.payload}
        if self.metadata is not None:
            out["metadata"] = dict(self.metadata)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Reply:
        return cls(
            interrupt_id=data["interruptId"],
            status=data["status"],
            payload=data.get("payload"),
            metadata=data.get("metadata"),
        )


def _outcome_to_json(outcome: ToolOutcome) -> dict[str, JSON]:
    return {
        "toolCallId": outcome.tool_call_id,
        "name": outcome.name,
        "status": outcome.status,
        "args": dict(outcome.args),
        "result": outcome.result,
        "error": outcome.error,
        "edited": outcome.edited,
    }


def _outcome_from_json(data: Mapping[str, Any]) -> ToolOutcome:
    return ToolOutcome(
        tool_call_id=data["toolCallId"],
        name=data["name"],
        status=data["status"],
        args=data["args"],
        result=data.get("result"),
        error=data.get("error"),
        edited=bool(data.get("edited", False)),
    )


def _as_json(value: Any, what: str) -> JSON:
    """``value`` as JSON gives it back (tuples as lists, datetimes as text): what a replay on any
    host returns, so the agent sees the same value the first time; ``LocalProtocolError`` if
    it is not JSON."""
    try:
        result: JSON = orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        fault = json_fault(value)
        why = f": {fault[1]}" if fault is not None else ""
        raise LocalProtocolError(f"{what} returned {type(value).__name__}, and a result is kept as JSON{why}") from None
    return result


ExpiryAnswer = ExpiryDefault | ClientReply
"""An answer for expiry: an :class:`~agui_core.machine.record.ExpiryDefault`, or a reply as a
client builds one (:func:`~agui_core.machine.client.cancel`, ``deny()``, ``resolve(payload)``)."""


def expiry_default(answer: ExpiryAnswer | None) -> ExpiryDefault | None:
    """``answer`` as the machine keeps it (its metadata, if any, is not kept)."""
    if answer is None or isinstance(answer, ExpiryDefault):
        return answer
    if isinstance(answer, ClientReply):
        return ExpiryDefault(status=answer.status, payload=answer.payload)
    raise TypeError(f"on_expiry takes cancel(), deny(), resolve(payload) or an ExpiryDefault, not {answer!r}")


class _Call(Generic[_T]):
    """A ``ctx`` call that must be awaited: it knows where it was made, to say so if it is not."""

    __slots__ = ("_args", "_ctx", "_step", "name", "where")

    def __init__(self, ctx: RunContext, name: str, step: Callable[..., Coroutine[Any, Any, _T]], *args: Any) -> None:
        self._ctx = ctx
        self._step = step
        self._args = args
        self.name = name
        frame: Any = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename == __file__:
            frame = frame.f_back  # up to the agent's line that made the call
        self.where = "?" if frame is None else f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
        ctx._unawaited[self] = None

    def _take(self) -> Coroutine[Any, Any, _T]:
        ctx = self._ctx
        ctx._unawaited.pop(self, None)
        ctx._where = self.where
        return self._step(*self._args)

    def __await__(self) -> Generator[Any, None, _T]:
        return self._take().__await__()


class _Question(_Call[_T]):
    """An :meth:`RunContext.ask` or :meth:`RunContext.confirm`; ``ctx.interrupt`` takes one too."""

    __slots__ = ("_interrupt", "_on_expiry")

    def __init__(
        self,
        ctx: RunContext,
        name: str,
        step: Callable[..., Coroutine[Any, Any, _T]],
        interrupt: Interrupt,
        on_expiry: ExpiryDefault | None,
        *args: Any,
    ) -> None:
        super().__init__(ctx, name, step, *args)
        self._interrupt = interrupt
        self._on_expiry = on_expiry

    def as_interrupt(self) -> Interrupt:
        """The question as an interrupt of the explicit style (not awaited: asked, not waited for)."""
        self._ctx._unawaited.pop(self, None)
        asked = self._interrupt
        if not asked.id:  # no id of the author's: a fresh one
            prefix = "input" if asked.reason == "input_required" else "confirm"
            asked = attrs.evolve(asked, id=self._ctx.new_id(prefix))
        if self._on_expiry is not None:
            self._ctx._on_expiry[asked.id] = self._on_expiry
        return asked


class TextStream:
    """One assistant message being streamed; see :meth:`RunContext.message`."""

    __slots__ = ("_ctx", "_hand_over", "_take", "message_id")

    def __init__(self, ctx: RunContext, message_id: str) -> None:
        self._ctx = ctx
        self.message_id = message_id
        # Looked up once, not once a delta: the run's machine and outlet stay the same.
        self._take = ctx._machine.take_text_delta
        self._hand_over = ctx._send.text_delta if ctx._send is not None else None

    def delta(self, text: str) -> Awaitable[None]:
        """Append ``text`` to the message; ``await`` it (it waits while the caller's stream is full).

        A delta the rules plainly allow is handed over when the call is made (awaiting it then
        only waits for room); any other is taken when awaited, as ``ctx.emit`` of its event,
        and one the rules refuse raises :class:`~agui_core.errors.LocalProtocolError` there.
        """
        # The commonest event of all: checked, applied and handed over here, without an event,
        # an effect or a coroutine, whenever the rules plainly allow it and the stream has room.
        # Anything else takes the way of every event, which applies every rule.
        ctx, message_id, hand_over = self._ctx, self.message_id, self._hand_over
        if ctx._ended or ctx._quiet or hand_over is None or text.__class__ is not str:
            return ctx.emit(ev.TextMessageContentEvent(message_id=message_id, delta=text))
        if not self._take(message_id, text):
            return ctx.emit(ev.TextMessageContentEvent(message_id=message_id, delta=text))
        if hand_over(message_id, text):
            return _SENT
        assert ctx._send is not None
        return ctx._send(ev.TextMessageContentEvent(message_id=message_id, delta=text))  # taken: wait for room


@attrs.define
class _Scope:
    """A step or subagent the agent has open, and whether this run has sent its start."""

    start: ev.Event
    sent: bool


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
        observer: Observer = NO_OBSERVER,
        run_token: object = None,
    ) -> None:
        self._machine = machine
        self._observer = observer
        self._run_token = run_token  # the observer's token for this run
        self._carry = carry
        self._send = send
        self._new_id = new_id
        self._now = now
        self._tools = tools
        self._pending: list[Interrupt] = []
        self._on_expiry: dict[str, ExpiryDefault] = {}  # by interrupt id: the answers declared for expiry
        self._ended = False
        self._last_message_id: str | None = None
        self._replay: Replay = machine.replay
        self._quiet = self._replay.replaying
        """Whether what the agent emits now was sent by an earlier run (and is not sent again)."""
        self._suspending = False
        self._gathering = 0
        self._scopes: list[_Scope] = []
        self._streaming = 0  # messages open (ctx.message)
        self._where: str | None = None  # the agent's line of the step being taken
        self._unawaited: dict[_Call[Any], None] = {}
        self._in_once: list[str] = []  # the ctx.once functions running
        self._made = itertools.count(1)  # ids made by new_id
        self._closed_by_id: dict[str, ResolvedInterrupt] | None = None
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
    def replaying(self) -> bool:
        """Whether the agent is retracing steps an earlier run took (nothing it emits is sent)."""
        return self._quiet

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

    def tool_started(self, tool_call_id: str, name: str, args: Mapping[str, JSON]) -> Awaitable[None]:
        """Record, durably, that the agent is about to run ``name`` with ``args`` for ``tool_call_id``.

        For an agent that runs an answered call's tool itself (a framework's own tool
        executor) rather than through the host's tools: the entry is saved before this
        returns, and the ``TOOL_CALL_RESULT`` the agent sends for the call afterwards is saved
        with it before it goes out, as the host does for its own gated tools. One entry per
        call: a second is a :class:`~agui_core.errors.LocalProtocolError`.
        """
        return self._call("ctx.tool_started", self._tool_started, tool_call_id, name, dict(args))

    async def _tool_started(self, tool_call_id: str, name: str, args: Mapping[str, JSON]) -> None:
        self._check_open()
        ran = Proposal(tool_call_id=tool_call_id, name=name, arguments=orjson.dumps(dict(args)).decode())
        await self._carry(self._machine.tool_started(tool_call_id, now=self._now(), ran=ran))

    def tool_decision(self, tool_call_id: str) -> ToolDecision | None:
        """What the thread machine decided for the gated call ``tool_call_id`` this run answers
        (run it, give back its recorded result, report it denied, leave it unrun), if any.

        For an agent that runs answered calls' tools itself (a framework's executor): it carries
        the decision out, as the host does for its own tools.
        """
        return next((d for d in self._machine.tool_decisions() if d.call_id == tool_call_id), None)

    def act_on_answers(self) -> Awaitable[None]:
        """Say, durably, that the agent is about to act on this run's answers.

        For an agent whose framework takes the answers in (a graph resumed with them): a
        retry of this resume must then carry the same answers (``INTERRUPT_ALREADY_RESOLVED``
        otherwise), as once one of its tools has started.
        """
        return self._call("ctx.act_on_answers", self._act_on_answers)

    async def _act_on_answers(self) -> None:
        self._check_open()
        await self._carry(self._machine.act_on_answers())

    def answer(self, interrupt_id: str) -> Answer | None:
        """The answer this run carries for ``interrupt_id``, if any."""
        return next((a for a in self.answers if a.interrupt.id == interrupt_id), None)

    def new_id(self, prefix: str) -> str:
        """A fresh id for a message, tool call or interrupt of this run: ``PREFIX-EXECUTION-xN``.

        The same on every run of the execution for the same call, as its steps' ids are (a
        replay retraces the ids the first run made), and never one the thread already holds.
        """
        ident = fitted_id(f"{prefix}-{self._replay.execution}-x{next(self._made)}")
        return ident if self._quiet else self._free(ident)

    # -- steps -------------------------------------------------------------------------

    def _call(self, name: str, step: Callable[..., Coroutine[Any, Any, _T]], *args: Any) -> _Call[_T]:
        return _Call(self, name, step, *args)

    async def _take(self, kind: str, key: str, prefix: str) -> tuple[int, Step, bool]:
        """The agent's next step (see :class:`~agui_core.machine.journal.Replay`): its index, the
        step, and whether an earlier run took it. The run's quiet ends with the last step it
        replays, and the steps and subagents the replay entered and are still open start again."""
        self._check_open()
        if self._suspending and not self._gathering:
            raise Suspend  # an agent that went on after a suspension: the run ends all the same
        if self._in_once:
            raise LocalProtocolError(
                f"ctx.{kind} inside ctx.once({self._in_once[-1]!r}): a once function returns a value; "
                "take steps outside it"
            )
        replay = self._replay
        index, step, recorded = replay.take(kind, key, prefix, where=self._where)
        if recorded:
            if self._quiet and not replay.replaying:
                self._quiet = False
                for scope in self._scopes:
                    if not scope.sent:
                        scope.sent = True
                        await self.emit(scope.start)
        elif self._machine.holds_id(step.id):  # a client took the id first: the next free one
            step = replay.use_ids(index, self._free(step.id))
        return index, step, recorded

    def _free(self, ident: str) -> str:
        """``ident``, or the first of ``ident-2``, ``ident-3``, ... the thread does not hold
        (each an id a client may send back: see :func:`~agui_core.machine.history.fitted_id`)."""
        n, found = 1, fitted_id(ident)
        while self._machine.holds_id(found):
            n += 1
            found = fitted_id(f"{ident}-{n}")
        return found

    def _step_id(self, prefix: str, index: int) -> str:
        return f"{prefix}-{self._replay.execution}-{index + 1}"

    def _wait_for(self, interrupt: Interrupt, on_expiry: ExpiryDefault | None = None) -> None:
        """Ask ``interrupt`` in this run: the run ends with it (and any others asked with it)."""
        if self._streaming:
            raise LocalProtocolError(
                f"{interrupt.reason} {interrupt.id!r} asked inside ctx.message(): end the message first"
            )
        if on_expiry is not None:
            self._on_expiry[interrupt.id] = on_expiry
        self._pending.append(interrupt)
        self._suspending = True
        raise Suspend

    def _closed(self, interrupt_id: str) -> ResolvedInterrupt | None:
        """How ``interrupt_id`` was closed, from the thread's audit trail, if it was."""
        closed = self._closed_by_id
        if closed is None:
            closed = self._closed_by_id = {r.interrupt.id: r for r in self._machine.resolved}
        return closed.get(interrupt_id)

    # -- streaming -----------------------------------------------------------------------

    async def emit(self, event: ev.Event) -> None:
        """Send any AG-UI event through the machine's rules (nothing while replaying: it was sent)."""
        if self._ended:
            self._check_open()  # raises
        if self._quiet:
            return
        effects = self._machine.emit(event)
        if len(effects) == 1 and effects[0].__class__ is Emit and self._send is not None:
            # Most events: one to send and nothing to save, straight to the caller's stream,
            # without a coroutine when there is room in it.
            if not self._send.offer(effects[0].event):
                await self._send(effects[0].event)
        else:
            await self._carry(effects)

    def text(self, content: str, *, message_id: str | None = None) -> Awaitable[str]:
        """Send a whole assistant text message; returns its id (a step)."""
        return self._call("ctx.text", self._text, content, message_id)

    async def _text(self, content: str, message_id: str | None) -> str:
        index, step, recorded = await self._take("text", step_key(content, call="ctx.text"), "msg")
        if not recorded and message_id is not None:
            step = self._replay.use_ids(index, message_id)
        message_id = step.id
        if not recorded:
            await self.emit(ev.TextMessageStartEvent(message_id=message_id, role="assistant"))
            await self.emit(ev.TextMessageContentEvent(message_id=message_id, delta=content))
            await self.emit(ev.TextMessageEndEvent(message_id=message_id))
        self._last_message_id = message_id
        return message_id

    @asynccontextmanager
    async def message(self, *, message_id: str | None = None) -> AsyncIterator[TextStream]:
        """Stream an assistant message by deltas: ``async with ctx.message() as m: await m.delta(..)``."""
        self._where = None
        index, step, recorded = await self._take("message", "", "msg")
        if not recorded and message_id is not None:
            step = self._replay.use_ids(index, message_id)
        message_id = step.id
        quiet, self._quiet = self._quiet, self._quiet or recorded  # a message sent before: all of it
        self._streaming += 1
        try:
            await self.emit(ev.TextMessageStartEvent(message_id=message_id, role="assistant"))
            self._last_message_id = message_id
            yield TextStream(self, message_id)
            await self.emit(ev.TextMessageEndEvent(message_id=message_id))
        finally:
            self._streaming -= 1
            self._quiet = quiet and self._replay.replaying

    def propose_tool_call(
        self,
        name: str,
        args: Mapping[str, JSON],
        *,
        tool_call_id: str | None = None,
        parent_message_id: str | None = None,
    ) -> Awaitable[str]:
        """Send ``TOOL_CALL_START/ARGS/END`` for a call of ``name``; returns the tool call id.

        The call belongs to ``parent_message_id``, by default the last message this run
        streamed, so a text and the tool calls after it make one assistant message.
        """
        return self._call("ctx.propose_tool_call", self._propose, name, dict(args), tool_call_id, parent_message_id)

    async def _propose(
        self, name: str, args: Mapping[str, JSON], tool_call_id: str | None, parent_message_id: str | None
    ) -> str:
        tool_call_id = tool_call_id or self.new_id("call")
        parent_message_id = parent_message_id or self._last_message_id
        await self.emit(
            ev.ToolCallStartEvent(tool_call_id=tool_call_id, tool_call_name=name, parent_message_id=parent_message_id)
        )
        await self.emit(ev.ToolCallArgsEvent(tool_call_id=tool_call_id, delta=orjson.dumps(dict(args)).decode()))
        await self.emit(ev.ToolCallEndEvent(tool_call_id=tool_call_id))
        return tool_call_id

    def tool_result(self, tool_call_id: str, content: str, *, message_id: str | None = None) -> Awaitable[None]:
        """Send the result of a tool call as ``TOOL_CALL_RESULT``."""
        event = ev.ToolCallResultEvent(
            message_id=message_id or self.new_id("result"), tool_call_id=tool_call_id, content=content
        )
        return self._call("ctx.tool_result", self.emit, event)

    def call_tool(
        self,
        name: str,
        args: Mapping[str, JSON],
        *,
        parent_message_id: str | None = None,
        tool_call_id: str | None = None,
        interrupt_id: str | None = None,
        message: str | None = None,
        metadata: Mapping[str, JSON] | None = None,
        expires_at: str | None = None,
        on_expiry: ExpiryAnswer | None = None,
    ) -> Awaitable[ToolOutcome]:
        """Call a registered tool and return what became of the call (a step).

        A tool without approval runs at once. A tool that needs approval is proposed, and the
        run ends with its approval (``message``, the prompt a person reads, and ``metadata`` go
        on it); the run that carries the decision returns here with the outcome: ``executed``
        (with what the person approved, edits included, and the tool's result), ``denied``,
        ``cancelled`` or ``expired``. Either way the tool runs at most once, across retries
        and restarts: a replay returns the recorded outcome. ``tool_call_id`` and
        ``interrupt_id`` default to ids made from the step; the ids the first run used are the
        step's ever after. ``expires_at`` puts a deadline on the approval, and ``on_expiry``
        (for example :func:`~agui_core.machine.client.deny`) is the decision the host takes
        itself if nobody decides by then: it resumes the agent with it, and the call returns
        that decision's outcome.
        """
        options = (parent_message_id, tool_call_id, interrupt_id, message, metadata, expires_at, on_expiry)
        return self._call("ctx.call_tool", self._call_tool, name, dict(args), options)

    async def _call_tool(
        self,
        name: str,
        args: dict[str, JSON],
        options: tuple[
            str | None, str | None, str | None, str | None, Mapping[str, JSON] | None, str | None, ExpiryAnswer | None
        ],
    ) -> ToolOutcome:
        parent_message_id, tool_call_id, interrupt_id, message, metadata, expires_at, on_expiry = options
        registered = self._tools.get(name)
        if registered is None:
            raise LocalProtocolError(f"no tool named {name!r} is registered with the host")
        index, step, recorded = await self._take("tool", step_key(name, args, call="ctx.call_tool"), "call")
        if recorded:
            if step.result is not None:
                return _outcome_from_json(cast(Mapping[str, Any], step.result))
            decided = self.tool_outcomes.get(step.id)  # the host carried out the decision before the agent ran
            if decided is None and step.interrupt_id is not None:
                closed = self._closed(step.interrupt_id)
                if closed is not None and closed.status == "expired":
                    decided = ToolOutcome(tool_call_id=step.id, name=name, status="expired", args=args)
            if decided is None:
                raise LocalProtocolError(f"tool call {step.id!r} has no decision in this run to return")
            self._replay.settle(index, _outcome_to_json(decided))
            return decided
        call_id = tool_call_id or step.id
        approval_id = (interrupt_id or self._step_id("approval", index)) if registered.needs_approval else None
        self._replay.use_ids(index, call_id, approval_id)
        await self._propose(name, args, call_id, parent_message_id)
        if approval_id is not None:
            approval = Interrupt(
                id=approval_id,
                reason="tool_call",
                message=message if message is not None else approval_message(name, args),
                tool_call_id=call_id,
                response_schema=registered.approval_schema,
                metadata=metadata,
                expires_at=expires_at,
            )
            self._wait_for(approval, expiry_default(on_expiry))
        kept = self._machine.tool_journal.get(call_id)
        if kept is not None:
            # A retry after its host died: the tool ran (or started) in the attempt that failed.
            # It is not run again; what it returned is sent again, or that it is unknown.
            outcome = self._kept_outcome(kept, name, args)
            await self.emit(
                kept.result
                or ev.ToolCallResultEvent(
                    message_id=tool_result_id(call_id), tool_call_id=call_id, content=NOT_RUN_AGAIN
                )
            )
        else:
            await self._tool_started(call_id, name, args)
            failure: Mapping[str, JSON] | None = None
            tool = self._observer.tool_started(self._run_token, name=name, call_id=call_id)
            try:
                returned = await registered.invoke(args)
            except Exception as exc:  # the tool's failure is the agent's to handle, not the run's
                self._observer.tool_ended(tool, name=name, result="failed")
                outcome = ToolOutcome(tool_call_id=call_id, name=name, status="failed", args=args, error=repr(exc))
                content, failure = failed_result(exc)
            else:
                self._observer.tool_ended(tool, name=name, result="executed")
                value = _as_json(returned, f"tool {name!r}")  # not JSON: the run fails, the tool is not run again
                self._machine.tool_value(call_id, value)
                outcome = ToolOutcome(tool_call_id=call_id, name=name, status="executed", args=args, result=value)
                content = value if isinstance(value, str) else orjson.dumps(value).decode()
            result_id = self._free(tool_result_id(call_id))
            await self.emit(
                ev.ToolCallResultEvent(message_id=result_id, tool_call_id=call_id, content=content, metadata=failure)
            )
        self.tool_outcomes[call_id] = outcome
        self._replay.settle(index, _outcome_to_json(outcome))
        return outcome

    def _kept_outcome(self, kept: ToolJournalEntry, name: str, args: Mapping[str, JSON]) -> ToolOutcome:
        """What the journal says became of a tool this step started in an attempt that failed."""
        if kept.ran is not None and (kept.ran.name != name or kept.ran.args != dict(args)):
            raise LocalProtocolError(
                f"tool call {kept.tool_call_id!r} already ran {kept.ran.name} with {kept.ran.arguments} in an earlier "
                f"attempt at this run; this one calls {name} with {orjson.dumps(dict(args)).decode()}: code between "
                "ctx calls must do the same on every run"
            )
        if kept.result is None:
            return ToolOutcome(
                tool_call_id=kept.tool_call_id, name=name, status="unknown", args=args, error=NOT_RUN_AGAIN
            )
        value = kept.value if kept.value is not None else kept.result.content
        return ToolOutcome(tool_call_id=kept.tool_call_id, name=name, status="executed", args=args, result=value)

    def ask(
        self,
        message: str,
        schema: Mapping[str, JSON],
        *,
        expires_at: str | None = None,
        metadata: Mapping[str, JSON] | None = None,
        interrupt_id: str | None = None,
        on_expiry: ExpiryAnswer | None = None,
    ) -> Awaitable[Reply]:
        """Ask a person for input described by ``schema`` (an ``input_required`` interrupt; a step).

        The run ends with the question; the run that carries the answer returns it here, its
        payload already checked against ``schema`` (``reply.cancelled`` when dismissed). The
        step is the message and the schema: ``expires_at`` and ``metadata`` may differ from
        run to run. ``interrupt_id`` defaults to an id made from the step (one of your own must
        be new to the thread); the id the first run used is the step's ever after. Not awaited
        but handed to :meth:`interrupt`, it is the explicit style's question. ``on_expiry``
        (:func:`~agui_core.machine.client.cancel`, or ``resolve(payload)``) is the answer the
        host gives itself if nobody answers by ``expires_at``: it resumes the agent with it
        (its ``metadata`` says so, under ``agui.expired``).
        """
        question = Interrupt(
            id=interrupt_id or "",  # "": the step's own id
            reason="input_required",
            message=message,
            response_schema=schema,
            expires_at=expires_at,
            metadata=metadata,
        )
        default = expiry_default(on_expiry)
        return _Question(
            self,
            "ctx.ask",
            self._ask,
            question,
            default,
            question,
            step_key(message, dict(schema), call="ctx.ask"),
            default,
        )

    def confirm(
        self,
        message: str,
        *,
        expires_at: str | None = None,
        metadata: Mapping[str, JSON] | None = None,
        interrupt_id: str | None = None,
        on_expiry: ExpiryAnswer | None = None,
    ) -> Awaitable[bool]:
        """Ask a person yes or no (a ``confirmation`` interrupt; a step): ``True`` for yes.

        A ``no``, or the question dismissed or expired, is ``False``. The step is the message:
        ``expires_at``, ``metadata``, ``interrupt_id`` and ``on_expiry`` are as for :meth:`ask`
        (``on_expiry=resolve(True)``: yes, unless someone says otherwise in time).
        """
        question = Interrupt(
            id=interrupt_id or "",  # "": the step's own id
            reason="confirmation",
            message=message,
            expires_at=expires_at,
            metadata=metadata,
        )
        default = expiry_default(on_expiry)
        return _Question(
            self,
            "ctx.confirm",
            self._confirm,
            question,
            default,
            question,
            step_key(message, call="ctx.confirm"),
            default,
        )

    async def _confirm(self, question: Interrupt, key: str, on_expiry: ExpiryDefault | None) -> bool:
        reply = await self._question("confirm", question, key, on_expiry)
        return reply.status == "resolved" and reply.payload is True

    async def _ask(self, question: Interrupt, key: str, on_expiry: ExpiryDefault | None) -> Reply:
        return await self._question("ask", question, key, on_expiry)

    async def _question(self, kind: str, question: Interrupt, key: str, on_expiry: ExpiryDefault | None) -> Reply:
        index, step, recorded = await self._take(kind, key, kind)
        if not recorded:
            if question.id:
                step = self._replay.use_ids(index, question.id)
            self._wait_for(attrs.evolve(question, id=step.id), on_expiry)
        answered = self.answer(step.id)  # answered by this run's input
        if answered is not None:
            entry = answered.entry
            return Reply(interrupt_id=step.id, status=entry.status, payload=entry.payload, metadata=entry.metadata)
        closed = self._closed(step.id)  # answered by an earlier run's: the audit trail has it
        if closed is None:
            raise LocalProtocolError(f"question {step.id!r} has no answer in this run to return")
        status = closed.status
        given = closed.metadata.get(EXPIRED_MARK) if closed.metadata is not None else None
        if status == "expired" and given in ("resolved", "cancelled"):
            status = given  # the host's own answer at expiry: as the run it resumed read it
        return Reply(interrupt_id=step.id, status=status, payload=closed.payload, metadata=closed.metadata)

    def once(self, name: str, function: Callable[..., Awaitable[_T] | _T], *args: Any, **kwargs: Any) -> Awaitable[_T]:
        """Run ``function(*args, **kwargs)`` once for this execution, and return its value (a step).

        For what may differ from run to run (a model's reply, the time, a random draw): the
        first run that reaches the step runs it and records its value (JSON) in the thread
        before going on; every replay returns the recorded value. Should the host die while
        the function runs, the retry runs it again: at least once, exactly once after its
        value is recorded. The function takes no ``ctx`` steps of its own.
        """
        return self._call("ctx.once", self._once, name, function, args, kwargs)

    async def _once(
        self, name: str, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        index, step, recorded = await self._take("once", step_key(name, call="ctx.once"), "once")
        if recorded and step.result is not None:
            return cast(Mapping[str, Any], step.result)["value"]
        kept = self._machine.tool_journal.get(step.id)
        if kept is not None and kept.ran is not None and kept.ran.name == name:
            value = kept.value  # recorded by an attempt at this run whose host then died
        else:
            self._in_once.append(name)
            try:
                value = function(*args, **kwargs)
                if inspect.isawaitable(value):
                    value = await value
            finally:
                self._in_once.pop()
            await self._carry(self._machine.kept_value(step.id, name=name, value=value, now=self._now()))
            value = self._machine.tool_journal[step.id].value
        self._replay.settle(index, {"value": value})
        return value

    def gather(self, *calls: Awaitable[Any]) -> Awaitable[tuple[Any, ...]]:
        """Take several steps in this run and return what each returned, in order.

        Steps that need a person (``ctx.call_tool`` of a gated tool, ``ctx.ask``,
        ``ctx.confirm``) are all asked before the run ends: one run with every interrupt open
        (parallel approvals), whose answers come back together in the next run. The steps
        are taken one after another, in the order given; a gather may hold gathers.
        """
        return self._call("ctx.gather", self._gather, calls)

    async def _gather(self, calls: tuple[Awaitable[Any], ...]) -> tuple[Any, ...]:
        for call in calls:
            if not isinstance(call, _Call) or call._ctx is not self:
                if inspect.iscoroutine(call):
                    call.close()  # refused, never to be awaited
                raise LocalProtocolError(
                    f"ctx.gather takes steps of this run (ctx.ask, ctx.call_tool, ...), not {call!r}"
                )
        results: list[Any] = []
        suspended = False
        self._gathering += 1
        try:
            for call in calls:
                try:
                    results.append(await cast(_Call[Any], call)._take())
                except Suspend:
                    suspended = True
                    results.append(None)
        finally:
            self._gathering -= 1
        if suspended:
            raise Suspend
        return tuple(results)

    def set_state(self, state: JSON) -> Awaitable[None]:
        """Replace the agent state (``STATE_SNAPSHOT``)."""
        return self._call("ctx.set_state", self.emit, ev.StateSnapshotEvent(snapshot=state))

    def patch_state(self, operations: Sequence[Mapping[str, JSON]]) -> Awaitable[None]:
        """Change the agent state by a JSON Patch (``STATE_DELTA``)."""
        return self._call("ctx.patch_state", self.emit, ev.StateDeltaEvent(delta=tuple(operations)))

    @asynccontextmanager
    async def step(self, name: str) -> AsyncIterator[None]:
        """A named step: ``STEP_STARTED`` on entry, ``STEP_FINISHED`` on exit (a step of the journal)."""
        self._where = None
        await self._take("step", step_key(name, call="ctx.step"), "step")
        scope = _Scope(start=ev.StepStartedEvent(step_name=name), sent=not self._quiet)
        await self.emit(scope.start)
        self._scopes.append(scope)
        try:
            yield
        except Suspend:
            if scope.sent:  # the run ends for a person: the step closes with it
                await self.emit(ev.StepFinishedEvent(step_name=name))
            raise
        finally:
            self._scopes.remove(scope)
        if scope.sent:
            await self.emit(ev.StepFinishedEvent(step_name=name))

    @asynccontextmanager
    async def subagent(self, name: str, *, subagent_run_id: str | None = None) -> AsyncIterator[str]:
        """A subagent invocation; yields its ``subagentRunId`` for attributing its events (a step).

        A subagent left open when the run ends (for example because it raised an interrupt)
        is closed by the machine: suspended with its interrupts, or finished. The run that
        answers those interrupts starts it again under the same id (a continuation).
        """
        self._where = None
        index, step, recorded = await self._take("subagent", step_key(name, call="ctx.subagent"), "sub")
        if not recorded and subagent_run_id is not None:
            step = self._replay.use_ids(index, subagent_run_id)
        subagent_run_id = step.id
        scope = _Scope(start=ev.SubagentStartedEvent(subagent_run_id=subagent_run_id, name=name), sent=not self._quiet)
        await self.emit(scope.start)
        self._scopes.append(scope)
        try:
            yield subagent_run_id
        finally:
            self._scopes.remove(scope)
        if scope.sent and not self._ended and subagent_run_id in self._machine_open_subagents():
            await self.emit(ev.SubagentFinishedEvent(subagent_run_id=subagent_run_id))

    def _machine_open_subagents(self) -> frozenset[str]:
        return self._machine.open_subagents

    # -- ending --------------------------------------------------------------------------

    def approval(self, tool_call_id: str, message: str | None = None, *, allow_edits: bool = True) -> Interrupt:
        """An interrupt asking to approve ``tool_call_id`` (closed in this run)."""
        from agui_core.runtime.tools import APPROVE_SCHEMA, APPROVE_WITH_EDITS_SCHEMA

        # A call of a tool the host runs offers the edits its parameters allow, the schema they are held to.
        proposed = self._machine.proposed_tool_call(tool_call_id)
        registered = self._tools.get(proposed[0]) if proposed is not None else None
        if not allow_edits:
            schema = APPROVE_SCHEMA
        elif registered is not None:
            schema = registered.approval_schema
        else:
            schema = APPROVE_WITH_EDITS_SCHEMA
        return Interrupt(
            id=self.new_id("approval"),
            reason="tool_call",
            message=message,
            tool_call_id=tool_call_id,
            response_schema=schema,
        )

    def interrupt(self, *interrupts: Interrupt | Awaitable[Any]) -> Awaitable[None]:
        """End the run waiting for a person, with ``interrupts`` (the explicit style).

        An un-awaited :meth:`ask` or :meth:`confirm` is taken as its question. The run keeps
        no step journal (unless a step already asked in it): the next run starts the agent
        afresh and reads :attr:`answers`.
        """
        return self._call("ctx.interrupt", self._interrupt, interrupts)

    async def _interrupt(self, interrupts: tuple[Interrupt | Awaitable[Any], ...]) -> None:
        self._check_open()
        raised: list[Interrupt] = []
        for item in interrupts:
            if isinstance(item, _Question) and item._ctx is self:
                raised.append(item.as_interrupt())
            elif isinstance(item, Interrupt):
                raised.append(item)
            else:
                raise LocalProtocolError(f"not an Interrupt: {item!r}", state=self._machine.state)
        await self._end_interrupted([*self._pending, *raised], keep_steps=bool(self._pending))

    async def _end_interrupted(self, raised: list[Interrupt], *, keep_steps: bool) -> None:
        if not keep_steps:  # a run that waits on a step's question may still owe the steps made for after it
            self._check_awaited()
            self._check_retraced()
        raised_ids = {i.id for i in raised}
        effects = self._machine.interrupt(
            raised,
            now=self._now(),
            edit_schemas=self._edit_schemas(raised),
            keep_steps=keep_steps,
            on_expiry={iid: d for iid, d in self._on_expiry.items() if iid in raised_ids},
        )
        await self._end(effects)

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
        self._ended = True
        await self._carry(self._machine.fail(message, code))

    def finish(self, result: JSON = None) -> Awaitable[None]:
        """End the run with success. Returning from the agent does the same."""
        return self._call("ctx.finish", self._finish, result)

    async def _finish(self, result: JSON) -> None:
        self._check_open()
        if self._suspending:
            await self._end_interrupted(list(self._pending), keep_steps=True)
            return
        self._check_awaited()
        self._check_retraced()
        await self._end(self._machine.finish(result))

    async def _end(self, effects: list[Effect]) -> None:
        self._ended = True
        await self._carry(effects)

    def _check_awaited(self) -> None:
        """Refuse to end a run while one of its steps was made and never awaited."""
        if self._unawaited:
            call = next(iter(self._unawaited))
            what = "nothing was asked" if isinstance(call, _Question) else "it never ran"
            raise LocalProtocolError(f"{call.name}(...) at {call.where} was never awaited: {what}")

    def _check_retraced(self) -> None:
        """Refuse to end a run that stopped short of the steps its journal recorded."""
        if self._replay.replaying:
            taken, recorded = self._replay.position
            raise LocalProtocolError(
                f"the agent ended after {taken} steps, but the run it resumes took {recorded}: a replay must retrace "
                "every step (code between ctx calls must do the same on every run)"
            )

    def _check_open(self) -> None:
        if self._ended:
            raise LocalProtocolError("the run has already ended", state=self._machine.state)


async def run_agent(agent: Callable[[RunContext], Awaitable[JSON]], ctx: RunContext) -> None:
    """Run ``agent`` in ``ctx`` and end the run as it left it (what a host does with an agent).

    The agent's return value is the result of a successful run; a step that waits for a
    person ends the run with the interrupts asked (and keeps the step journal for the run that
    answers them); a step made and never awaited fails the run
    (:class:`~agui_core.errors.LocalProtocolError`) instead of ending it as if all were said.
    """
    try:
        result = await agent(ctx)
    except Suspend:
        result = None
    except BaseExceptionGroup as group:  # a step asked inside a task group of the agent's
        _, rest = group.split(Suspend)
        if rest is not None or not ctx._suspending:
            raise rest if rest is not None else group from None
        result = None
    if not ctx.ended:
        await ctx.finish(result)
