"""The nesting limit through the Host, on both stores: an input past it is refused with the
path and touches nothing; an agent's state past it fails the run before anything is saved,
so no interrupt is ever saved that could not be announced."""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest

from agui_core.machine.record import record_to_dict
from agui_core.protocol.codec import MAX_DEPTH, encode_event
from agui_core.runtime import Host, RunContext
from agui_core.store import ThreadStore
from tests.runtime.conversation import Clock, counter, make_input

pytestmark = pytest.mark.anyio

AROUND = [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1]


def nested_lists(depth: int) -> Any:
    value: Any = None
    for _ in range(depth):
        value = [value]
    return value


async def quick_agent(ctx: RunContext) -> Any:
    return "done"


@pytest.mark.parametrize("depth", AROUND)
async def test_an_input_past_the_limit_is_refused_with_the_path(store: ThreadStore, depth: int) -> None:
    # Built in code, past the decoder (which refuses it too): the host's own check answers.
    run_input = attrs.evolve(make_input({"threadId": "deep", "runId": "run-1"}), state=nested_lists(depth - 1))
    async with Host(quick_agent, store=store, clock=Clock(), new_id=counter()) as host:
        events = [e async for e in host.run(run_input)]
    if depth <= MAX_DEPTH:
        assert events[-1].type == "RUN_FINISHED"
        return
    (error,) = events
    assert (error.type, error.code) == ("RUN_ERROR", "INVALID_INPUT")
    assert error.message.startswith("invalid RunAgentInput at $.state[0][0]")
    assert f"at most {MAX_DEPTH} levels" in error.message
    assert await store.load("deep") is None


@pytest.mark.parametrize("depth", AROUND)
async def test_state_past_the_limit_fails_the_run_and_saves_no_interrupt(store: ThreadStore, depth: int) -> None:
    async def agent(ctx: RunContext) -> Any:
        await ctx.set_state(nested_lists(depth - 1))  # its STATE_SNAPSHOT is `depth` deep
        await ctx.interrupt(ctx.confirm("Go on?"))
        return None

    async with Host(agent, store=store, clock=Clock(), new_id=counter()) as host:
        events = [e async for e in host.run(make_input({"threadId": "t", "runId": "run-1"}))]
    for event in events:
        encode_event(event, validate=True)  # everything sent can be written and read back
    record = await store.load("t")
    assert record is not None
    orjson.dumps(record_to_dict(record))  # and everything saved
    if depth <= MAX_DEPTH:
        assert events[-1].type == "RUN_FINISHED" and len(record.open_interrupts) == 1
        return
    error = events[-1]
    assert (error.type, error.code) == ("RUN_ERROR", "AGENT_ERROR")
    assert f"at most {MAX_DEPTH} levels" in error.message
    assert record.open_interrupts == () and record.agent_state is None
