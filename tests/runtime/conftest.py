"""Fixtures of the host tests: async tests under anyio on asyncio, and a store of each kind."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agui_core.store import MemoryThreadStore, SqliteThreadStore, ThreadStore

__all__: list[str] = []


@pytest.fixture
def anyio_backend() -> str:
    # The host is written against anyio but deployed on asyncio; that is the backend tested.
    return "asyncio"


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ThreadStore]:
    """Each store the host ships with: in memory, and a fresh SQLite file."""
    made: MemoryThreadStore | SqliteThreadStore
    made = MemoryThreadStore() if request.param == "memory" else SqliteThreadStore(tmp_path / "threads.db")
    async with made:
        yield made
