"""The adapter tests run on asyncio (anyio's pytest plugin): LangGraph runs on asyncio."""

from __future__ import annotations

import pytest

__all__: list[str] = []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
