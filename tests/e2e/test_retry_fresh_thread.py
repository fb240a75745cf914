"""A new thread's first run fails after its tool ran; the client retries it (the same ``runId``)
sending back everything it saw, over the real WebSocket transport.

A thread with no history takes any messages an input brings (a conversation moved from
elsewhere), so it took the failed attempt's own assistant message, with the call the tool
journal keeps, from the client's copy. The retry then found the call's id taken, proposed the
call under a new id, missed the journal and ran the tool a second time. The thread now leaves
out an agent's message holding a call its journal keeps, and the retry finds what the tool did.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.runtime import Host, RunContext, tool
from agui_core.store import MemoryThreadStore
from tests.e2e.test_attacks import exchange, frame

pytestmark = pytest.mark.anyio


async def test_a_retried_first_run_does_not_run_its_tool_again() -> None:
    ran: list[str] = []
    attempts: list[str] = []

    @tool("lookup")
    async def lookup(query: str) -> str:
        ran.append(query)
        return f"found {query}"

    async def agent(ctx: RunContext) -> Any:
        attempts.append(ctx.run_id)
        found = await ctx.call_tool("lookup", {"query": "invoices"})
        if len(attempts) == 1:
            raise RuntimeError("the model call after the tool failed")
        return {"status": found.status, "result": found.result}

    user = {"id": "u-1", "role": "user", "content": "Find the invoices."}
    store = MemoryThreadStore()
    with anyio.fail_after(15):
        async with Host(agent, store=store, tools=[lookup]) as host, WebSocketServer(host, port=0) as server:
            async with connect(server.url) as ws:
                failed = await exchange(ws, frame("fresh", "run-1", messages=[user]))
                assert failed[-1]["type"] == "RUN_ERROR" and ran == ["invoices"]
                # What a client holds of the failed run: its messages, as the events built them.
                (start,) = [f for f in failed if f["type"] == "TOOL_CALL_START"]
                (result,) = [f for f in failed if f["type"] == "TOOL_CALL_RESULT"]
                call_id = start["toolCallId"]
                call = {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": ""}}
                call["function"]["arguments"] = "".join(f["delta"] for f in failed if f["type"] == "TOOL_CALL_ARGS")
                seen = [
                    user,
                    {"id": start.get("parentMessageId") or call_id, "role": "assistant", "toolCalls": [call]},
                    {"id": result["messageId"], "role": "tool", "toolCallId": call_id, "content": result["content"]},
                ]
                retried = await exchange(ws, frame("fresh", "run-1", messages=seen))
    assert retried[-1]["type"] == "RUN_FINISHED", retried[-1]
    assert retried[-1]["result"] == {"status": "executed", "result": "found invoices"}
    assert ran == ["invoices"]  # once, across both attempts
    record = await store.load("fresh")
    assert record is not None
    ids = [m.id for m in record.messages]
    assert len(ids) == len(set(ids)) == 3 and ids[0] == "u-1"
