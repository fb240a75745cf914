"""What one input may cost the host, through real transports: an input whose lists are longer
than the host works through is refused as soon as it is parsed, before anything in it is
validated, with the limit named (issue 23, item 5).

A hostile client sends each input by hand. "Before anything in it is validated" is proven
twice: a spy on the codec's depth walk and wire-schema check sees neither called, and the
input's last entry is invalid, so an input that were validated would be refused for that
entry instead of for its length.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_transports.http import HttpTransport
from agui_transports.plugin import ServeOptions
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.protocol import codec
from agui_core.protocol.framing import SSEReader
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.transports import agents

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 30.0  # seconds any one test may take: a hang fails instead of blocking the suite
DEFAULT_LIMIT = 2000  # agui serve's default --max-input-messages
RESUME_LIMIT = 100  # the most interrupts a thread may have open

USER = {"id": "u-1", "role": "user", "content": "hello"}
TEXT_PART = {"type": "text", "text": "x"}
TOOL_CALL = {"id": "tc-1", "type": "function", "function": {"name": "lookUp", "arguments": "{}"}}
TOOL = {"name": "lookUp", "description": "look something up", "parameters": {"type": "object"}}
CONTEXT = {"description": "locale", "value": "en-GB"}
CANCEL = {"interruptId": "int-1", "status": "cancelled"}


def document(thread: str, run: str = "run-1", **lists: Any) -> dict[str, Any]:
    """An input as raw JSON; the agents here finish at once (``slow_agent`` waits 0 s)."""
    return {"threadId": thread, "runId": run, "messages": [], "forwardedProps": {"seconds": 0}, **lists}


def users(count: int) -> list[dict[str, Any]]:
    return [{"id": f"u-{n}", "role": "user", "content": "hi"} for n in range(count)]


def too_long(thread: str, kind: str, limit: int = DEFAULT_LIMIT) -> tuple[dict[str, Any], str]:
    """An input with one entry too many of ``kind``, the last of them invalid (so that a
    host that validated it would name that entry), and the phrase its refusal must hold."""
    if kind == "messages":
        messages = [*users(limit), {"id": "u-x", "role": "nobody"}]
        return document(thread, messages=messages), f"at most {limit} messages"
    if kind == "tools":
        return document(thread, tools=[TOOL] * limit + [{"name": 7}]), f"at most {limit} tools"
    if kind == "context":
        return document(thread, context=[CONTEXT] * limit + [{"value": 7}]), f"at most {limit} context entries"
    if kind == "content parts":
        parts = [TEXT_PART] * limit + [{"type": "hologram"}]
        message = {"id": "u-1", "role": "user", "content": parts}
        return document(thread, messages=[message]), f"at most {limit} content parts and tool calls"
    if kind == "tool calls":
        # Tool calls and content parts count together, over all the messages of the input.
        half = limit // 2
        messages = [
            {"id": "a-1", "role": "assistant", "toolCalls": [TOOL_CALL] * half},
            {"id": "u-2", "role": "user", "content": [TEXT_PART] * (limit - half)},
            {"id": "a-2", "role": "assistant", "toolCalls": [{"id": "tc-x", "type": "teleport"}]},
        ]
        return document(thread, messages=messages), f"at most {limit} content parts and tool calls"
    assert kind == "resume"
    resume = [CANCEL] * RESUME_LIMIT + [{"interruptId": "int-x", "status": "maybe"}]
    return document(thread, resume=resume), f"at most {RESUME_LIMIT} entries"


KINDS = ["messages", "tools", "context", "content parts", "tool calls", "resume"]


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every call the codec makes to its depth walk and its wire-schema check of an input."""
    calls: list[str] = []
    depth, validate = codec.overnested_at, codec.validate_input

    def counted_depth(value: Any, *, level: int = 1) -> Any:
        calls.append("overnested_at")
        return depth(value, level=level)

    def counted_validate(value: Any) -> None:
        calls.append("validate_input")
        validate(value)

    monkeypatch.setattr(codec, "overnested_at", counted_depth)
    monkeypatch.setattr(codec, "validate_input", counted_validate)
    yield calls


def refusal(frames: list[dict[str, Any]], code: str) -> str:
    """The message of a lone ``RUN_ERROR`` with ``code``."""
    assert [(f["type"], f.get("code")) for f in frames] == [("RUN_ERROR", code)], frames
    return str(frames[0]["message"])


async def ws_exchange(ws: ClientConnection, data: bytes) -> list[dict[str, Any]]:
    await ws.send(data.decode())
    frames = [orjson.loads(await ws.recv())]
    while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        frames.append(orjson.loads(await ws.recv()))
    return frames


async def http_exchange(client: httpx.AsyncClient, data: bytes) -> list[dict[str, Any]]:
    response = await client.post("/", content=data, headers={"content-type": "application/json"})
    assert response.status_code == 200, response.text
    reader = SSEReader()
    return [orjson.loads(frame) for frame in reader.feed(response.content)]


@asynccontextmanager
async def websocket_host(agent: Callable[..., Any] = agents.approval_agent) -> AsyncIterator[WebSocketServer]:
    async with Host(agent, store=MemoryThreadStore(), tools=agents.TOOLS) as host:
        async with WebSocketServer(host, port=0) as server:
            yield server


@asynccontextmanager
async def http_host(agent: Callable[..., Any] = agents.approval_agent) -> AsyncIterator[tuple[str, Host]]:
    found = anyio.Event()
    where: list[str] = []

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    async with Host(agent, store=MemoryThreadStore(), tools=agents.TOOLS) as host:
        async with anyio.create_task_group() as group:
            stop = anyio.Event()
            options = ServeOptions(address="127.0.0.1:0", stop=stop, grace=1.0, ready=ready)
            group.start_soon(HttpTransport().serve, host, options)
            await found.wait()
            yield where[0], host
            stop.set()


@pytest.mark.parametrize("kind", KINDS)
async def test_over_a_limit_a_websocket_input_is_refused_before_anything_in_it_is_validated(
    kind: str, validations: list[str]
) -> None:
    thread = f"ws-{kind.replace(' ', '-')}"
    data, phrase = too_long(thread, kind)
    with anyio.fail_after(LIMIT):
        async with websocket_host() as server, connect(server.url, max_size=None) as ws:
            frames = await ws_exchange(ws, orjson.dumps(data))
            assert await server.host.store.load(thread) is None
    message = refusal(frames, "INVALID_RESUME" if kind == "resume" else "INVALID_INPUT")
    assert phrase in message, message
    assert validations == []


@pytest.mark.parametrize("kind", KINDS)
async def test_over_a_limit_an_http_input_is_refused_before_anything_in_it_is_validated(
    kind: str, validations: list[str]
) -> None:
    thread = f"http-{kind.replace(' ', '-')}"
    data, phrase = too_long(thread, kind)
    with anyio.fail_after(LIMIT):
        async with http_host() as (url, host), httpx.AsyncClient(base_url=url) as client:
            frames = await http_exchange(client, orjson.dumps(data))
            assert await host.store.load(thread) is None
    message = refusal(frames, "INVALID_RESUME" if kind == "resume" else "INVALID_INPUT")
    assert phrase in message, message
    assert validations == []


async def test_an_input_at_the_limit_runs_and_one_over_it_leaves_the_thread_as_it_was() -> None:
    with anyio.fail_after(LIMIT):
        async with websocket_host(agents.slow_agent) as server, connect(server.url, max_size=None) as ws:
            at_limit = document("edge", messages=users(DEFAULT_LIMIT))
            assert (await ws_exchange(ws, orjson.dumps(at_limit)))[-1]["type"] == "RUN_FINISHED"
            before = await server.host.store.load("edge")
            over = document("edge", "run-2", messages=users(DEFAULT_LIMIT + 1))
            message = refusal(await ws_exchange(ws, orjson.dumps(over)), "INVALID_INPUT")
            assert f"at most {DEFAULT_LIMIT} messages" in message and str(DEFAULT_LIMIT + 1) in message
            assert await server.host.store.load("edge") == before
            # The thread goes on with the next input within the limit.
            again = document("edge", "run-3", messages=users(DEFAULT_LIMIT))
            assert (await ws_exchange(ws, orjson.dumps(again)))[-1]["type"] == "RUN_FINISHED"


async def test_a_resume_longer_than_any_thread_needs_is_refused_unread_and_the_thread_stays_answerable(
    validations: list[str],
) -> None:
    with anyio.fail_after(LIMIT):
        async with websocket_host() as server, connect(server.url, max_size=None) as ws:
            first = await ws_exchange(ws, orjson.dumps(document("answer-me", messages=[USER])))
            interrupt = first[-1]["outcome"]["interrupts"][0]["id"]
            before = await server.host.store.load("answer-me")
            validations.clear()
            answer = {"interruptId": interrupt, "status": "resolved", "payload": {"approved": True}}
            huge = document("answer-me", "run-2", resume=[answer] * 10_000)
            message = refusal(await ws_exchange(ws, orjson.dumps(huge)), "INVALID_RESUME")
            assert f"at most {RESUME_LIMIT} entries" in message and "10000" in message
            assert validations == []
            assert await server.host.store.load("answer-me") == before
            good = document("answer-me", "run-3", resume=[answer])
            assert (await ws_exchange(ws, orjson.dumps(good)))[-1]["type"] == "RUN_FINISHED"


@pytest.mark.parametrize("transport", ["ws", "http", "stdio"])
async def test_agui_serve_takes_the_most_messages_per_input_from_its_flag(transport: str, tmp_path: Path) -> None:
    """``--max-input-messages`` reaches every transport that reads inputs: an input of four
    messages is refused under ``--max-input-messages 3`` (its fourth message would fail
    validation too), one of three runs; ``0`` is no limit."""
    limited, _ = too_long("flag", "messages", limit=3)
    within = document("flag-ok", messages=users(3))
    long_ok = document("flag-none", messages=users(DEFAULT_LIMIT + 1))
    for flag, data, expected in (
        ("3", limited, "at most 3 messages"),
        ("3", within, None),
        ("0", long_ok, None),
    ):
        frames = await _serve_one(transport, ["--max-input-messages", flag], orjson.dumps(data), tmp_path)
        if expected is None:
            assert frames[-1]["type"] == "RUN_FINISHED", frames[-1]
        else:
            assert expected in refusal(frames, "INVALID_INPUT")


async def _serve_one(transport: str, flags: list[str], data: bytes, tmp_path: Path) -> list[dict[str, Any]]:
    """``agui serve`` in a process of its own, one input sent to it, its answer; the process
    is stopped by its PID."""
    where = {"ws": ["--ws", "127.0.0.1:0"], "http": ["--http", "127.0.0.1:0"], "stdio": ["--stdio"]}[transport]
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:slow_agent", *where,
        "--store", f"sqlite:{tmp_path / 'threads.sqlite3'}", *flags,
    ]  # fmt: skip
    with anyio.fail_after(LIMIT):
        if transport == "stdio":
            done = await anyio.run_process(command, cwd=str(ROOT), input=data + b"\n", check=False)
            assert done.returncode == 0, done.stderr.decode()
            frames = [orjson.loads(line) for line in done.stdout.splitlines()]
            # No test here wants the host to fail a run: if it does, its log says why.
            assert not any(f.get("code") == "AGENT_ERROR" for f in frames), done.stderr.decode()
            return frames
        process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with process:
            try:
                assert process.stderr is not None
                log = b""
                while not (found := re.search(rb"(ws|http)://127\.0\.0\.1:(\d+)", log)):
                    log += await process.stderr.receive()
                url = found.group(0).decode()
                if transport == "ws":
                    async with connect(url, max_size=None) as ws:
                        return await ws_exchange(ws, data)
                async with httpx.AsyncClient(base_url=url) as client:
                    return await http_exchange(client, data)
            finally:
                process.terminate()
                await process.wait()
