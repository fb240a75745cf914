"""The browser tests' harness: the pages bundled once, a Chromium steered step by step, the host's records.

:func:`bundle` builds the pages with esbuild (from ``tests/frontends/node_modules``, installed
by ``scripts/test`` from the lockfile); :class:`Browser` runs ``driver.mjs`` (playwright-core
driving ``/usr/bin/chromium``) and sends it one step at a time; :func:`host_get` reads the
host's own documents (``GET /threads/{id}``, ``GET /audit/{id}``). When node, the installed
packages or Chromium are missing, :class:`FrontendError` says which: these tests fail, they
never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "CHROMIUM",
    "HERE",
    "ROOT",
    "Browser",
    "FrontendError",
    "Host",
    "Runtime",
    "bundle",
    "free_port",
    "host_get",
    "node",
    "tool_log",
]

HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")

_INSTALL_HINT = "run `npm ci --prefix tests/frontends` from the repository root (scripts/test does)"
_STEP_TIMEOUT = 90.0
_STARTUP = 90.0  # seconds a server may take to listen (generous: CI machines are shared)
ROOT = HERE.parents[1]


class FrontendError(RuntimeError):
    """Node, the pinned packages, Chromium or the driver is missing or failed."""


def node() -> str:
    node = shutil.which("node")
    if node is None:
        raise FrontendError("node is not installed; the frontend tests need it")
    if not (HERE / "node_modules" / "playwright-core").is_dir():
        raise FrontendError(f"the frontend packages are not installed: {_INSTALL_HINT}")
    if not CHROMIUM.exists():
        raise FrontendError(f"no Chromium at {CHROMIUM}: install Debian's chromium package")
    return node


def bundle(out: Path, *pages: str) -> Path:
    """Bundle ``pages`` (default: all) into ``out`` with esbuild; ``out``."""
    completed = subprocess.run(
        [node(), str(HERE / "build.mjs"), str(out), *pages], capture_output=True, text=True, timeout=300
    )
    if completed.returncode != 0:
        raise FrontendError(f"esbuild failed: {completed.stderr or completed.stdout}")
    return out


class Browser:
    """``driver.mjs`` in a child process: :meth:`step` sends it one step and returns its reply."""

    origin: str = ""
    """Where the driver serves the pages (``http://127.0.0.1:PORT``), once told to ``serve``."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [node(), str(HERE / "driver.mjs")],
            cwd=HERE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def step(self, do: str, **fields: Any) -> dict[str, Any]:
        """Carry out one step (``open``, ``click``, ``fill``, ``wait``, ``reload``, ``read``); raise if it failed."""
        reply = self.try_step(do, **fields)
        if not reply["ok"]:
            raise FrontendError(f"browser step {do} {fields} failed: {reply['error']}\n{json.dumps(reply, indent=1)}")
        return reply

    def try_step(self, do: str, **fields: Any) -> dict[str, Any]:
        """:meth:`step`, returning a failed step's reply (``ok`` false, ``error``) instead of raising."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(json.dumps({"do": do, **fields}) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        if not line:
            self._process.wait(timeout=_STEP_TIMEOUT)
            stderr = self._process.stderr.read() if self._process.stderr else ""
            raise FrontendError(f"the browser driver exited with {self._process.returncode}: {stderr}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def posted(self) -> list[dict[str, Any]]:
        """The bodies of the POSTs the page sent so far (the inputs the host or runtime received)."""
        return [p["body"] for p in self.step("read")["posted"]]

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self.try_step("close")
                self._process.wait(timeout=30)
            except (OSError, ValueError, FrontendError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait(timeout=30)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def host_get(base: str, path: str) -> Any:
    """``GET base/path`` on the host (no ``Origin``: a client, not a page), decoded."""
    with urllib.request.urlopen(base.rstrip("/") + "/" + path, timeout=30) as response:
        return json.loads(response.read())


def tool_log(path: Path) -> list[Mapping[str, Any]]:
    """What the tool really did: one record per run of ``sendEmail``."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Host:
    """``agui serve tests.frontends.agents:agent --http`` on a fixed port and SQLite file, stopped by its PID.

    The port and the store stay the same across :meth:`kill` and :meth:`start`, so a page
    that stays open talks to the restarted host as to the old one.
    """

    def __init__(self, tmp: Path, origin: str, *options: str) -> None:
        self.origin = origin
        self.port = free_port()
        self.store = tmp / "frontends.sqlite3"
        self.tools = tmp / "tools.jsonl"
        self.options = options
        self._tmp = tmp
        self._process: subprocess.Popen[bytes] | None = None
        self.log = tmp / "serve-0.log"
        self.starts = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> Host:
        """Start the server and return once it listens."""
        self.starts += 1
        self.log = self._tmp / f"serve-{self.starts}.log"
        command = [
            sys.executable,
            "-m",
            "agui_core.app.cli",
            "serve",
            "tests.frontends.agents:agent",
            "--http",
            f"127.0.0.1:{self.port}",
            "--store",
            f"sqlite:{self.store}",
            "--allow-origin",
            self.origin,
            *self.options,
        ]
        env = {**os.environ, "AGUI_FRONTENDS_TOOL_LOG": str(self.tools)}
        with self.log.open("wb") as sink:
            self._process = subprocess.Popen(
                command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env
            )
        deadline = time.monotonic() + _STARTUP
        while "over http" not in self.log.read_text():
            if self._process.poll() is not None:
                raise AssertionError(f"agui serve exited with {self._process.returncode}: {self.log.read_text()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"agui serve did not listen within {_STARTUP} s: {self.log.read_text()}")
            time.sleep(0.05)
        return self

    def kill(self) -> None:
        """SIGKILL the server (no grace: a host that dies)."""
        if self._process is not None and self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGKILL)
            self._process.wait(timeout=_STARTUP)

    def view(self, thread_id: str) -> dict[str, Any]:
        """The thread's open interrupts and snapshots (``GET /threads/{id}``)."""
        document: dict[str, Any] = host_get(self.url, f"threads/{thread_id}")
        return document

    def __enter__(self) -> Host:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


class Runtime:
    """``runtime.mjs``: a CopilotKit runtime on loopback proxying to ``host_url``, stopped by its PID."""

    def __init__(self, host_url: str, origin: str) -> None:
        env = {**os.environ, "COPILOTKIT_TELEMETRY_DISABLED": "true"}
        self._process = subprocess.Popen(
            [node(), str(HERE / "runtime.mjs"), host_url, origin],
            cwd=HERE,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert self._process.stdout is not None
        for line in self._process.stdout:
            if line.startswith("{"):
                self.url: str = json.loads(line)["url"]
                return
        raise FrontendError(f"the CopilotKit runtime exited with {self._process.wait(timeout=_STARTUP)}")

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._process.poll() is None:
            os.kill(self._process.pid, signal.SIGKILL)
        self._process.wait(timeout=_STARTUP)
