"""``THREAD_BUSY`` has one home (agui_core.machine.occupancy): the thread machine, the client
machine, the WebSocket transport and the HTTP transport each hand it their facts, and the same
facts get the same refusal, word for word, through every door."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial

import anyio
import httpx
import orjson
import pytest
from agui_transports.http import HttpApp
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.errors import LocalProtocolError, RemoteProtocolError
from agui_core.machine.client import ClientMachine, approve
from agui_core.machine.effects import Reject
from agui_core.machine.occupancy import Scope, check_free
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_input
from agui_core.protocol.framing import SSEReader
from agui_core.protocol.types import JSON, RunAgentInput
from agui_core.runtime import Host, RunContext
from agui_core.store import MemoryThreadStore

pytestmark = pytest.mark.anyio

JSON_HEADERS = {"content-type": "application/json"}
NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)
LIMIT = 15.0


def refusal(
    thread_id: str, run_id: str, *, running: str | None = None, held: bool = False, scope: Scope = "thread"
) -> tuple[str, str]:
    """What the one home says for these facts, as (code, message)."""
    with pytest.raises(RemoteProtocolError) as caught:
        check_free(thread_id, run_id, running=running, held=held, scope=scope)
    return caught.value.code.value, caught.value.message


def test_a_free_thread_is_not_refused() -> None:
    check_free("t", "r1")  # nothing in the way: no exception
    check_free("t", "r1", scope="connection")


def test_the_thread_machine_refuses_while_its_own_run_is_in_flight() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(RunAgentInput(thread_id="t", run_id="r1"), now=NOW, principal="ann")
    (refused,) = machine.receive_input(RunAgentInput(thread_id="t", run_id="r2"), now=NOW, principal="ann")
    assert isinstance(refused, Reject)
    assert (refused.code.value, refused.message) == refusal("t", "r2", running="r1")


def test_the_thread_machine_refuses_while_something_else_holds_the_thread() -> None:
    machine = ThreadMachine("t")
    (refused,) = machine.receive_input(RunAgentInput(thread_id="t", run_id="r1"), now=NOW, principal="ann", busy=True)
    assert isinstance(refused, Reject)
    assert (refused.code.value, refused.message) == refusal("t", "r1", held=True)


def test_the_client_machine_builds_no_resume_while_a_run_is_in_flight() -> None:
    client = ClientMachine("t")
    client.receive_event(ev.RunStartedEvent(thread_id="t", run_id="r1"), now=NOW)
    with pytest.raises(LocalProtocolError) as caught:
        client.resume({"i1": approve()}, now=NOW, run_id="r2")
    code, message = refusal("t", "r2", running="r1")
    assert caught.value.code.value == code
    assert caught.value.message == f"resume refused: {message}"


GATE: dict[str, anyio.Event] = {}
STARTED: dict[str, anyio.Event] = {}


async def held_agent(ctx: RunContext) -> JSON:
    """Says it started, then holds its thread until the test opens its gate."""
    STARTED[ctx.thread_id].set()
    await GATE[ctx.thread_id].wait()
    return {"done": True}


@asynccontextmanager
async def gated(*thread_ids: str) -> AsyncIterator[None]:
    for thread_id in thread_ids:
        GATE[thread_id], STARTED[thread_id] = anyio.Event(), anyio.Event()
    try:
        yield
    finally:
        for thread_id in thread_ids:
            GATE.pop(thread_id).set()
            STARTED.pop(thread_id)


def body(thread_id: str, run_id: str) -> str:
    return encode_input(RunAgentInput(thread_id=thread_id, run_id=run_id)).decode()


async def test_websocket_a_second_input_on_a_busy_connection() -> None:
    """One run at a time on a connection, whichever thread the second input is for."""
    with anyio.fail_after(LIMIT):
        async with gated("ws-a"), Host(held_agent, store=MemoryThreadStore()) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                await ws.send(body("ws-a", "r1"))
                await STARTED["ws-a"].wait()
                await ws.send(body("ws-b", "r2"))
                frames = []
                while not frames or frames[-1]["type"] != "RUN_ERROR":
                    frames.append(orjson.loads(await ws.recv()))
                assert (frames[-1]["code"], frames[-1]["message"]) == refusal(
                    "ws-b", "r2", running="r1", scope="connection"
                )
                GATE["ws-a"].set()
                while frames[-1]["type"] != "RUN_FINISHED":  # the run in the way went on
                    frames.append(orjson.loads(await ws.recv()))
                assert frames[-1]["runId"] == "r1"


async def test_websocket_a_second_connection_on_a_busy_thread() -> None:
    with anyio.fail_after(LIMIT):
        async with gated("ws-t"), Host(held_agent, store=MemoryThreadStore()) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as one, connect(server.url) as two:
                await one.send(body("ws-t", "r1"))
                await STARTED["ws-t"].wait()
                await two.send(body("ws-t", "r2"))
                frame = orjson.loads(await two.recv())
                assert (frame["type"], frame["code"], frame["message"]) == ("RUN_ERROR", *busy_on_thread("ws-t", "r2"))
                GATE["ws-t"].set()


def busy_on_thread(thread_id: str, run_id: str) -> tuple[str, str]:
    """The host holds the thread for its run ``r1`` (``held``), and the stored thread names it."""
    return refusal(thread_id, run_id, running="r1", held=True)


async def test_http_a_second_request_on_a_busy_thread() -> None:
    with anyio.fail_after(LIMIT):
        async with gated("http-t"), Host(held_agent, store=MemoryThreadStore()) as host:
            app = HttpApp(host)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
                async with anyio.create_task_group() as group:
                    group.start_soon(partial(client.post, "/", content=body("http-t", "r1"), headers=JSON_HEADERS))
                    await STARTED["http-t"].wait()
                    second = await client.post("/", content=body("http-t", "r2"), headers=JSON_HEADERS)
                    GATE["http-t"].set()
    reader = SSEReader()
    frames = [orjson.loads(frame) for frame in [*reader.feed(second.content), *reader.close()]]
    assert [(f["type"], f["code"], f["message"]) for f in frames] == [("RUN_ERROR", *busy_on_thread("http-t", "r2"))]
