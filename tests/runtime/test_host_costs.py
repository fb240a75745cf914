"""What a thread costs as it lives on, through the Host, on both stores (issue 11).

- Resume cycles over a large conversation: the record, the file and the time per cycle stay
  flat after warm-up (compared late against early, in one run: a behaviour check, not a
  speed test). Before, every completed resume kept the whole conversation and every save
  rewrote it: 45 cycles over 600 KB made a 32.6 MB record and cycles 25 times slower.
- One long streamed message costs time linear in its length (16 MB against 4 MB in one run,
  about a second; before, appending each delta to the text made it quadratic: 57 s for 16 MB).

Both compare this process's CPU time (``time.process_time``), late against early or large
against small in one run, so other work on a shared machine does not move the ratios.

The cycles run short in CI (40 cycles); ``pytest --long`` (or ``AGUI_LONG=1``) runs 100.
"""

from __future__ import annotations

import contextlib
import sqlite3
import statistics
import time
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from agui_core.machine.record import record_to_dict
from agui_core.machine.thread import RESUMES_KEPT
from agui_core.runtime import Host, RunContext, tool
from agui_core.store import SqliteThreadStore, ThreadStore
from tests.runtime.conversation import Clock, counter, make_input

pytestmark = pytest.mark.anyio

CONVERSATION = [{"id": f"u-{n}", "role": "user", "content": f"part {n}: " + "lorem ipsum " * 8_500} for n in range(6)]
"""About 600 KB of conversation, sent with every input as the reference client does."""

WINDOW = 10
"""Cycles compared at each end of the run."""
WARM_UP = RESUMES_KEPT + 4
"""Cycles before the early window: by then the thread keeps as many resumes as it ever will."""


def cycling_agent() -> Any:
    # The explicit style: every run answers the last approval and asks the next, so no run
    # replays the ones before it (a straight-line loop would replay every cycle so far).
    async def agent(ctx: RunContext) -> Any:
        await ctx.text(f"Step {ctx.run_id}: " + "x" * 200)
        run = ctx.run_id
        call = await ctx.propose_tool_call("note", {"run": run}, tool_call_id=f"tc-{run}")
        await ctx.interrupt(attrs.evolve(ctx.approval(call), id=f"int-{run}"))

    return agent


@tool("note", needs_approval=True)
def note(run: str) -> str:
    return f"noted {run}"


def file_bytes(store: ThreadStore) -> tuple[int, int]:
    """The size of the SQLite database (its pages, wherever they are yet: the file or its
    write-ahead log) and of the log file (0, 0 for another store)."""
    if not isinstance(store, SqliteThreadStore):
        return 0, 0
    with contextlib.closing(sqlite3.connect(store.path)) as db:
        ((size,),) = db.execute("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
    wal = Path(f"{store.path}-wal")
    return size, wal.stat().st_size if wal.exists() else 0


def overhead(record_json: dict[str, Any]) -> int:
    """The bytes of a record beyond its conversation, audit trail and tool journal."""
    rest = {k: v for k, v in record_json.items() if k not in ("messages", "resolved", "toolJournal")}
    return len(orjson.dumps(rest))


async def test_resume_cycles_keep_record_size_file_size_and_time_flat(store: ThreadStore, long_form: bool) -> None:
    cycles = 100 if long_form else 40
    record_sizes: list[int] = []
    overheads: list[int] = []
    file_sizes: list[tuple[int, int]] = []
    seconds: list[float] = []
    async with Host(cycling_agent(), store=store, tools=[note], clock=Clock(), new_id=counter()) as host:
        previous = None
        for n in range(cycles + 1):
            doc: dict[str, Any] = {"threadId": "t", "runId": f"r{n}", "messages": CONVERSATION}
            if previous is not None:
                yes = {"interruptId": f"int-{previous}", "status": "resolved", "payload": {"approved": True}}
                doc["resume"] = [yes]
            run_input = make_input(doc)
            started = time.process_time()
            events = [e async for e in host.run(run_input)]
            seconds.append(time.process_time() - started)
            finished = events[-1]
            assert finished.type == "RUN_FINISHED" and finished.outcome.type == "interrupt", finished
            previous = f"r{n}"
            record = await store.load("t")
            assert record is not None
            record_json = record_to_dict(record)
            record_sizes.append(len(orjson.dumps(record_json)))
            overheads.append(overhead(record_json))
            file_sizes.append(file_bytes(store))
    assert len(await store.audit("t")) == cycles  # every answer is in the audit trail
    early, late = slice(WARM_UP, WARM_UP + WINDOW), slice(-WINDOW, None)
    (db_early, wal_early), (db_late, wal_late) = file_sizes[WARM_UP], file_sizes[-1]
    print(
        f"\n{type(store).__name__}: {cycles} cycles; record {record_sizes[WARM_UP]:,} -> {record_sizes[-1]:,} bytes "
        f"(beyond messages, audit and journal: {overheads[WARM_UP]:,} -> {overheads[-1]:,}); "
        f"database {db_early:,} -> {db_late:,} bytes, log file {wal_early:,} -> {wal_late:,}; per cycle "
        f"{statistics.median(seconds[early]) * 1e3:.1f} -> {statistics.median(seconds[late]) * 1e3:.1f} ms"
    )
    # Past warm-up a cycle adds what the conversation needs (its messages, one audit entry,
    # one tool journal entry: under 2 KB here) and nothing else; before, it added 600 KB.
    per_cycle = (record_sizes[-1] - record_sizes[WARM_UP]) / (cycles - WARM_UP)
    assert per_cycle < 2_500
    assert overheads[-1] <= overheads[WARM_UP] + 100
    assert record_sizes[-1] < record_sizes[WARM_UP] + (cycles - WARM_UP) * 2_500
    if db_late:
        # The database holds the conversation once, plus rows that grow as the record does.
        assert db_late < db_early + (cycles - WARM_UP) * 4_096
        assert wal_late < 8 * 2**20  # checkpointed as it goes: SQLite's default, 1,000 pages
    # Each window's fastest cycle: noise (other threads, a loaded machine) only ever adds time,
    # while a cost that grows with the thread slows every late cycle.
    assert min(seconds[late]) < 3 * min(seconds[early])


def streaming_agent(megabytes: int) -> Any:
    piece = "y" * 1024

    async def agent(ctx: RunContext) -> Any:
        async with ctx.message() as message:
            for _ in range(megabytes * 1024):
                await message.delta(piece)
        return None

    return agent


async def test_a_long_streamed_message_costs_time_linear_in_its_length(store: ThreadStore) -> None:
    timings: dict[int, list[float]] = {4: [], 16: []}
    for attempt in range(3):  # each size's best of three, taken in turn: noise only ever adds time
        for megabytes in timings:
            thread_id = f"t-{megabytes}-{attempt}"
            async with Host(streaming_agent(megabytes), store=store, clock=Clock(), new_id=counter()) as host:
                run_input = make_input({"threadId": thread_id, "runId": "r"})
                started = time.process_time()
                count = 0
                async for _ in host.run(run_input):
                    count += 1
                timings[megabytes].append(time.process_time() - started)
            assert count == megabytes * 1024 + 4  # RUN_STARTED, START, the deltas, END, RUN_FINISHED
            record = await store.load(thread_id)
            assert record is not None and len(record.messages[-1].content) == megabytes * 2**20
    small, large = min(timings[4]), min(timings[16])
    print(f"\n{type(store).__name__}: 4 MB in {small:.2f} s, 16 MB in {large:.2f} s")
    assert large / small < 6  # linear is about 4; quadratic, 16
