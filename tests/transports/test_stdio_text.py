"""Streamed text through the stdio transport, over OS pipes and over files.

``TextStream.delta`` hands a delta over without building its event when the rules plainly
allow it (:meth:`~agui_core.machine.thread.ThreadMachine.take_text_delta`), and the stdio
transport writes those deltas straight from their strings. Whatever the way, what goes out,
what is refused and what the thread keeps are what ``ctx.emit`` of each event gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import orjson
import pytest
from agui_transports.stdio import serve_stdio

from agui_core.machine.record import ThreadRecord
from agui_core.protocol.codec import encode_event, encode_input
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.transports import agents
from tests.transports.pipes import pipes
from tests.transports.waiting import settled

pytestmark = pytest.mark.anyio

LIMIT = 30.0  # seconds any one test may take: a hang fails instead of blocking the suite


def line(thread_id: str, **props: Any) -> bytes:
    return encode_input(RunAgentInput(thread_id=thread_id, run_id=f"run-{thread_id}", forwarded_props=props)) + b"\n"


def read_all(file: BinaryIO) -> bytes:
    received = bytearray()
    while chunk := file.read(1 << 16):
        received += chunk
    return bytes(received)


async def serve_lines(*lines: bytes) -> list[bytes]:
    """What ``serve_stdio`` writes, over OS pipes, for ``lines`` (then end of input)."""
    out, _ = await serve_and_load("", *lines)
    return out


async def serve_and_load(thread_id: str, *lines: bytes) -> tuple[list[bytes], ThreadRecord | None]:
    """:func:`serve_lines`, and the record of ``thread_id`` its host saved."""
    out: list[bytes] = []
    with pipes() as (stdin, stdout, feed, drain), anyio.fail_after(LIMIT):

        def feed_all() -> None:
            feed.write(b"".join(lines))
            feed.close()

        async def drain_all() -> None:
            out.extend((await anyio.to_thread.run_sync(read_all, drain)).splitlines())

        async with Host(agents.streaming_agent, store=MemoryThreadStore()) as host:
            async with anyio.create_task_group() as group:
                group.start_soon(anyio.to_thread.run_sync, feed_all)
                group.start_soon(drain_all)
                await serve_stdio(host, stdin=stdin, stdout=stdout)
                stdout.close()  # the output ends: the reader sees the end
            record = await host.store.load(thread_id) if thread_id else None
    return out, record


async def test_streamed_text_goes_out_as_the_events_it_stands_for() -> None:
    fast, fast_record = await serve_and_load("t", line("t", count=500))
    emitted, emit_record = await serve_and_load("t", line("t", count=500, via="emit"))
    assert fast == emitted  # byte for byte, escapes and all
    deltas = [orjson.loads(raw)["delta"] for raw in fast if b'"TEXT_MESSAGE_CONTENT"' in raw]
    expected = [agents.DELTAS[n % len(agents.DELTAS)] for n in range(500)]
    assert deltas == [*expected, "and a second message"]
    custom = next(n for n, raw in enumerate(fast) if b'"type":"CUSTOM"' in raw)
    assert custom == 2 + 251  # in its place: after RUN_STARTED, TEXT_MESSAGE_START and the deltas before it
    assert fast_record is not None and emit_record is not None
    assert fast_record.messages == emit_record.messages  # the thread keeps the same transcript
    assert fast_record.messages[-2].content == "".join(expected)


async def test_each_event_of_streamed_text_is_encoded_as_encode_event_writes_it() -> None:
    # The events an in-process caller takes one by one, encoded, are the lines the transport writes.
    async with Host(agents.streaming_agent, store=MemoryThreadStore()) as host:
        events = [
            e async for e in host.run(RunAgentInput(thread_id="t", run_id="run-t", forwarded_props={"count": 300}))
        ]
    assert [encode_event(e) for e in events] == await serve_lines(line("t", count=300))


@pytest.mark.parametrize("late", ["ended", "unknown"])
async def test_a_delta_out_of_order_is_refused_as_its_event_would_be(late: str) -> None:
    fast = await serve_lines(line("late", count=100, late=late))
    emitted = await serve_lines(line("late", count=100, late=late, via="emit"))
    assert fast == emitted
    error = orjson.loads(fast[-1])
    assert error["type"] == "RUN_ERROR" and error["code"] == "AGENT_ERROR"
    assert "text-message-not-open" in error["message"] or "which is not open" in error["message"]
    assert b"too late" not in b"".join(fast) and b"to nowhere" not in b"".join(fast)


async def test_a_slow_reader_of_streamed_text_backpressures_the_agent() -> None:
    count = 200_000  # deltas of 50 characters: about 20 MB of lines, were they all buffered
    with pipes() as (stdin, stdout, feed, drain), anyio.fail_after(LIMIT):
        async with Host(agents.streaming_agent, store=MemoryThreadStore()) as host:
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: serve_stdio(host, stdin=stdin, stdout=stdout))
                feed.write(line("slow", count=count, size=50))
                feed.close()
                stalled_at = await settled(lambda: agents.PROGRESS.get("slow", 0))
                # Held up by the host's stream (256 bursts of at most 32 deltas), the batch
                # taken from it (as many), the writer's pending megabyte and the batch it
                # writes, and the pipe: about 5 MB, not the whole stream.
                assert 0 < stalled_at < 60_000
                received = await anyio.to_thread.run_sync(read_all_of_run, drain)
    assert received.count(b"\n") == count + 8  # RUN_STARTED, 2 x (START, END), CUSTOM, the second delta, RUN_FINISHED
    assert agents.PROGRESS["slow"] == count


def read_all_of_run(file: BinaryIO) -> bytes:
    received = bytearray()
    while b'"RUN_FINISHED"' not in received[-4096:]:
        chunk = file.read(1 << 16)
        assert chunk, "the output ended early"
        received += chunk
    return bytes(received)


async def test_a_closed_output_stops_serving_and_the_run_goes_on_and_is_saved() -> None:
    store = MemoryThreadStore()
    with pipes() as (stdin, stdout, feed, drain), anyio.fail_after(LIMIT):
        async with Host(agents.streaming_agent, store=store) as host:
            feed.write(line("gone", count=50_000, size=50) + line("never"))
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: serve_stdio(host, stdin=stdin, stdout=stdout))
                first = await anyio.to_thread.run_sync(drain.read, 1 << 16)
                assert first.startswith(b'{"type":"RUN_STARTED"')
                drain.close()  # the reader goes away mid-run
            # serve_stdio returned (its output broke) without reading the second input.
            while (record := await store.load("gone")) is None or record.active_run is not None:
                await anyio.sleep(0.01)
            assert await store.load("never") is None
    assert agents.PROGRESS["gone"] == 50_000
    assert record.messages[-2].content == "x" * 50 * 50_000


async def test_files_that_are_not_pipes_are_served_too(tmp_path: Path) -> None:
    # A regular file cannot be waited on by the event loop: read and written by threads.
    (tmp_path / "in").write_bytes(line("file", count=200))
    with anyio.fail_after(LIMIT), (tmp_path / "in").open("rb") as stdin, (tmp_path / "out").open("wb") as stdout:
        async with Host(agents.streaming_agent, store=MemoryThreadStore()) as host:
            await serve_stdio(host, stdin=stdin, stdout=stdout)
    assert (tmp_path / "out").read_bytes().splitlines() == await serve_lines(line("file", count=200))
