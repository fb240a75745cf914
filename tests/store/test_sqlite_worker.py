"""The worker threads of SqliteThreadStore: one per connection, handed each blocking call.

A call handed to a worker is waited for even if its caller is cancelled meanwhile, by anyio or
by asyncio (a batch the worker took ends with every call in it told its outcome, as
``_batched`` counts on); a caller already cancelled hands nothing over; an error in the worker
reaches the caller as raised; closing the store, or dropping it unclosed, ends its threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from agui_core.store import SqliteThreadStore, StoreError
from agui_core.store.sqlite import _Worker
from tests.store.scenario import scenario_records

pytestmark = pytest.mark.anyio

FIRST, SECOND = scenario_records("t0")[:2]


def _workers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("agui-sqlite-")}


@contextlib.asynccontextmanager
async def held_lock(tmp_path: Path) -> AsyncIterator[tuple[SqliteThreadStore, sqlite3.Connection]]:
    """A store holding t0 at version 1, and a plain connection holding the file's write lock
    (``BEGIN IMMEDIATE``): a save's batch waits for it in the worker until it is let go."""
    path = tmp_path / "threads.db"
    async with SqliteThreadStore(path) as store:
        await store.save(FIRST)
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        await store.load("t0")
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            yield store, holder
        finally:
            holder.close()


async def _until_in_the_worker(store: SqliteThreadStore) -> None:
    while store._saves.running is None:
        await anyio.lowlevel.checkpoint()
    await anyio.sleep(0.2)  # the batch is in the worker, blocked on the lock


async def test_a_save_whose_caller_is_cancelled_after_the_hand_off_is_written_before_the_caller_ends(
    tmp_path: Path,
) -> None:
    async with held_lock(tmp_path) as (store, holder):
        ended = anyio.Event()
        scope = anyio.CancelScope()

        async def save_then_note() -> None:
            try:
                with scope:
                    await store.save(SECOND)
            finally:
                ended.set()

        async with anyio.create_task_group() as group:
            group.start_soon(save_then_note)
            await _until_in_the_worker(store)
            scope.cancel()
            await anyio.sleep(0.2)
            assert not ended.is_set()  # cancelled, and still waiting for the worker
            holder.execute("COMMIT")
        assert ended.is_set()
        loaded = await store.load("t0")
        assert loaded is not None and loaded.version == SECOND.version


async def test_an_error_raised_in_the_worker_reaches_the_caller_and_the_worker_goes_on() -> None:
    worker = _Worker("agui-sqlite-test")
    boom = ValueError("boom")

    def fails() -> None:
        raise boom

    def stops() -> None:
        raise StopIteration

    try:
        with pytest.raises(ValueError) as raised:
            await worker.run(fails)
        assert raised.value is boom
        # A future cannot hold StopIteration: it comes wrapped, not as a call never answered.
        with pytest.raises(RuntimeError) as wrapped:
            await worker.run(stops)
        assert isinstance(wrapped.value.__cause__, StopIteration)
        assert await worker.run(sum, [1, 2, 3]) == 6
    finally:
        worker.stop()


async def test_a_call_made_in_a_cancelled_scope_is_never_handed_over(tmp_path: Path) -> None:
    async with SqliteThreadStore(tmp_path / "threads.db") as store:
        with anyio.CancelScope() as scope:
            scope.cancel()
            await store.save(FIRST)
        assert scope.cancelled_caught
        assert await store.load("t0") is None


async def test_a_caller_cancelled_through_asyncio_still_waits_for_its_save(tmp_path: Path) -> None:
    # task.cancel() (asyncio.wait_for's way) reaches past anyio's shield: the call handed over
    # must still end before its caller does, or the batch's next leader would run alongside it.
    async with held_lock(tmp_path) as (store, holder):
        task = asyncio.get_running_loop().create_task(store.save(SECOND))
        await _until_in_the_worker(store)
        task.cancel()
        await anyio.sleep(0.2)
        assert not task.done()
        holder.execute("COMMIT")
        with pytest.raises(asyncio.CancelledError):
            await task
        loaded = await store.load("t0")
        assert loaded is not None and loaded.version == SECOND.version


async def _store_and_its_threads(tmp_path: Path) -> tuple[SqliteThreadStore, set[threading.Thread]]:
    """A store that has saved and loaded, and the two worker threads that did it."""
    before = _workers()
    store = SqliteThreadStore(tmp_path / "threads.db")
    await store.save(FIRST)
    assert await store.load("t0") is not None
    mine = _workers() - before
    assert {t.name for t in mine} == {"agui-sqlite-writer", "agui-sqlite-reader"}
    return store, mine


def _ended(threads: set[threading.Thread]) -> bool:
    for thread in threads:
        thread.join(timeout=10)
    return not any(thread.is_alive() for thread in threads)


async def test_closing_the_store_ends_its_worker_threads(tmp_path: Path) -> None:
    store, mine = await _store_and_its_threads(tmp_path)
    await store.aclose()
    assert _ended(mine)
    with pytest.raises(StoreError, match="closed"):
        await store.load("t0")


async def test_a_store_dropped_unclosed_ends_its_worker_threads(tmp_path: Path) -> None:
    store, mine = await _store_and_its_threads(tmp_path)
    del store
    gc.collect()
    assert _ended(mine)
