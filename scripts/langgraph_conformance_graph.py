"""The LangGraph graph ``scripts/reference_conformance.py`` serves through both integrations.

Plain Python nodes, no LLM, no network. ``draft`` writes an AI message proposing two tool calls
(``send_email`` and ``archive_thread``); two parallel branches, one per call, each call
``interrupt()`` for an approval bound to their call (``reason: tool_call``, ``toolCallId``, a
``responseSchema``, an ``expiresAt`` :data:`TTL` ahead); each runs its tool when approved and
answers with a ``ToolMessage`` whose text is numbered per execution (a node that runs twice
shows in the stream); ``report`` sums up. The parallel pair is AG-UI issue 2178's case.

``build(TypedDict)`` takes the ``TypedDict`` to declare the state with: ag-ui-langgraph 0.0.47
needs typing_extensions' on Python 3.11, agui-core takes typing's. ``graph`` (built on first
access, so importing the module needs no LangGraph) is what ``agui serve
scripts.langgraph_conformance_graph:graph`` serves: typing's ``TypedDict``, ``InMemorySaver``.
"""

from __future__ import annotations

import itertools
import operator
import typing
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

__all__ = ["APPROVAL_SCHEMA", "TTL", "build"]  # and `graph` (see __getattr__)

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
}
TTL = timedelta(seconds=20)
"""How long each approval stays answerable."""

CALLS = {
    "send_email": {"to": "team@example.com", "subject": "release notes"},
    "archive_thread": {"thread": "release-2026-12"},
}


def build(typed_dict: Any = typing.TypedDict) -> Any:
    import uuid

    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import interrupt

    # The functional form: this module's `from __future__ import annotations` would leave a
    # class body's annotations as strings.
    state = typed_dict(
        "State",
        {"messages": Annotated[list[AnyMessage], add_messages], "done": Annotated[list[str], operator.add]},
        total=False,
    )
    executions = itertools.count(1)

    def draft(values: dict[str, Any]) -> dict[str, Any]:
        calls = [{"name": name, "args": args, "id": f"call-{uuid.uuid4().hex[:8]}"} for name, args in CALLS.items()]
        return {"messages": [AIMessage(content="I will send the notes and archive the thread.", tool_calls=calls)]}

    def review(name: str) -> Any:
        def node(values: dict[str, Any]) -> dict[str, Any]:
            ai = next(m for m in reversed(values["messages"]) if isinstance(m, AIMessage) and m.tool_calls)
            call = next(c for c in ai.tool_calls if c["name"] == name)
            expires = (datetime.now(UTC) + TTL).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            answer = interrupt(
                {
                    "reason": "tool_call",
                    "toolCallId": call["id"],
                    "message": f"Run {name}?",
                    "responseSchema": APPROVAL_SCHEMA,
                    "expiresAt": expires,
                }
            )
            if isinstance(answer, dict) and answer.get("approved") is True:
                text = f"{name} run #{next(executions)}"
            else:
                text = f"{name} not run"
            return {"messages": [ToolMessage(content=text, tool_call_id=call["id"])], "done": [text]}

        return node

    def report(values: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content="; ".join(sorted(values.get("done", []))))]}

    builder = StateGraph(state)
    builder.add_node("draft", draft)
    for name in CALLS:
        builder.add_node(f"review_{name}", review(name))
        builder.add_edge("draft", f"review_{name}")
    builder.add_node("report", report)
    builder.add_edge(START, "draft")
    builder.add_edge([f"review_{name}" for name in CALLS], "report")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=InMemorySaver())


def __getattr__(name: str) -> Any:
    if name == "graph":
        return build()
    raise AttributeError(name)
