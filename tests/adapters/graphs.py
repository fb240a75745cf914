"""LangGraph graphs for the adapter tests: plain Python nodes and a scripted chat model, no LLM.

The state is a ``typing.TypedDict`` (not ``typing_extensions``'): ag-ui-langgraph 0.0.47 fails
on the first run of such a graph on Python 3.11, the adapter must not. This module has no
``from __future__ import annotations``, so LangGraph can read the annotations of the state.

``RAN`` logs every side effect a node really carried out, so a test can tell a replay from a
second execution, and a cancelled branch from one that ran.
"""

import operator
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, TypedDict

import anyio
import orjson
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, AnyMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt
from pydantic import BaseModel

__all__ = [
    "APPROVE_WITH_EDITS",
    "FILING_SCHEMA",
    "FORM_TTL",
    "RAN",
    "Chat",
    "Failure",
    "approval_graph",
    "approval_graph_on",
    "blocking_graph",
    "chained_graph",
    "chat_graph",
    "counter_graph",
    "failing_graph",
    "form_graph",
    "llm_tool_graph",
    "parallel_expiring_graph",
    "parallel_graph",
    "parallel_streaming_graph",
    "parallel_tools_graph",
    "subgraph_graph",
    "value_graph",
]

RAN: list[tuple[str, Any]] = []

APPROVE_WITH_EDITS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
            "required": ["to", "subject"],
            "additionalProperties": False,
        },
    },
    "required": ["approved"],
}

FILING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
        "revenue": {"type": "number"},
    },
    "required": ["quarter", "year", "revenue"],
}

FORM_TTL = [timedelta(minutes=10)]
"""How long the form stays answerable (a test shortens it to see it expire)."""


class Chat(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    sent: Annotated[list[str], operator.add]
    filing: dict[str, Any]


def _propose(state: Chat) -> dict[str, Any]:
    call = {"name": "send_email", "args": {"to": "bob@example.com", "subject": "hi"}, "id": "call-email"}
    return {"messages": [AIMessage(content="I will email Bob.", tool_calls=[call])]}


def _review(state: Chat) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]
    answer = interrupt(
        {
            "reason": "tool_call",
            "toolCallId": call["id"],
            "message": f"Send an email to {call['args']['to']}?",
            "responseSchema": APPROVE_WITH_EDITS,
        }
    )
    if answer and answer.get("approved") is True:
        args = answer.get("editedArgs") or call["args"]
        RAN.append(("send_email", args))
        content = f"sent to {args['to']}: {args['subject']}"
    else:
        content = "not sent"
    return {"messages": [ToolMessage(content=content, tool_call_id=call["id"])], "sent": [content]}


def approval_graph() -> Any:
    """Proposes ``send_email``, asks for approval (edits allowed), then sends or not."""
    return approval_graph_on(InMemorySaver())


def approval_graph_on(checkpointer: Any) -> Any:
    """:func:`approval_graph` compiled with ``checkpointer``."""
    builder = StateGraph(Chat)
    builder.add_node("propose", _propose)
    builder.add_node("review", _review)
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=checkpointer)


def _form(state: Chat) -> dict[str, Any]:
    expires = (datetime.now(UTC) + FORM_TTL[0]).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    answer = interrupt(
        {"message": "The quarterly filing, please.", "responseSchema": FILING_SCHEMA, "expiresAt": expires}
    )
    if answer is None:
        return {"messages": [AIMessage(content="Nothing filed.")]}
    RAN.append(("file", answer))
    return {"filing": answer, "messages": [AIMessage(content=f"Filed {answer['quarter']} {answer['year']}.")]}


def form_graph() -> Any:
    """An ``input_required`` form with the seed's schema and an expiry."""
    builder = StateGraph(Chat)
    builder.add_node("form", _form)
    builder.add_edge(START, "form")
    builder.add_edge("form", END)
    return builder.compile(checkpointer=InMemorySaver())


def _branch(name: str) -> Any:
    def node(state: Chat) -> dict[str, Any]:
        answer = interrupt({"reason": "confirmation", "message": f"Run {name}?"})
        if answer:
            RAN.append((name, answer))
            return {"sent": [name]}
        return {}

    return node


def _join(state: Chat) -> dict[str, Any]:
    done = ", ".join(sorted(state.get("sent", []))) or "nothing"
    return {"messages": [AIMessage(content=f"Done: {done}.")]}


def parallel_graph() -> Any:
    """Two branches from START, each asking a confirmation, joined afterwards."""
    builder = StateGraph(Chat)
    builder.add_node("alpha", _branch("alpha"))
    builder.add_node("beta", _branch("beta"))
    builder.add_node("join", _join)
    builder.add_edge(START, "alpha")
    builder.add_edge(START, "beta")
    builder.add_edge(["alpha", "beta"], "join")
    builder.add_edge("join", END)
    return builder.compile(checkpointer=InMemorySaver())


def _chained(state: Chat) -> dict[str, Any]:
    # One node, two interrupts: LangGraph gives both the same interrupt id.
    name = interrupt({"message": "Whose name?", "responseSchema": {"type": "string", "minLength": 1}})
    sure = interrupt({"reason": "confirmation", "message": f"Greet {name}?"})
    if sure is True:
        RAN.append(("greet", name))
        return {"messages": [AIMessage(content=f"Hello, {name}!")]}
    return {"messages": [AIMessage(content="No greeting.")]}


def chained_graph() -> Any:
    """A node that asks a question, then a confirmation chained after the answer."""
    builder = StateGraph(Chat)
    builder.add_node("greet", _chained)
    builder.add_edge(START, "greet")
    builder.add_edge("greet", END)
    return builder.compile(checkpointer=InMemorySaver())


def chat_graph() -> Any:
    """A scripted chat model (token streaming), then a confirmation."""
    model = GenericFakeChatModel(messages=iter([AIMessage(content="Hello there, how can I help?")] * 1000))

    async def chat(state: Chat) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    def confirm(state: Chat) -> dict[str, Any]:
        answer = interrupt({"reason": "confirmation", "message": "Was that helpful?"})
        return {"sent": ["yes" if answer else "no"]}

    builder = StateGraph(Chat)
    builder.add_node("chat", chat)
    builder.add_node("confirm", confirm)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "confirm")
    builder.add_edge("confirm", END)
    return builder.compile(checkpointer=InMemorySaver())


class Failure(Exception):
    """What the failing node raises."""


def failing_graph() -> Any:
    """A node that raises: the run ends in ``AGENT_ERROR``."""

    def boom(state: Chat) -> dict[str, Any]:
        raise Failure("the node failed")

    builder = StateGraph(Chat)
    builder.add_node("boom", boom)
    builder.add_edge(START, "boom")
    builder.add_edge("boom", END)
    return builder.compile(checkpointer=InMemorySaver())


def flaky_after_approval_graph(failures: list[str]) -> Any:
    """:func:`approval_graph` with a ``notify`` node after the approval that fails while
    ``failures`` holds anything (it pops one per attempt)."""

    def notify(state: Chat) -> dict[str, Any]:
        if failures:
            raise Failure(failures.pop())
        RAN.append(("notify", state["sent"][-1]))
        return {}

    builder = StateGraph(Chat)
    builder.add_node("propose", _propose)
    builder.add_node("review", _review)
    builder.add_node("notify", notify)
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "review")
    builder.add_edge("review", "notify")
    builder.add_edge("notify", END)
    return builder.compile(checkpointer=InMemorySaver())


def failing_review_graph(failures: list[str]) -> Any:
    """One node asks a question, notes the answer it got, then fails while ``failures`` holds
    anything: a node that fails after its ``interrupt()`` returned (no checkpoint after it)."""

    def review(state: Chat) -> dict[str, Any]:
        answer = interrupt({"message": "Go on?"})
        RAN.append(("review", answer))
        if failures:
            raise Failure(failures.pop())
        return {"messages": [AIMessage(content=f"Went on with {answer!r}.")]}

    builder = StateGraph(Chat)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=InMemorySaver())


def blocking_graph(gate: Any) -> Any:
    """A node that waits for ``gate`` (an ``anyio.Event``), then asks a confirmation."""

    async def wait(state: Chat) -> dict[str, Any]:
        await gate.wait()
        return {}

    builder = StateGraph(Chat)
    builder.add_node("wait", wait)
    builder.add_node("confirm", _branch("confirm"))
    builder.add_edge(START, "wait")
    builder.add_edge("wait", "confirm")
    builder.add_edge("confirm", END)
    return builder.compile(checkpointer=InMemorySaver())


def parallel_tools_graph() -> Any:
    """Two tool calls proposed at once, each approved (or not) in its own parallel branch.

    Each branch answers its call with a ``ToolMessage`` whatever the decision, as LangChain
    message histories require, so a cancelled call has a ``ToolMessage`` in the graph too.
    """
    calls = {"send_email": {"to": "bob@example.com", "subject": "hi"}, "archive": {"thread": "t-1"}}

    def draft(state: Chat) -> dict[str, Any]:
        proposed = [{"name": name, "args": args, "id": f"call-{name}"} for name, args in calls.items()]
        return {"messages": [AIMessage(content="Two things to do.", tool_calls=proposed)]}

    def review(name: str) -> Any:
        def node(state: Chat) -> dict[str, Any]:
            answer = interrupt({"reason": "tool_call", "toolCallId": f"call-{name}", "message": f"Run {name}?"})
            if answer and answer.get("approved") is True:
                RAN.append((name, calls[name]))
                text = f"{name} done"
            else:
                text = f"{name} not run"
            return {"messages": [ToolMessage(content=text, tool_call_id=f"call-{name}")]}

        return node

    builder = StateGraph(Chat)
    builder.add_node("draft", draft)
    builder.add_edge(START, "draft")
    for name in calls:
        builder.add_node(name, review(name))
        builder.add_edge("draft", name)
        builder.add_edge(name, END)
    return builder.compile(checkpointer=InMemorySaver())


class Counter(TypedDict, total=False):
    count: int


def counter_graph() -> Any:
    """A graph without a ``messages`` channel: each run adds one to ``count``."""

    def add(state: Counter) -> dict[str, Any]:
        return {"count": state.get("count", 0) + 1}

    builder = StateGraph(Counter)
    builder.add_node("add", add)
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile(checkpointer=InMemorySaver())


def parallel_expiring_graph() -> Any:
    """Like :func:`parallel_graph`, but ``alpha``'s confirmation expires :data:`FORM_TTL` after it is asked."""

    def alpha(state: Chat) -> dict[str, Any]:
        expires = (datetime.now(UTC) + FORM_TTL[0]).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        answer = interrupt({"reason": "confirmation", "message": "Run alpha?", "expiresAt": expires})
        if answer:
            RAN.append(("alpha", answer))
            return {"sent": ["alpha"]}
        return {}

    builder = StateGraph(Chat)
    builder.add_node("alpha", alpha)
    builder.add_node("beta", _branch("beta"))
    builder.add_node("join", _join)
    builder.add_edge(START, "alpha")
    builder.add_edge(START, "beta")
    builder.add_edge(["alpha", "beta"], "join")
    builder.add_edge("join", END)
    return builder.compile(checkpointer=InMemorySaver())


class ToolCallingModel(BaseChatModel):
    """A scripted chat model that streams a short text, then a ``send_email`` call in pieces."""

    @property
    def _llm_type(self) -> str:
        return "scripted-tool-calling"

    def _chunks(self) -> list[AIMessageChunk]:
        args = '{"to": "bob@example.com", "subject": "hi"}'
        pieces = [args[:10], args[10:25], args[25:]]
        out = [AIMessageChunk(content=word) for word in ("Let ", "me ", "email ", "Bob.")]
        out.append(
            AIMessageChunk(
                content="", tool_call_chunks=[{"name": "send_email", "args": pieces[0], "id": "call-llm", "index": 0}]
            )
        )
        out += [AIMessageChunk(content="", tool_call_chunks=[{"args": p, "index": 0}]) for p in pieces[1:]]
        return out

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        merged = self._chunks()[0]
        for chunk in self._chunks()[1:]:
            merged = merged + chunk
        message = AIMessage(content=merged.content, tool_calls=merged.tool_calls)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk in self._chunks():
            generation = ChatGenerationChunk(message=chunk)
            if run_manager is not None:
                await run_manager.on_llm_new_token(
                    chunk.content if isinstance(chunk.content, str) else "", chunk=generation
                )
            yield generation


def llm_tool_graph() -> Any:
    """A chat model streams a text and a tool call; the call is approved (or not), then run."""
    model = ToolCallingModel()

    async def chat(state: Chat) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(Chat)
    builder.add_node("chat", chat)
    builder.add_node("review", _review)
    builder.add_edge(START, "chat")
    builder.add_edge("chat", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=InMemorySaver())


class BranchModel(ToolCallingModel):
    """:class:`ToolCallingModel` for one of two parallel branches: its own words and call, and
    a pause after each chunk so that the branches' streams interleave."""

    who: str = "bob"

    def _chunks(self) -> list[AIMessageChunk]:
        args = orjson.dumps({"to": f"{self.who}@example.com", "subject": "hi"}).decode()
        out = [AIMessageChunk(content=f"{self.who}-{i} ") for i in range(4)]
        out.append(
            AIMessageChunk(
                content="",
                tool_call_chunks=[{"name": "send_email", "args": args[:12], "id": f"call-{self.who}", "index": 0}],
            )
        )
        out.append(AIMessageChunk(content="", tool_call_chunks=[{"args": args[12:], "index": 0}]))
        return out

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        async for generation in super()._astream(messages, stop, run_manager, **kwargs):
            yield generation
            await anyio.sleep(0.01)


def parallel_streaming_graph() -> Any:
    """Two parallel branches each stream a message and a tool call (interleaved on the wire),
    then each asks to approve its call, and sends it if approved."""

    def chat(who: str) -> Any:
        model = BranchModel(who=who)

        async def node(state: Chat) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        return node

    def review(who: str) -> Any:
        def node(state: Chat) -> dict[str, Any]:
            (call,) = [c for m in state["messages"] for c in getattr(m, "tool_calls", None) or () if who in c["id"]]
            answer = interrupt({"reason": "tool_call", "toolCallId": call["id"], "message": f"Send {call['id']}?"})
            if answer and answer.get("approved") is True:
                RAN.append(("send_email", call["args"]))
                return {"sent": [call["args"]["to"]]}
            return {}

        return node

    builder = StateGraph(Chat)
    for who in ("ann", "bob"):
        builder.add_node(who, chat(who))
        builder.add_node(f"review_{who}", review(who))
        builder.add_edge(START, who)
        builder.add_edge(who, f"review_{who}")
        builder.add_edge(f"review_{who}", END)
    return builder.compile(checkpointer=InMemorySaver())


class Approval(BaseModel):
    """A typed answer, for LangGraph's ``interrupt(value, response_schema=Approval)``."""

    approved: bool


def value_graph(value: Any, *, response_schema: Any = None, expiring: bool = False) -> Any:
    """One node: ``interrupt(value, response_schema=response_schema)``, then says what it got.

    ``expiring`` adds an ``expiresAt`` to the (mapping) value: a ``datetime``, :data:`FORM_TTL`
    after the question, as graph code would write it.
    """

    def ask(state: Chat) -> dict[str, Any]:
        asked = {**value, "expiresAt": datetime.now(UTC) + FORM_TTL[0]} if expiring else value
        answer = interrupt(asked, response_schema=response_schema)
        RAN.append(("answer", answer))
        return {"messages": [AIMessage(content=f"Got {answer!r}.")]}

    builder = StateGraph(Chat)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=InMemorySaver())


def subgraph_graph() -> Any:
    """A node that is a compiled subgraph whose own node interrupts."""

    def inner(state: Chat) -> dict[str, Any]:
        answer = interrupt({"reason": "confirmation", "message": "Go on inside?"})
        RAN.append(("inner", answer))
        return {"messages": [AIMessage(content=f"Inside: {answer}.")]}

    sub = StateGraph(Chat)
    sub.add_node("inner", inner)
    sub.add_edge(START, "inner")
    sub.add_edge("inner", END)
    builder = StateGraph(Chat)
    builder.add_node("sub", sub.compile())
    builder.add_edge(START, "sub")
    builder.add_edge("sub", END)
    return builder.compile(checkpointer=InMemorySaver())
