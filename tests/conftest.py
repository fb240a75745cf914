"""Settings shared by the whole test suite."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest
from hypothesis import settings

from tests.postgres import drop_schema, new_schema, require_server, with_schema

__all__: list[str] = []

_T = TypeVar("_T")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        help="run the cost tests in their long form (100 resume cycles, not 40); or set AGUI_LONG=1",
    )


@pytest.fixture
def long_form(request: pytest.FixtureRequest) -> bool:
    """Whether the cost tests run in their long form (``--long`` or ``AGUI_LONG=1``); CI runs the short one."""
    return bool(request.config.getoption("--long")) or os.environ.get("AGUI_LONG") == "1"


# No per-example deadline: a loaded CI machine must not turn a slow example into a failure
# (the suite never asserts absolute timings; the cost tests compare ratios within one run).
# Tests choose their own max_examples.
settings.register_profile("agui", deadline=None, print_blob=True)
settings.load_profile("agui")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """The tests' PostgreSQL server with a schema of this test's own (``?schema=``), dropped after."""
    dsn = _run_apart(require_server)
    schema = new_schema()
    yield with_schema(dsn, schema)
    _run_apart(lambda: drop_schema(schema))


def _run_apart(function: Callable[[], Awaitable[_T]]) -> _T:
    """Run ``function`` on an event loop of its own, in a thread: a fixture may be set up inside
    a running loop (an async fixture asking for it)."""

    async def call() -> _T:
        return await function()

    with ThreadPoolExecutor(1) as worker:
        return worker.submit(asyncio.run, call()).result()
