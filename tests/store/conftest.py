"""Fixtures of the store tests: async tests run under anyio, on the asyncio backend."""

from __future__ import annotations

import pytest

__all__: list[str] = []


@pytest.fixture
def anyio_backend() -> str:
    # The host runs on asyncio; the stores must work there (worker threads that hand back to the loop).
    return "asyncio"
