"""Fixtures of the browser tests: the pages bundled once per session, a browser and its page server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.frontends.browser import Browser, bundle

__all__: list[str] = []


@pytest.fixture(scope="session")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test page, bundled by esbuild into one directory."""
    return bundle(tmp_path_factory.mktemp("pages"))


@pytest.fixture
def browser(pages: Path) -> Iterator[Browser]:
    """A Chromium serving :func:`pages` from loopback (``browser.origin``)."""
    with Browser() as opened:
        opened.origin = opened.step("serve", bundle=str(pages))["origin"]
        yield opened
