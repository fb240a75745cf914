"""What becomes of answers around deadlines when inputs are sent again, over the real transports
(WebSocket; HTTP with tokens where principals and a decision policy matter).

Found by a review of the rules that answers a tool acted on stand past their deadline, and that
an answer declared for an interrupt's expiry (``on_expiry``) reaches the agent whenever it next
resumes: a resume that only dismissed an expired question, sent again, ran the agent (and its
tool) again; the exact resend of a failed resume that also dismissed an expired question was not
taken as its retry; a decision policy or a vote dropped the declared answer; a completed resume
that carried one could not be replayed; the host logged its retry as the agent's declared answers.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_transports.http import HttpApp
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.machine.client import resolve
from agui_core.machine.policy import policy_from_toml
from agui_core.runtime import Agent, Host, ManualClock, RunContext, tool
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.store import MemoryThreadStore
from tests.e2e.test_attacks import exchange, frame

pytestmark = pytest.mark.anyio

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
USER = {"id": "u-1", "role": "user", "content": "Go."}
ran: list[str] = []
got: list[Any] = []


@pytest.fixture(autouse=True)
def fresh_logs() -> None:
    ran.clear()
    got.clear()


def at(minutes: int) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def yes(interrupt_id: str, payload: Any = True) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "resolved", "payload": payload}


def dismiss(interrupt_id: str) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "cancelled"}


def ending(frames: list[dict[str, Any]]) -> tuple[str, str | None]:
    last = frames[-1]
    return last["type"], last.get("code") or last.get("outcome", {}).get("type")


def asked(frames: list[dict[str, Any]]) -> list[str]:
    return [i["id"] for i in frames[-1]["outcome"]["interrupts"]]


@tool
def pay(amount: int) -> str:
    """Pay."""
    ran.append(f"pay {amount}")
    return "paid"


@tool(needs_approval=True)
def pay_approved(amount: int) -> str:
    """Pay, once approved."""
    ran.append(f"pay {amount}")
    return "paid"


@tool
def note_no_tip() -> str:
    """Note that there is no tip."""
    ran.append("no tip")
    return "noted"


class Served:
    """A host on a WebSocket, the thread ``t`` driven by raw frames."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws

    async def send(self, run_id: str, resume: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        return await exchange(self.ws, frame("t", run_id, messages=[USER], resume=resume))


async def audit(store: MemoryThreadStore) -> dict[str, tuple[str, Any]]:
    return {r.interrupt.message or "": (r.status, r.payload) for r in await store.audit("t")}


async def test_a_resume_that_only_dismissed_an_expired_question_sent_again_is_replayed() -> None:
    async def agent(ctx: RunContext) -> Any:
        await ctx.call_tool("pay", {"amount": 5})
        return await ctx.confirm("Tip?", expires_at=at(10))

    clock = ManualClock(START)
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                served = Served(ws)
                (question,) = asked(await served.send("r-1"))
                clock.advance(minutes=11)
                first = await served.send("r-2", [dismiss(question)])
                again = await served.send("r-2", [dismiss(question)])  # the stream was lost: sent again
    assert ending(first) == ending(again) == ("RUN_FINISHED", "success")
    assert ran == ["pay 5"]


async def three_questions(ctx: RunContext) -> Any:
    _, tip, note = await ctx.gather(
        ctx.confirm("Receipt?", expires_at=at(5)),
        ctx.confirm("Tip?", expires_at=at(10), on_expiry=resolve(True)),
        ctx.confirm("Note?", expires_at=at(20)),
    )
    got.append((ctx.run_id, tip, note))
    if tip:
        await ctx.call_tool("pay", {"amount": 5})
    if ctx.run_id == "r-2":
        raise RuntimeError("the model call after paying failed")
    return [tip, note]


async def test_the_same_input_of_a_failed_resume_that_also_dismissed_an_expired_question_is_its_retry() -> None:
    store = MemoryThreadStore()
    clock = ManualClock(START)
    with anyio.fail_after(15):
        async with Host(three_questions, store=store, tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                served = Served(ws)
                receipt, _, note = asked(await served.send("r-1"))
                clock.advance(minutes=11)  # Receipt expired (no declared answer), Tip expired (yes), Note live
                resume = [yes(note, False), dismiss(receipt)]  # the reference client's advice: dismiss it
                assert ending(await served.send("r-2", resume))[0] == "RUN_ERROR"
                assert ran == ["pay 5"] and got == [("r-2", True, False)]
                retried = await served.send("r-3", resume)
    assert ending(retried) == ("RUN_FINISHED", "success")
    assert got[-1] == ("r-3", True, False) and ran == ["pay 5"]
    assert (await audit(store))["Tip?"] == ("expired", True)


async def test_without_a_declared_answer_the_same_input_is_still_its_retry_past_the_deadline() -> None:
    async def agent(ctx: RunContext) -> Any:
        _, go = await ctx.gather(ctx.confirm("Receipt?", expires_at=at(5)), ctx.confirm("Go?", expires_at=at(10)))
        if go:
            await ctx.call_tool("pay", {"amount": 5})
        if ctx.run_id == "r-2":
            raise RuntimeError("the model call after paying failed")
        return go

    clock = ManualClock(START)
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                served = Served(ws)
                receipt, go = asked(await served.send("r-1"))
                clock.advance(minutes=6)
                resume = [yes(go), dismiss(receipt)]
                assert ending(await served.send("r-2", resume))[0] == "RUN_ERROR" and ran == ["pay 5"]
                clock.advance(minutes=5)
                retried = await served.send("r-3", resume)
    assert ending(retried) == ("RUN_FINISHED", "success") and ran == ["pay 5"]


async def test_a_completed_resume_that_carried_a_declared_answer_is_replayed() -> None:
    async def agent(ctx: RunContext) -> Any:
        tip, note = await ctx.gather(
            ctx.confirm("Tip?", expires_at=at(10), on_expiry=resolve(True)), ctx.confirm("Note?", expires_at=at(20))
        )
        got.append((ctx.run_id, tip, note))
        return [tip, note]

    clock = ManualClock(START)
    with anyio.fail_after(15):
        async with Host(agent, store=MemoryThreadStore(), clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                served = Served(ws)
                _, note = asked(await served.send("r-1"))
                clock.advance(minutes=11)
                first = await served.send("r-2", [yes(note, False)])
                again = await served.send("r-3", [yes(note, False)])
    assert ending(first) == ending(again) == ("RUN_FINISHED", "success")
    assert got == [("r-2", True, False)]  # the agent ran once; the second was a replay


async def test_the_hosts_retry_of_acted_answers_that_include_a_declared_one_is_logged_as_a_retry(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="agui_core.host")
    store = MemoryThreadStore()
    clock = ManualClock(START)
    with anyio.fail_after(15):
        async with Host(three_questions, store=store, tools=[pay], clock=clock) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                served = Served(ws)
                receipt, _, note = asked(await served.send("r-1"))
                clock.advance(minutes=11)
                await host.expire()  # a look closes Receipt; Tip, declared, waits with Note
                assert ending(await served.send("r-2", [yes(note, False), dismiss(receipt)]))[0] == "RUN_ERROR"
            clock.advance(minutes=10)
            await host.expire()  # Note expired: the host retries the answers the attempt acted on
            while (record := await store.load("t")) is None or record.state.name != "IDLE":
                await anyio.sleep(0.02)
    said = [r.getMessage() for r in caplog.records if "resuming thread" in r.getMessage()]
    assert len(said) == 1 and "a failed attempt acted on" in said[0], said
    assert got[-1][1:] == (True, False) and ran == ["pay 5"]


async def over_http(
    agent: Agent, policy: dict[str, Any], tokens: list[str], clock: ManualClock, store: MemoryThreadStore
) -> Any:
    host = Host(
        agent,
        store=store,
        tools=[pay, pay_approved, note_no_tip],
        clock=clock,
        policy=policy_from_toml(policy),
        authenticator=TokenAuthenticator.from_lines(tokens),
    )
    return host


async def post(http: httpx.AsyncClient, token: str, run_id: str, resume: Any = None) -> list[dict[str, Any]]:
    response = await http.post(
        "/", json=frame("t", run_id, messages=[USER], resume=resume), headers={"authorization": f"Bearer {token}"}
    )
    return [orjson.loads(part.removeprefix("data: ")) for part in response.text.split("\n\n") if part]


TOKENS = ["ann token-of-ann-0123456789", "mike token-of-mike-012345678 manager", "may token-of-may-0123456789 manager"]
ANN, MIKE, MAY = "token-of-ann-0123456789", "token-of-mike-012345678", "token-of-may-0123456789"


async def test_under_a_decision_policy_a_retry_keeps_the_declared_answer_the_attempt_acted_on() -> None:
    async def agent(ctx: RunContext) -> Any:
        tip, note = await ctx.gather(
            ctx.confirm("Tip?", expires_at=at(10), on_expiry=resolve(True)), ctx.confirm("Note?", expires_at=at(20))
        )
        got.append((ctx.run_id, tip, note))
        if tip:
            await ctx.call_tool("pay", {"amount": 5})
        if ctx.run_id == "r-2":
            raise RuntimeError("the model call after paying failed")
        return [tip, note]

    store = MemoryThreadStore()
    clock = ManualClock(START)
    host = await over_http(agent, {"default": {"roles": []}}, TOKENS, clock, store)
    with anyio.fail_after(15):
        async with host, httpx.AsyncClient(transport=httpx.ASGITransport(HttpApp(host)), base_url="http://h") as http:
            _, note = asked(await post(http, ANN, "r-1"))
            clock.advance(minutes=11)
            assert ending(await post(http, ANN, "r-2", [yes(note, False)]))[0] == "RUN_ERROR"
            assert ran == ["pay 5"]
            assert ending(await post(http, ANN, "r-3", [yes(note, False)])) == ("RUN_FINISHED", "success")
    assert got == [("r-2", True, False), ("r-3", True, False)] and ran == ["pay 5"]
    assert (await audit(store))["Tip?"] == ("expired", True)


async def ship_and_pay(ctx: RunContext) -> Any:
    ship, paid = await ctx.gather(
        ctx.confirm("Ship?", expires_at=at(10), on_expiry=resolve(True)),
        ctx.call_tool("pay_approved", {"amount": 5}, expires_at=at(60)),
    )
    got.append((ctx.run_id, ship, paid.status))
    return ship


@pytest.mark.parametrize("dismissed", [False, True], ids=["nobody dismisses it", "the owner dismisses it"])
async def test_votes_that_decide_the_other_interrupt_carry_the_declared_answer_unless_dismissed(
    dismissed: bool,
) -> None:
    policy = {"tools": {"pay_approved": {"roles": ["manager"], "owner": False, "approvals": 2}}}
    store = MemoryThreadStore()
    clock = ManualClock(START)
    host = await over_http(ship_and_pay, policy, TOKENS, clock, store)
    with anyio.fail_after(15):
        async with host, httpx.AsyncClient(transport=httpx.ASGITransport(HttpApp(host)), base_url="http://h") as http:
            ship, approval = asked(await post(http, ANN, "r-1"))
            clock.advance(minutes=11)
            if dismissed:
                assert ending(await post(http, ANN, "r-d", [dismiss(ship)])) == ("RUN_FINISHED", "interrupt")
            approve = [yes(approval, {"approved": True})]
            assert ending(await post(http, MIKE, "r-2", approve)) == ("RUN_FINISHED", "interrupt")
            assert ending(await post(http, MAY, "r-3", approve)) == ("RUN_FINISHED", "success")
    assert got == [("r-3", not dismissed, "executed")] and ran == ["pay 5"]
    assert (await audit(store))["Ship?"] == ("expired", None if dismissed else True)


async def test_under_a_decision_policy_no_declared_answer_overrides_what_the_attempt_acted_on() -> None:
    # The person's no ran the tool; the declared yes would have paid. Whose no it was is not kept
    # under a policy, so the question closes as expired (read as no), as before answers stood.
    async def agent(ctx: RunContext) -> Any:
        tip, _ = await ctx.gather(
            ctx.confirm("Tip?", expires_at=at(10), on_expiry=resolve(True)), ctx.confirm("Note?", expires_at=at(20))
        )
        got.append((ctx.run_id, tip))
        await (ctx.call_tool("pay", {"amount": 5}) if tip else ctx.call_tool("note_no_tip", {}))
        if ctx.run_id == "r-2":
            raise RuntimeError("the model call after the tool failed")
        return tip

    store = MemoryThreadStore()
    clock = ManualClock(START)
    host = await over_http(agent, {"default": {"roles": []}}, TOKENS, clock, store)
    with anyio.fail_after(15):
        async with host, httpx.AsyncClient(transport=httpx.ASGITransport(HttpApp(host)), base_url="http://h") as http:
            tip, note = asked(await post(http, ANN, "r-1"))
            clock.advance(minutes=5)
            assert ending(await post(http, ANN, "r-2", [yes(tip, False), yes(note, False)]))[0] == "RUN_ERROR"
            clock.advance(minutes=6)
            retried = await post(http, ANN, "r-3", [yes(note, False)])
    assert ending(retried) == ("RUN_FINISHED", "success"), retried[-1]
    assert got[-1] == ("r-3", False) and ran == ["no tip"]
    assert (await audit(store))["Tip?"] == ("expired", None)


async def test_an_approvers_dismissal_is_refused_whatever_runid_it_borrows() -> None:
    async def agent(ctx: RunContext) -> Any:
        return (await ctx.call_tool("pay_approved", {"amount": 5}, expires_at=at(10))).status

    policy = {"tools": {"pay_approved": {"roles": ["manager"], "owner": False}}}
    clock = ManualClock(START)
    host = await over_http(agent, policy, TOKENS, clock, MemoryThreadStore())
    with anyio.fail_after(15):
        async with host, httpx.AsyncClient(transport=httpx.ASGITransport(HttpApp(host)), base_url="http://h") as http:
            (approval,) = asked(await post(http, ANN, "r-1"))
            clock.advance(minutes=11)
            borrowed = await post(http, MIKE, "r-1", [dismiss(approval)])  # the owner's first run's id
    assert ending(borrowed) == ("RUN_ERROR", "INTERRUPT_EXPIRED")
