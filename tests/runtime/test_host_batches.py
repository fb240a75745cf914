"""Host.run's stream taken in bursts (RunEvents.next_batch), and a caller that leaves it early.

Transports take a run's events a burst at a time; whichever way a caller takes them, it gets
the same events in the same order, and a caller that leaves (closing the stream or dropping
it) frees the run at once instead of holding it for the host's ``send_timeout``.
"""

from __future__ import annotations

import gc
from contextlib import aclosing

import anyio
import pytest

from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, RunAgentInput
from agui_core.runtime import Host, RunContext
from agui_core.store import MemoryThreadStore

pytestmark = pytest.mark.anyio

DELTAS = 600  # more than the host's default stream of 256 events: several bursts
LIMIT = 5.0  # seconds; the send_timeout below is far longer, so a run held by its caller fails


async def chatty(ctx: RunContext) -> JSON:
    async with ctx.message(message_id="m") as message:
        for n in range(DELTAS):
            await message.delta(f"{n} ")
    return {"done": True}


def run_input(thread: str) -> RunAgentInput:
    return RunAgentInput(thread_id=thread, run_id=f"run-{thread}")


async def test_bursts_carry_every_event_in_order_then_end() -> None:
    async with Host(chatty, store=MemoryThreadStore(), new_id=lambda: "0") as host:
        one_by_one = [event async for event in host.run(run_input("a"))]
        events = host.run(run_input("b"))
        bursts = []
        while batch := await events.next_batch():
            bursts.append(batch)
        assert await events.next_batch() == []  # the end stays the end
    together = [event for batch in bursts for event in batch]
    assert len(bursts) > 1  # the run streamed in more than one burst
    assert [type(e) for e in together] == [type(e) for e in one_by_one]
    deltas = [e.delta for e in together if isinstance(e, ev.TextMessageContentEvent)]
    assert deltas == [f"{n} " for n in range(DELTAS)]
    assert isinstance(together[-1], ev.RunFinishedEvent) and together[-1].result == {"done": True}


async def test_a_run_starts_when_its_first_event_is_asked_for() -> None:
    store = MemoryThreadStore()
    async with Host(chatty, store=store) as host:
        events = host.run(run_input("a"))
        await anyio.sleep(0.05)
        assert await store.load("a") is None  # nothing carried out yet
        first = await events.__anext__()
        assert isinstance(first, ev.RunStartedEvent)
        await events.aclose()


@pytest.mark.parametrize("leaving", ["aclose", "drop"])
async def test_a_caller_that_leaves_mid_run_frees_the_run_at_once(leaving: str) -> None:
    store = MemoryThreadStore()
    async with Host(chatty, store=store, buffer=4, send_timeout=60.0) as host:
        events = host.run(run_input("a"))
        assert isinstance(await events.__anext__(), ev.RunStartedEvent)
        if leaving == "aclose":
            await events.aclose()
            assert [e async for e in events] == []
        else:
            del events
            gc.collect()
        with anyio.fail_after(LIMIT):
            while True:  # the run goes on unheard, and its outcome is saved
                record = await store.load("a")
                if record is not None and record.active_run is None:
                    break
                await anyio.sleep(0.01)
        again = [e async for e in host.run(run_input("a"))]
    assert isinstance(again[-1], ev.RunFinishedEvent) and again[-1].result == {"done": True}


async def test_a_busy_thread_refuses_in_one_burst() -> None:
    async with Host(chatty, store=MemoryThreadStore(), buffer=1) as host:
        first = host.run(run_input("a"))
        assert isinstance(await first.__anext__(), ev.RunStartedEvent)
        refused = host.run(RunAgentInput(thread_id="a", run_id="run-2"))
        batch = await refused.next_batch()
        assert [type(e) for e in batch] == [ev.RunErrorEvent] and batch[0].code == "THREAD_BUSY"
        assert await refused.next_batch() == []
        await first.aclose()


@pytest.mark.parametrize("says_sent", [True, False], ids=["says it writes", "says nothing"])
async def test_a_caller_writing_a_burst_slowly_is_dropped_only_when_it_says_nothing(says_sent: bool) -> None:
    # A burst of 8 taken at once, each written in 0.1 s (well within the 0.5 s send timeout),
    # takes 0.8 s: the run waits on its full stream all that time. A caller that says it is
    # writing (RunEvents.sent) is still reading and gets every event; one that says nothing
    # looks stuck for the whole timeout and is dropped, as a caller that stopped reading is.
    async def ticks(ctx: RunContext) -> JSON:
        for n in range(24):
            await ctx.emit(ev.CustomEvent(name="tick", value=n))
        return "done"

    got: list[ev.Event] = []
    async with Host(ticks, store=MemoryThreadStore(), buffer=8, send_timeout=0.5) as host:
        async with aclosing(host.run(run_input("slow-burst"))) as events:
            while batch := await events.next_batch():
                for event in batch:
                    await anyio.sleep(0.1)  # one frame's write
                    got.append(event)
                    if says_sent:
                        events.sent()
        record = await host.store.load("slow-burst")
    assert record is not None and record.active_run is None  # the run itself always ends, and is saved
    if says_sent:
        assert len(got) == 1 + 24 + 1 and isinstance(got[-1], ev.RunFinishedEvent)
    else:
        assert not any(isinstance(e, ev.RunFinishedEvent) for e in got)


async def test_two_tasks_taking_one_runs_events_at_once_is_an_error_not_a_lost_stream() -> None:
    release = anyio.Event()

    async def waits(ctx: RunContext) -> JSON:
        await release.wait()
        return "done"

    async with Host(waits, store=MemoryThreadStore()) as host:
        events = host.run(run_input("shared"))
        firsts: list[ev.Event] = []

        async def take_first() -> None:
            firsts.append(await events.__anext__())  # RUN_STARTED
            firsts.append(await events.__anext__())  # waits: the run waits on release

        with anyio.fail_after(LIMIT):  # taken twice at once, the second would wait for ever
            async with anyio.create_task_group() as group:
                group.start_soon(take_first)
                await anyio.wait_all_tasks_blocked()
                try:
                    with pytest.raises(RuntimeError, match="another task is already waiting"):
                        await events.__anext__()
                    with pytest.raises(RuntimeError, match="another task is already waiting"):
                        await events.next_batch()
                finally:
                    release.set()
        rest = [event async for event in events]
    assert [type(e) for e in firsts] == [ev.RunStartedEvent, ev.RunFinishedEvent]
    assert rest == []
