"""A compiled LangGraph graph as an agui-core agent.

``langgraph_agent(graph)`` returns an agent function (``async def agent(ctx)``) for
:class:`~agui_core.runtime.Host`. The host and the thread machine keep every interrupt rule
(linkage, coverage, pending input, replay, payload schemas, expiry, ownership); this module only
translates between the graph and the agent API, and imports nothing of LangGraph until a graph
runs.

What goes where:

- **Input.** A run that answers nothing sends the graph the input's user, system and developer
  messages it does not hold yet (by id), as LangChain messages, in the ``messages`` channel.
  Assistant and tool messages a client sends are never fed to the graph: the graph's own
  checkpoint is the record of what it said.
- **Output.** Messages the graph's nodes write or stream (``stream_mode="messages"``) become
  ``TEXT_MESSAGE_*`` events (messages of parallel branches interleaved, each under its id);
  the tool calls of an AI message become ``TOOL_CALL_START/ARGS/END``
  after its text; a ``ToolMessage`` becomes ``TOOL_CALL_RESULT`` for its call (not for a call
  whose approval was cancelled: it is not executed, and the graph's reply to it stays in the
  graph). At the end of a run the graph's values other than ``messages`` are the thread's
  state (``STATE_SNAPSHOT``).
- **Interrupts.** Each ``interrupt(value)`` still pending when the graph stops becomes an AG-UI
  :class:`~agui_core.protocol.types.Interrupt`. A mapping value gives ``reason``, ``message``,
  ``responseSchema``, ``toolCallId``, ``expiresAt`` and ``metadata`` (camelCase or snake_case
  keys; a field of the wrong JSON type goes to ``metadata["langgraph"]`` under its key);
  LangGraph's own ``response_schema`` is the ``responseSchema``; without a ``reason`` it is
  ``input_required`` when it has a ``responseSchema``, else :data:`DEFAULT_REASON`. Any other
  value is the ``message`` (a string) or ``metadata["langgraph"]["value"]``. The LangGraph interrupt id is kept in
  ``metadata["langgraph"]["interruptId"]`` and, server-side, in the run's continuation (the
  resume is keyed by it). The AG-UI id is ``<LangGraph id>.<run id>``: AG-UI ids are unique per
  thread, and LangGraph derives its ids from where the graph stands, which nothing promises
  never to repeat.
- **Resume.** The answers of a resumed run go to the graph together, in one
  ``Command(resume={langgraph_id: value, ...})``: each resolved entry as its payload (``{}``
  when it has none), each cancelled entry as :data:`CANCELLED` (``None``: falsy and not a
  mapping, so neither ``if answer:`` nor ``answer.get("approved")`` reads it as approval). An
  interrupt whose ``response_schema`` refuses ``None`` cannot be cancelled
  (:class:`UncancellableInterrupt`) and does not expire.
- **Expiry.** The thread machine closes an interrupt nobody answered by its ``expiresAt``; the
  graph still waits on it. The next input on the thread first resumes the graph with
  :data:`EXPIRED` (``None``, as a cancellation) for every pending interrupt whose value's
  ``expiresAt`` has passed, then, if the graph is no longer paused, sends it the input.

Crash consistency: the graph's checkpointer saves first (LangGraph writes its checkpoint
before the stream ends), agui-core's store second (when the run ends). A host that dies in
between leaves the graph ahead of the thread record. The next run on the thread sees it and
catches up without running a node twice: a plain input finds the graph already paused on
interrupts the record does not know and announces them (no node runs); a resume whose
interrupts the graph has already consumed reports what the graph did since (its new messages,
state and interrupts, or success) instead of resuming it again, and lets a graph that stopped
short (a node after the answer failed) go on from its checkpoint. A retry whose answers differ
from those the graph took (kept as digests in its checkpoints' metadata) is refused with
:class:`AnswerConflict`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs
import orjson

from agui_core.errors import AguiError, PayloadError, RemoteProtocolError, RunErrorCode
from agui_core.machine.effects import Answer
from agui_core.machine.expiry import read_expires_at
from agui_core.machine.history import fitted_id
from agui_core.protocol import events as ev
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import JSON, Interrupt, Message, ResumeEntry, RunAgentInput
from agui_core.runtime.context import RunContext

__all__ = [
    "CANCELLED",
    "DEFAULT_REASON",
    "EXPIRED",
    "AnswerConflict",
    "LangGraphAgent",
    "PausedGraph",
    "UncancellableInterrupt",
    "is_compiled_graph",
    "langgraph_agent",
    "translate_legacy_resume",
]

CANCELLED: None = None
"""What ``interrupt()`` returns in the graph for a cancelled resume entry."""

EXPIRED: None = None
"""What ``interrupt()`` returns in the graph for an interrupt that expired unanswered."""

DEFAULT_REASON = "langgraph:interrupt"
"""The reason of an interrupt whose value names none and carries no ``responseSchema``."""

_KEY = "langgraph"
_FIELDS = {
    "reason": "reason",
    "message": "message",
    "responseSchema": "response_schema",
    "response_schema": "response_schema",
    "toolCallId": "tool_call_id",
    "tool_call_id": "tool_call_id",
    "expiresAt": "expires_at",
    "expires_at": "expires_at",
    "metadata": "metadata",
}


def is_compiled_graph(obj: object) -> bool:
    """Whether ``obj`` is a compiled LangGraph graph (a Pregel), without importing LangGraph."""
    for cls in type(obj).__mro__:
        if cls.__module__.startswith("langgraph.pregel") and cls.__name__ == "Pregel":
            return True
    return False


def _json(value: Any) -> JSON:
    """``value`` as plain JSON: what orjson cannot encode is written as its ``str``."""
    loaded: JSON = orjson.loads(orjson.dumps(value, default=_fallback))
    return loaded


def _fallback(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    return str(value)


def _text(content: Any) -> str:
    """The text of a LangChain message content (a string, or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block if isinstance(block, str) else str(block.get("text", ""))
            for block in content
            if isinstance(block, str) or (isinstance(block, dict) and block.get("type") == "text")
        )
    return ""


class LangGraphAgent:
    """An agent function over a compiled graph; see the module docstring.

    ``config`` is merged into the graph's run config (its ``configurable`` gets the
    ``thread_id``: the AG-UI thread id, prefixed with ``thread_prefix``).
    """

    def __init__(self, graph: Any, *, config: Mapping[str, Any] | None = None, thread_prefix: str = "") -> None:
        if not is_compiled_graph(graph):
            raise TypeError(f"not a compiled LangGraph graph: {graph!r} (call StateGraph.compile() first)")
        if getattr(graph, "checkpointer", None) is None:
            raise ValueError("the graph has no checkpointer: compile it with one (InMemorySaver, SQLite, PostgreSQL)")
        self.graph = graph
        self.config = dict(config or {})
        self.thread_prefix = thread_prefix

    def _config(self, ctx: RunContext) -> dict[str, Any]:
        config = dict(self.config)
        configurable = dict(config.get("configurable") or {})
        configurable["thread_id"] = self.thread_prefix + ctx.thread_id
        config["configurable"] = configurable
        return config

    async def __call__(self, ctx: RunContext) -> JSON:
        try:
            return await self._run(ctx)
        except (AnswerConflict, UncancellableInterrupt, PausedGraph) as exc:
            # Refusals only the graph's own checkpoint can show: under their own codes.
            await ctx.refuse(exc.code, exc.message)
            return None

    async def _run(self, ctx: RunContext) -> JSON:
        from langgraph.types import Command

        config = self._config(ctx)
        snapshot = await self.graph.aget_state(config)
        pending = {i.id for i in snapshot.interrupts}
        if ctx.resumed:
            resume = {_langgraph_id(a): _resume_value(a) for a in ctx.answers}
            if not set(resume) <= pending:
                # The graph consumed these answers in a run whose end was never saved (the host
                # died, or a node after the answer failed).
                return await self._consumed(ctx, config, snapshot, resume)
            now = ctx.now()
            # An interrupt of the graph's the machine closed as expired goes along as EXPIRED.
            resume.update({i.id: EXPIRED for i in snapshot.interrupts if i.id not in resume and _expired(i, now)})
            _refuse_uncancellable(ctx, snapshot.interrupts)
            await self._refuse_changed_answers(ctx, config, snapshot, resume)
            await ctx.act_on_answers()  # the graph takes them now: a retry must carry the same
            stream_input: Any = Command(resume=resume)
            config = _remembering(config, _digests(resume))
        elif pending:
            now = ctx.now()
            expired = {i.id: EXPIRED for i in snapshot.interrupts if _expired(i, now)}
            if not expired:
                # Interrupts the record does not know: a run that died after the graph saved.
                # The graph is paused on them: a new message cannot reach it now, so it is refused
                # (RUN_ERROR; nothing recorded) rather than kept by the thread and lost to the graph.
                if self._input(ctx, snapshot.values):
                    raise PausedGraph(
                        "the graph is paused on interrupts that a run which did not end raised; send the"
                        " input again without the new message to have them announced, then answer them"
                    )
                return await self._catch_up(ctx, config, snapshot)
            # Interrupts nobody answered in time: the graph gets EXPIRED for each, then the input.
            relay = _Relay(ctx)
            await self._stream(relay, Command(resume=expired), config)
            snapshot = await self.graph.aget_state(config)
            if not snapshot.interrupts:
                await self._stream(relay, self._input(ctx, snapshot.values), config)
                snapshot = await self.graph.aget_state(config)
            await relay.close()
            return await self._end(ctx, config, snapshot)
        else:
            stream_input = self._input(ctx, snapshot.values)
        relay = _Relay(ctx)
        await self._stream(relay, stream_input, config)
        await relay.close()
        return await self._end(ctx, config, await self.graph.aget_state(config))

    async def _stream(self, relay: _Relay, stream_input: Any, config: dict[str, Any]) -> None:
        async for mode, chunk in self.graph.astream(stream_input, config, stream_mode=["messages", "updates"]):
            if mode == "messages":
                await relay.message(chunk[0])
            elif mode == "updates" and isinstance(chunk, Mapping):
                await relay.written(chunk)

    def _input(self, ctx: RunContext, values: Any) -> dict[str, Any]:
        """What a run that answers nothing sends the graph: the messages it does not hold yet.

        Always a mapping (``None`` would tell LangGraph to go on from its checkpoint, which
        on a finished thread runs nothing); empty for a graph without a ``messages`` channel.
        """
        from langchain_core.messages import HumanMessage, SystemMessage

        if "messages" not in getattr(self.graph, "channels", {}):
            return {}
        messages = values.get("messages", ()) if isinstance(values, dict) else ()
        held = {getattr(m, "id", None) for m in messages}
        new: list[Any] = []
        for message in ctx.input.messages:
            if message.id in held:
                continue
            if message.role == "user":
                new.append(HumanMessage(content=_user_content(message), id=message.id))
            elif message.role in ("system", "developer"):
                new.append(SystemMessage(content=str(getattr(message, "content", "")), id=message.id))
        return {"messages": new} if new else {}

    async def _consumed(self, ctx: RunContext, config: dict[str, Any], snapshot: Any, resume: dict[str, Any]) -> JSON:
        """A resume whose answers the graph has already taken, in a run that did not end well.

        The graph's checkpoints of that run carry a digest of each answer it was given
        (:data:`_CONSUMED`): an answer that differs from it is refused (:class:`AnswerConflict`),
        since the graph has acted on the other one. The same answer again catches the thread
        up: what the graph did since is reported and, when the graph stopped short of its end
        (a node failed after the answer) without new interrupts, the graph goes on from its
        checkpoint; nothing it already did runs again.
        """
        taken = _taken(snapshot)
        if taken is not None:
            _refuse_other_answers(ctx, taken, resume)
        if not snapshot.next or snapshot.interrupts:
            return await self._catch_up(ctx, config, snapshot)
        relay = _Relay(ctx)
        await self._report(relay, ctx, snapshot)
        if taken is not None:
            config = _remembering(config, taken)
        await self._stream(relay, None, config)
        await relay.close()
        return await self._end(ctx, config, await self.graph.aget_state(config))

    async def _refuse_changed_answers(
        self, ctx: RunContext, config: dict[str, Any], snapshot: Any, resume: Mapping[str, Any]
    ) -> None:
        """Refuse answers that differ from those a node took before it failed.

        A node that failed after its ``interrupt()`` returned leaves no checkpoint, so its
        interrupt is still pending, but LangGraph keeps the answer it took in the task's
        pending writes and gives it that answer again on any resume, whatever the resume says.
        """
        _refuse_other_answers(ctx, await _taken_by_failed_nodes(self.graph, config, snapshot), resume)

    async def _catch_up(self, ctx: RunContext, config: dict[str, Any], snapshot: Any) -> JSON:
        relay = _Relay(ctx)
        await self._report(relay, ctx, snapshot)
        await relay.close()
        return await self._end(ctx, config, snapshot)

    async def _report(self, relay: _Relay, ctx: RunContext, snapshot: Any) -> None:
        """Send the messages the graph holds that the thread's record does not."""
        known = {m.id for m in ctx.messages}
        values = snapshot.values if isinstance(snapshot.values, dict) else {}
        for message in values.get("messages", ()):
            if getattr(message, "id", None) not in known:
                await relay.message(message)

    async def _end(self, ctx: RunContext, config: dict[str, Any], snapshot: Any) -> JSON:
        values = snapshot.values
        if isinstance(values, dict):
            await ctx.set_state(_json({k: v for k, v in values.items() if k != "messages"}))
        if not snapshot.interrupts:
            return None
        interrupts = [self._interrupt(ctx, i) for i in snapshot.interrupts]
        ctx.continuation = {_KEY: {i.id: lg.id for i, lg in zip(interrupts, snapshot.interrupts, strict=True)}}
        await ctx.interrupt(*interrupts)
        return None

    def _interrupt(self, ctx: RunContext, raised: Any) -> Interrupt:
        fields, extra = _published(raised)
        metadata = dict(fields.pop("metadata", None) or {})
        metadata[_KEY] = extra
        reason = fields.pop("reason", None)
        if not reason:
            reason = "input_required" if "response_schema" in fields else DEFAULT_REASON
        return Interrupt(id=fitted_id(f"{raised.id}.{ctx.run_id}"), reason=reason, metadata=metadata, **fields)


def langgraph_agent(graph: Any, *, config: Mapping[str, Any] | None = None, thread_prefix: str = "") -> LangGraphAgent:
    """The agent that runs ``graph`` (compiled, with a checkpointer); see :class:`LangGraphAgent`."""
    return LangGraphAgent(graph, config=config, thread_prefix=thread_prefix)


def translate_legacy_resume(
    run_input: RunAgentInput, open_interrupts: Sequence[Interrupt], last_answered: Sequence[Interrupt] = ()
) -> RunAgentInput:
    """``forwardedProps.command.resume`` (the legacy LangGraph resume channel) as ``resume[]``.

    For :class:`~agui_core.runtime.Host`'s ``translate_input`` (``agui serve
    --legacy-resume``). An input without ``command.resume`` passes as it is. The legacy value
    is translated when it can mean one thing only: with several open interrupts it must be an
    object keyed by every open interrupt's id (its AG-UI id or its LangGraph id), each value
    that interrupt's payload; with one it is that map too when it is an object whose only key
    is that interrupt's id, else the interrupt's payload. With nothing open
    it names ``last_answered`` (the interrupts the thread's last resume answered) the same way,
    so an old client's retry is a replay (or ``INTERRUPT_ALREADY_RESOLVED``). Every other case
    is refused with ``AMBIGUOUS_LEGACY_RESUME``: nothing open nor answered, several and no such
    map, or ``resume[]`` sent as well. A legacy resume can only resolve: it has no way to cancel. The
    translated input then meets every rule a ``resume[]`` does (schemas, expiry, replay).
    """
    props = run_input.forwarded_props
    command = props.get("command") if isinstance(props, Mapping) else None
    if not isinstance(command, Mapping) or command.get("resume") is None:
        return run_input
    value = command["resume"]

    def refuse(why: str) -> RemoteProtocolError:
        return RemoteProtocolError(
            RunErrorCode.AMBIGUOUS_LEGACY_RESUME, f"forwardedProps.command.resume cannot be translated: {why}"
        )

    if run_input.resume:
        raise refuse("the input carries resume[] as well; send one of the two")
    if not open_interrupts:
        open_interrupts = last_answered
    if not open_interrupts:
        raise refuse("no interrupt is open on this thread")
    keys = {}
    for interrupt in open_interrupts:
        keys[interrupt.id] = interrupt.id
        lg = (interrupt.metadata or {}).get(_KEY)
        if isinstance(lg, Mapping) and isinstance(lg.get("interruptId"), str):
            keys[lg["interruptId"]] = interrupt.id
    if len(open_interrupts) == 1 and isinstance(value, Mapping) and len(value) == 1 and next(iter(value)) in keys:
        # The map form for one interrupt: keyed by its id, as with several.
        payloads: dict[str, Any] = {open_interrupts[0].id: next(iter(value.values()))}
    elif len(open_interrupts) == 1:
        payloads = {open_interrupts[0].id: value}
    else:
        if (
            not isinstance(value, Mapping)
            or {keys.get(k) for k in value} != {i.id for i in open_interrupts}
            or len(value) != len(open_interrupts)
        ):
            raise refuse(
                f"{len(open_interrupts)} interrupts are open; the value must be an object keyed by each one's id"
            )
        payloads = {keys[k]: v for k, v in value.items()}
    rest = {k: v for k, v in command.items() if k != "resume"}
    forwarded = {k: v for k, v in props.items() if k != "command"}
    if rest:
        forwarded["command"] = rest
    entries = tuple(ResumeEntry(interrupt_id=i, status="resolved", payload=p) for i, p in payloads.items())
    return attrs.evolve(run_input, resume=entries, forwarded_props=forwarded)


def _refuse_other_answers(ctx: RunContext, taken: Mapping[str, str], resume: Mapping[str, Any]) -> None:
    """Raise :class:`AnswerConflict` for an answer in ``resume`` whose digest differs from the
    one the graph ``taken`` (LangGraph interrupt id -> digest of the answer it took)."""
    for answer in ctx.answers:
        lg = _langgraph_id(answer)
        if lg in taken and taken[lg] != _digest(resume[lg]):
            raise AnswerConflict(
                f"interrupt {answer.interrupt.id!r} was already answered: the graph took a different"
                f" answer in a run that did not end, and has acted on it; resend that answer to go on"
            )


class UncancellableInterrupt(AguiError):
    """A cancel of an interrupt raised with a ``response_schema`` that refuses ``None``.

    LangGraph would fail the node on it (it validates the answer against a typed schema), so
    the cancel is refused before the graph sees it: ``RUN_ERROR`` ``INVALID_RESUME`` with this
    message, the interrupt stays open and can be resolved. Give the schema
    ``None`` as an option (``Model | None``) to let the interrupt be cancelled and expire.
    """

    code = RunErrorCode.INVALID_RESUME


class PausedGraph(AguiError):
    """A new message for a graph paused on interrupts the thread's record does not know yet.

    Left by a run that ended after the graph's checkpoint and before agui-core's save. The
    graph cannot take a message while paused; the input is refused (``RUN_ERROR``
    ``PENDING_INTERRUPTS``) rather than recorded and lost. An input without new messages
    announces the interrupts.
    """

    code = RunErrorCode.PENDING_INTERRUPTS


class AnswerConflict(AguiError):
    """A resume that answers differently an interrupt whose earlier answer the graph already took.

    It happens when a run that resumed the graph did not end well (its host died after the
    graph's checkpoint, or a node after the answer failed) and the retry changes the answer.
    The thread machine refuses most such retries itself, before the run starts (the adapter
    says it acts on the answers before the graph takes them); this is the graph's own check,
    for what the machine could not see (a graph resumed by other code). Either way the code is
    ``INTERRUPT_ALREADY_RESOLVED``, as for every agent, and the interrupts stay open.
    """

    code = RunErrorCode.INTERRUPT_ALREADY_RESOLVED


_CONSUMED = "agui_resume"
"""The key, in the run config's ``metadata`` (which LangGraph copies into every checkpoint's
metadata), of the digests of the answers a resume gave the graph, by LangGraph interrupt id."""


def _digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(_json(value), option=orjson.OPT_SORT_KEYS)).hexdigest()


def _digests(resume: Mapping[str, Any]) -> dict[str, str]:
    return {lg: _digest(value) for lg, value in resume.items()}


def _remembering(config: dict[str, Any], digests: Mapping[str, str]) -> dict[str, Any]:
    """``config`` with ``digests`` in its metadata: the checkpoints of the stream keep them."""
    metadata = dict(config.get("metadata") or {})
    metadata[_CONSUMED] = orjson.dumps(dict(digests)).decode()
    return {**config, "metadata": metadata}


async def _taken_by_failed_nodes(graph: Any, config: dict[str, Any], snapshot: Any) -> dict[str, str]:
    """The digests of the answers nodes that failed since the last checkpoint took, by LangGraph id.

    Read from the checkpoint's pending writes: a failed task's ``__resume__`` list holds the
    answers its ``interrupt()`` calls took, in order, and LangGraph derives an interrupt's id
    from the task's namespace and its place in that list. Only top-level nodes are read; for
    anything else (a subgraph's node, a LangGraph that names things otherwise) this finds
    nothing, and the retry's answer is taken as the graph's.
    """
    failed = [t for t in getattr(snapshot, "tasks", ()) if getattr(t, "error", None) is not None and t.interrupts]
    if not failed:
        return {}
    try:
        from langgraph.types import _interrupt_id
    except ImportError:  # a LangGraph that names interrupts otherwise: nothing can be compared
        return {}
    stored = await graph.checkpointer.aget_tuple(config)
    writes: dict[str, Any] = {}
    for task_id, channel, value in getattr(stored, "pending_writes", None) or ():
        if channel == "__resume__" and isinstance(value, list):
            writes[task_id] = value
    taken: dict[str, str] = {}
    for task in failed:
        answers = writes.get(task.id, [])
        for raised in task.interrupts:
            for slot, value in enumerate(answers):
                if _interrupt_id(f"{task.name}:{task.id}", slot) == raised.id:
                    taken[raised.id] = _digest(value)
    return taken


def _taken(snapshot: Any) -> dict[str, str] | None:
    """The digests of the answers the graph's latest checkpoint was resumed with, if it says."""
    raw = (getattr(snapshot, "metadata", None) or {}).get(_CONSUMED)
    if not isinstance(raw, str):
        return None
    try:
        taken = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return taken if isinstance(taken, dict) else None


_STRINGS = frozenset({"reason", "message", "tool_call_id", "expires_at"})
_OBJECTS = frozenset({"metadata", "response_schema"})
_NULL_CHECKS = PayloadValidators(maxsize=64)


def _published(raised: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The AG-UI fields of LangGraph interrupt ``raised``, and what goes in ``metadata.langgraph``.

    A field of the value whose type is not the AG-UI field's (a string for ``reason``,
    ``message``, ``toolCallId``, ``expiresAt``; an object for ``metadata`` and
    ``responseSchema``) goes to ``metadata.langgraph`` under its key instead. LangGraph's own
    ``interrupt(value, response_schema=...)`` (a JSON Schema on the raised interrupt) is the
    ``responseSchema``, over the value's. Expiry is read from what this returns, nothing else.
    """
    value = raised.value
    fields: dict[str, Any] = {}
    extra: dict[str, Any] = {"interruptId": raised.id}
    if isinstance(value, Mapping):
        for key, field in _FIELDS.items():
            if key not in value or value[key] is None or field in fields:
                continue
            item = _json(value[key])
            if (field in _STRINGS and isinstance(item, str)) or (field in _OBJECTS and isinstance(item, dict)):
                fields[field] = item
            else:
                extra[key] = item
    elif isinstance(value, str):
        fields["message"] = value
    elif value is not None:
        extra["value"] = _json(value)
    schema = getattr(raised, "response_schema", None)
    if isinstance(schema, Mapping):
        fields["response_schema"] = _json(schema)
    if _answer_only(raised) and "expires_at" in fields:
        # Expiry reaches the graph as None, which this schema refuses: the interrupt does not expire.
        extra["expiresAt"] = fields.pop("expires_at")
    return fields, extra


def _answer_only(raised: Any) -> bool:
    """Whether ``raised`` carries LangGraph's ``response_schema`` and it refuses ``None``.

    LangGraph validates an answer against a typed ``response_schema`` (a Pydantic model, a
    ``TypedDict``, a dataclass) and raises on ``None``, which is what a cancellation or an expiry
    would give the graph. The raised interrupt holds the schema as JSON Schema only, so a plain
    dict schema that refuses ``null`` is treated alike.
    """
    schema = getattr(raised, "response_schema", None)
    if not isinstance(schema, Mapping):
        return False
    try:
        _NULL_CHECKS.validate(raised.id, _json(schema), None)
    except PayloadError:
        return True
    except AguiError:
        return False  # a broken schema: the machine reports it when the interrupt is raised
    return False


def _refuse_uncancellable(ctx: RunContext, raised: Sequence[Any]) -> None:
    by_id = {i.id: i for i in raised}
    for answer in ctx.answers:
        interrupt = by_id.get(_langgraph_id(answer))
        if answer.entry.status == "cancelled" and interrupt is not None and _answer_only(interrupt):
            raise UncancellableInterrupt(
                f"interrupt {answer.interrupt.id!r} cannot be cancelled: the graph raised it with a"
                " response_schema that does not accept null (a cancellation); resolve it instead"
            )


def _expired(raised: Any, now: datetime) -> bool:
    """Whether LangGraph interrupt ``raised`` was published with an ``expiresAt`` at or before ``now``."""
    expires = _published(raised)[0].get("expires_at")
    if not isinstance(expires, str):
        return False
    try:
        return read_expires_at(expires) <= now
    except ValueError:
        return False


def _langgraph_id(answer: Answer) -> str:
    continuation = answer.continuation
    ids = continuation.get(_KEY) if isinstance(continuation, dict) else None
    found = ids.get(answer.interrupt.id) if isinstance(ids, dict) else None
    if not isinstance(found, str):
        raise RuntimeError(f"interrupt {answer.interrupt.id!r} was not raised by a LangGraph graph")
    return found


def _resume_value(answer: Answer) -> Any:
    entry = answer.entry
    if entry.status == "cancelled":
        return CANCELLED
    return {} if entry.payload is None else entry.payload


def _user_content(message: Message) -> Any:
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return [{"type": "text", "text": part.text} for part in content if getattr(part, "type", None) == "text"]


class _Relay:
    """Turns the LangChain messages a graph streams into AG-UI events, in order.

    A streamed message (``AIMessageChunk`` objects under one id) is relayed token by token and kept
    open until its node writes it (the node's update), the whole message comes, or the stream
    ends; then its text ends and its tool calls follow, whole. Parallel branches stream their
    messages interleaved, each under its own id (AG-UI and the reference client's
    ``verifyEvents`` track open messages by id).
    """

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx
        # A cancelled tool call is not executed (SPEC 5): a ToolMessage the graph writes for
        # it (LangChain histories answer every call) stays in the graph, off the wire.
        self._cancelled = {
            a.interrupt.tool_call_id
            for a in ctx.answers
            if a.entry.status == "cancelled" and a.interrupt.tool_call_id is not None
        }
        self._open: dict[str, _Streamed] = {}
        self._done: set[str] = set()

    async def message(self, message: Any) -> None:
        from langchain_core.messages import AIMessage, AIMessageChunk, ToolMessage

        message_id = getattr(message, "id", None) or self._ctx.new_id("msg")
        if isinstance(message, AIMessageChunk):
            if message_id in self._done:
                return
            streamed = self._open.get(message_id)
            if streamed is None:
                streamed = self._open[message_id] = _Streamed(message)
            else:
                streamed.merged = streamed.merged + message
            delta = _text(message.content)
            if delta:
                if not streamed.started:
                    streamed.started = True
                    await self._ctx.emit(ev.TextMessageStartEvent(message_id=message_id, role="assistant"))
                await self._ctx.emit(ev.TextMessageContentEvent(message_id=message_id, delta=delta))
            return
        if message_id in self._open:
            await self._close(message_id, message)
            return
        if message_id in self._done:
            return
        if isinstance(message, AIMessage):
            self._done.add(message_id)
            text = _text(message.content)
            if text:
                await self._ctx.text(text, message_id=message_id)
            await self._tool_calls(message, message_id)
        elif isinstance(message, ToolMessage) and message.tool_call_id not in self._cancelled:
            # The call it answers goes out first, should its message still be streaming.
            for open_id, streamed in list(self._open.items()):
                if any(c.get("id") == message.tool_call_id for c in streamed.merged.tool_calls or ()):
                    await self._close(open_id)
            self._done.add(message_id)
            await self._ctx.tool_result(message.tool_call_id, _text(message.content), message_id=message_id)

    async def written(self, update: Mapping[str, Any]) -> None:
        """A node's update (``stream_mode="updates"``): the streamed messages it writes are whole."""
        for written in update.values():
            if not isinstance(written, Mapping):
                continue
            messages = written.get("messages")
            for message in messages if isinstance(messages, list | tuple) else (messages,):
                message_id = getattr(message, "id", None)
                if message_id in self._open:
                    await self._close(message_id, message)

    async def close(self) -> None:
        """End every message still being streamed, in the order they began, with its tool calls."""
        for message_id in list(self._open):
            await self._close(message_id)

    async def _close(self, message_id: str, whole: Any = None) -> None:
        from langchain_core.messages import AIMessage

        streamed = self._open.pop(message_id)
        self._done.add(message_id)
        if streamed.started:
            await self._ctx.emit(ev.TextMessageEndEvent(message_id=message_id))
        # The whole message's tool calls when the node wrote one, else the merged chunks'.
        await self._tool_calls(whole if isinstance(whole, AIMessage) else streamed.merged, message_id)

    async def _tool_calls(self, message: Any, message_id: str) -> None:
        for call in getattr(message, "tool_calls", None) or ():
            await self._ctx.propose_tool_call(
                call["name"], call.get("args") or {}, tool_call_id=call.get("id"), parent_message_id=message_id
            )


@attrs.define
class _Streamed:
    """A message being streamed: its chunks merged so far, and whether its text has begun."""

    merged: Any
    started: bool = False
