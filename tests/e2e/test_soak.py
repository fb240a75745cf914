"""Soak: many clients cycling interrupt -> resume while they drop connections and the host is killed.

A real ``agui serve`` over SQLite serves :mod:`tests.e2e.fleet_agent`. Each worker owns one
thread and runs cycles on it: a plain input whose run proposes ``act(n)`` and interrupts,
then the resume that approves it. Some resumes are sent and their connection dropped at once
(the client comes back and sends the same resume again: a replay, or THREAD_BUSY while the
run still goes on). Part-way through, the host is killed with SIGKILL and started again on the
same file and port; its leases expire, the runs it left are closed, and the clients retry.

At the end: every proposal ran exactly once (the agent's side-effect log), every interrupt was
answered exactly once (the audit trail), nothing is left open; and on the restarted host,
memory (RSS) stays flat after warm-up and the database grows linearly with the conversation
(bytes per cycle late in the run no more than a small factor of early), not with the cycles'
history. Figures are printed.

CI runs the short form (12 workers x 15 cycles). The long form: ``AGUI_SOAK_CYCLES=400
AGUI_SOAK_WORKERS=32 .venv/bin/python -m pytest tests/e2e/test_soak.py -s``.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from agui_core.store import SqliteThreadStore

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
WORKERS = int(os.environ.get("AGUI_SOAK_WORKERS", "12"))
CYCLES = int(os.environ.get("AGUI_SOAK_CYCLES", "15"))
LEASE = 1.0  # seconds: how long a killed host's runs hold their threads
LIMIT = 120.0 + 0.5 * WORKERS * CYCLES  # seconds for the whole test: a hang fails, it does not block


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def store_bytes(path: Path) -> int:
    """The database's logical size (pages in use, the write-ahead log's included), read-only."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)) as db:
        pages = db.execute("PRAGMA page_count").fetchone()[0] - db.execute("PRAGMA freelist_count").fetchone()[0]
        return int(pages) * int(db.execute("PRAGMA page_size").fetchone()[0])


class Fleet:
    """The host process of the moment, and what the test measures of it."""

    def __init__(self, port: int, store: Path, log: Path, stderr: Path) -> None:
        self.port = port
        self.url = f"ws://127.0.0.1:{port}"
        self.store = store
        self.stderr = stderr
        self.env = {**os.environ, "AGUI_FLEET_LOG": str(log)}
        self.process: subprocess.Popen[bytes] | None = None
        self.completed = 0
        self.outcomes: dict[int, str] = {}  # n -> what became of act(n), as the resumed run said
        self.samples: list[tuple[int, int, int]] = []  # (cycles completed, store bytes, host RSS)

    def start(self) -> None:
        command = [
            sys.executable, "-m", "agui_core.app.cli", "serve", "tests.e2e.fleet_agent:agent",
            "--ws", f"127.0.0.1:{self.port}", "--store", f"sqlite:{self.store}",
            "--lease", str(LEASE), "--lease-renew", str(LEASE / 5), "--log-level", "WARNING",
        ]  # fmt: skip
        with self.stderr.open("ab") as err:
            self.process = subprocess.Popen(command, cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stderr=err)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return -9


@asynccontextmanager
async def session(fleet: Fleet) -> AsyncIterator[ClientConnection]:
    """A connection to whichever host is up, retrying while there is none."""
    while True:
        try:
            websocket = await connect(fleet.url, open_timeout=5, ping_interval=None, close_timeout=1)
        except (OSError, InvalidHandshake, TimeoutError):
            await anyio.sleep(0.1)
            continue
        break
    try:
        yield websocket
    finally:
        await websocket.close()


async def exchange(fleet: Fleet, frame: dict[str, Any], *, drop: bool = False) -> dict[str, Any] | None:
    """Send ``frame`` and return the run's last event; ``None`` when the connection broke
    (or was dropped on purpose right after sending)."""
    try:
        async with session(fleet) as websocket:
            await websocket.send(orjson.dumps(frame).decode())
            if drop:
                return None
            while True:
                event = orjson.loads(await websocket.recv())
                if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                    return dict(event)
    except (ConnectionClosed, OSError, TimeoutError):
        return None


async def until_finished(fleet: Fleet, frame: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """Send ``frame`` (the same input each time) until its run's RUN_FINISHED is seen."""
    drop = rng.random() < 0.25 and "resume" in frame
    while True:
        last = await exchange(fleet, frame, drop=drop)
        drop = False
        if last is not None and last["type"] == "RUN_FINISHED":
            return last
        if last is not None:
            # A killed host's run is failed once its lease expires (AGENT_ERROR), and a live
            # one answers THREAD_BUSY: the same input again, a little later, is the cure.
            assert last.get("code") in ("THREAD_BUSY", "AGENT_ERROR"), last
        await anyio.sleep(0.05 + rng.random() * 0.1)


async def worker(fleet: Fleet, w: int) -> None:
    rng = random.Random(w)
    thread = f"soak-{w}"
    for cycle in range(CYCLES):
        n = w * 100_000 + cycle
        base = {"threadId": thread, "tools": [], "context": [], "forwardedProps": {"n": n, "pause": 0.01}}
        start = {
            **base,
            "runId": f"{thread}-{cycle}-a",
            "messages": [{"id": f"u-{n}", "role": "user", "content": "go"}],
        }
        interrupted = await until_finished(fleet, start, rng)
        assert interrupted["outcome"]["type"] == "interrupt", interrupted
        (interrupt,) = interrupted["outcome"]["interrupts"]
        answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
        resume = {**base, "runId": f"{thread}-{cycle}-b", "messages": [], "resume": [answer]}
        finished = await until_finished(fleet, resume, rng)
        assert finished["outcome"]["type"] == "success", finished
        (status,) = finished["result"].values()
        assert set(finished["result"]) == {interrupt["toolCallId"]}, finished
        # "unknown": the host was killed while act ran; it is never run again (at most once).
        assert status in ("executed", "unknown"), finished
        fleet.outcomes[n] = status
        fleet.completed += 1


async def test_cycles_survive_disconnects_and_a_killed_host_exactly_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, store = tmp_path / "acted.log", tmp_path / "soak.sqlite3"
    fleet = Fleet(free_port(), store, log, tmp_path / "host.log")
    total = WORKERS * CYCLES
    fleet.start()
    restarted_at: list[float] = []

    async def chaos() -> None:
        while fleet.completed < total * 0.3:
            await anyio.sleep(0.02)
        fleet.kill()
        await anyio.sleep(0.3)
        fleet.start()
        restarted_at.append(time.monotonic())
        assert fleet.process is not None
        while fleet.completed < total:
            fleet.samples.append((fleet.completed, store_bytes(store), rss_bytes(fleet.process.pid)))
            await anyio.sleep(0.25)

    started = time.monotonic()
    try:
        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as group:
                group.start_soon(chaos)
                async with anyio.create_task_group() as workers:
                    for w in range(WORKERS):
                        workers.start_soon(worker, fleet, w)
    finally:
        status = fleet.stop() if fleet.process is not None and fleet.process.poll() is None else None
    seconds = time.monotonic() - started
    assert status == 0, (tmp_path / "host.log").read_text()[-4000:]

    # No tool ran twice, across the kill; every one reported executed ran exactly once.
    acted = Counter(int(line) for line in log.read_text().split())
    expected = {w * 100_000 + c for w in range(WORKERS) for c in range(CYCLES)}
    assert set(fleet.outcomes) == expected and set(acted) <= expected
    assert [n for n, times in acted.items() if times > 1] == []
    executed = {n for n, status in fleet.outcomes.items() if status == "executed"}
    assert executed <= set(acted)
    unknown = len(expected) - len(executed)
    assert unknown <= 1 + WORKERS // 4  # only a call cut by the kill itself can be unknown
    # Every interrupt was answered exactly once, and nothing is left open.
    async with SqliteThreadStore(store) as threads:
        for w in range(WORKERS):
            record = await threads.load(f"soak-{w}")
            assert record is not None and record.open_interrupts == () and record.active_run is None
            trail = await threads.audit(f"soak-{w}")
            assert [line.status for line in trail] == ["resolved"] * CYCLES
            assert len({line.interrupt.id for line in trail}) == CYCLES

    # On the restarted host: flat memory after warm-up, and linear store growth.
    samples = [s for s in fleet.samples if s[0] > 0]
    assert len(samples) >= 4, fleet.samples
    quarter = len(samples) // 4
    early, late = samples[quarter], samples[-1]
    first = samples[0]
    early_rate = (early[1] - first[1]) / max(1, early[0] - first[0])
    late_rate = (late[1] - early[1]) / max(1, late[0] - early[0])
    assert late[2] <= early[2] * 1.5 + 32 * 1024 * 1024, (early, late)
    assert late_rate <= 3 * max(early_rate, 4_096), (early_rate, late_rate)
    with capsys.disabled():
        print(
            f"\n[soak] {WORKERS} workers x {CYCLES} cycles = {total} cycles in {seconds:.1f} s with one SIGKILL; "
            f"no tool ran twice ({unknown} cut by the kill, reported unknown); "
            f"host RSS {early[2] / 2**20:.1f} MiB after warm-up, {late[2] / 2**20:.1f} MiB at "
            f"the end; store {store_bytes(store) / 2**20:.2f} MiB, growing {early_rate / 1024:.1f} KiB/cycle early "
            f"and {late_rate / 1024:.1f} KiB/cycle late"
        )
