"""A resume fails after a tool of its run ran; the client retries it under another ``runId``,
over the real WebSocket transport.

A resume is the same resume by its answers (once a tool of it started, a retry must carry the
same), not by its ``runId``: clients make a new one for every request. When the interrupt was
raised without a step journal (``ctx.interrupt``, which keeps none), each attempt started an
execution of its own, made from its ``runId``: the retry's tool step had another id, missed the
tool journal, and the tool ran a second time. An execution such a resume starts is now made
from the interrupts it answers, and the retry finds what the tool did.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.protocol.types import Interrupt
from agui_core.runtime import Host, RunContext, tool
from agui_core.store import MemoryThreadStore
from tests.e2e.test_attacks import exchange, frame

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("call_id", [None, "call_0"], ids=["the step's own id", "an id of the author's"])
async def test_a_resume_retried_under_another_run_id_does_not_run_its_tool_again(call_id: str | None) -> None:
    ran: list[str] = []
    attempts: list[str] = []

    @tool
    def look_up(name: str) -> str:
        """Look up a person's address."""
        ran.append(name)
        return f"{name.lower()}@example.com"

    async def agent(ctx: RunContext) -> Any:
        if not ctx.resumed:
            await ctx.interrupt(Interrupt(id="look-up", reason="confirmation", message="Look Ann up?"))
            return None
        attempts.append(ctx.run_id)
        found = await ctx.call_tool("look_up", {"name": "Ann"}, tool_call_id=call_id)
        if len(attempts) == 1:
            raise RuntimeError("the model call after the tool failed")
        return {"status": found.status, "result": found.result}

    user = {"id": "u-1", "role": "user", "content": "Find Ann."}
    yes = [{"interruptId": "look-up", "status": "resolved", "payload": True}]
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), tools=[look_up]) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                assert asked[-1]["outcome"]["type"] == "interrupt", asked[-1]
                failed = await exchange(ws, frame("t", "resume-1", resume=yes))
                assert failed[-1]["type"] == "RUN_ERROR" and ran == ["Ann"], failed[-1]
                retried = await exchange(ws, frame("t", "resume-2", resume=yes))
    assert retried[-1]["type"] == "RUN_FINISHED", retried[-1]
    assert retried[-1]["result"] == {"status": "executed", "result": "ann@example.com"}
    assert ran == ["Ann"]  # once, across both attempts
    assert attempts == ["resume-1", "resume-2"]
