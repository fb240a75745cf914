"""The Strands adapter over the WebSocket transport: the same journey as over HTTP, one frame per event."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.adapters import strands_agents as sa

pytestmark = pytest.mark.anyio

LIMIT = 30.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def run(ws: ClientConnection, body: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(orjson.dumps(body).decode())
    events = []
    while not events or events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        events.append(orjson.loads(await ws.recv()))
    return events


async def test_parallel_approvals_over_websocket_with_one_cancelled() -> None:
    sa.EXECUTIONS.clear()
    base = {"threadId": "ws-1", "tools": [], "context": [], "state": {}, "forwardedProps": {}}
    with anyio.fail_after(LIMIT):
        async with Host(sa.parallel_adapter, store=MemoryThreadStore()) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                messages = [{"id": "u1", "role": "user", "content": "Email the team."}]
                first = await run(ws, {**base, "runId": "r1", "messages": messages})
                interrupts = first[-1]["outcome"]["interrupts"]
                plain = await run(ws, {**base, "runId": "r2", "messages": messages})
                entries: list[dict[str, Any]] = [
                    {"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}} for i in interrupts
                ]
                entries[0] = {"interruptId": interrupts[0]["id"], "status": "cancelled"}
                snapshot = next(e["messages"] for e in first if e["type"] == "MESSAGES_SNAPSHOT")
                done = await run(ws, {**base, "runId": "r3", "messages": snapshot, "resume": entries})
    assert [i["reason"] for i in interrupts] == ["tool_call"] * 3
    assert [(e["type"], e.get("code")) for e in plain] == [("RUN_ERROR", "PENDING_INTERRUPTS")]
    assert done[-1]["outcome"] == {"type": "success"}
    assert [e["toolCallId"] for e in done if e["type"] == "TOOL_CALL_RESULT"] == [
        i["toolCallId"] for i in interrupts[1:]
    ]
    assert [r["to"] for r in sa.EXECUTIONS] == ["bob@example.com", "cy@example.com"]
    sa.EXECUTIONS.clear()
