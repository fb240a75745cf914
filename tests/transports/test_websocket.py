"""The WebSocket transport, served in process on 127.0.0.1 (a free port), driven by real clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from agui_transports.client import connect_websocket
from agui_transports.websocket import WebSocketServer, parse_address
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from agui_core.machine.client import approve, deny
from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import ResumeEntry, RunAgentInput
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.transports import agents
from tests.transports.agents import GATES, PROGRESS, SENT, TOOLS
from tests.transports.waiting import settled

pytestmark = pytest.mark.anyio

LIMIT = 10.0  # seconds any one test may take: a hang fails instead of blocking the suite


@asynccontextmanager
async def serving(agent: Callable[..., Any], **server_options: Any) -> AsyncIterator[WebSocketServer]:
    async with Host(agent, store=MemoryThreadStore(), tools=TOOLS) as host:
        async with WebSocketServer(host, port=0, **server_options) as server:
            yield server


def start(thread_id: str, run_id: str = "run-1", **props: Any) -> str:
    return encode_input(RunAgentInput(thread_id=thread_id, run_id=run_id, forwarded_props=props or None)).decode()


async def frames_until_end(ws: ClientConnection) -> list[dict[str, Any]]:
    """Frames up to and including the run's RUN_FINISHED or RUN_ERROR."""
    out = []
    while True:
        frame = orjson.loads(await ws.recv())
        out.append(frame)
        if frame["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return out


async def test_a_client_goes_through_interrupt_and_resume() -> None:
    SENT.clear()
    with anyio.fail_after(LIMIT):
        async with serving(agents.approval_agent) as server, connect_websocket(server.url) as client:
            first = await client.collect(client.new_input("cycle", "Send the report"))
            machine = client.machine("cycle")
            assert first[-1].type == "RUN_FINISHED"
            assert [i.reason for i in machine.open_interrupts] == ["tool_call"]
            second = await client.collect(client.resume("cycle", {i.id: approve() for i in machine.open_interrupts}))
            assert [e.type for e in second][:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
            assert machine.result == {"email": "executed"}
            assert not machine.awaiting_input
    assert SENT == [{"to": "ann@example.com", "subject": "Q3 report", "body": ""}]


async def test_several_runs_one_after_another_on_one_connection() -> None:
    with anyio.fail_after(LIMIT):
        async with serving(agents.approval_agent) as server, connect_websocket(server.url) as client:
            for n in range(3):
                thread = f"many-{n}"
                await client.collect(client.new_input(thread, "Send it"))
                answers = {i.id: deny() for i in client.machine(thread).open_interrupts}
                await client.collect(client.resume(thread, answers))
                assert client.machine(thread).result == {"email": "denied"}


async def test_a_second_input_while_a_run_is_in_flight_gets_thread_busy() -> None:
    GATES["busy"] = gate = anyio.Event()
    try:
        with anyio.fail_after(LIMIT):
            async with serving(agents.slow_agent) as server, connect(server.url) as ws:
                await ws.send(start("busy"))
                assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
                await ws.send(start("another-thread", "run-2"))
                frames = []
                while not frames or frames[-1]["type"] != "RUN_ERROR":
                    frames.append(orjson.loads(await ws.recv()))
                assert frames[-1]["code"] == "THREAD_BUSY"
                assert "run-2" in frames[-1]["message"]
                gate.set()
                rest = await frames_until_end(ws)
                assert rest[-1] == {
                    "type": "RUN_FINISHED",
                    "threadId": "busy",
                    "runId": "run-1",
                    "result": {"done": True},
                    "outcome": {"type": "success"},
                }
                # The connection is idle again: the next input runs.
                await ws.send(start("another-thread", "run-3", seconds=0))
                assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"
    finally:
        GATES.pop("busy", None)


async def test_bad_frames_get_invalid_input_and_leave_the_host_and_other_connections_up() -> None:
    GATES["bystander"] = gate = anyio.Event()
    try:
        with anyio.fail_after(LIMIT):
            async with serving(agents.slow_agent, max_size=64 * 1024) as server:
                async with connect(server.url) as bystander, connect(server.url) as ws:
                    await bystander.send(start("bystander"))
                    assert orjson.loads(await bystander.recv())["type"] == "RUN_STARTED"

                    for bad in ("not json", '{"threadId": "t"}', "[1, 2]", b"\x00binary"):
                        await ws.send(bad)
                        error = orjson.loads(await ws.recv())
                        assert error["type"] == "RUN_ERROR" and error["code"] == "INVALID_INPUT", bad
                        assert "Traceback" not in error["message"]
                    await ws.send(start("after-bad-frames", seconds=0))
                    assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"

                    async with connect(server.url, max_size=None) as big:
                        await big.send("x" * (128 * 1024))
                        with pytest.raises(ConnectionClosed) as closed:
                            await big.recv()
                        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009

                    gate.set()
                    assert (await frames_until_end(bystander))[-1]["type"] == "RUN_FINISHED"
                    await ws.send(start("still-up", seconds=0))
                    assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"
    finally:
        GATES.pop("bystander", None)


async def test_an_interrupt_raised_after_the_client_left_is_answered_on_a_new_connection() -> None:
    SENT.clear()
    GATES["left"] = gate = anyio.Event()
    try:
        with anyio.fail_after(LIMIT):
            async with serving(agents.approval_agent) as server:
                async with connect(server.url) as ws:
                    await ws.send(start("left"))
                    assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
                    assert ws.transport is not None
                    ws.transport.abort()  # no closing handshake: the peer just vanishes
                gate.set()
                store = server.host.store
                while not (record := await store.load("left")) or not record.open_interrupts:
                    await anyio.sleep(0.01)
                interrupt = record.open_interrupts[0].interrupt
                assert interrupt.reason == "tool_call" and SENT == []

                async with connect_websocket(server.url) as client:
                    refused = await client.collect(client.new_input("left", "hello again"))
                    assert [(e.type, e.code) for e in refused] == [("RUN_ERROR", "PENDING_INTERRUPTS")]  # type: ignore[union-attr]
                    resume = RunAgentInput(
                        thread_id="left",
                        run_id="run-2",
                        resume=(ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True}),),
                    )
                    events = await client.collect(resume)
                    assert events[-1].type == "RUN_FINISHED"
                    assert client.machine("left").result == {"email": "executed"}
        assert len(SENT) == 1
    finally:
        GATES.pop("left", None)


async def test_a_client_that_lost_the_stream_retries_the_same_run_and_learns_the_interrupt() -> None:
    # The way back for a client that never saw its run end: send the same input again. The run
    # is not run twice; its outcome (with the thread's snapshots) is sent again, so the new
    # connection's ClientMachine knows the open interrupt and can build the resume itself.
    SENT.clear()
    GATES["retry"] = gate = anyio.Event()
    try:
        with anyio.fail_after(LIMIT):
            async with serving(agents.approval_agent) as server:
                async with connect(server.url) as ws:
                    await ws.send(start("retry"))
                    assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
                    assert ws.transport is not None
                    ws.transport.abort()
                gate.set()
                store = server.host.store
                while not (record := await store.load("retry")) or not record.open_interrupts:
                    await anyio.sleep(0.01)

                async with connect_websocket(server.url) as client:
                    retried = RunAgentInput(thread_id="retry", run_id="run-1", forwarded_props={})
                    events = await client.collect(retried)
                    assert [e.type for e in events][-3:] == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
                    (interrupt,) = client.machine("retry").open_interrupts
                    assert interrupt == record.open_interrupts[0].interrupt
                    events = await client.collect(client.resume("retry", {interrupt.id: approve()}))
                    assert events[-1].type == "RUN_FINISHED"
                    assert client.machine("retry").result == {"email": "executed"}
        assert len(SENT) == 1
    finally:
        GATES.pop("retry", None)


async def test_a_slow_reader_backpressures_the_agent_instead_of_buffering() -> None:
    count = 30_000  # about 120 MB of frames, were they all buffered
    with anyio.fail_after(LIMIT):
        async with serving(agents.chatty_agent) as server:
            async with connect(server.url, max_queue=4) as ws:
                await ws.send(start("slow-reader", count=count, size=4000))
                stalled_at = await settled(lambda: PROGRESS.get("slow-reader", 0))
                # Held up by the host's bounded stream, the connection's write buffer and
                # the sockets' buffers: a few MB, not the whole stream.
                assert 0 < stalled_at < 10_000
                for _ in range(500):
                    await ws.recv()
                assert await settled(lambda: PROGRESS["slow-reader"]) > stalled_at
                assert ws.transport is not None
                ws.transport.abort()
            # Nobody listens any more: the run goes on to its end and is saved.
            while (record := await server.host.store.load("slow-reader")) is None or record.active_run is not None:
                await anyio.sleep(0.01)
            assert PROGRESS["slow-reader"] == count


async def test_stopping_lets_the_run_in_flight_finish_then_closes_with_going_away() -> None:
    with anyio.fail_after(LIMIT):
        async with Host(agents.slow_agent, store=MemoryThreadStore()) as host:
            server = WebSocketServer(host, port=0)
            await server.start()
            async with connect(server.url) as ws, connect(server.url) as idle:
                await ws.send(start("draining", seconds=0.3))
                assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
                async with anyio.create_task_group() as group:
                    group.start_soon(server.aclose)
                    with pytest.raises(ConnectionClosed) as idle_closed:
                        await idle.recv()
                    assert idle_closed.value.rcvd is not None and idle_closed.value.rcvd.code == 1001
                    frames = [orjson.loads(await ws.recv())]
                    while frames[-1]["type"] != "RUN_FINISHED":
                        frames.append(orjson.loads(await ws.recv()))
                    with pytest.raises(ConnectionClosed) as closed:
                        await ws.recv()
                    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
                with pytest.raises(OSError):
                    async with connect(server.url, open_timeout=2):
                        pass


async def test_stopping_stops_listening_to_runs_past_the_grace_period() -> None:
    GATES["late"] = gate = anyio.Event()
    try:
        with anyio.fail_after(LIMIT):
            async with Host(agents.slow_agent, store=MemoryThreadStore()) as host:
                server = WebSocketServer(host, port=0, grace=0.2)
                await server.start()
                async with connect(server.url) as ws:
                    await ws.send(start("late"))
                    assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
                    await server.aclose()
                    with pytest.raises(ConnectionClosed):
                        while True:
                            await ws.recv()
                gate.set()  # the run was still going in the host; now it ends
            record = await host.store.load("late")
            assert record is not None and record.active_run is None
    finally:
        GATES.pop("late", None)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        (None, ("127.0.0.1", 8765)),
        ("0.0.0.0:9000", ("0.0.0.0", 9000)),
        ("[::1]:9001", ("::1", 9001)),
        ("localhost", ("localhost", 8765)),
    ],
)
def test_parse_address_reads_host_and_port(address: str | None, expected: tuple[str, int]) -> None:
    assert parse_address(address) == expected


@pytest.mark.parametrize("address", [":80", "host:http", "host:70000"])
def test_parse_address_refuses_what_it_cannot_listen_on(address: str) -> None:
    with pytest.raises(ValueError):
        parse_address(address)
