"""What a thread costs as it lives on, through the Host, on both stores (issue 11).

- Resume cycles over a large conversation: the record and the file stay flat after warm-up
  (compared late against early, in one run). Before, every completed resume kept the whole
  conversation and every save rewrote it: 45 cycles over 600 KB made a 32.6 MB record.
- One long streamed message arrives whole, delta by delta.

The time these cost is measured by the ``host_growth`` benchmark (``python -m benchmarks
--only host_growth``), which reports late cycles against early ones and 8 MB against 2 MB of
streamed text; sizes do not depend on the machine's speed, so they are checked here.

The cycles run short in CI (40 cycles); ``pytest --long`` (or ``AGUI_LONG=1``) runs 100.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_core.machine.record import record_to_dict
from agui_core.runtime import Host
from agui_core.store import SqliteThreadStore, ThreadStore
from benchmarks.scenarios.host_growth import WARM_UP, cycle_input, cycling_agent, note, streaming_agent
from tests.runtime.conversation import Clock, counter, make_input

pytestmark = pytest.mark.anyio


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


async def test_resume_cycles_keep_record_size_and_file_size_flat(store: ThreadStore, long_form: bool) -> None:
    cycles = 100 if long_form else 40
    record_sizes: list[int] = []
    overheads: list[int] = []
    file_sizes: list[tuple[int, int]] = []
    async with Host(cycling_agent(), store=store, tools=[note], clock=Clock(), new_id=counter()) as host:
        for n in range(cycles + 1):
            events = [e async for e in host.run(cycle_input(n))]
            finished = events[-1]
            assert finished.type == "RUN_FINISHED" and finished.outcome.type == "interrupt", finished
            record = await store.load("t")
            assert record is not None
            record_json = record_to_dict(record)
            record_sizes.append(len(orjson.dumps(record_json)))
            overheads.append(overhead(record_json))
            file_sizes.append(file_bytes(store))
    assert len(await store.audit("t")) == cycles  # every answer is in the audit trail
    (db_early, wal_early), (db_late, wal_late) = file_sizes[WARM_UP], file_sizes[-1]
    print(
        f"\n{type(store).__name__}: {cycles} cycles; record {record_sizes[WARM_UP]:,} -> {record_sizes[-1]:,} bytes "
        f"(beyond messages, audit and journal: {overheads[WARM_UP]:,} -> {overheads[-1]:,}); "
        f"database {db_early:,} -> {db_late:,} bytes, log file {wal_early:,} -> {wal_late:,}"
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


async def test_a_long_streamed_message_is_recorded_whole(store: ThreadStore) -> None:
    megabytes = 8
    async with Host(streaming_agent(megabytes), store=store, clock=Clock(), new_id=counter()) as host:
        count = 0
        async for _ in host.run(make_input({"threadId": "t", "runId": "r"})):
            count += 1
    assert count == megabytes * 1024 + 4  # RUN_STARTED, START, the deltas, END, RUN_FINISHED
    record = await store.load("t")
    assert record is not None and record.messages[-1].content == "y" * (megabytes * 2**20)
