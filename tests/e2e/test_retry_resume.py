"""A resume fails after a tool of its run ran; the client retries it under another ``runId``,
over the real WebSocket transport, or nobody does and the host answers at expiry.

A resume is the same resume by its answers (once a tool of it started, a retry must carry the
same), not by its ``runId``: clients make a new one for every request. When the interrupt was
raised without a step journal (``ctx.interrupt``, which keeps none), each attempt started an
execution of its own, made from its ``runId``: the retry's tool step had another id, missed the
tool journal, and the tool ran a second time. The execution of the attempt that acted on its
answers is now kept with them, and a retry carrying them (or those still open of them)
continues it and finds what the tool did; other answers, such as the host's at expiry, start
an execution of their own.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.machine.client import resolve
from agui_core.protocol.types import Interrupt
from agui_core.runtime import Host, ManualClock, RunContext, tool
from agui_core.store import MemoryThreadStore
from tests.e2e.test_attacks import exchange, frame

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("call_id", [None, "call_0"], ids=["the step's own id", "an id of the author's"])
async def test_a_resume_retried_under_another_run_id_does_not_run_its_tool_again(call_id: str | None) -> None:
    looked_up: list[str] = []
    attempts: list[str] = []

    @tool
    def look_up(name: str) -> str:
        """Look up a person's address."""
        looked_up.append(name)
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
                assert failed[-1]["type"] == "RUN_ERROR" and looked_up == ["Ann"], failed[-1]
                retried = await exchange(ws, frame("t", "resume-2", resume=yes))
    assert retried[-1]["type"] == "RUN_FINISHED", retried[-1]
    assert retried[-1]["result"] == {"status": "executed", "result": "ann@example.com"}
    assert looked_up == ["Ann"]  # once, across both attempts
    assert attempts == ["resume-1", "resume-2"]


START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
ran: list[str] = []
"""What the tools of the two tests below did, in order."""


@tool
def pay(amount: int) -> str:
    """Pay."""
    ran.append(f"pay {amount}")
    return "paid"


async def test_a_resume_retried_with_fewer_answers_once_one_expired_does_not_run_its_tool_again() -> None:
    # The retry carries what is still open of what the attempt acted on: the same resume.
    ran.clear()

    async def agent(ctx: RunContext) -> Any:
        if not ctx.resumed:
            tip_by = (START + timedelta(minutes=5)).isoformat()
            await ctx.interrupt(
                Interrupt(id="pay", reason="confirmation", message="Pay?"),
                Interrupt(id="tip", reason="confirmation", message="Also tip?", expires_at=tip_by),
            )
            return None
        paid = await ctx.call_tool("pay", {"amount": 5})
        if len(ran) == 1 and ctx.run_id == "resume-1":
            raise RuntimeError("the host died after paying")
        return paid.status

    user = {"id": "u-1", "role": "user", "content": "Pay."}
    both = [{"interruptId": i, "status": "resolved", "payload": True} for i in ("pay", "tip")]
    clock = ManualClock(START)
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                await exchange(ws, frame("t", "ask", messages=[user]))
                failed = await exchange(ws, frame("t", "resume-1", resume=both))
                assert failed[-1]["type"] == "RUN_ERROR" and ran == ["pay 5"], failed[-1]
                clock.advance(minutes=6)
                late = await exchange(ws, frame("t", "resume-2", resume=both))
                assert [(f["type"], f.get("code")) for f in late] == [("RUN_ERROR", "INTERRUPT_EXPIRED")]
                retried = await exchange(ws, frame("t", "resume-3", resume=both[:1]))
    assert retried[-1]["type"] == "RUN_FINISHED" and retried[-1]["result"] == "executed", retried[-1]
    assert ran == ["pay 5"]


async def test_the_hosts_answer_at_expiry_after_a_failed_resume_is_its_own_run_of_the_agent() -> None:
    # Another answer than the one the failed attempt acted on: its own steps, its own tools.
    ran.clear()
    drafted: list[str] = []

    @tool
    def notify(text: str) -> str:
        """Notify."""
        ran.append(f"notify {text}")
        return "notified"

    async def agent(ctx: RunContext) -> Any:
        if not ctx.resumed:
            expires = (START + timedelta(minutes=10)).isoformat()
            await ctx.interrupt(ctx.confirm("Pay?", expires_at=expires, interrupt_id="q", on_expiry=resolve(False)))
            return None
        yes = ctx.answer("q").entry.payload is True
        drafted.append(await ctx.once("draft", lambda: f"drafted for yes={yes}"))
        if yes:
            await ctx.call_tool("pay", {"amount": 5})
            raise RuntimeError("the model call after paying failed")
        return (await ctx.call_tool("notify", {"text": "declined"})).status

    store = MemoryThreadStore()
    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    yes = [{"interruptId": "q", "status": "resolved", "payload": True}]
    with anyio.fail_after(15):
        async with Host(agent, store=store, tools=[pay, notify], clock=clock, expire_every=60) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                await exchange(ws, frame("t", "ask", messages=[user]))
                failed = await exchange(ws, frame("t", "resume-1", resume=yes))
                assert failed[-1]["type"] == "RUN_ERROR", failed[-1]
            clock.advance(minutes=11)  # nobody retried: no, by the agent's own declaration
            with anyio.move_on_after(5):  # the host's own run at expiry
                while (record := await store.load("t")) is None or record.state.name != "IDLE":
                    await anyio.sleep(0.02)
    assert record is not None and record.state.name == "IDLE"
    assert ran == ["pay 5", "notify declined"]
    assert drafted == ["drafted for yes=True", "drafted for yes=False"]
    (audit,) = await store.audit("t")
    assert (audit.status, audit.payload, audit.outcome) == ("expired", False, "success")


async def test_the_hosts_answer_at_expiry_after_a_failed_resume_of_a_straight_line_agent_takes_its_own_steps() -> None:
    # The same, written straight-line: the steps up to the question replay, the answer's own follow.
    ran.clear()
    drafted: list[str] = []

    @tool
    def notify(text: str) -> str:
        """Notify."""
        ran.append(f"notify {text}")
        return "notified"

    async def agent(ctx: RunContext) -> Any:
        await ctx.text("Let me check.")
        expires = (START + timedelta(minutes=10)).isoformat()
        yes = await ctx.confirm("Pay?", expires_at=expires, on_expiry=resolve(False))
        drafted.append(await ctx.once("draft", lambda: f"drafted for yes={yes}"))
        if yes:
            await ctx.call_tool("pay", {"amount": 5})
            raise RuntimeError("the model call after paying failed")
        return (await ctx.call_tool("notify", {"text": "declined"})).status

    store = MemoryThreadStore()
    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    with anyio.fail_after(15):
        async with Host(agent, store=store, tools=[pay, notify], clock=clock, expire_every=60) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                (question,) = asked[-1]["outcome"]["interrupts"]
                yes = [{"interruptId": question["id"], "status": "resolved", "payload": True}]
                failed = await exchange(ws, frame("t", "resume-1", resume=yes))
                assert failed[-1]["type"] == "RUN_ERROR", failed[-1]
            clock.advance(minutes=11)  # nobody retried: no, by the agent's own declaration
            with anyio.move_on_after(5):  # the host's own run at expiry
                while (record := await store.load("t")) is None or record.state.name != "IDLE":
                    await anyio.sleep(0.02)
    assert record is not None and record.state.name == "IDLE"
    assert ran == ["pay 5", "notify declined"]
    assert drafted == ["drafted for yes=True", "drafted for yes=False"]
    (audit,) = await store.audit("t")
    assert (audit.status, audit.payload, audit.outcome) == ("expired", False, "success")
    assert record.step_journal is None  # the execution finished
