"""Host.run's stream taken in bursts (RunEvents.next_batch), and a caller that leaves it early.

Transports take a run's events a burst at a time; whichever way a caller takes them, it gets
the same events in the same order, and a caller that leaves (closing the stream or dropping
it) frees the run at once instead of holding it for the host's ``send_timeout``.
"""

from __future__ import annotations

import gc

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
