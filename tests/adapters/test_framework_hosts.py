"""The OpenAI Agents SDK and Pydantic AI adapters across processes: ``agui serve MODULE:AGENT``
over one SQLite file, the same tests for each framework.

``agui serve`` takes the framework's agent object itself (``agents.Agent``, ``pydantic_ai.Agent``).
Its resumable state (the SDK's ``RunState``, Pydantic AI's message history) is kept by the thread
machine with the interrupts, in the store, so a host that never saw the thread carries the resume
out; and the interrupt contract holds from outside (``agui conformance``). Tool executions are
counted in a file the served agents append to (they run in other processes).
"""

from __future__ import annotations

import importlib
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
import attrs
import httpx
import orjson
import pytest

from agui_core.app.cli import load_agent
from agui_core.conformance import Options, Status, run_conformance, transport_for
from agui_core.machine.client import approve, cancel
from tests.adapters.talk import Talk, of, outcome

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 120.0


@attrs.frozen
class Framework:
    module: str  # the test agents' module: its ``parallel`` agent and its EXECUTIONS_ENV
    adapter: str  # the adapter class agui serve wraps the agent in, as MODULE:CLASS
    attribute: str  # where the adapter keeps the framework's own agent

    @property
    def parallel(self) -> str:
        return f"{self.module}:parallel"

    @property
    def executions_env(self) -> str:
        return str(importlib.import_module(self.module).EXECUTIONS_ENV)


FRAMEWORKS = [
    Framework("tests.adapters.openai_sdk_agents", "agui_core.adapters.openai_agents:OpenAIAgentsAdapter", "sdk_agent"),
    Framework(
        "tests.adapters.pydantic_ai_agents", "agui_core.adapters.pydantic_ai:PydanticAIAdapter", "pydantic_agent"
    ),
]


@pytest.fixture(params=FRAMEWORKS, ids=["openai-agents", "pydantic-ai"])
def framework(request: pytest.FixtureRequest) -> Framework:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def agui_serve(framework: Framework, store: Path, executions: Path) -> AsyncIterator[str]:
    """``agui serve TARGET --http`` on a free port over the SQLite file ``store``; yields its URL."""
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", framework.parallel,
        "--http", "127.0.0.1:0", "--store", f"sqlite:{store}",
    ]  # fmt: skip
    env = {**os.environ, framework.executions_env: str(executions)}
    process = await anyio.open_process(
        command, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    async with process:
        assert process.stderr is not None
        log = b""
        while not (found := re.search(rb"http://127\.0\.0\.1:(\d+)", log)):
            log += await process.stderr.receive()
        try:
            yield f"http://127.0.0.1:{int(found.group(1))}/"
        finally:
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0


def executed(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def test_agui_serve_takes_the_frameworks_agent_and_hosts_it_through_the_adapter(framework: Framework) -> None:
    module, name = framework.adapter.split(":")
    agent, tools = load_agent(framework.parallel)
    assert isinstance(agent, getattr(importlib.import_module(module), name)) and tools == ()
    assert getattr(agent, framework.attribute).name == "parallel"


async def test_parallel_approvals_survive_a_restart_of_the_host_and_the_approved_tool_runs_once(
    framework: Framework, tmp_path: Path
) -> None:
    store, executions = tmp_path / "threads.sqlite3", tmp_path / "executions.jsonl"
    with anyio.fail_after(LIMIT):
        async with agui_serve(framework, store, executions) as url, httpx.AsyncClient(base_url=url) as client:
            talk = Talk(client, "restart-1")
            await talk.start()
            bob, ann = talk.open
        body = talk.resume_body({bob.id: approve(), ann.id: cancel()})
        # A second host process over the same SQLite file: it never saw the thread.
        async with agui_serve(framework, store, executions) as url, httpx.AsyncClient(base_url=url) as client:
            talk.client = client
            done = await talk.send(body)
            replay = await talk.post({**body, "runId": "restart-1-replay"})
    assert outcome(done) == {"type": "success"}
    assert [(e["toolCallId"], e["content"]) for e in of(done, "TOOL_CALL_RESULT")] == [
        (bob.tool_call_id, "sent to bob@example.com: Hi")
    ]
    assert outcome(replay) == outcome(done) and replay[-1]["result"] == done[-1]["result"]
    assert executed(executions) == [
        {"tool": "look_up", "name": "Cy"},
        {"tool": "send_email", "to": "bob@example.com", "subject": "Hi"},
    ]


async def test_agui_conformance_passes_against_agui_serve_of_the_agent(framework: Framework, tmp_path: Path) -> None:
    store, executions = tmp_path / "threads.sqlite3", tmp_path / "executions.jsonl"
    with anyio.fail_after(LIMIT):
        async with agui_serve(framework, store, executions) as url:
            probe = transport_for(url)
            try:
                report = await run_conformance(probe, Options(prompt="Email Bob and Ann.", timeout=20.0, approve=True))
            finally:
                await probe.aclose()
    assert not report.failed, report.table()
    not_applicable = {r.spec.id for r in report.results if r.status is Status.NOT_APPLICABLE}
    # The agent sets no expiresAt (no ttl): only the expiry checks have nothing to test.
    assert not_applicable == {"run.expires-at", "r7.expired"}, report.table()


def test_serving_a_plain_agent_imports_neither_framework() -> None:
    code = (
        "import sys; from agui_core.app.cli import load_agent; "
        "load_agent('agui_core.examples.assistant:assistant'); "
        "print(sorted(m for m in ('agents', 'pydantic_ai') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
