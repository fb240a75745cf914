"""Straight-line agents that get it wrong, through a real ``agui serve`` over WebSocket: a replay
that diverges from its journal, and a question never awaited. Each ends its run with ``RUN_ERROR``
``AGENT_ERROR`` naming the step or the call and its line; nothing runs, and the thread stays
answerable."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.transports.served import agui_serve

pytestmark = pytest.mark.anyio

LIMIT = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def exchange(ws: ClientConnection, body: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(orjson.dumps(body).decode())
    events = [orjson.loads(await ws.recv())]
    while events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        events.append(orjson.loads(await ws.recv()))
    return events


def base(thread: str, run_id: str, **more: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run_id,
        "messages": [],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        **more,
    }


async def test_a_divergent_replay_is_refused_naming_the_step_and_the_approval_stays_open(tmp_path: Path) -> None:
    effects = tmp_path / "effects"
    effects.touch()
    env = {**os.environ, "AGUI_TEST_EFFECTS": str(effects)}
    with anyio.fail_after(LIMIT):
        async with (
            agui_serve(
                "tests.e2e.straight_agents:divergent", "--ws", "127.0.0.1:0", "--store", "memory", tmp=tmp_path, env=env
            ) as served,
            connect(served.url) as ws,
        ):
            first = await exchange(ws, base("t", "run-1"))
            (approval,) = first[-1]["outcome"]["interrupts"]
            yes = {"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}
            refused = await exchange(ws, base("t", "run-2", resume=[yes]))
            again = await exchange(ws, base("t", "run-3", resume=[yes]))  # still open: answerable again
    error = refused[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "AGENT_ERROR"
    assert "diverged from its journal at step 2" in error["message"] and "ctx.call_tool" in error["message"]
    assert "straight_agents.py:" in error["message"]
    assert again[-1]["type"] == "RUN_ERROR" and again[-1]["code"] == "AGENT_ERROR"
    # The approved proposal ran once, as bound (the retry re-sent its recorded result); the divergent call never.
    assert effects.read_text().splitlines() == ["charge 10"]


async def test_a_question_never_awaited_is_refused_naming_its_line(tmp_path: Path) -> None:
    with anyio.fail_after(LIMIT):
        async with (
            agui_serve(
                "tests.e2e.straight_agents:forgetful", "--ws", "127.0.0.1:0", "--store", "memory", tmp=tmp_path
            ) as served,
            connect(served.url) as ws,
        ):
            events = await exchange(ws, base("t", "run-1"))
    error = events[-1]
    assert error["type"] == "RUN_ERROR" and error["code"] == "AGENT_ERROR"
    assert "ctx.ask(...) at straight_agents.py:" in error["message"] and "never awaited" in error["message"]
    assert all(e["type"] != "RUN_FINISHED" for e in events)  # never a success
