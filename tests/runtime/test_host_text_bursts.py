"""Streamed text in a run's stream: bursts of deltas (TextBurst), however the caller takes them.

``TextStream.delta`` hands deltas over as bursts, not events. A caller taking events one by one
or in batches gets the events they stand for; a caller taking bursts (a transport) gets the
same deltas in the same places; a burst taken gets nothing more added to it.
"""

from __future__ import annotations

import anyio
import pytest

from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, RunAgentInput
from agui_core.runtime import Host, RunContext
from agui_core.runtime.streams import BURST_DELTAS, TextBurst
from agui_core.store import MemoryThreadStore

pytestmark = pytest.mark.anyio

DELTAS = 200


async def streamer(ctx: RunContext) -> JSON:
    async with ctx.message(message_id="m") as message:
        for n in range(DELTAS):
            await message.delta(f"{n} ")
            if n == 100:
                await ctx.emit(ev.CustomEvent(name="halfway", value=n))
                await anyio.sleep(0)  # the caller may take what is ready meanwhile
    return None


def run_input(thread: str) -> RunAgentInput:
    return RunAgentInput(thread_id=thread, run_id=f"run-{thread}")


def flat(items: list[ev.Event | TextBurst]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, TextBurst):
            out += [("TEXT_MESSAGE_CONTENT", d) for d in item.deltas]
        else:
            out.append((item.type, getattr(item, "delta", "")))
    return out


async def test_every_way_of_taking_a_run_gets_the_same_events() -> None:
    async with Host(streamer, store=MemoryThreadStore()) as host:
        one_by_one = [e async for e in host.run(run_input("a"))]
        events = host.run(run_input("b"))
        batches = [e for batch in [await events.next_batch() for _ in range(3)] for e in batch]
        while batch := await events.next_batch():
            batches += batch
        bursts = host.run(run_input("c"))
        taken: list[ev.Event | TextBurst] = []
        sizes: list[int] = []  # of each burst, when it was taken
        while burst := await bursts.next_burst():
            taken += burst
            sizes += [len(item.deltas) for item in burst if isinstance(item, TextBurst)]
    assert [len(item.deltas) for item in taken if isinstance(item, TextBurst)] == sizes  # none grew once taken
    assert one_by_one[1:-1] == batches[1:-1]  # all but RUN_STARTED and RUN_FINISHED, which name their thread
    assert flat(taken) == flat(list(one_by_one))
    assert all(len(item.deltas) <= BURST_DELTAS for item in taken if isinstance(item, TextBurst))
    assert [e for e in one_by_one if isinstance(e, ev.TextMessageContentEvent)] == [
        ev.TextMessageContentEvent(message_id="m", delta=f"{n} ") for n in range(DELTAS)
    ]


async def test_a_caller_mixing_single_events_and_bursts_misses_nothing() -> None:
    async with Host(streamer, store=MemoryThreadStore()) as host:
        events = host.run(run_input("mixed"))
        got: list[ev.Event | TextBurst] = []
        while True:
            try:
                got.append(await events.__anext__())  # part of a burst, built as events
            except StopAsyncIteration:
                break
            more = await events.next_burst()  # the rest of that burst first, then what is ready
            if not more:
                break
            got += more
        reference = [e async for e in host.run(run_input("reference"))]
    assert flat(got) == flat(list(reference))


async def test_a_closed_stream_gives_nothing_more_even_mid_burst() -> None:
    async with Host(streamer, store=MemoryThreadStore()) as host:
        events = host.run(run_input("closing"))
        await events.__anext__()
        await events.__anext__()
        await events.__anext__()  # inside the first burst
        await events.aclose()
        assert [e async for e in events] == []
        assert await events.next_burst() == []
