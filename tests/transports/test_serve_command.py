"""``agui serve``: loading the agent and the transport, and a WebSocket server process stopped by SIGTERM."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import anyio
import orjson
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from agui_core.app.cli import load_agent, main
from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import RunAgentInput
from tests.transports import agents

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 15.0

SPEC = SimpleNamespace(agent=agents.slow_agent, tools=[agents.send_email])
"""An object with ``agent`` and ``tools``, as ``agui serve`` accepts."""


def test_an_agent_function_comes_with_its_modules_tools() -> None:
    agent, tools = load_agent("tests.transports.agents:approval_agent")
    assert agent is agents.approval_agent
    assert tools == tuple(agents.TOOLS)


def test_an_object_with_agent_and_tools_gives_both() -> None:
    agent, tools = load_agent("tests.transports.test_serve_command:SPEC")
    assert agent is agents.slow_agent
    assert tools == (agents.send_email,)


@pytest.mark.parametrize(
    "target", ["tests.transports.agents", "tests.transports.agents:nothing_here", "tests.transports.agents:SENT"]
)
def test_a_target_that_names_no_agent_is_refused(target: str) -> None:
    with pytest.raises(ValueError):
        load_agent(target)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "tests.transports.agents:slow_agent", "--store", "nowhere"],
        ["serve", "tests.transports.agents:slow_agent", "--transport", "carrier-pigeon"],
        ["serve", "tests.transports.agents:slow_agent", "--stdio", "--store", "memory", "-o", "colour=blue"],
        ["serve", "no_such_module_anywhere:agent"],
        ["serve", "tests.transports.agents:slow_agent", "--stdio", "--store", "memory", "--lease=2", "--lease-renew=3"],
        ["serve", "tests.transports.agents:slow_agent", "--stdio", "--store", "memory", "--run-timeout", "0"],
    ],
)
def test_a_bad_command_line_exits_2_with_a_message(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("agui serve: ") and "Traceback" not in err


@pytest.mark.anyio
async def test_sigterm_lets_the_websocket_run_in_flight_finish_and_exits_0(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:slow_agent",
        "--ws", "127.0.0.1:0", "--store", f"sqlite:{tmp_path / 'threads.sqlite3'}",
    ]  # fmt: skip
    with anyio.fail_after(LIMIT):
        process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with process:
            assert process.stderr is not None
            log = b""
            while not (found := re.search(rb"ws://127\.0\.0\.1:(\d+)", log)):
                log += await process.stderr.receive()
            async with connect(f"ws://127.0.0.1:{int(found.group(1))}") as ws:
                run_input = RunAgentInput(thread_id="term", run_id="run-1", forwarded_props={"seconds": 0.5})
                await ws.send(encode_input(run_input).decode())
                assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
                process.send_signal(signal.SIGTERM)
                frames = [orjson.loads(await ws.recv())]
                while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                    frames.append(orjson.loads(await ws.recv()))
                assert frames[-1]["type"] == "RUN_FINISHED" and frames[-1]["result"] == {"done": True}
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
            async for chunk in process.stderr:
                log += chunk
            assert await process.wait() == 0, log.decode()


@pytest.mark.anyio
async def test_a_second_sigterm_stops_without_waiting_for_the_run() -> None:
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:slow_agent",
        "--ws", "127.0.0.1:0", "--store", "memory", "--grace", "60",
    ]  # fmt: skip
    with anyio.fail_after(LIMIT):
        process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with process:
            assert process.stderr is not None
            log = b""
            while not (found := re.search(rb"ws://127\.0\.0\.1:(\d+)", log)):
                log += await process.stderr.receive()
            async with connect(f"ws://127.0.0.1:{int(found.group(1))}") as ws:
                run_input = RunAgentInput(thread_id="forever", run_id="run-1", forwarded_props={"seconds": 600})
                await ws.send(encode_input(run_input).decode())
                assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
                process.send_signal(signal.SIGTERM)
                while b"stopping" not in log:
                    log += await process.stderr.receive()
                process.send_signal(signal.SIGTERM)
                with pytest.raises(ConnectionClosed):
                    while True:
                        await ws.recv()
            async for chunk in process.stderr:
                log += chunk
            assert await process.wait() == 0, log.decode()
            assert b"stopping now" in log
