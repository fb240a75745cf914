"""One situation, one answer, whoever runs the tool: a resume retried with another answer after
its first attempt acted on it (the approved tool ran, then the run failed).

The same story through each kind of agent, over the same WebSocket transport: the host's own
gated tool, a Strands agent's tool (run by Strands under the adapter), an OpenAI Agents SDK
agent's tool (run by the SDK under the adapter), a Pydantic AI agent's tool, and a LangGraph graph
that took the approval. Each time the changed answer gets a lone ``RUN_ERROR``
``INTERRUPT_ALREADY_RESOLVED`` before any run starts (the thread machine's decision), nothing
is recorded, and the answer the tool ran on carries the thread on without running it again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.adapters.langgraph import langgraph_agent
from agui_core.protocol.types import JSON
from agui_core.runtime import Host, RunContext, tool
from agui_core.store import MemoryThreadStore
from tests.adapters import graphs
from tests.adapters import openai_sdk_agents as oa
from tests.adapters import pydantic_ai_agents as pa
from tests.adapters import strands_agents as sa

pytestmark = pytest.mark.anyio

LIMIT = 60.0
RAN: list[str] = []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@tool("sendEmail", needs_approval=True)
async def send_email(to: str, subject: str) -> str:
    RAN.append(to)
    return f"sent to {to}"


FAILED = [True]


async def host_tool_agent(ctx: RunContext) -> JSON:
    outcome = await ctx.call_tool("sendEmail", {"to": "bob@example.com", "subject": "hi"})
    if FAILED and FAILED.pop():
        raise RuntimeError("the model service hiccuped")  # after the tool ran
    return outcome.status


def the_host() -> tuple[Host, Callable[[], int]]:
    FAILED[:] = [True]
    RAN.clear()
    return Host(host_tool_agent, store=MemoryThreadStore(), tools=[send_email]), lambda: len(RAN)


def strands() -> tuple[Host, Callable[[], int]]:
    sa.EXECUTIONS.clear()
    sa.HICCUPS[:] = ["after the tool"]
    return Host(sa.flaky_adapter, store=MemoryThreadStore()), lambda: len(sa.EXECUTIONS)


def openai_agents() -> tuple[Host, Callable[[], int]]:
    oa.EXECUTIONS.clear()
    oa.HICCUPS[:] = ["after the tool"]
    return Host(oa.flaky_adapter, store=MemoryThreadStore()), lambda: len(oa.EXECUTIONS)


def pydantic_ai() -> tuple[Host, Callable[[], int]]:
    from agui_core.adapters.pydantic_ai import PydanticAIAdapter

    pa.EXECUTIONS.clear()
    pa.HICCUPS[:] = ["after the tool"]
    return Host(PydanticAIAdapter(pa.mailer), store=MemoryThreadStore()), lambda: len(pa.EXECUTIONS)


def langgraph() -> tuple[Host, Callable[[], int]]:
    graphs.RAN.clear()
    graph = graphs.flaky_after_approval_graph(["the notifier is down"])
    return (
        Host(langgraph_agent(graph), store=MemoryThreadStore()),
        lambda: sum(1 for name, _ in graphs.RAN if name == "send_email"),
    )


@asynccontextmanager
async def talking(host: Host) -> AsyncIterator[ClientConnection]:
    async with host, WebSocketServer(host, port=0) as server, connect(server.url) as ws:
        yield ws


async def exchange(ws: ClientConnection, body: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(orjson.dumps(body).decode())
    events = [orjson.loads(await ws.recv())]
    while events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        events.append(orjson.loads(await ws.recv()))
    return events


def frame(run: str, **more: Any) -> dict[str, Any]:
    message = {"id": "u-1", "role": "user", "content": "Email Bob, please."}
    return {
        "threadId": "t",
        "runId": run,
        "state": {},
        "messages": [message],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        **more,
    }


@pytest.mark.parametrize(
    "agent",
    [the_host, strands, openai_agents, pydantic_ai, langgraph],
    ids=["host-tool", "strands", "openai-agents", "pydantic-ai", "langgraph"],
)
@pytest.mark.parametrize("changed", ["cancelled", "denied"])
async def test_an_answer_changed_after_the_tool_ran_is_the_same_refusal_everywhere(
    agent: Callable[[], tuple[Host, Callable[[], int]]], changed: str
) -> None:
    host, ran = agent()
    with anyio.fail_after(LIMIT):
        async with talking(host) as ws:
            first = await exchange(ws, frame("r1"))
            (approval,) = first[-1]["outcome"]["interrupts"]
            approve = {"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}
            failed = await exchange(ws, frame("r2", resume=[approve]))
            assert (failed[-1]["type"], failed[-1].get("code")) == ("RUN_ERROR", "AGENT_ERROR")
            assert ran() == 1
            other = (
                {"interruptId": approval["id"], "status": "cancelled"}
                if changed == "cancelled"
                else {"interruptId": approval["id"], "status": "resolved", "payload": {"approved": False}}
            )
            refused = await exchange(ws, frame("r3", resume=[other]))
            done = await exchange(ws, frame("r4", resume=[approve]))
    assert [(e["type"], e.get("code")) for e in refused] == [("RUN_ERROR", "INTERRUPT_ALREADY_RESOLVED")]
    assert "already answered" in refused[0]["message"] and approval["id"] in refused[0]["message"]
    assert done[-1]["type"] == "RUN_FINISHED" and done[-1]["outcome"] == {"type": "success"}
    assert ran() == 1  # the tool ran once, on the answer that carried the thread on
