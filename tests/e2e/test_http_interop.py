"""End to end: the stock ``@ag-ui/client`` 1.0.0 ``HttpAgent`` (Node, no bridge, no patch)
against a real ``agui serve ... --http`` process (uvicorn on a free port).

One journey (``tests/interop/node/http_agent.cjs``): an interrupting run; a plain input the
client itself refuses while interrupts are pending, and the same input from a client that
forgot them, refused by the host (``RUN_ERROR PENDING_INTERRUPTS``); the resume
``buildResumeArray`` builds, whose ``TOOL_CALL_RESULT`` comes on the original ``toolCallId``;
the same resume again (a replay: the tool does not run twice); and a page reload that finds
the pending interrupts through ``GET /threads/{id}`` and answers them. Every run's events
pass ``enforceEvents`` + ``verifyEvents``. Tool executions are counted in a file the served
agent writes (it runs in another process). Node is required: without it the test fails.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from agui_core.protocol.validation import validate_capabilities
from tests.e2e.http_agent import EXECUTIONS_ENV
from tests.interop.nodebridge import node_http_agent

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 90.0
APPROVE = {"status": "resolved", "payload": {"approved": True}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_stock_http_agent_runs_the_whole_interrupt_journey(tmp_path: Path) -> None:
    executions = tmp_path / "executions.jsonl"
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.e2e.http_agent:approval_agent",
        "--http", "127.0.0.1:0", "--store", f"sqlite:{tmp_path / 'threads.sqlite3'}",
    ]  # fmt: skip
    env = {**os.environ, EXECUTIONS_ENV: str(executions)}
    with anyio.fail_after(LIMIT):
        process = await anyio.open_process(
            command, cwd=str(ROOT), env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        async with process:
            assert process.stderr is not None
            log = b""
            while not (found := re.search(rb"http://127\.0\.0\.1:(\d+)", log)):
                chunk = await process.stderr.receive()
                log += chunk
            url = f"http://127.0.0.1:{int(found.group(1))}/"
            request = {
                "url": url,
                "threadId": "journey",
                "reloadThreadId": "reloaded",
                "forwardedProps": {},
                "answers": [APPROVE],
            }
            journey = await anyio.to_thread.run_sync(node_http_agent, request)
            async with httpx.AsyncClient(base_url=url) as client:
                capabilities = (await client.get("capabilities")).json()
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0

    assert journey["ok"], journey["error"]
    assert journey["warnings"] == []
    steps: dict[str, Any] = journey["steps"]
    for name, step in steps.items():
        assert step["verified"]["ok"], f"{name}: {step['verified']['error']}"
        assert step["verified"]["count"] == len(step["events"]), name

    interrupted = steps["interrupted"]
    assert interrupted["error"] is None
    last = interrupted["events"][-1]
    assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "interrupt"
    (interrupt,) = last["outcome"]["interrupts"]
    assert interrupt["reason"] == "tool_call"
    proposed = [e["toolCallId"] for e in interrupted["events"] if e["type"] == "TOOL_CALL_START"]
    assert proposed == [interrupt["toolCallId"]]
    assert interrupted["pending"] == [interrupt]

    # The client refuses a plain input itself: nothing is sent.
    assert "pending interrupt" in steps["clientRefused"]["error"] and steps["clientRefused"]["inputs"] == []
    # A client that forgot the interrupts sends it, and the host refuses it.
    server_refused = steps["serverRefused"]
    assert [(e["type"], e["code"]) for e in server_refused["events"]] == [("RUN_ERROR", "PENDING_INTERRUPTS")]
    assert "resume" not in server_refused["inputs"][0]

    for name in ("resumed", "replayed"):
        step = steps[name]
        assert step["error"] is None, name
        (sent,) = step["inputs"]
        assert sent["resume"] == [{"interruptId": interrupt["id"], **APPROVE}], name
        assert step["events"][-1]["outcome"] == {"type": "success"}, name
        assert [e["toolCallId"] for e in step["events"] if e["type"] == "TOOL_CALL_RESULT"] == [
            interrupt["toolCallId"]
        ], name
        assert not any(e["type"] in ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END") for e in step["events"])
        assert step["result"] == {"emails": {interrupt["toolCallId"]: "executed"}}, name
        assert step["pending"] == [], name
    assert steps["resumed"]["inputs"][0]["runId"] != steps["replayed"]["inputs"][0]["runId"]

    # The reload: the view holds what the first page was shown, and answering it works.
    first = steps["reloadInterrupted"]["events"]
    (reload_interrupt,) = first[-1]["outcome"]["interrupts"]
    view = journey["view"]
    assert view["status"] == 200
    assert view["body"]["threadId"] == "reloaded" and view["body"]["state"] == "interrupted"
    assert view["body"]["interrupts"] == [reload_interrupt]
    assert view["body"]["runId"] == steps["reloadInterrupted"]["inputs"][0]["runId"]
    assert view["body"]["messages"] == next(e["messages"] for e in first if e["type"] == "MESSAGES_SNAPSHOT")
    reloaded = steps["reloadResumed"]
    assert reloaded["error"] is None and reloaded["events"][-1]["outcome"] == {"type": "success"}
    assert reloaded["inputs"][0]["resume"] == [{"interruptId": reload_interrupt["id"], **APPROVE}]
    assert [e["toolCallId"] for e in reloaded["events"] if e["type"] == "TOOL_CALL_RESULT"] == [
        reload_interrupt["toolCallId"]
    ]

    # One execution per thread, though "journey" was resumed twice.
    ran = [orjson.loads(line) for line in executions.read_bytes().splitlines()]
    assert [r["subject"] for r in ran] == ["Q3 report of journey", "Q3 report of reloaded"]

    validate_capabilities(capabilities)
    assert capabilities["humanInTheLoop"]["interrupts"] is True
    assert capabilities["humanInTheLoop"]["approveWithEdits"] is True
    assert capabilities["transport"]["streaming"] is True
    assert capabilities["identity"]["name"] == "approval_agent"
