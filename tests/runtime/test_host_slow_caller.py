"""A caller that stops reading holds its thread ``send_timeout`` seconds at most, even at the
shielded end of a run, and the run's outcome is saved all the same."""

from __future__ import annotations

from contextlib import aclosing

import anyio
import pytest

from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, RunAgentInput
from agui_core.runtime import Host, RunContext
from agui_core.store import MemoryThreadStore

pytestmark = pytest.mark.anyio

LIMIT = 10.0  # seconds: a caller held forever fails the test instead of hanging the suite


async def one_event(ctx: RunContext) -> JSON:
    await ctx.emit(ev.CustomEvent(name="tick", value=1))
    return {"done": True}


async def test_a_caller_that_stops_reading_is_dropped_at_the_shielded_end_of_its_run() -> None:
    store = MemoryThreadStore()
    # A stream of one event: RUN_STARTED is taken, CUSTOM fills the stream, and RUN_FINISHED
    # waits in the step that saves the outcome, which no deadline of the run may cut short.
    async with Host(one_event, store=store, buffer=1, send_timeout=0.2, run_timeout=0.5) as host:
        # (Closing the stuck stream at the end frees the run should the host not: a failure, not a hang.)
        async with aclosing(host.run(RunAgentInput(thread_id="t", run_id="run-1"))) as stuck:
            assert isinstance(await stuck.__anext__(), ev.RunStartedEvent)
            with anyio.fail_after(LIMIT):
                while True:  # the thread is free again once the stuck caller is dropped
                    second = [event async for event in host.run(RunAgentInput(thread_id="t", run_id="run-2"))]
                    if not isinstance(second[0], ev.RunErrorEvent):
                        break
                    assert second[0].code == "THREAD_BUSY"
                    await anyio.sleep(0.05)
            assert isinstance(second[-1], ev.RunFinishedEvent) and second[-1].result == {"done": True}
            # The dropped caller's stream ends where it stood, without the run's last event.
            assert [type(event) async for event in stuck] == [ev.CustomEvent]
        # The first run's outcome was saved: sent again, its input gets the outcome back.
        again = [event async for event in host.run(RunAgentInput(thread_id="t", run_id="run-1"))]
    assert isinstance(again[-1], ev.RunFinishedEvent) and again[-1].result == {"done": True}


async def test_a_slow_caller_within_the_timeout_gets_every_event() -> None:
    async def many(ctx: RunContext) -> JSON:
        for n in range(20):
            await ctx.emit(ev.CustomEvent(name="tick", value=n))
        return None

    async with Host(many, buffer=1, send_timeout=5.0) as host:
        with anyio.fail_after(LIMIT):
            seen = []
            async for event in host.run(RunAgentInput(thread_id="t", run_id="run-1")):
                seen.append(type(event))
                await anyio.sleep(0.01)
    assert seen == [ev.RunStartedEvent, *[ev.CustomEvent] * 20, ev.RunFinishedEvent]
