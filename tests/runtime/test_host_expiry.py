"""Active expiry (Host.expire, Host(expire_every=...), ThreadMachine.expire): an interrupt whose
expiresAt passes is closed by the host itself, once, without waiting for an input."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
from agui_transports.client import connect_websocket

from agui_core.machine.thread import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, ResumeEntry, RunAgentInput, UserMessage
from agui_core.runtime import Host, ManualClock, RunContext
from agui_core.runtime.metrics import PrometheusObserver
from agui_core.store import MemoryThreadStore, SqliteThreadStore, ThreadStore
from tests.transports.served import agui_serve

pytestmark = pytest.mark.anyio

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
EXPIRES = (START + timedelta(minutes=10)).isoformat()
LIMIT = 15.0


async def asking_agent(ctx: RunContext) -> JSON:
    """Asks one question that expires ten minutes after START, then says what it got."""
    reply = await ctx.ask("Which quarter?", {"type": "string"}, expires_at=EXPIRES)
    await ctx.text(f"got {reply.payload!r}")
    return None


def first_input(thread_id: str) -> RunAgentInput:
    message = UserMessage(id=f"{thread_id}-m", content="Report")
    return RunAgentInput(thread_id=thread_id, run_id=f"{thread_id}-1", messages=(message,))


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ThreadStore]:
    made: ThreadStore = MemoryThreadStore() if request.param == "memory" else SqliteThreadStore(tmp_path / "t.db")
    yield made
    await made.aclose()


async def test_the_host_closes_an_expired_interrupt_by_itself_and_the_thread_is_free(store: ThreadStore) -> None:
    clock = ManualClock(START)
    observer = PrometheusObserver()
    with anyio.fail_after(LIMIT):
        async with Host(asking_agent, store=store, clock=clock, expire_every=60, observer=observer) as host:
            events = [e async for e in host.run(first_input("t"))]
            assert isinstance(events[-1], ev.RunFinishedEvent) and events[-1].outcome is not None
            (asked,) = events[-1].outcome.interrupts or ()
            assert await host.expire() == 0  # not yet

            clock.advance(minutes=11)  # past expiresAt, and the periodic look is due
            while (record := await store.load("t")) is not None and record.open_interrupts:
                await anyio.sleep(0.01)
            assert record is not None and record.state is ThreadState.IDLE
            (closed,) = await store.audit("t")
            assert (closed.interrupt.id, closed.status, closed.answered_at) == (asked.id, "expired", EXPIRES)
            assert await store.all_waiting() == []
            assert observer.expired.labels("input_required")._value.get() == 1

            # A late answer is still refused; a new input runs at once.
            late = RunAgentInput(
                thread_id="t",
                run_id="t-2",
                resume=(ResumeEntry(interrupt_id=asked.id, status="resolved", payload="Q3"),),
            )
            refused = [e async for e in host.run(late)]
            assert isinstance(refused[-1], ev.RunErrorEvent) and refused[-1].code == "INTERRUPT_EXPIRED"
            again = RunAgentInput(thread_id="t", run_id="t-3", messages=(UserMessage(id="t-m2", content="Again"),))
            ran = [e async for e in host.run(again)]
            assert isinstance(ran[0], ev.RunStartedEvent) and isinstance(ran[-1], ev.RunFinishedEvent)
        assert [r.interrupt.id for r in await store.audit("t")] == [asked.id]


async def test_two_hosts_on_one_store_close_an_expired_interrupt_once(tmp_path: Path) -> None:
    clock = ManualClock(START)
    file = tmp_path / "shared.db"
    with anyio.fail_after(LIMIT):
        async with SqliteThreadStore(file) as one, SqliteThreadStore(file) as two:
            async with (
                Host(asking_agent, store=one, clock=clock) as first,
                Host(asking_agent, store=two, clock=clock) as second,
            ):
                for thread in ("a", "b"):
                    events = [e async for e in first.run(first_input(thread))]
                    assert isinstance(events[-1], ev.RunFinishedEvent)
                clock.advance(minutes=11)
                closed: list[int] = []

                async def look(host: Host) -> None:
                    closed.append(await host.expire())

                async with anyio.create_task_group() as group:
                    group.start_soon(look, first)
                    group.start_soon(look, second)
                assert sum(closed) == 2
            for thread in ("a", "b"):
                assert [r.status for r in await one.audit(thread)] == ["expired"]


async def test_expire_every_must_be_a_positive_number_of_seconds() -> None:
    with pytest.raises(ValueError, match="expire_every"):
        Host(asking_agent, expire_every=0)


async def test_two_served_processes_on_one_file_close_an_expired_interrupt_once(tmp_path: Path) -> None:
    file = tmp_path / "threads.sqlite3"
    options = ("--ws", "127.0.0.1:0", "--store", f"sqlite:{file}", "--expire-every", "0.2")
    target = "tests.runtime.expiry_agent:quick_question_agent"

    def audit_rows() -> list[tuple[str, str]]:
        with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as db:
            return db.execute("SELECT thread_id, status FROM audit").fetchall()

    with anyio.fail_after(LIMIT * 2):
        async with agui_serve(target, *options, tmp=tmp_path) as one, agui_serve(target, *options, tmp=tmp_path):
            async with connect_websocket(one.url) as client:
                events = await client.collect(client.new_input("quick", "Report"))
                assert isinstance(events[-1], ev.RunFinishedEvent)
                while not audit_rows():
                    await anyio.sleep(0.05)
                await anyio.sleep(0.6)  # both hosts have looked again since
                assert audit_rows() == [("quick", "expired")]
                # The thread is free: the same client goes on at once.
                again = await client.collect(client.new_input("quick", "Again"))
                assert isinstance(again[0], ev.RunStartedEvent) and isinstance(again[-1], ev.RunFinishedEvent)
