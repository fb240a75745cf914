"""Active expiry with an answer the agent declared (``on_expiry``): the host resumes the agent
with it by itself, in a run of its own whose events are in the thread; once, across hosts."""

from __future__ import annotations

import os
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import httpx
import pytest
from agui_transports.client import connect_websocket
from agui_transports.http import HttpApp
from agui_transports.websocket import WebSocketServer

from agui_core.machine.client import cancel, resolve
from agui_core.machine.record import ThreadRecord
from agui_core.machine.thread import EXPIRED_MARK
from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, ResumeEntry, RunAgentInput, UserMessage
from agui_core.runtime import Host, ManualClock, RunContext, tool
from agui_core.store import MemoryThreadStore, SqliteThreadStore
from tests.transports.served import agui_serve

pytestmark = pytest.mark.anyio

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
EXPIRES = (START + timedelta(minutes=10)).isoformat()
LIMIT = 20.0
SENT: list[str] = []
SHIPPED: list[bool] = []


@tool(needs_approval=True)
def send_email(to: str) -> str:
    """Send an email."""
    SENT.append(to)
    return "sent"


async def mailing_agent(ctx: RunContext) -> JSON:
    """Asks to ship, yes unless someone says no within ten minutes; then emails, denied if nobody decides."""
    ship = await ctx.confirm("Ship the release?", expires_at=EXPIRES, on_expiry=resolve(True))
    sent = await ctx.call_tool("send_email", {"to": "team@example.com"}, expires_at=EXPIRES, on_expiry=cancel())
    await ctx.text(f"shipped={ship} email={sent.status}")
    return {"shipped": ship, "email": sent.status}


async def shipping_agent(ctx: RunContext) -> JSON:
    """Asks to ship, yes unless someone says no within ten minutes; each run that got an answer is noted."""
    ship = await ctx.confirm("Ship the release?", expires_at=EXPIRES, on_expiry=resolve(True))
    SHIPPED.append(ship)
    return {"shipped": ship}


def first_input(thread_id: str) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread_id, run_id=f"{thread_id}-1", messages=(UserMessage(id=f"{thread_id}-m", content="Go"),)
    )


async def test_each_expiry_resumes_the_agent_with_its_declared_answer() -> None:
    SENT.clear()
    clock = ManualClock(START)
    store = MemoryThreadStore()
    with anyio.fail_after(LIMIT):
        async with Host(mailing_agent, store=store, tools=[send_email], clock=clock, expire_every=60) as host:
            events = [e async for e in host.run(first_input("t"))]
            assert isinstance(events[-1], ev.RunFinishedEvent) and events[-1].outcome.type == "interrupt"  # type: ignore[union-attr]
            clock.advance(minutes=11)  # nobody answered: yes, by the agent's own declaration
            while (record := await store.load("t")) is None or not any(
                o.interrupt.reason == "tool_call" for o in record.open_interrupts
            ):
                await anyio.sleep(0.02)
            # The agent went on with the declared yes, and now waits for the email's approval.
            (approval,) = record.open_interrupts
            assert approval.interrupt.expires_at == EXPIRES  # the same deadline: already passed
            assert approval.run_id.startswith("expiry-")
            clock.advance(seconds=61)  # the next look: the approval expired too, and is cancelled
            while (record := await store.load("t")) is None or record.state.name != "IDLE":
                await anyio.sleep(0.02)
            audit = await store.audit("t")
    assert [(r.interrupt.reason, r.status, r.payload) for r in audit] == [
        ("confirmation", "expired", True),
        ("tool_call", "expired", None),
    ]
    assert all(r.metadata is not None and r.metadata[EXPIRED_MARK] in ("resolved", "cancelled") for r in audit)
    assert SENT == []  # a cancelled approval runs nothing
    texts = [m.content for m in record.messages if m.role == "assistant"]
    assert texts[-1] == "shipped=True email=cancelled"


@pytest.mark.parametrize("how", ["one look after both", "a look between", "a person answers the other"])
async def test_a_declared_answer_reaches_the_agent_whenever_the_host_looks(how: str) -> None:
    # Two questions, each yes unless someone says otherwise, due ten minutes apart. A look
    # between the deadlines closed the first as plainly expired, and the agent read no.
    got: list[tuple[bool, bool]] = []

    async def agent(ctx: RunContext) -> JSON:
        first, second = await ctx.gather(
            ctx.confirm("Ship A?", expires_at=EXPIRES, on_expiry=resolve(True)),
            ctx.confirm("Ship B?", expires_at=(START + timedelta(minutes=20)).isoformat(), on_expiry=resolve(True)),
        )
        got.append((first, second))
        return [first, second]

    clock = ManualClock(START)
    store = MemoryThreadStore()
    with anyio.fail_after(LIMIT):
        async with Host(agent, store=store, clock=clock) as host:
            async with (
                WebSocketServer(host, port=0) as server,
                connect_websocket(server.url, clock=clock.now) as client,
            ):
                await client.collect(client.new_input("t", "Ship."))
                (_, second) = client.machine("t").open_interrupts
                if how != "one look after both":
                    clock.advance(minutes=11)
                    await host.expire()  # the look between the deadlines: A waits for the agent's next run
                    assert len((await store.load("t")).open_interrupts) == 2  # type: ignore[union-attr]
                if how == "a person answers the other":
                    events = await client.collect(client.resume("t", {second.id: resolve(False)}))
                    assert events[-1].type == "RUN_FINISHED", events[-1]
                else:
                    clock.advance(minutes=21 if how == "one look after both" else 10)
                    await host.expire()
                while (record := await store.load("t")) is None or record.state.name != "IDLE":
                    await anyio.sleep(0.02)
    assert got == [(True, True)] if how != "a person answers the other" else [(True, False)]
    audit = {r.interrupt.message: (r.status, r.payload) for r in await store.audit("t")}
    assert audit["Ship A?"] == ("expired", True)


async def test_a_late_answer_is_still_refused_as_expired_and_the_thread_shows_the_hosts_run() -> None:
    clock = ManualClock(START)
    with anyio.fail_after(LIMIT):
        async with Host(
            mailing_agent, store=MemoryThreadStore(), tools=[send_email], clock=clock, expire_every=60
        ) as host:
            events = [e async for e in host.run(first_input("t"))]
            (asked,) = events[-1].outcome.interrupts  # type: ignore[union-attr]
            clock.advance(minutes=11)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=HttpApp(host)), base_url="http://h") as web:
                while True:  # GET /threads/t: what a reloaded page finds
                    view = (await web.get("/threads/t")).json()
                    if view["interrupts"] and view["interrupts"][0]["reason"] == "tool_call":
                        break
                    await anyio.sleep(0.02)
            assert view["runId"].startswith("expiry-")
            # The host's run is in the thread: the tool call it proposed, after the declared yes.
            calls = [c["function"]["name"] for m in view["messages"] for c in m.get("toolCalls") or ()]
            assert calls == ["send_email"]
            late = RunAgentInput(
                thread_id="t",
                run_id="late",
                resume=(
                    ResumeEntry(interrupt_id=asked.id, status="resolved", payload=False),
                    ResumeEntry(interrupt_id=view["interrupts"][0]["id"], status="cancelled"),
                ),
            )
            refused = [e async for e in host.run(late)]
    assert [(e.type, e.code) for e in refused] == [("RUN_ERROR", "INTERRUPT_EXPIRED")]  # type: ignore[union-attr]


class MeetingStore(SqliteThreadStore):
    """A SQLite store whose loads, once ``meeting`` is set, wait until every host has loaded: so
    two hosts hold the same record before either saves, the race the compare-and-set decides."""

    meeting: Meeting | None = None

    async def load(self, thread_id: str) -> ThreadRecord | None:
        record = await super().load(thread_id)
        if self.meeting is not None:
            await self.meeting.arrive()
        return record


class Meeting:
    """Waits until ``parties`` tasks have arrived, then lets each through (and every later one)."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.everyone = anyio.Event()

    async def arrive(self) -> None:
        self.arrived += 1
        if self.arrived >= self.parties:
            self.everyone.set()
        await self.everyone.wait()


async def test_two_hosts_on_one_store_resume_a_thread_at_expiry_once(tmp_path: Path) -> None:
    SHIPPED.clear()
    clock = ManualClock(START)
    file = tmp_path / "shared.db"
    with anyio.fail_after(LIMIT):
        async with MeetingStore(file) as one, MeetingStore(file) as two:
            async with (
                Host(shipping_agent, store=one, clock=clock) as first,
                Host(shipping_agent, store=two, clock=clock) as second,
            ):
                events = [e async for e in first.run(first_input("t"))]
                assert isinstance(events[-1], ev.RunFinishedEvent) and events[-1].outcome.type == "interrupt"  # type: ignore[union-attr]
                clock.advance(minutes=11)
                closed: list[int] = []

                async def both_look() -> None:
                    async def look(host: Host) -> None:
                        closed.append(await host.expire())

                    async with anyio.create_task_group() as group:
                        group.start_soon(look, first)
                        group.start_soon(look, second)

                one.meeting = two.meeting = Meeting(2)
                await both_look()  # both load the expired thread, then both try to resume it
                assert sorted(closed) == [0, 1]
                while (record := await two.load("t")) is None or record.state.name != "IDLE":
                    await anyio.sleep(0.02)
                await both_look()  # after the host's own run ended: nothing is left to expire
                assert sorted(closed) == [0, 0, 0, 1]
            assert [(r.status, r.payload) for r in await two.audit("t")] == [("expired", True)]
    assert SHIPPED == [True]  # the agent was resumed once


def audit_rows(file: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as db:
        return db.execute("SELECT thread_id, status FROM audit").fetchall()


async def test_two_served_processes_resume_a_thread_at_expiry_once(tmp_path: Path) -> None:
    payments = tmp_path / "payments.txt"
    file = tmp_path / "threads.sqlite3"
    options = ("--ws", "127.0.0.1:0", "--store", f"sqlite:{file}", "--expire-every", "0.2")
    target = "tests.runtime.expiry_default_agent:pay_agent"
    env = {**os.environ, "AGUI_PAYMENTS": str(payments)}
    with anyio.fail_after(LIMIT * 3):
        async with (
            agui_serve(target, *options, tmp=tmp_path, env=env) as one,
            agui_serve(target, *options, tmp=tmp_path, env=env) as two,
        ):
            async with connect_websocket(one.url) as client:
                events = await client.collect(client.new_input("pay", "Pay the invoice"))
                assert events[-1].outcome.type == "interrupt"  # type: ignore[union-attr]
            while not audit_rows(file):  # closed by one host, and the agent resumed with the denial
                await anyio.sleep(0.05)
            await anyio.sleep(1.0)  # both hosts have looked several times since
            # Read before the thread takes another input: every run of pay_agent proposes a new
            # payment due a second later, whose own expiry is a second resume, and a rightful one.
            texts = "\n".join(p.log.read_text() for p in (one, two))
            assert audit_rows(file) == [("pay", "expired")]
            async with connect_websocket(two.url) as client:
                while True:  # the thread is free on the other host once the host's own run ended
                    again = await client.collect(client.new_input("pay", "Anything else?"))
                    if again[-1].type == "RUN_FINISHED":
                        break
                    assert again[-1].code == "THREAD_BUSY"  # type: ignore[union-attr]
                    await anyio.sleep(0.1)
    assert texts.count("resuming thread 'pay' with the answers its agent declared for expiry") == 1
    assert not payments.exists()  # denied: the tool never ran
