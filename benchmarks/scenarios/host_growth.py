"""host_growth: what a thread costs in time as it lives on, through the Host (issue 11).

Two costs that must not grow with a thread's past, measured against themselves in one process
(there is no reference to compare with):

- **A long streamed message**: one ``TEXT_MESSAGE_CONTENT`` delta of 1 KB after another, for
  2 MB and for 8 MB. Time linear in the length makes the large one about 4 times the small one;
  appending each delta to the text (as the host once did) made it quadratic, 16 times (57 s for
  16 MB). The case compares the two sizes, with "8 MB within 6 times 2 MB" as its target.
- **Resume cycles over a large conversation** (600 KB, sent whole with every input, as the
  reference client does), on the memory and SQLite stores: the fastest cycle of the last
  :data:`WINDOW` cycles against the fastest of the first :data:`WINDOW` after warm-up. Before
  the thread dropped old resumes and saved by difference, 45 cycles made cycles 25 times slower.
  The fastest of each window is compared because noise only ever adds time.

The unit tests (``tests/runtime/test_host_costs.py``) check the sizes these runs leave behind
(records, database and log files), which do not depend on the machine's speed; the times are
measured here, where a miss is reported and never raised.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from agui_core.machine.thread import RESUMES_KEPT
from agui_core.protocol.codec import input_from_dict
from agui_core.protocol.events import RunFinishedEvent
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host, RunContext, tool
from agui_core.store import MemoryThreadStore, SqliteThreadStore
from benchmarks.harness import Case, Comparison, Contender, Measurement, Scenario, Settings

__all__ = ["CONVERSATION", "SCENARIO", "WARM_UP", "WINDOW", "cycle_input", "cycling_agent", "note", "streaming_agent"]

CONVERSATION = [{"id": f"u-{n}", "role": "user", "content": f"part {n}: " + "lorem ipsum " * 8_500} for n in range(6)]
"""About 600 KB of conversation, sent with every input as the reference client does."""

WINDOW = 10
"""Cycles compared at each end of a run."""
WARM_UP = RESUMES_KEPT + 4
"""Cycles before the early window: by then the thread keeps as many resumes as it ever will."""

PIECE = "y" * 1024
"""One streamed delta."""


def cycling_agent() -> Any:
    """Every run answers the last approval and asks the next (the explicit style: a
    straight-line loop would replay every cycle so far, which is a different cost)."""

    async def agent(ctx: RunContext) -> Any:
        await ctx.text(f"Step {ctx.run_id}: " + "x" * 200)
        run = ctx.run_id
        call = await ctx.propose_tool_call("note", {"run": run}, tool_call_id=f"tc-{run}")
        await ctx.interrupt(attrs.evolve(ctx.approval(call), id=f"int-{run}"))

    return agent


@tool("note", needs_approval=True)
def note(run: str) -> str:
    return f"noted {run}"


def cycle_input(n: int) -> RunAgentInput:
    """Cycle ``n``'s input: the whole conversation and, after the first, the answer to the
    approval cycle ``n - 1`` asked for."""
    doc: dict[str, Any] = {
        "threadId": "t",
        "runId": f"r{n}",
        "messages": CONVERSATION,
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    if n:
        doc["resume"] = [{"interruptId": f"int-r{n - 1}", "status": "resolved", "payload": {"approved": True}}]
    return input_from_dict(doc)


def streaming_agent(megabytes: int) -> Any:
    """An agent that streams one message of ``megabytes`` MB in 1 KB deltas."""

    async def agent(ctx: RunContext) -> Any:
        async with ctx.message() as message:
            for _ in range(megabytes * 1024):
                await message.delta(PIECE)
        return None

    return agent


def _stream_once(megabytes: int) -> Callable[[], object]:
    ids = itertools.count()

    async def run() -> int:
        thread_id = f"t-{megabytes}-{next(ids)}"
        doc = {"threadId": thread_id, "runId": "r", "messages": [], "tools": [], "context": [], "forwardedProps": {}}
        async with Host(streaming_agent(megabytes), store=MemoryThreadStore()) as host:
            return sum([1 async for _ in host.run(input_from_dict(doc))])

    return lambda: anyio.run(run)


def _check_streams() -> None:
    for megabytes in (2, 8):
        events = _stream_once(megabytes)()
        assert events == megabytes * 1024 + 4, (megabytes, events)  # RUN_STARTED, START, deltas, END, FINISHED


def _build() -> Sequence[Case]:
    return (
        Case(
            name="one streamed message, 8 MB against 2 MB in 1 KB deltas",
            contenders=(Contender("8 MB", _stream_once(8)), Contender("2 MB", _stream_once(2))),
            comparisons=(Comparison(ours="8 MB", theirs="2 MB", target=1 / 6),),
            check=_check_streams,
            notes="linear: 8 MB takes about 4 times 2 MB; quadratic, 16 times",
        ),
    )


def _cycle_seconds(store: MemoryThreadStore | SqliteThreadStore, cycles: int) -> list[float]:
    async def run() -> list[float]:
        seconds: list[float] = []
        async with store, Host(cycling_agent(), store=store, tools=[note]) as host:
            for n in range(cycles + 1):
                started = time.process_time()
                events = [e async for e in host.run(cycle_input(n))]
                seconds.append(time.process_time() - started)
                finished = events[-1]
                assert isinstance(finished, RunFinishedEvent), finished
                assert finished.outcome is not None and finished.outcome.type == "interrupt", finished
        return seconds

    return anyio.run(run)


def _measure(settings: Settings) -> list[Measurement]:
    cycles = WARM_UP + 2 * WINDOW if settings.mode == "quick" else 100
    out: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="agui-growth-") as directory:
        stores: tuple[tuple[str, MemoryThreadStore | SqliteThreadStore], ...] = (
            ("memory", MemoryThreadStore()),
            ("SQLite", SqliteThreadStore(Path(directory) / "threads.db")),
        )
        for name, store in stores:
            seconds = _cycle_seconds(store, cycles)
            early = min(seconds[WARM_UP : WARM_UP + WINDOW])
            late = min(seconds[-WINDOW:])
            out.append(
                Measurement(
                    f"{name} store, {cycles} resume cycles over 600 KB: last cycles against first",
                    late / early,
                    "x",
                    at_most=3,
                )
            )
    return out


SCENARIO = Scenario(
    name="host_growth",
    description="costs that must not grow with a thread: a long streamed message, many resume cycles",
    build=_build,
    measure=_measure,
)
