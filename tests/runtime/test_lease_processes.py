"""Two ``agui serve`` processes on one store (a SQLite file, a PostgreSQL schema): one is SIGKILLed
mid-run, the other takes over.

The agent (``tests/runtime/lease_agent.py``) gates a tool whose side effect is a line in a file.
Host A carries the approved run: the tool runs, then the agent waits (A is started with
``$AGUI_TEST_HANG``). A is killed with ``kill -9``. Host B, on the same file, refuses the
thread while A's lease lasts (``THREAD_BUSY``), then serves it: within one lease of the kill
(plus a margin for the polling and the processes, never a speed claim), with the tool's
recorded result and without running the tool a second time.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson
import pytest
from websockets.asyncio.client import connect

from agui_core.protocol.codec import encode_input
from tests.runtime.conversation import make_input

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LEASE = 2.0
RENEW = 0.25
MARGIN = 5.0
"""What the bound on the takeover allows beyond the lease: polling, process start, a slow machine."""
LIMIT = 60.0


class Server:
    """An ``agui serve`` process on ``db``, its WebSocket port and its log."""

    def __init__(self, process: anyio.abc.Process, port: int, log: bytearray) -> None:
        self.process = process
        self.port = port
        self.log = log

    async def run(self, doc: dict[str, Any]) -> list[dict[str, Any]]:
        """Send one input and return its stream, up to its RUN_FINISHED or RUN_ERROR."""
        async with connect(f"ws://127.0.0.1:{self.port}") as ws:
            await ws.send(encode_input(make_input(doc)).decode())
            frames = [orjson.loads(await ws.recv())]
            while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                frames.append(orjson.loads(await ws.recv()))
        return frames


@asynccontextmanager
async def serving(group: anyio.abc.TaskGroup, store: str, effects: Path, *, hang: bool) -> AsyncIterator[Server]:
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.runtime.lease_agent:served",
        "--ws", "127.0.0.1:0", "--store", store,
        "--lease", str(LEASE), "--lease-renew", str(RENEW), "--run-timeout", "120",
    ]  # fmt: skip
    env = {**os.environ, "AGUI_TEST_EFFECTS": str(effects)}
    if hang:
        env["AGUI_TEST_HANG"] = "1"
    process = await anyio.open_process(
        command, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    async with process:
        assert process.stderr is not None
        log = bytearray()
        while not (found := re.search(rb"ws://127\.0\.0\.1:(\d+)", log)):
            chunk = await process.stderr.receive()
            log += chunk

        async def drain() -> None:  # a full pipe would stop the server; this ends when it exits
            assert process.stderr is not None
            async for chunk in process.stderr:
                log.extend(chunk)

        group.start_soon(drain)
        try:
            yield Server(process, int(found.group(1)), log)
        finally:
            if process.returncode is None:
                process.terminate()
            await process.wait()


def lines(effects: Path) -> list[str]:
    return effects.read_text().splitlines() if effects.exists() else []


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_a_host_killed_mid_run_hands_the_thread_over_within_one_lease(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    effects = tmp_path / "effects.txt"
    store = f"sqlite:{tmp_path / 'threads.sqlite3'}" if kind == "sqlite" else request.getfixturevalue("postgres_url")
    with anyio.fail_after(LIMIT):
        async with (
            anyio.create_task_group() as group,
            serving(group, store, effects, hang=True) as a,
            serving(group, store, effects, hang=False) as b,
        ):
            first = await a.run({"threadId": "t", "runId": "run-1"})
            assert first[-1]["outcome"]["type"] == "interrupt", a.log.decode()
            (interrupt,) = first[-1]["outcome"]["interrupts"]
            approval = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]

            # A carries the approved run: the tool runs, then the agent waits. Its client
            # leaves (the run goes on), and A is killed.
            async with connect(f"ws://127.0.0.1:{a.port}") as ws:
                resume = make_input({"threadId": "t", "runId": "run-2", "resume": approval})
                await ws.send(encode_input(resume).decode())
                frames = [orjson.loads(await ws.recv())]
                while frames[-1]["type"] not in ("TOOL_CALL_RESULT", "RUN_FINISHED", "RUN_ERROR"):
                    frames.append(orjson.loads(await ws.recv()))
            assert [f["type"] for f in frames] == ["RUN_STARTED", "TOOL_CALL_RESULT"], frames
            assert lines(effects) == ["t"]
            a.process.send_signal(signal.SIGKILL)
            killed = time.monotonic()
            assert await a.process.wait() == -signal.SIGKILL

            # B: busy while A's lease lasts, then the thread is B's.
            retry = {"threadId": "t", "runId": "run-3", "resume": approval}
            answers = [await b.run(retry)]
            while answers[-1][-1]["type"] == "RUN_ERROR" and time.monotonic() - killed < LEASE + MARGIN:
                await anyio.sleep(0.05)
                answers.append(await b.run(retry))
            served_after = time.monotonic() - killed

    refusals, served = answers[:-1], answers[-1]
    assert refusals, "the first retry came while A's lease still held the thread"
    assert all(r == [{"type": "RUN_ERROR", "message": r[0]["message"], "code": "THREAD_BUSY"}] for r in refusals)
    assert served_after <= LEASE + MARGIN, f"served {served_after:.1f} s after the kill: {served}"
    assert [e["type"] for e in served] == ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"], b.log.decode()
    assert served[1]["content"] == "recorded t"  # the result A recorded, sent again
    assert served[-1]["outcome"] == {"type": "success"} and served[-1]["result"] == {"order": "executed"}
    assert lines(effects) == ["t"]  # the approved tool ran exactly once
    assert b"closing run 'run-2' of thread 't'" in b.log
