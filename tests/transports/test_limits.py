"""The limits of the network transports, through real connections: a client that never
reads, the connection cap, the input rate limit, and client faults logged in one line."""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import httpx
import orjson
import pytest
from agui_transports.http import HttpTransport
from agui_transports.plugin import ServeOptions, TokenBucket
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from agui_core.app.cli import main
from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.transports import agents

pytestmark = pytest.mark.anyio

LIMIT = 10.0  # seconds any one test may take: a hang fails instead of blocking the suite
MARGIN = 10.0  # seconds past a deadline the server is given to act on it


@asynccontextmanager
async def serving(
    agent: Callable[..., Any], *, send_timeout: float = 10.0, **server_options: Any
) -> AsyncIterator[WebSocketServer]:
    async with Host(agent, store=MemoryThreadStore(), tools=agents.TOOLS, send_timeout=send_timeout) as host:
        async with WebSocketServer(host, port=0, send_timeout=send_timeout, **server_options) as server:
            yield server


def start(thread_id: str, run_id: str = "run-1", **props: Any) -> str:
    return encode_input(RunAgentInput(thread_id=thread_id, run_id=run_id, forwarded_props=props)).decode()


async def frames_until_end(ws: ClientConnection) -> list[dict[str, Any]]:
    frames = [orjson.loads(await ws.recv())]
    while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        frames.append(orjson.loads(await ws.recv()))
    return frames


def masked_text_frame(payload: bytes) -> bytes:
    """One client-to-server text frame (RFC 6455 section 5.2), written by hand."""
    size = len(payload)
    if size < 126:
        header = bytes([0x81, 0x80 | size])
    elif size < 1 << 16:
        header = bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        header = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big")
    mask = os.urandom(4)
    return header + mask + bytes(byte ^ mask[n % 4] for n, byte in enumerate(payload))


async def raw_websocket(port: int) -> anyio.abc.SocketStream:
    """A WebSocket connection by hand: the handshake read, then nothing read ever again."""
    stream = await anyio.connect_tcp("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    request = (
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    await stream.send(request.encode())
    response = b""
    while b"\r\n\r\n" not in response:
        response += await stream.receive(1)  # byte by byte: take nothing past the handshake
    assert response.startswith(b"HTTP/1.1 101"), response
    return stream


async def answer(stream: anyio.abc.SocketStream) -> None:
    """Whatever the server answers (or its closing the connection), for half a second at most."""
    with anyio.move_on_after(0.5), contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
        await stream.receive()


# -- a client that never reads ----------------------------------------------------------------


async def test_a_client_that_never_reads_frees_its_thread_within_the_send_timeout_and_is_closed() -> None:
    send_timeout = 1.0
    async with serving(agents.chatty_agent, send_timeout=send_timeout) as server:
        stuck = await raw_websocket(server.port)
        # About 128 MB of events: far more than every buffer on the way holds.
        await stuck.send(masked_text_frame(start("never-read", count=2_000, size=64_000).encode()))
        try:
            with anyio.fail_after(send_timeout + MARGIN):
                async with connect(server.url) as ws:
                    while True:  # the same input again: THREAD_BUSY while the thread is held
                        await ws.send(start("never-read", count=2_000, size=64_000))
                        first = await frames_until_end(ws)
                        if first[-1]["type"] == "RUN_FINISHED":
                            break
                        assert first[-1]["code"] == "THREAD_BUSY"
                        await anyio.sleep(0.1)
                    # Free: the run went on without its client to its end, and its outcome was saved.
                    assert first[-1]["result"] == {"count": 2_000}
                    assert (record := await server.host.store.load("never-read")) is not None
                    assert record.active_run is None
                    # And the thread takes a new run from another client.
                    await ws.send(start("never-read", "run-2", count=1))
                    second = await frames_until_end(ws)
                    assert [second[0]["type"], second[-1]["type"]] == ["RUN_STARTED", "RUN_FINISHED"]
                # The server closed the connection of the client that never read.
                while server.connections:
                    await anyio.sleep(0.05)
        finally:
            await stuck.aclose()


async def test_a_client_that_reads_slowly_but_steadily_gets_its_whole_run() -> None:
    # Every frame goes out well within the send timeout, but a burst of them, written in one
    # go, takes longer than it: the host must not take a client still reading its burst for
    # one that stopped reading (it did, and closed the connection before RUN_FINISHED).
    send_timeout = 1.0
    store = MemoryThreadStore()
    async with Host(agents.chatty_agent, store=store, tools=agents.TOOLS, send_timeout=send_timeout, buffer=8) as host:
        async with WebSocketServer(host, port=0, send_timeout=send_timeout, max_size=None) as server:
            async with connect(server.url, max_size=None, max_queue=1) as ws:
                ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65_536)
                await ws.send(start("steady", count=40, size=400_000))
                frames: list[dict[str, Any]] = []
                with anyio.fail_after(LIMIT):
                    while not frames or frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                        frames.append(orjson.loads(await ws.recv()))
                        await anyio.sleep(0.1)  # one frame a tenth of a second: slow, never stuck
    assert frames[-1]["type"] == "RUN_FINISHED" and frames[-1]["result"] == {"count": 40}
    assert len(frames) == 1 + 40 + 1


# -- the connection cap -----------------------------------------------------------------------


async def test_past_the_connection_cap_a_handshake_gets_503_and_a_freed_place_is_taken_again() -> None:
    with anyio.fail_after(LIMIT):
        async with serving(agents.chatty_agent, max_connections=2) as server:
            async with connect(server.url) as first, connect(server.url) as second:
                for n, ws in enumerate((first, second)):  # each carries an input: both places are in use
                    await ws.send(start(f"cap-{n}", count=1))
                    assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"
                with pytest.raises(InvalidStatus) as refused:
                    async with connect(server.url):
                        pass
                assert refused.value.response.status_code == 503
                assert orjson.loads(refused.value.response.body) == {
                    "error": "unavailable",
                    "message": "too many connections; try again later",
                }
            while server.connections:
                await anyio.sleep(0.01)
            async with connect(server.url) as ws:
                await ws.send(start("after-cap", count=1))
                assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"


@asynccontextmanager
async def uvicorn_serving(agent: Callable[..., Any], **options: Any) -> AsyncIterator[tuple[str, Host]]:
    found = anyio.Event()
    where: list[str] = []

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    async with Host(agent, store=MemoryThreadStore(), tools=agents.TOOLS) as host:
        async with anyio.create_task_group() as group:
            stop = anyio.Event()
            serve_options = ServeOptions(address="127.0.0.1:0", stop=stop, grace=1.0, ready=ready, **options)
            group.start_soon(HttpTransport().serve, host, serve_options)
            await found.wait()
            yield where[0], host
            stop.set()


async def test_past_the_connection_cap_an_http_request_gets_503() -> None:
    thread = "http-cap"
    gate = agents.GATES[thread] = anyio.Event()
    body = encode_input(RunAgentInput(thread_id=thread, run_id="run-1"))
    headers = {"content-type": "application/json"}
    try:
        with anyio.fail_after(LIMIT):
            async with uvicorn_serving(agents.slow_agent, max_connections=1) as (url, _):
                async with (
                    httpx.AsyncClient(base_url=url) as first,
                    first.stream("POST", "/", content=body, headers=headers) as held,
                ):
                    assert held.status_code == 200
                    async with httpx.AsyncClient(base_url=url) as second:
                        refused = await second.get("/capabilities")
                    assert refused.status_code == 503 and len(refused.content) < 100
                    gate.set()
                    assert b"RUN_FINISHED" in b"".join([chunk async for chunk in held.aiter_bytes()])
                while True:  # the place is free once the server has seen the first client go
                    async with httpx.AsyncClient(base_url=url) as third:
                        if (await third.get("/capabilities")).status_code == 200:
                            break
                    await anyio.sleep(0.05)
    finally:
        agents.GATES.pop(thread, None)


# -- the rate limit ---------------------------------------------------------------------------


async def test_an_input_over_the_rate_limit_gets_rate_limited_and_a_client_that_keeps_on_is_closed() -> None:
    with anyio.fail_after(LIMIT):
        # One input every 100 s after a burst of 2: nothing refills while the test runs.
        async with serving(agents.chatty_agent, rate_limit=0.01, rate_burst=2) as server:
            async with connect(server.url) as ws:
                await ws.send(start("rate", count=1))
                assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"
                await ws.send("not json")
                assert orjson.loads(await ws.recv())["code"] == "INVALID_INPUT"
                for n in range(2):  # over the limit: refused unread, as many times as the burst
                    await ws.send(start("rate", f"run-{n + 2}", count=1))
                    refusal = orjson.loads(await ws.recv())
                    assert refusal["type"] == "RUN_ERROR" and refusal["code"] == "RATE_LIMITED"
                    assert "inputs a second" in refusal["message"]
                await ws.send(start("rate", "run-9", count=1))
                with pytest.raises(ConnectionClosed) as closed:
                    await ws.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
            # Another connection has its own budget.
            async with connect(server.url) as ws:
                await ws.send(start("rate", "run-10", count=1))
                assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"


def test_a_token_bucket_allows_its_burst_then_its_rate() -> None:
    now = [0.0]
    bucket = TokenBucket(2.0, 3, clock=lambda: now[0])
    assert [bucket.take() for _ in range(4)] == [True, True, True, False]
    now[0] += 0.5  # one token back
    assert [bucket.take(), bucket.take()] == [True, False]
    now[0] += 100  # never more than the burst
    assert sum(bucket.take() for _ in range(10)) == 3
    with pytest.raises(ValueError):
        TokenBucket(0, 1)


@pytest.mark.parametrize(
    "flags",
    [
        ["--send-timeout", "0"],
        ["--max-connections", "-1"],
        ["--rate-limit", "-2"],
        ["--rate-burst", "0"],
        ["--max-input-messages", "-1"],
        ["--input-budget", "-1"],
    ],
)
def test_a_limit_out_of_range_is_a_usage_error(flags: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "tests.transports.agents:slow_agent", "--store", "memory", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agui serve: {flags[0]}") and "Traceback" not in err


# -- client faults in the log -----------------------------------------------------------------


def one_line_each(records: list[logging.LogRecord]) -> None:
    for record in records:
        assert record.exc_info is None and "\n" not in record.getMessage(), record.getMessage()


async def test_client_faults_on_websocket_are_logged_in_one_line_each(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="agui_transports")
    with anyio.fail_after(LIMIT):
        async with serving(agents.chatty_agent, max_size=1024) as server:
            # Not HTTP, an HTTP request that is no handshake, a request cut short.
            for garbage in (b"\x16\x03\x01\x02\x00hello\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"GET /"):
                async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
                    await stream.send(garbage)
                    await answer(stream)
            # Handshakes refused: a foreign origin, a bearer token offered without "agui".
            for refused in (
                {"additional_headers": {"Origin": "https://evil.example"}},
                {"subprotocols": ["agui.bearer.x"]},
            ):
                with pytest.raises(InvalidStatus):
                    async with connect(server.url, **refused):
                        pass
            # Frames: not JSON, binary, too large (closed 1009).
            async with connect(server.url) as ws:
                await ws.send("{nope")
                assert orjson.loads(await ws.recv())["code"] == "INVALID_INPUT"
                await ws.send(b"\x00\x01")
                assert orjson.loads(await ws.recv())["code"] == "INVALID_INPUT"
                await ws.send("x" * 2048)
                with pytest.raises(ConnectionClosed):
                    await ws.recv()
            # A text frame that is not UTF-8 (closed 1007), then a client gone mid-run.
            raw = await raw_websocket(server.port)
            async with raw:
                await raw.send(masked_text_frame(b"\xff\xfe"))
                await answer(raw)
            async with connect(server.url) as ws:
                await ws.send(start("gone", count=10_000, size=1_000))
                await ws.recv()
                assert ws.transport is not None
                ws.transport.abort()
            while server.connections:
                await anyio.sleep(0.01)
    assert any("refused a frame" in record.getMessage() for record in caplog.records)
    one_line_each(caplog.records)


async def test_client_faults_on_http_are_logged_in_one_line_each(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="agui_transports")
    json = {"content-type": "application/json"}
    with anyio.fail_after(LIMIT):
        async with uvicorn_serving(agents.chatty_agent) as (url, host):
            port = int(url.rsplit(":", 1)[1])
            for garbage in (b"\x16\x03\x01\x02\x00hello\r\n\r\n", b"GET / HTTP/9\r\n\r\n", b"POST / HTTP/1.1\r\n"):
                async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                    await stream.send(garbage)
                    await answer(stream)
            async with httpx.AsyncClient(base_url=url) as client:
                assert (await client.post("/", content=b"{nope", headers=json)).status_code == 200
                assert (
                    await client.post("/", content=b"{}", headers={"content-type": "text/plain"})
                ).status_code == 415
                assert (await client.post("/", content=b"x" * (2 << 20), headers=json)).status_code == 413
                assert (await client.get("/nowhere")).status_code == 404
            # A client gone mid-stream.
            body = encode_input(RunAgentInput(thread_id="gone", run_id="run-1", forwarded_props={"count": 10_000}))
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
                await stream.send(head.encode() + b"\r\n\r\n" + body)
                await stream.receive()
            while (record := await host.store.load("gone")) is None or record.active_run is not None:
                await anyio.sleep(0.02)
    one_line_each(caplog.records)
