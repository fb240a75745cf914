"""The transport client: every event checked by the thread's ClientMachine before the caller sees it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing, asynccontextmanager

import anyio
import pytest
from agui_transports.client import Client, ConnectionLost, connect_websocket
from websockets.asyncio.server import ServerConnection, serve

from agui_core.errors import InvalidEventError, OrderingError
from agui_core.machine.client import RunStatus
from agui_core.protocol.events import UnknownEvent

pytestmark = pytest.mark.anyio

LIMIT = 10.0
STARTED = '{"type":"RUN_STARTED","threadId":"t","runId":"run-1"}'
FINISHED = '{"type":"RUN_FINISHED","threadId":"t","runId":"run-1"}'
TEXT = [
    '{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}',
    '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi"}',
    '{"type":"TEXT_MESSAGE_END","messageId":"m"}',
]


@asynccontextmanager
async def scripted(frames: Sequence[str], *, then_close: bool = False) -> AsyncIterator[Client]:
    """A client of a server that answers each input with ``frames`` (then maybe hangs up)."""

    async def answer(connection: ServerConnection) -> None:
        async for _ in connection:
            for frame in frames:
                await connection.send(frame)
            if then_close:
                await connection.close()

    async with serve(answer, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        async with connect_websocket(f"ws://127.0.0.1:{port}") as client:
            yield client


async def test_a_good_stream_is_yielded_up_to_its_end() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, *TEXT, FINISHED]) as client:
            events = await client.collect(client.new_input("t", "hello", run_id="run-1"))
            assert [e.type for e in events] == [
                "RUN_STARTED",
                *(f"TEXT_MESSAGE_{p}" for p in ("START", "CONTENT", "END")),
                "RUN_FINISHED",
            ]
            assert client.machine("t").run_status is RunStatus.FINISHED


async def test_an_event_out_of_order_raises_ordering_error() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, TEXT[1], FINISHED]) as client:
            with pytest.raises(OrderingError):
                await client.collect(client.new_input("t", run_id="run-1"))


async def test_a_frame_that_is_no_event_raises_invalid_event_error() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, '{"type":"TEXT_MESSAGE_START"}']) as client:
            with pytest.raises(InvalidEventError):
                await client.collect(client.new_input("t", run_id="run-1"))


async def test_a_connection_ending_mid_run_raises_connection_lost_and_abandons_the_run() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, *TEXT], then_close=True) as client:
            with pytest.raises(ConnectionLost):
                await client.collect(client.new_input("t", run_id="run-1"))
            assert client.machine("t").run_status is RunStatus.ABANDONED


async def test_a_stream_left_half_read_refuses_further_runs_on_the_connection() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, *TEXT, FINISHED]) as client:
            async with aclosing(client.run(client.new_input("t", run_id="run-1"))) as events:
                async for _ in events:
                    break
            with pytest.raises(RuntimeError, match="half-read"):
                await client.collect(client.new_input("t", run_id="run-2"))


async def test_a_new_input_carries_the_history_and_the_users_text() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([]) as client:
            run_input = client.new_input("t", "hello", forwarded_props={"k": 1})
            assert [m.content for m in run_input.messages] == ["hello"]  # type: ignore[union-attr]
            assert run_input.thread_id == "t" and run_input.run_id.startswith("run-")
            assert run_input.forwarded_props == {"k": 1}


async def test_the_ids_the_client_mints_are_unguessable_uuid4s() -> None:
    # A thread belongs to whoever saves it first: an id a stranger can guess, a stranger can take.
    # What the host receives: the client's thread, run and message ids, 122 random bits each.
    from agui_transports.client import new_thread_id
    from agui_transports.websocket import WebSocketServer

    from agui_core.runtime import Host
    from agui_core.store import MemoryThreadStore
    from tests.transports import agents

    def random_uuid4(text: str) -> bool:
        """Whether ``text`` ends in a whole version 4 UUID: 122 random bits (of 128; 6 say what it is)."""
        tail = text.rsplit("-", 1)[-1]
        value = uuid.UUID(hex=tail)
        return len(tail) == 32 and value.version == 4 and value.variant == uuid.RFC_4122

    thread_ids = {new_thread_id() for _ in range(1000)}
    assert len(thread_ids) == 1000 and all(random_uuid4(t) for t in thread_ids)
    with anyio.fail_after(LIMIT):
        async with Host(agents.approval_agent, store=MemoryThreadStore(), tools=agents.TOOLS) as host:
            async with WebSocketServer(host, port=0) as server, connect_websocket(server.url) as client:
                thread = new_thread_id()
                events = await client.collect(client.new_input(thread, "Send the report"))
            record = await host.store.load(thread)
    assert record is not None and record.thread_id == thread
    assert events[0].type == "RUN_STARTED" and random_uuid4(events[0].run_id)
    (user,) = [m for m in record.messages if m.role == "user"]
    assert random_uuid4(user.id)


# --- several runs on one stream, unknown events (issue 26, item 2) -----------------------------

REPLAYED = [
    '{"type":"RUN_STARTED","threadId":"t","runId":"run-0"}',
    '{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":"earlier"}]}',
    '{"type":"RUN_FINISHED","threadId":"t","runId":"run-0"}',
]


async def test_a_stream_of_several_runs_is_read_to_the_end_of_the_run_asked_for() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([*REPLAYED, STARTED, *TEXT, FINISHED]) as client:
            events = await client.collect(client.new_input("t", run_id="run-1"))
            runs = [(e.type, e.run_id) for e in events if e.type in ("RUN_STARTED", "RUN_FINISHED")]  # type: ignore[union-attr]
            assert runs == [
                ("RUN_STARTED", "run-0"),
                ("RUN_FINISHED", "run-0"),
                ("RUN_STARTED", "run-1"),
                ("RUN_FINISHED", "run-1"),
            ]
            machine = client.machine("t")
            assert [m.id for m in machine.messages] == ["u", "m"]
            assert machine.run_id == "run-1" and machine.run_status is RunStatus.FINISHED


async def test_an_unknown_event_type_never_reaches_the_caller_and_leaves_a_warning() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, '{"type":"FROM_THE_FUTURE","x":1}', FINISHED]) as client:
            events = await client.collect(client.new_input("t", run_id="run-1"))
            assert [e.type for e in events] == ["RUN_STARTED", "RUN_FINISHED"]
            (warning,) = client.machine("t").warnings
            assert warning.rule == "event-unknown" and "FROM_THE_FUTURE" in warning.message


async def test_inputs_declare_the_protocol_version() -> None:
    with anyio.fail_after(LIMIT):
        async with scripted([]) as client:
            assert client.new_input("t", "hello").protocol_version == "1.0"


async def test_unknown_properties_are_stripped_from_what_the_caller_receives() -> None:
    content = '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"hi","fromTheFuture":1}'
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, TEXT[0], content, TEXT[2], FINISHED]) as client:
            events = await client.collect(client.new_input("t", run_id="run-1"))
            assert [dict(e.extra) for e in events if not isinstance(e, UnknownEvent)] == [{}] * 5
            (warning,) = client.machine("t").warnings
            assert warning.rule == "property-unknown" and "/fromTheFuture" in warning.message


async def test_unrecognised_union_members_are_stripped_before_the_caller_sees_them() -> None:
    snapshot = '{"type":"STATE_SNAPSHOT","snapshot":{"n":1}}'
    delta = (
        '{"type":"STATE_DELTA","delta":[{"op":"merge","path":"/n","value":3},{"op":"replace","path":"/n","value":2}]}'
    )
    messages = (
        '{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user",'
        '"content":[{"type":"text","text":"look"},{"type":"hologram","frames":3}]}]}'
    )
    finished = '{"type":"RUN_FINISHED","threadId":"t","runId":"run-1","outcome":{"type":"handoff"}}'
    with anyio.fail_after(LIMIT):
        async with scripted([STARTED, snapshot, delta, messages, finished]) as client:
            events = await client.collect(client.new_input("t", run_id="run-1"))
            shown = {e.type: e for e in events}
            assert list(shown) == ["RUN_STARTED", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
            assert [op["op"] for op in shown["STATE_DELTA"].delta] == ["replace"]  # type: ignore[union-attr]
            (user,) = shown["MESSAGES_SNAPSHOT"].messages  # type: ignore[union-attr]
            assert [part.type for part in user.content] == ["text"]
            assert shown["RUN_FINISHED"].outcome is None  # type: ignore[union-attr]
            machine = client.machine("t")
            assert machine.run_status is RunStatus.FINISHED and machine.state == {"n": 2}
            assert [(w.rule, w.index) for w in machine.warnings] == [
                ("patch-op-unknown", 2),
                ("content-part-unknown", 3),
                ("outcome-unknown", 4),
            ]
