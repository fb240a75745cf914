"""A resume fails after a tool of its run ran; the client retries it under another ``runId``,
over the real WebSocket transport, or nobody does and the host answers at expiry.

A resume is the same resume by its answers (once a tool of it started, a retry must carry the
same), not by its ``runId``: clients make a new one for every request. When the interrupt was
raised without a step journal (``ctx.interrupt``, which keeps none), each attempt started an
execution of its own, made from its ``runId``: the retry's tool step had another id, missed the
tool journal, and the tool ran a second time. The execution of the attempt that acted on its
answers is now kept with them, and a retry carrying them (or those still open of them)
continues it and finds what the tool did.

Answers a person gave in time and a tool acted on stand past the deadline: a retry may still
carry them, and at expiry the host retries them itself, once, rather than resume the agent with
an answer declared for nobody answering (which contradicts what ran, and made an agent that
took the same path run its tool again).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_transports.http import HttpApp
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.machine.client import deny, resolve
from agui_core.machine.policy import policy_from_toml
from agui_core.protocol.types import Interrupt
from agui_core.runtime import Host, ManualClock, RunContext, tool
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.store import MemoryThreadStore, SqliteThreadStore
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
"""What the tools of the tests below did, in order."""


@tool
def pay(amount: int) -> str:
    """Pay."""
    ran.append(f"pay {amount}")
    return "paid"


@tool
def send_receipt(amount: int) -> str:
    """Send a receipt."""
    ran.append(f"receipt {amount}")
    return "sent"


@tool(needs_approval=True)
def pay_approved(amount: int) -> str:
    """Pay, once someone approves."""
    ran.append(f"pay {amount}")
    return "paid"


def at(minutes: int) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


async def explicit_pay_and_tip(ctx: RunContext) -> Any:
    if not ctx.resumed:
        await ctx.interrupt(
            Interrupt(id="pay", reason="confirmation", message="Pay?"),
            Interrupt(id="tip", reason="confirmation", message="Also tip?", expires_at=at(5)),
        )
        return None
    tip = ctx.answer("tip")
    paid = await ctx.call_tool("pay", {"amount": 6 if tip is not None and tip.entry.payload is True else 5})
    if ran == ["pay 6"] and ctx.run_id == "resume-1":
        raise RuntimeError("the host died after paying")
    return paid.status


async def straight_pay_and_tip(ctx: RunContext) -> Any:
    pay_it, tip = await ctx.gather(ctx.confirm("Pay?"), ctx.confirm("Also tip?", expires_at=at(5)))
    if not pay_it:
        return "nothing"
    paid = await ctx.call_tool("pay", {"amount": 6 if tip else 5})
    if ran == ["pay 6"] and ctx.run_id == "resume-1":
        raise RuntimeError("the host died after paying")
    return paid.status


@pytest.mark.parametrize("agent", [explicit_pay_and_tip, straight_pay_and_tip], ids=["explicit", "straight-line"])
@pytest.mark.parametrize("carried", ["both", "the open one"])
async def test_a_resume_retried_once_one_of_its_interrupts_expired_continues_it(agent: Any, carried: str) -> None:
    # The tip was answered in time and the tool ran on it: the retry is the same resume, the
    # tip's answer the attempt's (an agent reading it as expired took another path and failed
    # on every retry, the thread stuck, when its retry carried only the open answer).
    ran.clear()
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    clock = ManualClock(START)
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                ids = [i["id"] for i in asked[-1]["outcome"]["interrupts"]]
                both = [{"interruptId": i, "status": "resolved", "payload": True} for i in ids]
                failed = await exchange(ws, frame("t", "resume-1", resume=both))
                assert failed[-1]["type"] == "RUN_ERROR" and ran == ["pay 6"], failed[-1]
                clock.advance(minutes=6)
                cancel = [both[0], {"interruptId": ids[1], "status": "cancelled"}]
                otherwise = await exchange(ws, frame("t", "resume-2", resume=cancel))
                assert [(f["type"], f.get("code")) for f in otherwise] == [("RUN_ERROR", "INTERRUPT_ALREADY_RESOLVED")]
                retried = await exchange(ws, frame("t", "resume-3", resume=both if carried == "both" else both[:1]))
    assert retried[-1]["type"] == "RUN_FINISHED" and retried[-1]["result"] == "executed", retried[-1]
    assert ran == ["pay 6"]


async def test_a_late_answer_that_nothing_acted_on_is_still_refused() -> None:
    # The attempt failed before it acted: the answers are not pinned, and the deadline holds.
    ran.clear()

    async def agent(ctx: RunContext) -> Any:
        yes = await ctx.confirm("Pay?", expires_at=at(5))
        if ctx.run_id == "resume-1":
            raise RuntimeError("the model call failed before anything ran")
        return (await ctx.call_tool("pay", {"amount": 5})).status if yes else "no"

    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                (question,) = asked[-1]["outcome"]["interrupts"]
                yes = [{"interruptId": question["id"], "status": "resolved", "payload": True}]
                failed = await exchange(ws, frame("t", "resume-1", resume=yes))
                assert failed[-1]["type"] == "RUN_ERROR", failed[-1]
                clock.advance(minutes=6)
                late = await exchange(ws, frame("t", "resume-2", resume=yes))
    assert [(f["type"], f.get("code")) for f in late] == [("RUN_ERROR", "INTERRUPT_EXPIRED")]
    assert ran == []


async def explicit_confirm_then_pay(ctx: RunContext) -> Any:
    if not ctx.resumed:
        await ctx.interrupt(ctx.confirm("Pay?", expires_at=at(10), interrupt_id="q", on_expiry=resolve(False)))
        return None
    if ctx.answer("q").entry.payload is not True:
        return (await ctx.call_tool("send_receipt", {"amount": 0})).status
    paid = await ctx.call_tool("pay", {"amount": 5})
    if ctx.run_id == "resume-1":
        raise RuntimeError("the model call after paying failed")
    return paid.status


async def straight_confirm_then_pay(ctx: RunContext) -> Any:
    if not await ctx.confirm("Pay?", expires_at=at(10), on_expiry=resolve(False)):
        return (await ctx.call_tool("send_receipt", {"amount": 0})).status
    paid = await ctx.call_tool("pay", {"amount": 5})
    if ctx.run_id == "resume-1":
        raise RuntimeError("the model call after paying failed")
    return paid.status


async def straight_approved_pay_then_receipt(ctx: RunContext) -> Any:
    # The approval's answer at expiry (deny) contradicts the payment: the recorded result
    # reaches the agent, which then sends the receipt, so it must not send it twice.
    paid = await ctx.call_tool("pay_approved", {"amount": 5}, expires_at=at(10), on_expiry=deny())
    if paid.status == "executed":
        await ctx.call_tool("send_receipt", {"amount": 5})
        if ctx.run_id == "resume-1":
            raise RuntimeError("the model call after the receipt failed")
    return paid.status


@pytest.mark.parametrize(
    ("agent", "answer", "before", "after"),
    [
        (explicit_confirm_then_pay, True, ["pay 5"], ["pay 5"]),
        (straight_confirm_then_pay, True, ["pay 5"], ["pay 5"]),
        (straight_approved_pay_then_receipt, {"approved": True}, ["pay 5", "receipt 5"], ["pay 5", "receipt 5"]),
    ],
    ids=["explicit", "straight-line", "an approval and a tool after it"],
)
async def test_at_expiry_the_host_retries_the_answers_a_failed_attempt_acted_on(
    agent: Any, answer: Any, before: list[str], after: list[str]
) -> None:
    # Nobody retried the failed resume: at its deadline the host does, with the person's
    # answers, not the one declared for nobody answering; nothing that ran runs again.
    ran.clear()
    store = MemoryThreadStore()
    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    tools = [pay, send_receipt, pay_approved]
    with anyio.fail_after(15):
        async with Host(agent, store=store, tools=tools, clock=clock, expire_every=60) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                (question,) = asked[-1]["outcome"]["interrupts"]
                given = [{"interruptId": question["id"], "status": "resolved", "payload": answer}]
                failed = await exchange(ws, frame("t", "resume-1", resume=given))
                assert failed[-1]["type"] == "RUN_ERROR" and ran == before, failed[-1]
            clock.advance(minutes=11)
            with anyio.move_on_after(5):  # the host's own run at expiry
                while (record := await store.load("t")) is None or record.state.name != "IDLE":
                    await anyio.sleep(0.02)
    assert record is not None and record.state.name == "IDLE"
    assert ran == after
    (audit,) = await store.audit("t")
    assert (audit.status, audit.payload, audit.outcome) == ("resolved", answer, "success")
    assert audit.decided_by == "anonymous"  # the thread's owner, who gave the answer (no authenticator here)
    assert record.step_journal is None and record.acted_on == () and record.acted == ()


async def test_the_hosts_retry_at_expiry_is_made_once() -> None:
    # It fails too: the next look closes the interrupt as expired; no loop, no answer declared
    # for nobody answering, the tool run once.
    ran.clear()

    async def agent(ctx: RunContext) -> Any:
        if await ctx.confirm("Pay?", expires_at=at(10), on_expiry=resolve(False)):
            await ctx.call_tool("pay", {"amount": 5})
            raise RuntimeError("the model call after paying fails every time")
        return (await ctx.call_tool("send_receipt", {"amount": 0})).status

    store = MemoryThreadStore()
    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    with anyio.fail_after(15):
        async with Host(agent, store=store, tools=[pay, send_receipt], clock=clock, expire_every=60) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                (question,) = asked[-1]["outcome"]["interrupts"]
                yes = [{"interruptId": question["id"], "status": "resolved", "payload": True}]
                failed = await exchange(ws, frame("t", "resume-1", resume=yes))
                assert failed[-1]["type"] == "RUN_ERROR", failed[-1]
            for _ in range(3):
                clock.advance(minutes=11)
                with anyio.move_on_after(2):
                    while (record := await store.load("t")) is None or record.state.name != "IDLE":
                        await anyio.sleep(0.02)
    assert record is not None and record.state.name == "IDLE"
    assert ran == ["pay 5"]
    (audit,) = await store.audit("t")
    assert (audit.status, audit.payload) == ("expired", None)
    assert record.acted_on == ()


async def test_a_host_started_after_the_failure_retries_the_answers_at_expiry(tmp_path: Path) -> None:
    # The answers are kept with the thread's record: another host over the same file retries them.
    ran.clear()
    store_path = tmp_path / "threads.sqlite3"
    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    tools = [pay_approved, send_receipt]
    with anyio.fail_after(20):
        first = SqliteThreadStore(store_path)
        async with Host(straight_approved_pay_then_receipt, store=first, tools=tools, clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                (approval,) = asked[-1]["outcome"]["interrupts"]
                yes = [{"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}]
                failed = await exchange(ws, frame("t", "resume-1", resume=yes))
                assert failed[-1]["type"] == "RUN_ERROR" and ran == ["pay 5", "receipt 5"], failed[-1]
        clock.advance(minutes=11)
        store = SqliteThreadStore(store_path)
        async with Host(straight_approved_pay_then_receipt, store=store, tools=tools, clock=clock, expire_every=60):
            with anyio.move_on_after(5):
                while (record := await store.load("t")) is None or record.state.name != "IDLE":
                    await anyio.sleep(0.02)
    assert record is not None and record.state.name == "IDLE"
    assert ran == ["pay 5", "receipt 5"]
    (audit,) = await store.audit("t")
    assert (audit.status, audit.outcome) == ("resolved", "success")


async def test_after_the_hosts_retry_at_expiry_failed_a_client_may_still_retry() -> None:
    # The host retries once; the answers still stand, and a live interrupt keeps the thread
    # waiting for a client's retry (which found it refused every way before).
    ran.clear()

    async def agent(ctx: RunContext) -> Any:
        pay_it, tip = await ctx.gather(ctx.confirm("Pay?"), ctx.confirm("Also tip?", expires_at=at(5)))
        paid = await ctx.call_tool("pay", {"amount": 6 if pay_it and tip else 5})
        if ctx.run_id == "resume-1" or ctx.run_id.startswith("expiry-"):
            raise RuntimeError("the model call after paying failed")
        return paid.status

    store = MemoryThreadStore()
    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    with anyio.fail_after(20):
        async with Host(agent, store=store, tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                ids = [i["id"] for i in asked[-1]["outcome"]["interrupts"]]
                both = [{"interruptId": i, "status": "resolved", "payload": True} for i in ids]
                failed = await exchange(ws, frame("t", "resume-1", resume=both))
                assert failed[-1]["type"] == "RUN_ERROR" and ran == ["pay 6"], failed[-1]
                clock.advance(minutes=6)
                await host.expire()  # the host's retry, which fails too
                while not (record := await store.load("t")).acted_retried or record.active_run is not None:
                    await anyio.sleep(0.02)
                clock.advance(minutes=2)
                await host.expire()  # a later look leaves the answers to a retry
                assert (await store.load("t")).state.name == "INTERRUPTED"
                # The host's run may hold the thread a moment longer: a client sends again, as told.
                while (retried := await exchange(ws, frame("t", "resume-2", resume=both[:1])))[-1].get(
                    "code"
                ) == "THREAD_BUSY":
                    await anyio.sleep(0.05)
    assert retried[-1]["type"] == "RUN_FINISHED" and retried[-1]["result"] == "executed", retried[-1]
    assert ran == ["pay 6"]


async def test_an_earlier_resume_is_still_replayed_once_a_later_acted_ones_expired() -> None:
    ran.clear()

    async def agent(ctx: RunContext) -> Any:
        await ctx.confirm("First?")
        await ctx.confirm("Second?", expires_at=at(5))
        paid = await ctx.call_tool("pay", {"amount": 5})
        if ctx.run_id == "resume-2":
            raise RuntimeError("the model call after paying failed")
        return paid.status

    clock = ManualClock(START)
    user = {"id": "u-1", "role": "user", "content": "Pay."}
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                asked = await exchange(ws, frame("t", "ask", messages=[user]))
                (first,) = asked[-1]["outcome"]["interrupts"]
                yes = [{"interruptId": first["id"], "status": "resolved", "payload": True}]
                second = await exchange(ws, frame("t", "resume-1", resume=yes))
                (then,) = second[-1]["outcome"]["interrupts"]
                failed = await exchange(
                    ws,
                    frame("t", "resume-2", resume=[{"interruptId": then["id"], "status": "resolved", "payload": True}]),
                )
                assert failed[-1]["type"] == "RUN_ERROR" and ran == ["pay 5"], failed[-1]
                clock.advance(minutes=6)
                replayed = await exchange(ws, frame("t", "resume-3", resume=yes))
    assert replayed[-1]["type"] == "RUN_FINISHED" and replayed[-1]["outcome"]["type"] == "interrupt", replayed[-1]
    assert ran == ["pay 5"]


@pytest.mark.parametrize("owner_may_approve", [False, True], ids=["separation of duties", "owner may approve"])
async def test_under_a_decision_policy_an_approvers_retry_goes_by_the_votes(owner_may_approve: bool) -> None:
    # The answers are deciders' votes: the retry is judged by them as any resume is, the owner's
    # question never recorded as the approver's decision, and the tool not run again.
    ran.clear()
    tokens = ["ann token-of-ann-0123456789", "mike token-of-mike-012345678 manager"]
    rule: dict[str, Any] = {"roles": ["manager"]} if owner_may_approve else {"roles": ["manager"], "owner": False}
    policy = policy_from_toml({"tools": {"pay_approved": rule}})

    async def agent(ctx: RunContext) -> Any:
        go, paid = await ctx.gather(
            ctx.confirm("Go ahead?", expires_at=at(5)), ctx.call_tool("pay_approved", {"amount": 5})
        )
        if paid.status == "executed" and not ctx.run_id.startswith("retry"):
            raise RuntimeError("the model call after paying failed")
        return [go, paid.status]

    async def send(http: httpx.AsyncClient, token: str, run_id: str, resume: Any = None) -> list[dict[str, Any]]:
        document = frame("t", run_id, messages=[{"id": "u-1", "role": "user", "content": "Pay."}], resume=resume)
        headers = {"authorization": f"Bearer {token}"}
        response = await http.post("/", json=document, headers=headers)
        return [orjson.loads(line.removeprefix("data: ")) for line in response.text.split("\n\n") if line]

    store = MemoryThreadStore()
    clock = ManualClock(START)
    host = Host(
        agent,
        store=store,
        tools=[pay_approved],
        clock=clock,
        policy=policy,
        authenticator=TokenAuthenticator.from_lines(tokens),
    )
    ann, mike = "token-of-ann-0123456789", "token-of-mike-012345678"
    with anyio.fail_after(20):
        async with host, httpx.AsyncClient(transport=httpx.ASGITransport(HttpApp(host)), base_url="http://h") as http:
            asked = await send(http, ann, "ask")
            question, approval = (i["id"] for i in asked[-1]["outcome"]["interrupts"])
            go = {"interruptId": question, "status": "resolved", "payload": True}
            yes = {"interruptId": approval, "status": "resolved", "payload": {"approved": True}}
            if owner_may_approve:
                failed = await send(http, ann, "both", [go, yes])
            else:
                voted = await send(http, ann, "vote", [go])
                assert voted[-1]["type"] == "RUN_FINISHED", voted[-1]
                failed = await send(http, mike, "approve", [yes])
            assert failed[-1]["type"] == "RUN_ERROR" and ran == ["pay 5"], failed[-1]
            clock.advance(minutes=6)
            retried = await send(http, mike, "retry", [yes])
    assert retried[-1]["type"] == "RUN_FINISHED", retried[-1]
    assert ran == ["pay 5"]
    decided = {r.interrupt.id: r.decided_by for r in await store.audit("t")}
    assert decided[question] != "mike"
