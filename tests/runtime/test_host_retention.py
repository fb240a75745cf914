"""Retention: the host's sweep purges threads at rest nobody used for ``retain``, on the host's clock.

A host with a :class:`ManualClock` serves a real WebSocket port; the tests move the clock by
days and watch the store: only threads with no open interrupt and no run in progress go, once
their last save is older than ``retain``; their audit trails wait apart for ``retain_audit``.
"""

from __future__ import annotations

import logging
import math
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from agui_transports.client import connect_websocket
from agui_transports.websocket import WebSocketServer

from agui_core.machine.client import approve
from agui_core.runtime import Host, ManualClock
from agui_core.store import MemoryThreadStore, Purged, SqliteThreadStore, StoreError
from tests.transports import agents

pytestmark = pytest.mark.anyio

LIMIT = 20.0
DAY = 86400.0


async def until(check: Any) -> None:
    """Wait (a bounded while: the test's ``fail_after``) until ``await check()`` is true."""
    while not await check():
        await anyio.sleep(0.01)


async def test_the_sweep_purges_threads_at_rest_past_retain_and_keeps_the_audit_for_retain_audit(
    tmp_path: Path,
) -> None:
    agents.SENT.clear()
    clock = ManualClock(datetime(2026, 3, 1, tzinfo=UTC))
    store = SqliteThreadStore(tmp_path / "threads.sqlite3")
    gate = agents.GATES["busy"] = anyio.Event()
    host = Host(
        agents.approval_agent,
        store=store,
        tools=agents.TOOLS,
        clock=clock,
        run_timeout=math.inf,  # a run held for days on the manual clock is not cut off
        retain=30 * DAY,
        retain_audit=365 * DAY,
    )
    assert host.sweep_every == 3600.0  # a tenth of retain, at most an hour

    def kept_trails() -> list[str]:
        with sqlite3.connect(tmp_path / "threads.sqlite3") as db:
            return [thread_id for (thread_id,) in db.execute("SELECT thread_id FROM purged_audit")]

    async def gone(thread_id: str) -> bool:
        return await store.load(thread_id) is None

    try:
        with anyio.fail_after(LIMIT):
            async with host, WebSocketServer(host, port=0) as server, anyio.create_task_group() as group:
                async with connect_websocket(server.url) as client:
                    for thread in ("done", "waiting"):
                        await client.collect(client.new_input(thread, "Send the report"))
                    answers = {i.id: approve() for i in client.machine("done").open_interrupts}
                    await client.collect(client.resume("done", answers))

                async def hold_a_run() -> None:
                    async with connect_websocket(server.url) as busy:
                        await busy.collect(busy.new_input("busy", "Send the report"))

                group.start_soon(hold_a_run)
                await until(lambda: _state_is(store, "busy", "RUNNING"))
                clock.advance(20 * DAY)
                async with connect_websocket(server.url) as client:  # used 20 days later: younger
                    await client.collect(client.new_input("recent", "Send the report"))
                    answers = {i.id: approve() for i in client.machine("recent").open_interrupts}
                    await client.collect(client.resume("recent", answers))

                clock.advance(11 * DAY)  # 31 days after the first threads: the sweep wakes
                await until(lambda: gone("done"))
                assert [await store.load(t) is not None for t in ("waiting", "busy", "recent")] == [True] * 3
                async with httpx.AsyncClient() as http:
                    view = await http.get(server.url.replace("ws://", "http://") + "/threads/done")
                assert view.status_code == 404
                assert kept_trails() == ["done"]  # its audit trail waits apart, for the operator

                clock.advance(365 * DAY)  # past retain_audit of the first threads' last use
                await until(lambda: gone("recent"))
                await until(lambda: _no(kept_trails))
                assert await store.load("waiting") is not None and await store.load("busy") is not None
                gate.set()
                await until(lambda: _state_is(store, "busy", "INTERRUPTED"))
    finally:
        agents.GATES.pop("busy", None)
        await store.aclose()
    assert len(agents.SENT) == 2  # the two approved emails, each sent once


async def _state_is(store: Any, thread_id: str, state: str) -> bool:
    record = await store.load(thread_id)
    return record is not None and record.state.value == state


async def _no(listing: Any) -> bool:
    return not listing()


async def test_the_sweep_runs_every_sweep_every_seconds_on_the_hosts_clock() -> None:
    clock = ManualClock()
    store = CountedPurges()
    with anyio.fail_after(LIMIT):
        async with Host(agents.slow_agent, store=store, clock=clock, retain=60.0) as host:
            assert host.sweep_every == 6.0  # a tenth of retain, at least a second
            events = [e async for e in host.run(_input("t"))]
            assert events[-1].type == "RUN_FINISHED"  # at rest, saved at 0 s
            await until(lambda: _at_least(store, 1))  # the sweep at start: nothing due
            clock.advance(59.0)
            await until(lambda: _at_least(store, 2))  # at 59 s: still less than 60 s old
            assert await store.load("t") is not None
            clock.advance(2.0)  # due now, but the next sweep is at 65 s
            await anyio.sleep(0.05)
            assert store.purges == 2 and await store.load("t") is not None
            clock.advance(4.0)
            await until(lambda: _at_least(store, 3))
            assert await store.load("t") is None


def _input(thread_id: str) -> Any:
    from tests.runtime.conversation import make_input

    return make_input({"threadId": thread_id, "runId": f"{thread_id}-run", "forwardedProps": {"seconds": 0}})


class CountedPurges(MemoryThreadStore):
    """A memory store that counts its purges."""

    def __init__(self) -> None:
        super().__init__()
        self.purges = 0

    async def purge(self, **cutoffs: Any) -> Purged:
        self.purges += 1
        return await super().purge(**cutoffs)


class FlakyPurges(CountedPurges):
    """A memory store whose first purge fails (a database away for a moment, say)."""

    async def purge(self, **cutoffs: Any) -> Purged:
        if self.purges == 0:
            self.purges += 1
            raise StoreError("the database at db.internal:5432 went away")
        return await super().purge(**cutoffs)


async def test_a_sweep_that_fails_is_logged_in_one_line_and_the_next_one_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock()
    store = FlakyPurges()
    with anyio.fail_after(LIMIT):
        async with Host(agents.approval_agent, store=store, clock=clock, retain=60.0):
            await until(lambda: _at_least(store, 1))
            clock.advance(6.0)
            await until(lambda: _at_least(store, 2))
    (line,) = [r for r in caplog.records if "sweep failed" in r.getMessage()]
    assert line.levelno == logging.WARNING and line.exc_info is None and "trying again in 6 s" in line.getMessage()


async def _at_least(store: CountedPurges, purges: int) -> bool:
    return store.purges >= purges


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"retain": 0.0}, "positive"),
        ({"retain": math.inf}, "positive"),
        ({"retain_audit": 10.0}, "needs retain"),
        ({"retain": 10.0, "retain_audit": 5.0}, "no less"),
        ({"retain": 10.0, "sweep_every": 0.0}, "positive"),
    ],
)
def test_a_retention_that_cannot_be_is_refused(options: dict[str, float], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        Host(agents.approval_agent, **options)  # type: ignore[arg-type]


async def test_without_retain_nothing_is_ever_purged() -> None:
    clock = ManualClock()
    store = MemoryThreadStore()
    async with Host(agents.slow_agent, store=store, clock=clock) as host:
        events = [e async for e in host.run(_input("kept"))]
        assert events[-1].type == "RUN_FINISHED"
        clock.advance(timedelta(days=10000).total_seconds())
        assert await host.sweep() == Purged(threads=0, audit_trails=0)
    assert await store.load("kept") is not None
