"""Issue 23, item 4: one client growing a host by the megabyte, through a real ``agui serve``.

A hostile client sends one thread input after input of about 1 MiB each: 1,999 short messages
(under the 2,000 an input may carry), inside today's frame limit, as fast as the host takes
them. Before, on SQLite, each save re-encoded the whole thread into a list holding one 4 KiB
orjson buffer per message, in a worker thread whose glibc arena kept the peak for good: 15
such inputs of 19,000 messages took the host from 39 MB to 1.3 GB, and nothing bounded what a
thread could hold on any store.

- ``test_a_host_under_forty_megabyte_inputs_stays_small``, on SQLite, PostgreSQL and memory:
  the first five inputs fill the thread to its default limit of 10,000 messages, the other 35
  get ``THREAD_TOO_LARGE``, and the host's peak memory (``VmHWM`` of the server process, read
  from ``/proc``) stays under :data:`ALLOWANCE` above what it had after a first small input.
  The long form (``--long`` or ``AGUI_LONG=1``) lifts the limits (``0``): all 40 inputs are
  taken (80,000 messages, 40 MB of JSON) and the peak must stay under :data:`LONG_ALLOWANCE`.
- ``test_a_full_thread_refuses_messages_and_still_takes_its_resume``: ``--max-thread-bytes``
  through the command line; a refused input changes nothing stored, and the full thread still
  takes the resume that answers it and inputs that add nothing.

An input refused ``RATE_LIMITED`` (a transport's input budget) is sent again a little later: the
client is hostile, not careless, so the test means the same under any rate limit.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import orjson
import pytest
from websockets.asyncio.client import connect

from agui_core.runtime import Host
from tests.e2e.size_agent import agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
INPUTS = 40
MESSAGES = 1_999
"""Messages an input carries: one fewer than the 2,000 an input may carry."""
CONTENT = 470
"""Characters of each message's text: an input of 1,999 is about 1 MB (under the 1 MiB frame)."""
MiB = 1024 * 1024
ALLOWANCE = 64 * MiB
"""How far the host's peak may rise above its start: the full thread holds 10,000 messages of
about 500 bytes, 5 MB as JSON and about four times that as objects (the store's remembered
record, and a second copy while a machine works on it), each input decodes 1 MB into 2,000
more, and the rest is the allocators' slack. Before, on SQLite, it rose by 300 MB and more."""
LONG_ALLOWANCE = 400 * MiB
"""The long form's bound, limits lifted: 80,000 messages, 40 MB as JSON, held as objects by the
store and by the machine of each input. Before, on SQLite: over a gigabyte."""
LIMIT = 240.0  # seconds for a whole test: a hang fails, it does not block


def peak_bytes(pid: int) -> int:
    """The most memory the process has held at once (``VmHWM``), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def message(thread: str, n: int, k: int) -> dict[str, Any]:
    return {"id": f"{thread}-{n}-{k}", "role": "user", "content": f"{n}/{k} " + "lorem ipsum " * (CONTENT // 12)}


def big_input(thread: str, n: int, *, messages: int = MESSAGES, **rest: Any) -> dict[str, Any]:
    frame = {
        "threadId": thread,
        "runId": f"{thread}-run-{n}",
        "state": {},
        "messages": [message(thread, n, k) for k in range(messages)],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    frame.update(rest)
    return frame


@asynccontextmanager
async def served(store: str, *flags: str) -> AsyncIterator[tuple[str, anyio.abc.Process]]:
    """``agui serve`` of the size agent over ``store`` (port 0): its URL and process, stopped by PID."""
    log = bytearray()

    async def drain(stream: anyio.abc.ByteReceiveStream) -> None:
        async for chunk in stream:
            log.extend(chunk)

    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.e2e.size_agent:agent",
        "--ws", "127.0.0.1:0", "--store", store, "--grace", "2", "--rate-limit", "0", *flags,
    ]  # fmt: skip
    process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    async with process, anyio.create_task_group() as group:
        assert process.stderr is not None
        group.start_soon(drain, process.stderr)
        try:
            with anyio.fail_after(30):
                while not (found := re.search(rb"ws://127\.0\.0\.1:(\d+)", log)):
                    assert process.returncode is None, log.decode(errors="replace")
                    await anyio.sleep(0.02)
            yield f"ws://127.0.0.1:{int(found.group(1))}", process
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(15):
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)
                    await process.wait()
            if process.returncode is None:
                process.kill()
            group.cancel_scope.cancel()


async def send(url: str, frame: dict[str, Any]) -> list[dict[str, Any]]:
    """Send ``frame`` on a connection of its own; the frames that answer it, to the run's end.

    Sent again, a little later, while a transport refuses it ``RATE_LIMITED``.
    """
    data = orjson.dumps(frame)
    assert len(data) < MiB, len(data)
    while True:
        async with connect(url, max_size=None, open_timeout=10, ping_interval=None, close_timeout=1) as websocket:
            await websocket.send(data.decode())
            out: list[dict[str, Any]] = []
            while True:
                event = orjson.loads(await websocket.recv())
                out.append(event)
                if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                    break
        if out[-1].get("code") != "RATE_LIMITED":
            return out
        await anyio.sleep(0.25)


def outcome(frames: Sequence[dict[str, Any]]) -> str:
    """``ok`` for a run that finished, else the code of a lone ``RUN_ERROR`` (nothing ran)."""
    last = frames[-1]
    if last["type"] == "RUN_FINISHED":
        assert frames[0]["type"] == "RUN_STARTED"
        return "ok"
    assert len(frames) == 1 and last["type"] == "RUN_ERROR", frames
    assert "Traceback" not in last["message"]
    return str(last["code"])


@pytest.fixture(params=["sqlite", "postgresql", "memory"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'size.sqlite3'}"
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    return "memory"


async def test_a_host_under_forty_megabyte_inputs_stays_small(
    store_spec: str, long_form: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ("--max-thread-messages", "0", "--max-thread-bytes", "0") if long_form else ()
    with anyio.fail_after(LIMIT * (3 if long_form else 1)):
        async with served(store_spec, *flags) as (url, process):
            assert outcome(await send(url, big_input("warm", 0, messages=1))) == "ok"
            start = peak_bytes(process.pid)
            outcomes = []
            for n in range(INPUTS):
                outcomes.append(outcome(await send(url, big_input("big", n))))
            peak = peak_bytes(process.pid)
    with capsys.disabled():
        print(
            f"\n{store_spec.partition(':')[0]}: {INPUTS} inputs of {MESSAGES} messages, {outcomes.count('ok')} taken;"
            f" host peak {start / MiB:.0f} MiB -> {peak / MiB:.0f} MiB"
        )
    if long_form:
        assert outcomes == ["ok"] * INPUTS
        assert peak - start < LONG_ALLOWANCE
    else:
        # 5 x (1,999 + the agent's answer) = 10,000 messages: full; the other 35 are refused.
        assert outcomes == ["ok"] * 5 + ["THREAD_TOO_LARGE"] * (INPUTS - 5)
        assert peak - start < ALLOWANCE


async def test_a_full_thread_refuses_messages_and_still_takes_its_resume(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'full.sqlite3'}"
    limit = 3_000_000  # bytes: three inputs of about 1 MB do not fit, two do
    with anyio.fail_after(LIMIT):
        async with served(store, "--max-thread-messages", "0", "--max-thread-bytes", str(limit)) as (url, _):
            http = url.replace("ws://", "http://")
            async with httpx.AsyncClient(timeout=30) as client:

                async def stored() -> dict[str, Any]:
                    response = await client.get(f"{http}/threads/full")
                    assert response.status_code == 200, response.text
                    return dict(response.json())

                assert [outcome(await send(url, big_input("full", n))) for n in range(2)] == ["ok", "ok"]
                (refused,) = await send(url, big_input("full", 2))
                assert refused["code"] == "THREAD_TOO_LARGE"
                assert "'full'" in refused["message"] and f"limit of {limit} bytes" in refused["message"]
                # An input that adds nothing is taken: here one that ends on a question.
                asked = await send(url, big_input("full", 3, messages=0, forwardedProps={"confirm": True}))
                assert asked[-1]["outcome"]["type"] == "interrupt"
                (question,) = asked[-1]["outcome"]["interrupts"]
                before = await stored()
                assert before["state"] == "interrupted" and len(before["messages"]) == 2 * (MESSAGES + 1)
                yes = [{"interruptId": question["id"], "status": "resolved", "payload": True}]
                # The resume that would bring another megabyte is refused, and nothing changes ...
                (refused,) = await send(url, big_input("full", 4, resume=yes))
                assert refused["code"] == "THREAD_TOO_LARGE"
                assert await stored() == before
                # ... and the same answer without it, or with the history the thread already has, is taken.
                history = [message("full", 0, k) for k in range(MESSAGES)]
                answered = await send(url, big_input("full", 5, messages=0, resume=yes) | {"messages": history})
                assert answered[-1]["type"] == "RUN_FINISHED" and answered[-1]["outcome"]["type"] == "success"
                assert (await stored())["state"] == "idle"
                (refused,) = await send(url, big_input("full", 6))
                assert refused["code"] == "THREAD_TOO_LARGE"
                assert outcome(await send(url, big_input("full", 7, messages=0))) == "ok"


def test_a_thread_limit_that_is_not_a_number_of_one_or_more_is_refused_at_start(tmp_path: Path) -> None:
    for flag in ("--max-thread-messages", "--max-thread-bytes"):
        done = subprocess.run(
            [sys.executable, "-m", "agui_core.app.cli", "serve", "tests.e2e.size_agent:agent", "--ws", "127.0.0.1:0",
             "--store", f"sqlite:{tmp_path / 'never.sqlite3'}", flag, "-5"],
            cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [f"agui serve: {flag} -5 is negative (0 means no limit)"]
    for name in ("max_thread_messages", "max_thread_bytes"):
        with pytest.raises(ValueError, match="1 or more, or None for no limit"):
            Host(agent, **{name: 0})
    assert not os.path.exists(tmp_path / "never.sqlite3")
