"""The stock ``HttpAgent`` of ``@ag-ui/client`` through a LangGraph graph served by ``agui serve``.

``agui serve tests.adapters.served:graph --http`` (the approval graph, its own
``InMemorySaver``) is driven by ``tests/interop/node/http_agent.cjs``: the unpatched
``HttpAgent`` runs to the interrupt, refuses a plain input itself, sees the host refuse one from
an agent that forgot the interrupts, resumes with ``buildResumeArray``, replays the resume, and
on a second thread reloads (``GET /threads/{id}``) and answers from there. Every step's events
pass ``enforceEvents`` + ``verifyEvents``.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.interop.nodebridge import node_http_agent

ROOT = Path(__file__).resolve().parents[2]
APPROVE = {"status": "resolved", "payload": {"approved": True}}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_stock_http_agent_runs_the_interrupt_journey_on_a_served_graph(anyio_backend: str) -> None:
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.adapters.served:graph",
        "--http", "127.0.0.1:0", "--store", "memory",
    ]  # fmt: skip
    with anyio.fail_after(120):
        process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with process:
            assert process.stderr is not None
            log = b""
            while not (found := re.search(rb"http://127\.0\.0\.1:(\d+)", log)):
                log += await process.stderr.receive()
            request = {
                "url": f"http://127.0.0.1:{int(found.group(1))}/",
                "threadId": "journey",
                "reloadThreadId": "reloaded",
                "forwardedProps": {},
                "answers": [APPROVE],
            }
            journey = await anyio.to_thread.run_sync(node_http_agent, request)
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0

    assert journey["ok"], journey["error"]
    assert journey["warnings"] == []
    steps: dict[str, Any] = journey["steps"]
    for name, step in steps.items():
        assert step["verified"]["ok"], f"{name}: {step['verified']['error']}"
    (interrupt,) = steps["interrupted"]["events"][-1]["outcome"]["interrupts"]
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == "call-email"
    assert "pending interrupt" in steps["clientRefused"]["error"] and steps["clientRefused"]["inputs"] == []
    assert [(e["type"], e["code"]) for e in steps["serverRefused"]["events"]] == [("RUN_ERROR", "PENDING_INTERRUPTS")]
    for name in ("resumed", "replayed"):
        step = steps[name]
        assert step["error"] is None and step["events"][-1]["outcome"] == {"type": "success"}, name
        results = [(e["toolCallId"], e["content"]) for e in step["events"] if e["type"] == "TOOL_CALL_RESULT"]
        assert results == [("call-email", "sent to bob@example.com: hi")], name
        assert step["pending"] == [], name
    reloaded = steps["reloadResumed"]
    (reload_interrupt,) = steps["reloadInterrupted"]["events"][-1]["outcome"]["interrupts"]
    assert journey["view"]["body"]["interrupts"] == [reload_interrupt]
    assert reloaded["error"] is None and reloaded["events"][-1]["outcome"] == {"type": "success"}
