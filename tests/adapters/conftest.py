"""The adapter tests run on asyncio (anyio's pytest plugin): LangGraph runs on asyncio."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest

from tests.adapters import graphs

__all__: list[str] = []


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def fresh_log() -> Iterator[None]:
    """Each test starts with an empty ``graphs.RAN`` and the form's usual time to live."""
    graphs.RAN.clear()
    graphs.FORM_TTL[0] = timedelta(minutes=10)
    yield
    graphs.RAN.clear()
    graphs.FORM_TTL[0] = timedelta(minutes=10)
