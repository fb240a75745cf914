"""The SQLite store's files hold conversations: it creates them readable by their owner only."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from agui_core.store import SqliteThreadStore
from tests.store.scenario import scenario_records

pytestmark = pytest.mark.anyio


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """The usual umask (022), under which SQLite alone would create files readable by all."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("permissive_umask")
async def test_the_database_and_its_wal_and_shm_files_are_created_0600(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite3"
    async with SqliteThreadStore(path) as store:
        await store.save(scenario_records("thread-1")[0])
        # While the store is open, the write-ahead log and its index exist next to the file.
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}


@pytest.mark.usefixtures("permissive_umask")
async def test_a_file_that_already_exists_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite3"
    path.touch(mode=0o640)
    async with SqliteThreadStore(path) as store:
        await store.save(scenario_records("thread-1")[0])
        assert mode(path) == 0o640
        assert await store.load("thread-1") is not None
