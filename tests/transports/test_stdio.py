"""The stdio transport, as a real ``agui serve --stdio`` process and in process over pipes."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import orjson
import pytest
from agui_transports.client import open_stdio_client
from agui_transports.stdio import serve_json_lines, serve_stdio

from agui_core.machine.client import approve
from agui_core.protocol.codec import decode_event, encode_input
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.transports import agents
from tests.transports.pipes import pipes
from tests.transports.waiting import settled

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 15.0  # seconds any one test may take: a hang fails instead of blocking the suite


def serve_command(target: str, *extra: str, store: str = "memory") -> list[str]:
    return [
        sys.executable,
        "-m",
        "agui_core.app.cli",
        "serve",
        f"tests.transports.agents:{target}",
        "--stdio",
        "--store",
        store,
        *extra,
    ]


def line(thread_id: str, run_id: str = "run-1", **props: Any) -> bytes:
    return encode_input(RunAgentInput(thread_id=thread_id, run_id=run_id, forwarded_props=props or None)) + b"\n"


def run_process(target: str, stdin: bytes, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(serve_command(target, *extra), input=stdin, capture_output=True, cwd=ROOT, timeout=LIMIT)


async def test_a_process_goes_through_interrupt_and_resume(tmp_path: Path) -> None:
    with anyio.fail_after(LIMIT), (tmp_path / "stderr").open("wb") as stderr:
        async with open_stdio_client(serve_command("approval_agent"), cwd=str(ROOT), stderr=stderr.fileno()) as client:
            first = await client.collect(client.new_input("cycle", "Send the report"))
            machine = client.machine("cycle")
            assert first[-1].type == "RUN_FINISHED" and machine.awaiting_input
            second = await client.collect(client.resume("cycle", {i.id: approve() for i in machine.open_interrupts}))
            assert second[1].type == "TOOL_CALL_RESULT"
            assert machine.result == {"email": "executed"}
        assert client.connection.process.returncode == 0  # type: ignore[attr-defined]


async def test_an_interrupt_saved_by_one_process_is_answered_in_the_next(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'threads.sqlite3'}"
    command = serve_command("approval_agent", store=store)
    with anyio.fail_after(LIMIT), (tmp_path / "stderr").open("wb") as stderr:
        async with open_stdio_client(command, cwd=str(ROOT), stderr=stderr.fileno()) as first:
            await first.collect(first.new_input("durable", "Send the report"))
            resume = first.resume("durable", {i.id: approve() for i in first.machine("durable").open_interrupts})
        async with open_stdio_client(command, cwd=str(ROOT), stderr=stderr.fileno()) as second:
            events = await second.collect(resume)
            assert second.machine("durable").result == {"email": "executed"}
            assert [e.type for e in events][:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]


def test_malformed_lines_each_get_one_invalid_input_line_and_serving_goes_on() -> None:
    too_long = b'{"threadId": "' + b"x" * 5000 + b'"}\n'
    stdin = b"not json\n" + b'{"threadId": "t"}\n' + b"\xff\xfe\n" + too_long + b"\n  \n" + line("fine", seconds=0)
    done = run_process("slow_agent", stdin, "-o", "max_line=1000")
    assert done.returncode == 0, done.stderr.decode()
    frames = [orjson.loads(raw) for raw in done.stdout.splitlines()]
    errors, run = frames[:4], frames[4:]
    assert [(e["type"], e["code"]) for e in errors] == [("RUN_ERROR", "INVALID_INPUT")] * 4
    assert "1000 bytes" in errors[3]["message"]
    assert not any("Traceback" in e["message"] for e in errors)
    assert run[0]["type"] == "RUN_STARTED" and run[-1]["type"] == "RUN_FINISHED"


def test_end_of_input_ends_the_process_after_the_runs_already_sent() -> None:
    # Input ends at once, while the first run still has half a second to go.
    done = run_process("slow_agent", line("a", seconds=0.5) + line("b", seconds=0))
    assert done.returncode == 0, done.stderr.decode()
    ends = [
        (f["threadId"], f["type"]) for f in map(orjson.loads, done.stdout.splitlines()) if f["type"].startswith("RUN_")
    ]
    assert ends == [("a", "RUN_STARTED"), ("a", "RUN_FINISHED"), ("b", "RUN_STARTED"), ("b", "RUN_FINISHED")]


def test_standard_output_carries_events_only() -> None:
    done = run_process("noisy_agent", line("noisy"))
    assert done.returncode == 0
    assert [decode_event(raw).type for raw in done.stdout.splitlines()][-1] == "RUN_FINISHED"
    assert b"a stray print from the agent" in done.stderr
    assert b"a log line from the agent" in done.stderr


async def test_sigterm_lets_the_run_in_flight_finish_and_exits_0(tmp_path: Path) -> None:
    with anyio.fail_after(LIMIT), (tmp_path / "stderr").open("wb") as stderr:
        process = await anyio.open_process(
            serve_command("slow_agent"),
            cwd=str(ROOT),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr.fileno(),
        )
        async with process:
            assert process.stdin is not None and process.stdout is not None
            await process.stdin.send(line("term", seconds=0.5))
            received = b""
            while b"RUN_STARTED" not in received:
                received += await process.stdout.receive()
            process.send_signal(signal.SIGTERM)
            async for chunk in process.stdout:  # to the end of the output: the process ends
                received += chunk
            assert await process.wait() == 0
    frames = [orjson.loads(raw) for raw in received.splitlines()]
    assert frames[-1]["type"] == "RUN_FINISHED" and frames[-1]["result"] == {"done": True}


async def test_serve_json_lines_answers_in_order_over_any_byte_streams() -> None:
    to_server_send, to_server = anyio.create_memory_object_stream[bytes](16)
    from_server, from_server_receive = anyio.create_memory_object_stream[bytes](256)
    with anyio.fail_after(LIMIT):
        async with to_server_send, to_server, from_server, from_server_receive:
            async with Host(agents.approval_agent, store=MemoryThreadStore(), tools=agents.TOOLS) as host:
                # Chunks that cut lines anywhere, as a pipe may deliver them.
                data = b"oops\n" + line("mem") + line("mem", "run-2")
                for start in range(0, len(data), 7):
                    await to_server_send.send(data[start : start + 7])
                await to_server_send.aclose()
                await serve_json_lines(host, to_server, from_server)
            from_server.close()
            out = b"".join([chunk async for chunk in from_server_receive])
    frames = [orjson.loads(raw) for raw in out.splitlines()]
    assert frames[0]["code"] == "INVALID_INPUT"
    assert frames[-2]["type"] == "RUN_FINISHED" and frames[-2]["outcome"]["type"] == "interrupt"
    # The second input on the thread answers nothing while the interrupt is open.
    assert frames[-1] == {"type": "RUN_ERROR", "message": frames[-1]["message"], "code": "PENDING_INTERRUPTS"}


async def test_serve_json_lines_stops_reading_once_told_to_stop() -> None:
    to_server_send, to_server = anyio.create_memory_object_stream[bytes](16)
    from_server, from_server_receive = anyio.create_memory_object_stream[bytes](256)
    stop = anyio.Event()
    with anyio.fail_after(LIMIT):
        async with to_server_send, to_server, from_server, from_server_receive:
            async with Host(agents.slow_agent, store=MemoryThreadStore()) as host:
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: serve_json_lines(host, to_server, from_server, stop=stop))
                    await to_server_send.send(line("stopping", seconds=0.2))
                    assert b"RUN_STARTED" in await from_server_receive.receive()
                    stop.set()
                    await to_server_send.send(line("never", seconds=0))  # not read: serving stops
            from_server.close()
            out = b"".join([chunk async for chunk in from_server_receive])
    assert out.splitlines()[-1].startswith(b'{"type":"RUN_FINISHED","threadId":"stopping"')
    assert b"never" not in out


async def test_a_slow_reader_of_the_output_backpressures_the_agent() -> None:
    count = 20_000  # about 20 MB of lines, were they all buffered
    with pipes() as (stdin, stdout, feed, drain):
        with anyio.fail_after(LIMIT):
            async with Host(agents.chatty_agent, store=MemoryThreadStore()) as host:
                async with anyio.create_task_group() as group:
                    group.start_soon(lambda: serve_stdio(host, stdin=stdin, stdout=stdout))
                    feed.write(line("stdout-slow", count=count, size=1000))
                    feed.close()  # end of input: serving ends once the run is done
                    stalled_at = await settled(lambda: agents.PROGRESS.get("stdout-slow", 0))
                    # Held up by the host's bounded stream, the writer's pending bytes and
                    # the pipe: about 2 MB, not the whole stream.
                    assert 0 < stalled_at < 5_000
                    received = await anyio.to_thread.run_sync(read_until, drain, b'"RUN_FINISHED"')
        assert received.count(b"\n") == count + 2
        assert agents.PROGRESS["stdout-slow"] == count


def read_until(file: BinaryIO, marker: bytes) -> bytes:
    received = bytearray()
    while marker not in received[-4096:]:
        chunk = file.read(1 << 16)
        assert chunk, "the output ended early"
        received += chunk
    while not received.endswith(b"\n"):
        received += file.read(1 << 16)
    return bytes(received)
