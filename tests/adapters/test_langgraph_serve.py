"""``agui serve MODULE:GRAPH``: a compiled LangGraph graph served as it is, over every transport.

Each test starts ``agui serve tests.adapters.served:graph`` (the approval graph, with its own
``InMemorySaver``) as a process, has the graph interrupt for an approval, approves it, and sees
the approved tool call's result on its original tool call id.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from websockets.asyncio.client import connect

from agui_core.adapters.langgraph import LangGraphAgent
from agui_core.app.cli import load_agent
from tests.adapters.test_langgraph import USER, frame, resolve

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60.0
TARGET = "tests.adapters.served:graph"


def test_load_agent_wraps_a_compiled_graph() -> None:
    agent, tools = load_agent(TARGET)
    assert isinstance(agent, LangGraphAgent) and tools == ()


def test_loading_a_plain_agent_imports_no_langgraph() -> None:
    probe = (
        "import sys; from agui_core.app.cli import load_agent; load_agent('agui_core.examples:assistant'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain_core')))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, cwd=ROOT, timeout=60, check=True)
    assert done.stdout.decode().strip() == "[]"


def _check(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> None:
    assert first[-1]["outcome"]["type"] == "interrupt"
    assert second[-1]["outcome"] == {"type": "success"}
    results = [(e["toolCallId"], e["content"]) for e in second if e["type"] == "TOOL_CALL_RESULT"]
    assert results == [("call-email", "sent to bob@example.com: hi")]


@asynccontextmanager
async def serving(transport: str, *options: str) -> AsyncIterator[str]:
    command = [sys.executable, "-m", "agui_core.app.cli", "serve", TARGET, f"--{transport}", "127.0.0.1:0"]
    command += ["--store", "memory", *options]
    process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    async with process:
        try:
            assert process.stderr is not None
            log = b""
            while not (found := re.search(rb"((?:ws|http)://127\.0\.0\.1:\d+)", log)):
                chunk = await process.stderr.receive()
                log += chunk
            yield found.group(1).decode()
        finally:
            process.terminate()
            await process.wait()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_served_over_websocket(anyio_backend: str) -> None:
    with anyio.fail_after(LIMIT):
        async with serving("ws") as url, connect(url) as ws:

            async def exchange(data: dict[str, Any]) -> list[dict[str, Any]]:
                await ws.send(orjson.dumps(data).decode())
                out = [orjson.loads(await ws.recv())]
                while out[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                    out.append(orjson.loads(await ws.recv()))
                return out

            first = await exchange(frame("t", "r1", messages=[USER]))
            (approval,) = first[-1]["outcome"]["interrupts"]
            _check(first, await exchange(frame("t", "r2", resume=[resolve(approval["id"], {"approved": True})])))


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_served_over_http_and_sse(anyio_backend: str) -> None:
    with anyio.fail_after(LIMIT):
        async with serving("http") as url, httpx.AsyncClient(timeout=LIMIT) as client:

            async def exchange(data: dict[str, Any]) -> list[dict[str, Any]]:
                response = await client.post(
                    url, content=orjson.dumps(data), headers={"content-type": "application/json"}
                )
                assert response.headers["content-type"].startswith("text/event-stream")
                return [orjson.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]

            first = await exchange(frame("t", "r1", messages=[USER]))
            (approval,) = first[-1]["outcome"]["interrupts"]
            _check(first, await exchange(frame("t", "r2", resume=[resolve(approval["id"], {"approved": True})])))


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("option", [True, False])
async def test_legacy_resume_is_taken_over_http_only_with_the_option(anyio_backend: str, option: bool) -> None:
    with anyio.fail_after(LIMIT):
        options = ("--legacy-resume",) if option else ()
        async with serving("http", *options) as url, httpx.AsyncClient(timeout=LIMIT) as client:

            async def exchange(data: dict[str, Any]) -> list[dict[str, Any]]:
                response = await client.post(
                    url, content=orjson.dumps(data), headers={"content-type": "application/json"}
                )
                return [orjson.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]

            first = await exchange(frame("t", "r1", messages=[USER]))
            old = frame("t", "r2", messages=[USER])
            old["forwardedProps"] = {"command": {"resume": {"approved": True}}}
            second = await exchange(old)
            if option:
                _check(first, second)
            else:
                assert [(e["type"], e.get("code")) for e in second] == [("RUN_ERROR", "PENDING_INTERRUPTS")]


def test_served_over_stdio() -> None:
    command = [sys.executable, "-m", "agui_core.app.cli", "serve", TARGET, "--stdio", "--store", "memory"]
    with subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as process:
        assert process.stdin is not None and process.stdout is not None

        def exchange(data: dict[str, Any]) -> list[dict[str, Any]]:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(orjson.dumps(data) + b"\n")
            process.stdin.flush()
            out = [orjson.loads(process.stdout.readline())]
            while out[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                out.append(orjson.loads(process.stdout.readline()))
            return out

        try:
            first = exchange(frame("t", "r1", messages=[USER]))
            (approval,) = first[-1]["outcome"]["interrupts"]
            _check(first, exchange(frame("t", "r2", resume=[resolve(approval["id"], {"approved": True})])))
        finally:
            process.stdin.close()
            process.wait(timeout=LIMIT)
