"""1,000 concurrent WebSocket connections against one host process, each an interrupt -> resume.

The host is a real ``agui serve tests.e2e.agents:seed_agent --ws 127.0.0.1:0 --store memory``
process, so its event loop competes with nobody in this process for the GIL; the clients
run here, on one event loop. All connections are opened first (in batches, as a burst of a
thousand handshakes would overflow the listen backlog), then every connection starts its
cycle at once: the seed's minimal tool approval (text, a proposed ``sendEmail``, an
approval interrupt), then the resume that approves it (the tool's result, text, success).
Both runs of every connection go through the connection's ClientMachine, which checks each
event as it arrives. Throughput is printed, never asserted.
"""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from agui_transports.client import Client, WebSocketConnection
from websockets.asyncio.client import ClientConnection, connect

from agui_core.machine.client import approve

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
CONNECTIONS = 1_000
BATCH = 100  # handshakes in flight at once: within the listen backlog websockets asks for
LIMIT = 90.0  # seconds for the whole test: a hang fails instead of blocking the suite
COMMAND = [
    sys.executable, "-m", "agui_core.app.cli", "serve", "tests.e2e.agents:seed_agent",
    "--ws", "127.0.0.1:0", "--store", "memory",
    # Every client here has the one address 127.0.0.1, as behind a proxy: no cap per address.
    "--max-connections-per-client", "0",
]  # fmt: skip
RESULT = {
    "emails": [
        {"toolCallId": "tc-001", "status": "executed", "to": "alice@example.com", "body": "Hi Alice!", "edited": False}
    ],
    "filing": None,
}


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) process ``pid`` has used so far, where ``/proc`` tells it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def file_limit(needed: int) -> Iterator[None]:
    """The soft limit on open files raised to ``needed`` (a host started meanwhile inherits it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        yield
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.fail(f"{CONNECTIONS} connections need {needed} open files; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@asynccontextmanager
async def host_process(log: bytearray) -> AsyncIterator[tuple[str, anyio.abc.Process]]:
    """``agui serve`` on a free port: its URL and the process; its standard error goes to ``log``.

    Leaving stops it with SIGTERM (killed if it is still there after that).
    """

    async def drain(stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            log.extend(chunk)

    process = await anyio.open_process(COMMAND, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    async with process, anyio.create_task_group() as group:
        assert process.stderr is not None
        group.start_soon(drain, process.stderr)
        try:
            while not (found := re.search(rb"ws://127\.0\.0\.1:(\d+)", log)):
                assert process.returncode is None, log.decode(errors="replace")
                await anyio.sleep(0.02)
            yield f"ws://127.0.0.1:{int(found.group(1))}", process
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(15):
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
                    await process.wait()
            if process.returncode is None:
                process.kill()
            group.cancel_scope.cancel()


async def cycle(client: Client, thread_id: str) -> int:
    """The seed's minimal tool approval, then its approval; how many events came back."""
    start = client.new_input(thread_id, "Email Alice", forwarded_props={"scenario": "tool_approval"})
    first = await client.collect(start)
    machine = client.machine(thread_id)
    assert [(i.reason, i.tool_call_id) for i in machine.open_interrupts] == [("tool_call", "tc-001")], thread_id
    second = await client.collect(client.resume(thread_id, {i.id: approve() for i in machine.open_interrupts}))
    assert second[1].type == "TOOL_CALL_RESULT" and second[-1].type == "RUN_FINISHED", thread_id
    assert machine.result == RESULT and not machine.awaiting_input, thread_id
    return len(first) + len(second)


async def test_a_thousand_concurrent_connections_each_complete_an_interrupt_resume_cycle(
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = bytearray()
    sockets: list[ClientConnection] = []
    counts: dict[int, int] = {}

    async def open_one(url: str) -> None:
        sockets.append(await connect(url, compression=None, open_timeout=30, ping_interval=None))

    async def run_one(n: int, websocket: ClientConnection) -> None:
        counts[n] = await cycle(Client(WebSocketConnection(websocket)), f"scale-{n}")

    # Both ends of every connection, in case the limit is per user rather than per process.
    with file_limit(2 * CONNECTIONS + 256), anyio.fail_after(LIMIT):
        async with host_process(log) as (url, process):
            try:
                opened_at = time.perf_counter()
                for _ in range(0, CONNECTIONS, BATCH):
                    async with anyio.create_task_group() as batch:
                        for _ in range(BATCH):
                            batch.start_soon(open_one, url)
                open_seconds = time.perf_counter() - opened_at

                host_cpu, client_cpu = cpu_seconds(process.pid), time.process_time()
                started = time.perf_counter()
                async with anyio.create_task_group() as cycles:
                    for n, websocket in enumerate(sockets):
                        cycles.start_soon(run_one, n, websocket)
                seconds = time.perf_counter() - started
                client_cpu = time.process_time() - client_cpu
                host_after = cpu_seconds(process.pid)
                host_cpu = None if host_cpu is None or host_after is None else host_after - host_cpu
            finally:
                async with anyio.create_task_group() as closing:
                    for websocket in sockets:
                        closing.start_soon(websocket.close)
        assert process.returncode == 0, log.decode(errors="replace")[-4000:]
    assert sorted(counts) == list(range(CONNECTIONS))

    events = sum(counts.values())
    report: dict[str, Any] = {
        "connections": CONNECTIONS,
        "opened in": f"{open_seconds:.2f} s",
        "cycles": f"{CONNECTIONS} in {seconds:.2f} s = {CONNECTIONS / seconds:,.0f} cycles/s",
        "events": f"{events:,} = {events / seconds:,.0f} events/s",
        "CPU": f"host {host_cpu:.2f} s, clients {client_cpu:.2f} s" if host_cpu is not None else "n/a",
    }
    with capsys.disabled():
        print("\n[scale] one host process, " + "; ".join(f"{k}: {v}" for k, v in report.items()))
