"""One clock for the host: a ManualClock moves the run's deadline and its lease by hand, no sleeping."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agui_core.machine import ThreadState
from agui_core.runtime import Clock, Host, ManualClock, RunContext, SystemClock
from agui_core.runtime.clock import as_clock, timer_of
from agui_core.store import MemoryThreadStore
from tests.runtime.conversation import NOW, Conversation, counter, types

pytestmark = pytest.mark.anyio


def test_the_clocks_are_clocks() -> None:
    assert isinstance(SystemClock(), Clock) and isinstance(ManualClock(NOW), Clock)
    assert SystemClock().now().tzinfo is not None
    wrapped = as_clock(lambda: NOW)
    assert isinstance(wrapped, Clock) and wrapped.now() == NOW
    for clock in (SystemClock(), ManualClock(NOW), wrapped):
        assert as_clock(clock) is clock  # a clock already is one


@pytest.mark.parametrize("clock", [SystemClock(), as_clock(lambda: NOW)], ids=["system", "function"])
async def test_a_clock_that_waits_in_real_time_times_waits_on_the_event_loop(clock: Clock) -> None:
    timer = timer_of(clock)
    assert timer is not None
    called: list[str] = []
    timer(0.01, lambda: called.append("due"))
    cancel = timer(0.01, lambda: called.append("cancelled"))
    cancel()
    with anyio.fail_after(5):
        while not called:
            await anyio.sleep(0.005)
    await anyio.sleep(0.03)
    assert called == ["due"]


async def test_a_clock_moved_by_hand_has_no_timer_its_waits_are_its_own() -> None:
    assert timer_of(ManualClock(NOW)) is None


def test_there_is_no_timer_off_the_event_loop() -> None:
    assert timer_of(SystemClock()) is None


def test_a_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(NOW)
    clock.advance(seconds=5)
    assert clock.now() == clock() == NOW + timedelta(seconds=5)
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.set(NOW)
    with pytest.raises(ValueError):
        ManualClock(datetime(2026, 1, 1))


async def test_a_manual_sleep_ends_when_the_clock_passes_it() -> None:
    clock = ManualClock(NOW)
    woke: list[datetime] = []

    async def sleeper() -> None:
        await clock.sleep(10)
        woke.append(clock.now())

    async with anyio.create_task_group() as group:
        group.start_soon(sleeper)
        await anyio.wait_all_tasks_blocked()
        clock.advance(9)
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        clock.advance(1)
    assert woke == [NOW + timedelta(seconds=10)]


async def test_a_manual_clock_drives_the_run_deadline_without_sleeping() -> None:
    started = anyio.Event()

    async def stuck(ctx: RunContext) -> Any:
        started.set()
        await anyio.sleep_forever()

    clock = ManualClock(NOW)
    store = MemoryThreadStore()
    real_start = time.monotonic()
    async with store, Host(stuck, store=store, clock=clock, new_id=counter(), run_timeout=3600) as host:
        thread = Conversation(host, "t", clock)
        result: list[list[dict[str, Any]]] = []

        async def send() -> None:
            result.append(await thread.send({"runId": "run-1"}))

        async with anyio.create_task_group() as group:
            group.start_soon(send)
            await started.wait()
            await anyio.wait_all_tasks_blocked()
            clock.advance(seconds=3599)
            await anyio.wait_all_tasks_blocked()
            assert result == [], "the run is not over before its hour is up"
            clock.advance(seconds=1)
        stored = await store.load("t")
    (failed,) = result
    assert types(failed)[-1] == "RUN_ERROR" and failed[-1]["code"] == "AGENT_ERROR"
    assert "longer than 3600 s" in failed[-1]["message"]
    assert stored is not None and stored.active_run is None and stored.state is ThreadState.IDLE
    assert time.monotonic() - real_start < 30, "an hour's deadline passed in (much) less than real time"


async def test_the_lease_is_renewed_as_the_manual_clock_moves() -> None:
    started = anyio.Event()
    release = anyio.Event()

    async def waits(ctx: RunContext) -> Any:
        started.set()
        await release.wait()
        return "done"

    clock = ManualClock(NOW)
    store = MemoryThreadStore()
    async with store, Host(waits, store=store, clock=clock, new_id=counter(), lease=10, lease_renew=2) as host:
        thread = Conversation(host, "t", clock)
        async with anyio.create_task_group() as group:
            group.start_soon(thread.send, {"runId": "run-1"})
            await started.wait()
            await anyio.wait_all_tasks_blocked()
            first = await store.load("t")
            assert first is not None and first.active_run is not None
            assert first.active_run.lease_until == (NOW + timedelta(seconds=10)).isoformat()
            clock.advance(seconds=2)
            await anyio.wait_all_tasks_blocked()
            renewed = await store.load("t")
            assert renewed is not None and renewed.active_run is not None
            assert renewed.active_run.lease_until == (NOW + timedelta(seconds=12)).isoformat()
            release.set()


def test_the_default_clock_is_the_system_clock() -> None:
    host = Host(lambda ctx: None)  # type: ignore[arg-type, return-value]
    assert abs(host.clock() - datetime.now(UTC)) < timedelta(seconds=5)
