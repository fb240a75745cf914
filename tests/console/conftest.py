"""Fixtures of the approval console's tests: a real ``agui serve --http`` and Debian's Chromium.

The host is ``agui serve tests.console.agents:agent --http`` in a subprocess, over a SQLite
file, with a token authenticator for its principals (``ann``, ``bob`` and ``dave``). The browser is the
``chromium`` on the PATH, driven by Playwright (no browser is ever downloaded); a machine
without it fails these tests, as it fails the interop tests without Node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"ann": "ann-console-token-0001", "bob": "bob-console-token-0002", "dave": "dave-console-token-0003"}
START_TIMEOUT = 30.0
EXPECT_TIMEOUT = 15_000
"""Milliseconds a page has to show what a test expects: generous, for a loaded machine."""


@attrs.frozen
class Served:
    """The host under test: where it answers, and its log so far."""

    url: str
    log: list[str]

    @property
    def console(self) -> str:
        return self.url + "/console/"

    def run(
        self, thread_id: str, scenario: str, *, who: str = "ann", text: str = "Please help."
    ) -> list[dict[str, Any]]:
        """Start ``thread_id`` on ``scenario`` as ``who``, as another client would; its events."""
        body = {
            "threadId": thread_id,
            "runId": f"{thread_id}-start",
            "messages": [{"id": f"{thread_id}-ask", "role": "user", "content": text}],
            "tools": [],
            "context": [],
            "forwardedProps": {"scenario": scenario},
        }
        response = httpx.post(self.url + "/", json=body, headers=self.auth(who), timeout=30)
        response.raise_for_status()
        return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]

    def get(self, path: str, *, who: str = "ann") -> httpx.Response:
        return httpx.get(self.url + path, headers=self.auth(who), timeout=30)

    @staticmethod
    def auth(who: str) -> dict[str, str]:
        return {"authorization": f"Bearer {TOKENS[who]}"}


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("console")
    tokens = folder / "tokens"
    tokens.write_text("".join(f"{who} {token}\n" for who, token in TOKENS.items()))
    tokens.chmod(0o600)
    yield from serve(folder, "--auth-tokens", str(tokens))


@pytest.fixture(scope="package")
def anonymous(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The same agent on a host without an authenticator: everyone is ``anonymous`` (loopback only)."""
    yield from serve(tmp_path_factory.mktemp("anonymous"))


def serve(folder: Path, *options: str, target: str = "tests.console.agents:agent") -> Iterator[Served]:
    """``agui serve TARGET --http`` on a free port over a SQLite file in ``folder``, until the end."""
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", target,
        "--http", "127.0.0.1:0", "--store", f"sqlite:{folder / 'threads.sqlite3'}", *options,
    ]  # fmt: skip
    process = subprocess.Popen(
        command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    log: list[str] = []
    found = threading.Event()

    def read_log() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            log.append(line)
            if "the approval console: " in line:
                found.set()

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        assert found.wait(START_TIMEOUT), "agui serve did not announce the console:\n" + "".join(log)
        match = re.search(r"the approval console: (http://127\.0\.0\.1:\d+)/console/", "".join(log))
        assert match is not None, "".join(log)
        yield Served(url=match.group(1), log=log)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=5)


def chromium_path() -> str:
    """Debian's chromium: these tests fail without it (``apt-get install chromium``)."""
    found = os.environ.get("AGUI_CHROMIUM") or shutil.which("chromium")
    assert found, "the console tests need Chromium: apt-get install chromium (or set AGUI_CHROMIUM)"
    return found


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        try:
            yield launched
        finally:
            launched.close()
