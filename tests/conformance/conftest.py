"""Fixtures of the conformance tests: async tests run under anyio, on the asyncio backend."""

from __future__ import annotations

import pytest

__all__: list[str] = []


@pytest.fixture
def anyio_backend() -> str:
    # The WebSocket transport is built on websockets' asyncio implementation.
    return "asyncio"
