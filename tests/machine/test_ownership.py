"""Ownership has one home (agui_core.machine.ownership): the machine's admission and the host's
reads and fact lookups all ask it, so a stranger is treated alike everywhere."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agui_core.machine.ownership import FORBIDDEN_MESSAGE, may_read, may_write
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host, RunContext
from agui_core.store import MemoryThreadStore

NOW = datetime(2026, 4, 20, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("owner", "principal", "write", "read"),
    [(None, "ann", True, False), ("ann", "ann", True, True), ("ann", "bob", False, False)],
)
def test_the_rule(owner: str | None, principal: str, write: bool, read: bool) -> None:
    assert may_write(owner, principal) is write
    assert may_read(owner, principal) is read


def test_the_machine_refuses_a_strangers_input_with_the_one_message() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(RunAgentInput(thread_id="t", run_id="r1"), now=NOW, principal="ann")
    machine.finish()
    (refusal,) = machine.receive_input(RunAgentInput(thread_id="t", run_id="r2"), now=NOW, principal="bob")
    assert refusal.code.value == "FORBIDDEN" and refusal.message == FORBIDDEN_MESSAGE  # type: ignore[union-attr]
    assert machine.admits("ann") and not machine.admits("bob")


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_host_reads_by_the_same_rule(anyio_backend: str) -> None:
    async def agent(ctx: RunContext) -> str:
        return "done"

    async with Host(agent, store=MemoryThreadStore()) as host:
        events = [e async for e in host.run(RunAgentInput(thread_id="t", run_id="r1"), principal="ann")]
        assert events[-1].type == "RUN_FINISHED"
        assert await host.view("t", "ann") is not None and await host.audit("t", "ann") is not None
        # A stranger reads as much as of a thread that does not exist.
        assert await host.view("t", "bob") is None and await host.view("nothing", "bob") is None
        assert await host.audit("t", "bob") is None and await host.audit("nothing", "bob") is None
        refused = [e async for e in host.run(RunAgentInput(thread_id="t", run_id="r2"), principal="bob")]
    assert [(e.type, e.code) for e in refused] == [("RUN_ERROR", "FORBIDDEN")]  # type: ignore[union-attr]
    assert refused[0].message == FORBIDDEN_MESSAGE  # type: ignore[union-attr]
