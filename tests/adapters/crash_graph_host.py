"""A host process serving a LangGraph graph, that can be told to die between the two saves.

Run as ``python -m tests.adapters.crash_graph_host DB CHECKPOINTS EFFECTS [--kill POINT] [--skew S]``
from the repository root. It reads ONE ``RunAgentInput`` (JSON) from stdin, runs it through a
:class:`Host` over ``SqliteThreadStore(DB)`` and :func:`langgraph_agent` over a graph compiled
with LangGraph's ``AsyncSqliteSaver(CHECKPOINTS)``, and writes the events to stdout, one JSON
object per line, straight to the file descriptor.

The graph proposes ``record_order`` (an AI message with a tool call), asks for its approval
(``interrupt()``), then appends one line to ``EFFECTS`` (the side effect: a node that ran twice
shows as two lines) and answers with a ``ToolMessage``.

``--kill POINT`` SIGKILLs the process just before agui-core's store saves, at the end of a run,
what the graph's checkpointer has already saved (see :data:`KILL_POINTS`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from agui_core.adapters.langgraph import langgraph_agent
from agui_core.machine.record import ResolvedInterrupt, ThreadRecord
from agui_core.machine.transitions import ThreadState
from agui_core.protocol.codec import decode_input, encode_event
from agui_core.runtime import Host
from agui_core.store import SqliteThreadStore

__all__ = ["KILL_POINTS", "build_graph", "main"]

KILL_POINTS = {
    "graph-interrupted": "the graph's checkpoint holds the interrupt; agui-core has not saved it",
    "graph-finished": "the graph ran the approved node to its end; agui-core has not saved the outcome",
}


def build_graph(effects: Path, checkpointer: Any) -> Any:
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.types import interrupt

    def propose(state: MessagesState) -> dict[str, Any]:
        call = {"name": "record_order", "args": {"item": "tea"}, "id": "call-order"}
        return {"messages": [AIMessage(content="I will record the order.", tool_calls=[call], id="ai-propose")]}

    def review(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"reason": "tool_call", "toolCallId": "call-order", "message": "Record tea?"})
        if not (answer and answer.get("approved") is True):
            return {"messages": [ToolMessage(content="not recorded", tool_call_id="call-order", id="tool-order")]}
        with effects.open("a") as file:
            file.write("tea\n")
            file.flush()
            os.fsync(file.fileno())
        return {"messages": [ToolMessage(content="recorded tea", tool_call_id="call-order", id="tool-order")]}

    builder = StateGraph(MessagesState)
    builder.add_node("propose", propose)
    builder.add_node("review", review)
    builder.add_edge(START, "propose")
    builder.add_edge("propose", "review")
    builder.add_edge("review", END)
    return builder.compile(checkpointer=checkpointer)


class KillingStore:
    """A SQLite thread store that dies before saving the end of a run (the kill points)."""

    def __init__(self, inner: SqliteThreadStore, point: str | None) -> None:
        self.inner = inner
        self.point = point

    async def load(self, thread_id: str) -> ThreadRecord | None:
        return await self.inner.load(thread_id)

    async def save(self, record: ThreadRecord) -> None:
        interrupted = record.state is ThreadState.INTERRUPTED and not record.resolved
        resumed_end = record.state is ThreadState.IDLE and bool(record.resolved)
        if (self.point == "graph-interrupted" and interrupted) or (self.point == "graph-finished" and resumed_end):
            os.kill(os.getpid(), signal.SIGKILL)
        await self.inner.save(record)

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        return await self.inner.renew_lease(thread_id, run_id, until)

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        return await self.inner.thread_of_interrupt(interrupt_id)

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        return await self.inner.audit(thread_id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> KillingStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _run(args: argparse.Namespace, data: bytes) -> None:
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    run_input = decode_input(data)
    async with (
        AsyncSqliteSaver.from_conn_string(args.checkpoints) as saver,
        KillingStore(SqliteThreadStore(args.db), args.kill) as store,
    ):
        graph = build_graph(Path(args.effects), saver)
        host = Host(
            langgraph_agent(graph),
            store=store,
            clock=lambda: datetime.now(UTC) + timedelta(seconds=args.skew),
            run_timeout=5.0,
        )
        async with host:
            async for event in host.run(run_input):
                os.write(sys.stdout.fileno(), encode_event(event) + b"\n")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="crash_graph_host")
    parser.add_argument("db")
    parser.add_argument("checkpoints")
    parser.add_argument("effects")
    parser.add_argument("--kill", choices=sorted(KILL_POINTS))
    parser.add_argument("--skew", type=float, default=0.0)
    args = parser.parse_args(argv)
    anyio.run(_run, args, sys.stdin.buffer.read())


if __name__ == "__main__":
    main()
