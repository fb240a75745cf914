"""Settings shared by the whole test suite."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

__all__: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long",
        action="store_true",
        help="run the cost tests in their long form (100 resume cycles, 16 MB against 4 MB); or set AGUI_LONG=1",
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
