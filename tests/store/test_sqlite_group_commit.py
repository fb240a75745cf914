"""Group commit in SqliteThreadStore: saves that arrive together share one transaction.

Each save in a batch is still its own compare-and-set: a save whose version lost gets its
``VersionConflict``, a save that fails gets its ``StoreError``, and the others commit. A batch
whose commit fails (or whose process dies before the commit) saves none of its records and
leaves the file as it was.

To make a batch, a plain connection holds the file's write lock while the saves arrive: the
first save's batch waits for the lock in the worker, the others queue behind it and go
together in the next batch once the lock is let go.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

from agui_core.machine.record import ThreadRecord
from agui_core.store import SqliteThreadStore, StoreError, VersionConflict
from agui_core.store.sqlite import _Worker
from tests.store.scenario import scenario_records

pytestmark = pytest.mark.anyio

THREADS = [f"t{n}" for n in range(8)]
RECORDS = {thread_id: scenario_records(thread_id) for thread_id in THREADS}
REPOSITORY = Path(__file__).resolve().parents[2]


def raw(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


async def saved_at_version_1(path: Path) -> None:
    async with SqliteThreadStore(path) as store:
        for thread_id in THREADS:
            await store.save(RECORDS[thread_id][0])


def versions(path: Path) -> dict[str, int]:
    db = raw(path)
    try:
        return dict(db.execute("SELECT thread_id, version FROM threads").fetchall())
    finally:
        db.close()


class Statements:
    """The statements the store's writing connection runs (its trace callback)."""

    def __init__(self, store: SqliteThreadStore) -> None:
        connection = store._connection
        assert connection is not None
        self.seen: list[str] = []
        connection.set_trace_callback(self.seen.append)

    def count(self, statement: str) -> int:
        return sum(1 for s in self.seen if s == statement)


async def in_one_batch(
    store: SqliteThreadStore, path: Path, records: list[ThreadRecord]
) -> dict[int, BaseException | None]:
    """Save ``records`` at once so that all but a first one (a version-2 save of t7) share a batch.

    Returns each record's outcome by its index: ``None`` (saved) or the exception it raised.
    """
    outcomes: dict[int, BaseException | None] = {}

    async def save(index: int, record: ThreadRecord) -> None:
        try:
            await store.save(record)
        except (VersionConflict, StoreError) as exc:
            outcomes[index] = exc
        else:
            outcomes[index] = None

    holder = raw(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(save, -1, RECORDS["t7"][1])  # its batch waits for the lock
            while store._saves.running is None:
                await anyio.lowlevel.checkpoint()
            for index, record in enumerate(records):
                group.start_soon(save, index, record)
            while len(store._saves.waiting) < len(records):
                await anyio.lowlevel.checkpoint()
            holder.execute("COMMIT")
    finally:
        holder.close()
    assert outcomes.pop(-1) is None
    return outcomes


async def test_saves_that_arrive_together_share_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_at_version_1(path)
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        await store.load("t0")  # opens the connection, to watch it
        statements = Statements(store)
        outcomes = await in_one_batch(store, path, [RECORDS[t][1] for t in THREADS[:7]])
        assert outcomes == dict.fromkeys(range(7))
        # Two batches: t7's, then the seven others together.
        assert statements.count("BEGIN IMMEDIATE") == 2 and statements.count("COMMIT") == 2
        for thread_id in THREADS:
            assert await store.load(thread_id) == RECORDS[thread_id][1]
    assert versions(path) == dict.fromkeys(THREADS, 2)


async def test_in_a_batch_the_save_whose_version_lost_gets_its_conflict_and_the_others_commit(
    tmp_path: Path,
) -> None:
    path = tmp_path / "threads.db"
    await saved_at_version_1(path)
    rival = attrs.evolve(RECORDS["t1"][1], agent_state={"host": "the other one"})
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        outcomes = await in_one_batch(
            store, path, [RECORDS["t0"][1], RECORDS["t1"][1], rival, RECORDS["t2"][1], RECORDS["t7"][1]]
        )
        # t1: the first of the two version-2 saves wins; t7 was saved by the batch before.
        assert outcomes[0] is None and outcomes[1] is None and outcomes[3] is None
        assert isinstance(outcomes[2], VersionConflict) and outcomes[2].found == 2
        assert isinstance(outcomes[4], VersionConflict) and outcomes[4].found == 2
        assert await store.load("t1") == RECORDS["t1"][1]
    assert versions(path) == {**dict.fromkeys(THREADS, 1), "t0": 2, "t1": 2, "t2": 2, "t7": 2}


async def refusing_t1(path: Path, change: str) -> None:
    """The file with every thread saved at version 1, and an operator's trigger that refuses
    ``change`` (``UPDATE ON threads``, say) for t1: its save fails inside the transaction."""
    await saved_at_version_1(path)
    db = raw(path)
    db.execute(
        f"CREATE TRIGGER refuse BEFORE {change} WHEN NEW.thread_id = 't1'"
        " BEGIN SELECT RAISE(ABORT, 'refused by the operator'); END"
    )
    db.close()


async def test_in_a_batch_a_save_that_fails_is_rolled_back_alone(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await refusing_t1(path, "UPDATE ON threads")
    unwritable = attrs.evolve(RECORDS["t3"][1], agent_state={"seen": {1, 2}})  # a set: no JSON form
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        outcomes = await in_one_batch(store, path, [RECORDS["t0"][1], RECORDS["t1"][1], unwritable, RECORDS["t2"][1]])
        assert outcomes[0] is None and outcomes[3] is None
        assert isinstance(outcomes[1], StoreError) and not isinstance(outcomes[1], VersionConflict)
        assert "cannot save thread 't1' version 2: refused by the operator" in str(outcomes[1])
        assert isinstance(outcomes[2], StoreError) and "cannot be written as JSON" in str(outcomes[2])
        # What the failed saves wrote before failing (messages, interrupts) is gone with them.
        assert await store.load("t1") == RECORDS["t1"][0]
        assert await store.load("t3") == RECORDS["t3"][0]
        assert await store.load("t0") == RECORDS["t0"][1]
    assert versions(path) == {**dict.fromkeys(THREADS, 1), "t0": 2, "t2": 2, "t7": 2}


async def test_a_save_alone_is_its_own_transaction_and_fails_whole(tmp_path: Path) -> None:
    # Alone in its batch, a save needs no savepoint: the transaction is its own. One that fails
    # after its first statements (the row's compare-and-set, its messages) leaves none of them.
    path = tmp_path / "threads.db"
    await refusing_t1(path, "INSERT ON interrupts")
    async with SqliteThreadStore(path) as store:
        await store.load("t0")  # opens the connection, to watch it
        statements = Statements(store)
        await store.save(RECORDS["t0"][1])
        with pytest.raises(StoreError, match="cannot save thread 't1' version 2: refused by the operator"):
            await store.save(RECORDS["t1"][1])
        await store.save(RECORDS["t2"][1])  # the connection goes on
        assert statements.count("SAVEPOINT save") == 0
        assert statements.count("BEGIN IMMEDIATE") == 3 and statements.count("COMMIT") == 2
        assert statements.count("ROLLBACK") == 1
        assert await store.load("t1") == RECORDS["t1"][0]
        assert await store.load("t2") == RECORDS["t2"][1]
    assert versions(path) == {**dict.fromkeys(THREADS, 1), "t0": 2, "t2": 2}
    db = raw(path)
    try:
        assert db.execute("SELECT count(*) FROM messages WHERE thread_id = 't1'").fetchone() == (0,)
    finally:
        db.close()


class FailingCommit:
    """The store's connection, but its COMMIT fails as a full disk would make it."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def execute(self, statement: str, *args: Any) -> Any:
        if statement == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self.connection.execute(statement, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.connection, name)


async def test_a_batch_whose_commit_fails_saves_nothing_and_every_save_says_so(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_at_version_1(path)
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        await store.load("t0")
        real = store._connection
        assert real is not None
        store._connection = FailingCommit(real)  # type: ignore[assignment]
        outcomes: dict[str, BaseException | None] = {}

        async def save(record: ThreadRecord) -> None:
            try:
                await store.save(record)
            except StoreError as exc:
                outcomes[record.thread_id] = exc
            else:
                outcomes[record.thread_id] = None

        async with anyio.create_task_group() as group:
            for thread_id in THREADS:
                group.start_soon(save, RECORDS[thread_id][1])
        assert set(outcomes) == set(THREADS)
        for thread_id, error in outcomes.items():
            assert isinstance(error, StoreError) and not isinstance(error, VersionConflict)
            assert f"cannot save thread {thread_id!r} version 2: database or disk is full" in str(error)
        assert versions(path) == dict.fromkeys(THREADS, 1)
        assert not real.in_transaction
        # Nothing is left half done: with the disk back, the same saves go through.
        store._connection = real
        for thread_id in THREADS:
            await store.save(RECORDS[thread_id][1])
            assert await store.load(thread_id) == RECORDS[thread_id][1]
    assert versions(path) == dict.fromkeys(THREADS, 2)


CRASH = """
import os, sys
import anyio
from agui_core.store import SqliteThreadStore
from tests.store.scenario import scenario_records

class DiesAtCommit:
    def __init__(self, connection):
        self.connection = connection
    def execute(self, statement, *args):
        if statement == "COMMIT":
            sys.stdout.write("dying\\n"); sys.stdout.flush()
            os._exit(17)  # the process dies with the batch written but not committed
        return self.connection.execute(statement, *args)
    def __getattr__(self, name):
        return getattr(self.connection, name)

async def main():
    store = SqliteThreadStore(sys.argv[1])
    await store.load("t0")
    store._connection = DiesAtCommit(store._connection)
    async with anyio.create_task_group() as group:
        for n in range(8):
            group.start_soon(store.save, scenario_records(f"t{n}")[1])

anyio.run(main)
"""


async def test_a_process_that_dies_in_the_middle_of_a_batch_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_at_version_1(path)
    result = subprocess.run(
        [sys.executable, "-c", CRASH, str(path)],
        capture_output=True,
        text=True,
        cwd=REPOSITORY,
        timeout=120,
    )
    assert result.returncode == 17 and result.stdout == "dying\n", result.stderr
    db = raw(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        db.close()
    assert versions(path) == dict.fromkeys(THREADS, 1)
    async with SqliteThreadStore(path) as store:
        for thread_id in THREADS:
            assert await store.load(thread_id) == RECORDS[thread_id][0]
            await store.save(RECORDS[thread_id][1])
    assert versions(path) == dict.fromkeys(THREADS, 2)


async def test_a_save_cancelled_while_it_waits_for_its_batch_is_never_written(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_at_version_1(path)
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        holder = raw(path)
        holder.execute("BEGIN IMMEDIATE")
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(store.save, RECORDS["t0"][1])  # its batch waits for the lock
                while store._saves.running is None:
                    await anyio.lowlevel.checkpoint()
                with anyio.CancelScope() as scope:
                    scope.cancel()
                    await store.save(RECORDS["t1"][1])
                with anyio.move_on_after(0) as late:
                    await store.save(RECORDS["t2"][1])
                assert late.cancelled_caught
                assert store._saves.waiting == []
                holder.execute("COMMIT")
        finally:
            holder.close()
        await store.save(RECORDS["t3"][1])
    assert versions(path) == {**dict.fromkeys(THREADS, 1), "t0": 2, "t3": 2}


class Interrupted(BaseException):
    """Raised where a cancellation would be, without cancelling the test's tasks."""


async def test_a_batch_that_never_reached_the_worker_goes_back_to_the_queue(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The call carrying a batch to the worker can be stopped on its way (cancelled at the
    # worker hand-off): the other saves of its batch must still be written, by the next batch.
    path = tmp_path / "threads.db"
    await saved_at_version_1(path)
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        await store.load("t0")
        real = _Worker.run
        stopped: list[int] = []

        async def stopped_once(worker: _Worker, function: Any, *args: Any) -> Any:
            if function == store._save_batch and not stopped and len(args[0]) > 1:
                stopped.append(len(args[0]))
                raise Interrupted  # stands for a failure on the way, before the worker has the batch
            return await real(worker, function, *args)

        monkeypatch.setattr(_Worker, "run", stopped_once)
        outcomes: dict[str, str] = {}

        async def save(record: ThreadRecord) -> None:
            try:
                await store.save(record)
            except Interrupted:
                outcomes[record.thread_id] = "interrupted"
            else:
                outcomes[record.thread_id] = "saved"

        holder = raw(path)
        holder.execute("BEGIN IMMEDIATE")
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(save, RECORDS["t7"][1])  # its batch (alone) waits for the lock
                while store._saves.running is None:
                    await anyio.lowlevel.checkpoint()
                for thread_id in THREADS[:4]:
                    group.start_soon(save, RECORDS[thread_id][1])
                while len(store._saves.waiting) < 4:
                    await anyio.lowlevel.checkpoint()
                holder.execute("COMMIT")
        finally:
            holder.close()
        # The save that carried the batch of four was interrupted and is not written; the
        # three others of its batch were, by the batch after it.
        assert stopped == [4]
        assert sorted(outcomes.values()) == ["interrupted"] + ["saved"] * 4
        (interrupted,) = [t for t, outcome in outcomes.items() if outcome == "interrupted"]
        assert store._saves.waiting == [] and store._saves.running is None
    assert versions(path) == {**dict.fromkeys(THREADS, 1), **{t: 2 for t in (*THREADS[:4], "t7") if t != interrupted}}
