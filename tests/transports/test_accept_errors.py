"""Out of file descriptors, ``agui serve`` logs one line per burst of failed accepts, not a
traceback per attempt, and serves again once descriptors are free."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.abc
import orjson
import pytest
from websockets.asyncio.client import connect

from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import RunAgentInput

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60.0  # seconds for the whole test: a hang fails instead of blocking the suite
DESCRIPTORS = 64  # the server's RLIMIT_NOFILE: a few dozen connections exhaust it
CLIENTS = 150  # more than the server can take, fewer than its backlog holds on top
HAMMER = 3.5  # seconds of exhaustion: asyncio retries every second, so several bursts


# agui serve, in a process that may open DESCRIPTORS files at most.
SERVE = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, ({DESCRIPTORS}, {DESCRIPTORS}))
from agui_core.app.cli import main
sys.exit(main(sys.argv[1:]))
"""


async def _start(process: anyio.abc.Process) -> tuple[int, bytes]:
    """The port ``agui serve`` listens on, read from its log, and the log so far."""
    assert process.stderr is not None
    log = b""
    while not (found := re.search(rb"ws://127\.0\.0\.1:(\d+)", log)):
        log += await process.stderr.receive()
    return int(found.group(1)), log


async def _exhaust(port: int) -> list[anyio.abc.SocketStream]:
    """Connections that never send a handshake, until the server is out of descriptors."""
    held: list[anyio.abc.SocketStream] = []
    for _ in range(CLIENTS):
        with anyio.move_on_after(1):
            held.append(await anyio.connect_tcp("127.0.0.1", port))
    assert len(held) > DESCRIPTORS  # the server was out of descriptors
    return held


async def test_descriptor_exhaustion_is_logged_once_and_the_server_recovers() -> None:
    command = [
        sys.executable, "-c", SERVE, "serve", "tests.transports.agents:slow_agent",
        "--ws", "127.0.0.1:0", "--store", "memory", "--max-connections", "0",
    ]  # fmt: skip
    with anyio.fail_after(LIMIT):
        process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with process:
            port, log = await _start(process)

            async def read_log() -> None:
                nonlocal log
                assert process.stderr is not None
                async for chunk in process.stderr:
                    log += chunk

            async with anyio.create_task_group() as group:
                group.start_soon(read_log)
                held = await _exhaust(port)
                try:
                    await anyio.sleep(HAMMER)
                finally:
                    for stream in held:
                        await stream.aclose()
                # Once they are free again, the server serves.
                while True:
                    try:
                        async with connect(f"ws://127.0.0.1:{port}", open_timeout=2) as ws:
                            run_input = RunAgentInput(thread_id="after", run_id="run-1", forwarded_props={"seconds": 0})
                            await ws.send(encode_input(run_input).decode())
                            frames = [orjson.loads(await ws.recv())]
                            while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                                frames.append(orjson.loads(await ws.recv()))
                            break
                    except (OSError, TimeoutError):
                        await anyio.sleep(0.2)
                assert frames[-1]["type"] == "RUN_FINISHED" and frames[-1]["result"] == {"done": True}
                process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0, log.decode()
    text = log.decode()
    accept_lines = [line for line in text.splitlines() if "cannot accept connections" in line]
    assert len(accept_lines) == 1, text  # one burst, one line
    assert "Too many open files" in accept_lines[0]
    assert "Traceback" not in text and "socket.accept() out of system resource" not in text, text[:5000]


async def test_a_shutdown_in_the_middle_of_a_burst_is_clean() -> None:
    # Every accept that failed leaves asyncio a retry for a second later; the listener closes
    # at SIGTERM before those retries come due, and each then meets a closed socket.
    command = [
        sys.executable, "-c", SERVE, "serve", "tests.transports.agents:slow_agent",
        "--ws", "127.0.0.1:0", "--store", "memory", "--max-connections", "0",
    ]  # fmt: skip
    with anyio.fail_after(LIMIT):
        process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with process:
            assert process.stderr is not None
            port, log = await _start(process)
            held = await _exhaust(port)
            try:
                process.send_signal(signal.SIGTERM)
                await anyio.sleep(2)  # the retries come due while the host drains
            finally:
                for stream in held:
                    await stream.aclose()
            async for chunk in process.stderr:
                log += chunk
            assert await process.wait() == 0, log.decode()
    text = log.decode()
    assert "cannot accept connections" in text  # the burst did happen
    assert "Traceback" not in text and "ERROR asyncio" not in text, text[:5000]
