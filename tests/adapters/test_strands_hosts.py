"""The Strands adapter across processes: ``agui serve`` hosts (uvicorn, HTTP + SSE) over one SQLite file.

The Strands agent lives only as long as a run: what a resume needs (the agent's session
snapshot, kept by the thread machine as the interrupts' continuation) is in the store, so a
host that never saw the thread carries the resume out. Tool executions are counted in a file
the served agents append to (they run in other processes).
"""

from __future__ import annotations

import copy
import os
import re
import signal
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

from agui_core.app.cli import load_agent
from agui_core.machine.client import approve, resolve
from tests.adapters.strands_agents import EXECUTIONS_ENV
from tests.adapters.talk import Talk, outcome, refusal

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120.0
CHAINED = "tests.adapters.strands_agents:chained_agent"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def agui_serve(target: str, store: Path, executions: Path) -> AsyncIterator[str]:
    """``agui serve TARGET --http`` on a free port over the SQLite file ``store``; yields its URL."""
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", target,
        "--http", "127.0.0.1:0", "--store", f"sqlite:{store}",
    ]  # fmt: skip
    env = {**os.environ, EXECUTIONS_ENV: str(executions), "OTEL_SDK_DISABLED": "true"}
    process = await anyio.open_process(
        command, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    async with process:
        assert process.stderr is not None
        log = b""
        while not (found := re.search(rb"http://127\.0\.0\.1:(\d+)", log)):
            chunk = await process.stderr.receive()
            log += chunk
        try:
            yield f"http://127.0.0.1:{int(found.group(1))}/"
        finally:
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0


def executed(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


async def test_a_thread_survives_a_restart_of_its_host_between_every_interrupt_and_its_resume(tmp_path: Path) -> None:
    store, executions = tmp_path / "threads.sqlite3", tmp_path / "executions.jsonl"
    with anyio.fail_after(LIMIT):
        async with agui_serve(CHAINED, store, executions) as url, httpx.AsyncClient(base_url=url) as client:
            talk = Talk(client, "restart-1")
            await talk.start()
            (approval,) = talk.open
        first = talk.resume_body({approval.id: approve()})
        async with agui_serve(CHAINED, store, executions) as url, httpx.AsyncClient(base_url=url) as client:
            talk.client = client
            chained = await talk.send(first)
            (question,) = talk.open
            assert question.reason == "input_required"
        async with agui_serve(CHAINED, store, executions) as url, httpx.AsyncClient(base_url=url) as client:
            talk.client = client
            done = await talk.resume({question.id: resolve({"quarter": "Q4", "year": 2026})})
            replay = await talk.post({**copy.deepcopy(first), "runId": "restart-1-replay"})
    assert outcome(done) == {"type": "success"}
    assert [e["content"] for e in done if e["type"] == "TOOL_CALL_RESULT"] == ["filed quarterly for Q4 2026"]
    assert outcome(replay) == outcome(chained)
    assert executed(executions) == [{"tool": "file_report", "kind": "quarterly", "quarter": "Q4", "year": 2026}]


async def test_two_hosts_on_one_store_share_threads_and_run_a_resume_once(tmp_path: Path) -> None:
    store, executions = tmp_path / "threads.sqlite3", tmp_path / "executions.jsonl"
    target = "tests.adapters.strands_agents:parallel_agent"
    with anyio.fail_after(LIMIT):
        async with (
            agui_serve(target, store, executions) as one,
            agui_serve(target, store, executions) as two,
            httpx.AsyncClient(base_url=one) as first,
            httpx.AsyncClient(base_url=two) as second,
        ):
            talk = Talk(first, "two-hosts-1")
            await talk.start()
            body = talk.resume_body({i.id: approve() for i in talk.open})
            other = Talk(second, "two-hosts-1")
            # Rules are the store's, not a process's: the other host refuses a plain input too.
            assert refusal(await other.post({k: v for k, v in body.items() if k != "resume"} | {"runId": "x"})) == (
                "PENDING_INTERRUPTS"
            )
            results: dict[str, list[dict[str, Any]]] = {}

            async def send(name: str, client: httpx.AsyncClient) -> None:
                results[name] = await Talk(client, "two-hosts-1").post(body)

            async with anyio.create_task_group() as group:
                group.start_soon(send, "one", first)
                group.start_soon(send, "two", second)
    finishes = [r for r in results.values() if r[-1]["type"] == "RUN_FINISHED"]
    assert finishes and all(outcome(r) == {"type": "success"} for r in finishes)
    assert all(r[-1].get("code") == "THREAD_BUSY" for r in results.values() if r[-1]["type"] == "RUN_ERROR")
    assert sorted(e["to"] for e in executed(executions)) == ["ann@example.com", "bob@example.com", "cy@example.com"]


def test_agui_serve_takes_a_strands_agent_or_a_factory_and_hosts_it_through_the_adapter() -> None:
    from agui_core.adapters.strands import StrandsAdapter

    for target in ("tests.adapters.strands_agents:template", CHAINED):
        agent, tools = load_agent(target)
        assert isinstance(agent, StrandsAdapter) and tools == ()
    adapter, _ = load_agent("tests.adapters.strands_agents:approval_adapter")
    assert isinstance(adapter, StrandsAdapter)


async def test_serving_an_agent_instance_runs_nothing_at_load_and_threads_start_empty() -> None:
    from agui_transports.http import HttpApp

    from agui_core.adapters.strands import StrandsAdapter
    from agui_core.runtime import Host
    from agui_core.store import MemoryThreadStore
    from tests.adapters import strands_agents as sa

    sa.EXECUTIONS.clear()
    sa.SEEN.clear()
    # A Strands Agent is callable with no arguments; calling it would run the model and its tool.
    agent, tools = load_agent("tests.adapters.strands_agents:ungated_template")
    assert isinstance(agent, StrandsAdapter) and tools == ()
    assert sa.EXECUTIONS == [] and sa.SEEN == []
    assert sa.ungated_template.messages == []
    async with Host(agent, store=MemoryThreadStore()) as host:
        app = HttpApp(host)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            events = await Talk(client, "instance-1").start("mail bob")
    assert outcome(events) == {"type": "success"}
    assert sa.SEEN[0] == [{"role": "user", "content": [{"text": "mail bob"}]}]
    assert sa.EXECUTIONS == [{"tool": "send_email", "to": "bob@example.com", "subject": "Hi"}]
    sa.EXECUTIONS.clear()


def test_a_zero_argument_factory_is_still_called_once_to_see_what_it_builds() -> None:
    from agui_core.adapters.strands import StrandsAdapter
    from tests.adapters import strands_agents as sa

    sa.EXECUTIONS.clear()
    agent, _ = load_agent("tests.adapters.strands_agents:approval_agent")
    assert isinstance(agent, StrandsAdapter) and sa.EXECUTIONS == []


def test_serving_a_plain_agent_does_not_import_strands() -> None:
    code = (
        "import sys; from agui_core.app.cli import load_agent; "
        "load_agent('agui_core.examples.assistant:assistant'); print(sorted(m for m in sys.modules if 'strands' in m))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_factory_that_imports_strands_itself_is_recognised() -> None:
    code = (
        "import sys; from agui_core.app.cli import load_agent; "
        "assert 'strands' not in sys.modules; "
        "agent, _ = load_agent('scripts.reference_conformance:strands_agent'); print(type(agent).__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "StrandsAdapter"
