"""SqliteThreadStore across real processes: racing saves on one file, and a SIGKILL after a save.

The processes run ``tests/store/sqlite_worker.py``; see its docstring for what each does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agui_core.machine.record import record_to_dict
from agui_core.machine.transitions import ThreadState
from agui_core.store import SqliteThreadStore
from tests.store.scenario import scenario_records

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 30


def worker(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.store.sqlite_worker", *args]


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(worker(*args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(process: subprocess.Popen[bytes]) -> list[object]:
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err.decode()
    return [orjson.loads(line) for line in out.splitlines()]


@pytest.mark.anyio
async def test_two_processes_racing_on_one_resume_let_exactly_one_through(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    async with SqliteThreadStore(db) as store:
        for round_ in range(ROUNDS):
            for record in scenario_records(f"race-{round_}")[:2]:
                await store.save(record)

    # Each round, both processes load the same interrupted thread, meet at a barrier, then save
    # the resumed record: both claim version 3 at the same moment.
    a = start("race", str(db), str(barrier), "a", "b", str(ROUNDS))
    b = start("race", str(db), str(barrier), "b", "a", str(ROUNDS))
    results = {"a": finish(a), "b": finish(b)}

    for round_ in range(ROUNDS):
        lines = {name: lines[round_] for name, lines in results.items()}
        assert all(line["round"] == round_ for line in lines.values())  # type: ignore[index]
        winners = [name for name, line in lines.items() if line["result"] == "won"]  # type: ignore[index]
        assert len(winners) == 1, (round_, lines)
        (loser,) = set(lines) - set(winners)
        assert lines[loser] == {"round": round_, "result": "conflict", "expected": 2, "found": 3}
        async with SqliteThreadStore(db) as store:
            stored = await store.load(f"race-{round_}")
        assert stored is not None and stored.active_run is not None
        assert (stored.version, stored.state) == (3, ThreadState.RESUMED)
        assert stored.active_run.run_id == f"{winners[0]}-run-{round_}"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("upto", "state"),
    # Interrupted (the save before RUN_FINISHED announces it), a tool about to run, idle.
    [(2, ThreadState.INTERRUPTED), (4, ThreadState.RESUMED), (8, ThreadState.IDLE)],
)
async def test_a_save_that_returned_survives_a_sigkill(tmp_path: Path, upto: int, state: ThreadState) -> None:
    db = tmp_path / "threads.db"
    process = start("save-and-hang", str(db), "thread-1", str(upto))
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line, process.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        process.stdout.close()  # type: ignore[union-attr]
        process.stderr.close()  # type: ignore[union-attr]
    assert process.returncode == -signal.SIGKILL
    saved = orjson.loads(line)
    assert saved == record_to_dict(scenario_records("thread-1")[upto - 1])
    assert saved["state"] == state.value
    # The commits live only in the write-ahead log: the killed process never checkpointed.
    assert Path(f"{db}-wal").stat().st_size > 0

    (loaded,) = finish(start("load", str(db), "thread-1"))
    assert loaded == saved
