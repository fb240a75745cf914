"""Several ``agui serve`` processes on one PostgreSQL database, clients spread over them at random.

Three real host processes (``agui serve tests.e2e.fleet_agent:agent --ws 127.0.0.1:0 --store
postgresql://...``) share one schema. Each thread's first run goes to a host picked at random;
then the same resume of its interrupt is sent through every host at once. The tool's side
effect is one line in a file the hosts share, so a tool that ran twice would show: every
approved ``act`` must appear exactly once, round after round, and every stream must end with
the tool's result (carried out or replayed) or ``THREAD_BUSY``, nothing else.

A host that loses its database connection in the middle of a run (the server terminates it
while the host's save waits on the thread's row) fails the run with ``RUN_ERROR``, and the
thread is then served by another host without the tool running again.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import orjson
import pytest
from agui_transports.client import connect_websocket
from websockets.asyncio.client import connect

from agui_core.machine.client import approve
from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import RunAgentInput
from tests.postgres import admin_connection

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
HOSTS = 3
ROUNDS = 4
THREADS = 6  # per round
LIMIT = 120.0


@asynccontextmanager
async def fleet_host(store: str, effects: Path) -> AsyncIterator[tuple[str, anyio.abc.Process, bytearray]]:
    """``agui serve`` of the fleet agent over ``store``: its URL, the process and its log."""
    log = bytearray()

    async def drain(stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            log.extend(chunk)

    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.e2e.fleet_agent:agent",
        "--ws", "127.0.0.1:0", "--store", store, "--grace", "2",
    ]  # fmt: skip
    env = {**os.environ, "AGUI_FLEET_LOG": str(effects)}
    process = await anyio.open_process(
        command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    async with process, anyio.create_task_group() as group:
        assert process.stderr is not None
        group.start_soon(drain, process.stderr)
        try:
            with anyio.fail_after(30):
                while not (found := re.search(rb"ws://127\.0\.0\.1:(\d+)", log)):
                    assert process.returncode is None, log.decode(errors="replace")
                    await anyio.sleep(0.02)
            yield f"ws://127.0.0.1:{int(found.group(1))}", process, log
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(15):
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
                    await process.wait()
            if process.returncode is None:
                process.kill()
            group.cancel_scope.cancel()


@asynccontextmanager
async def fleet(postgres_url: str, effects: Path, count: int = HOSTS) -> AsyncIterator[list[str]]:
    async with AsyncExitStack() as stack:
        urls = []
        for _ in range(count):
            url, _, _ = await stack.enter_async_context(fleet_host(postgres_url, effects))
            urls.append(url)
        yield urls


async def send_raw(url: str, run_input: RunAgentInput) -> list[dict[str, Any]]:
    """Send ``run_input`` on a fresh connection to ``url``; the stream's events as JSON."""
    events: list[dict[str, Any]] = []
    async with connect(url, compression=None, ping_interval=None) as websocket:
        await websocket.send(encode_input(run_input).decode())
        while not events or events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
            events.append(orjson.loads(await websocket.recv()))
    return events


async def interrupt(url: str, thread_id: str, n: int, **resume_fields: Any) -> RunAgentInput:
    """The first run of ``thread_id`` on ``url``, up to its approval; the resume approving it."""
    async with connect_websocket(url) as client:
        first = await client.collect(client.new_input(thread_id, f"act {n}", forwarded_props={"n": n}))
        assert first[-1].type == "RUN_FINISHED", first[-1]
        machine = client.machine(thread_id)
        return client.resume(thread_id, {i.id: approve() for i in machine.open_interrupts}, **resume_fields)


async def resume_into(
    streams: dict[tuple[int, int], list[dict[str, Any]]], key: tuple[int, int], url: str, run_input: RunAgentInput
) -> None:
    streams[key] = await send_raw(url, run_input)


def executions(effects: Path) -> list[int]:
    return [int(line) for line in effects.read_text().splitlines()] if effects.exists() else []


async def test_the_same_resume_through_every_host_at_once_runs_the_tool_once(postgres_url: str, tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    pick = random.Random(13)
    outcomes: dict[str, int] = {"served": 0, "busy": 0}
    with anyio.fail_after(LIMIT):
        async with fleet(postgres_url, effects) as urls:
            for round_ in range(ROUNDS):
                numbers = range(round_ * THREADS, (round_ + 1) * THREADS)
                resumes = {}
                for n in numbers:
                    resumes[n] = await interrupt(pick.choice(urls), f"fleet-{n}", n)
                streams: dict[tuple[int, int], list[dict[str, Any]]] = {}
                async with anyio.create_task_group() as group:
                    jobs = [(n, host) for n in numbers for host in range(len(urls))]
                    pick.shuffle(jobs)
                    for n, host in jobs:
                        group.start_soon(resume_into, streams, (n, host), urls[host], resumes[n])

                for (n, host), stream in streams.items():
                    kinds = [e["type"] for e in stream]
                    if kinds[-1] == "RUN_ERROR":
                        assert stream[-1]["code"] == "THREAD_BUSY", (n, host, stream)
                        outcomes["busy"] += 1
                        continue
                    assert kinds[0] == "RUN_STARTED" and kinds[1] == "TOOL_CALL_RESULT", (n, host, kinds)
                    assert stream[1]["content"] == f"acted {n}"
                    assert stream[-1]["outcome"] == {"type": "success"}
                    outcomes["served"] += 1
                # Carried out (or replayed) by at least one host each, run by exactly one.
                assert {n for (n, _), s in streams.items() if s[-1]["type"] == "RUN_FINISHED"} == set(numbers)
                assert sorted(executions(effects)) == list(range((round_ + 1) * THREADS)), round_
    print(f"\n[postgres hosts] {HOSTS} hosts, {ROUNDS * THREADS} threads, each resumed through every host: {outcomes}")


async def test_a_host_that_loses_its_database_mid_run_fails_the_run_and_another_host_serves_the_thread(
    postgres_url: str, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    schema = postgres_url.rpartition("schema=")[2]
    # One session holds the row; another watches pg_stat_activity, which a transaction would
    # see frozen at its first look.
    admin, watcher = await admin_connection(), await admin_connection()
    try:
        with anyio.fail_after(LIMIT):
            async with fleet(postgres_url, effects, 2) as (first, second):
                resume = await interrupt(first, "cut-1", 1, forwarded_props={"pause": 2})
                events: list[dict[str, Any]] = []
                async with connect(first, compression=None, ping_interval=None) as websocket:
                    await websocket.send(encode_input(resume).decode())
                    while not events or events[-1]["type"] != "TOOL_CALL_RESULT":
                        events.append(orjson.loads(await websocket.recv()))
                    # The tool has run and the agent pauses: the run's next save is its last.
                    # Hold the thread's row, and kill the host's connection once it waits on it.
                    async with admin.transaction():
                        await admin.execute(f"SELECT 1 FROM {schema}.threads WHERE thread_id = 'cut-1' FOR UPDATE")
                        while not (
                            pids := await watcher.fetch(
                                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
                                f"%{schema}.save_thread%",
                            )
                        ):
                            await anyio.sleep(0.02)
                        for row in pids:
                            await watcher.fetchval("SELECT pg_terminate_backend($1)", row["pid"])
                    while events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                        events.append(orjson.loads(await websocket.recv()))
                assert events[-1]["type"] == "RUN_ERROR", events
                assert events[-1]["code"] == "AGENT_ERROR"
                assert executions(effects) == [1]

                # The other host serves the thread: the recorded result, not a second execution.
                again = await send_raw(second, resume)
                assert [e["type"] for e in again][:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"], again
                assert again[1]["content"] == "acted 1"
                assert again[-1]["type"] == "RUN_FINISHED"
                assert executions(effects) == [1]
    finally:
        await admin.close()
        await watcher.close()
