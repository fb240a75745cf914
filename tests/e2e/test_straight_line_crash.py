"""A straight-line agent through a real ``agui serve`` (HTTP + SSE), killed between every pair of
its steps, on SQLite and on PostgreSQL: nothing is lost, nothing is repeated.

The agent is the expense example: a receipt form, two gated payments at once (one approved
with edits), a confirmation over the limit, then ``fileExpense`` (no approval) and a last
text. For each step N, a host process is started that kills itself (SIGKILL) just before
the N-th step it takes; the client sees its stream cut, starts a new host on the same store and
sends the same input again (through ``THREAD_BUSY`` until the dead host's lease is out), and
answers every question as it comes, to the end (and once with no kill at all). Then each tool
has run exactly once, with what the person approved; the thread holds each text once, and so
does what the completed runs sent.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from agui_core.protocol.framing import SSEReader
from tests.transports.served import Served, agui_serve

pytestmark = pytest.mark.anyio

LIMIT = 120.0  # seconds for one conversation, kills and restarts included
STEPS = 8  # the new steps the conversation takes: text, form, text, two tools, confirmation, filing, text
RECEIPT = {"employee": "Ann", "merchant": "Rail Co", "amount": 640, "currency": "EUR", "category": "travel"}
CORRECTED = {"employee": "Ann", "amount": 610, "currency": "EUR"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def answers(interrupts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the person says to each question, as it comes."""
    out = []
    for interrupt in interrupts:
        if interrupt["reason"] == "input_required":
            payload: Any = RECEIPT
        elif interrupt["reason"] == "confirmation":
            payload = True
        elif "editedArgs" in interrupt["responseSchema"]["properties"]:
            payload = {"approved": True, "editedArgs": CORRECTED}
        else:
            payload = {"approved": True}
        out.append({"interruptId": interrupt["id"], "status": "resolved", "payload": payload})
    return out


async def post(served: Served, run_input: dict[str, Any]) -> list[dict[str, Any]]:
    """One run over HTTP: its events, up to where the stream ended (cut short if the host died)."""
    events: list[dict[str, Any]] = []
    reader = SSEReader()
    with contextlib.suppress(httpx.TransportError):
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream("POST", served.http_url + "/", json=run_input) as response,
        ):
            async for chunk in response.aiter_bytes():
                events += [orjson.loads(frame) for frame in reader.feed(chunk)]
    return events


@asynccontextmanager
async def conversation_hosts(store: str, tmp: Path, effects: Path, kill_step: int) -> AsyncIterator[Any]:
    """Hosts on ``store`` one after another: the first dies at ``kill_step``, the next ones live."""
    async with AsyncExitStack() as stack:
        options = ("--http", "127.0.0.1:0", "--store", store, "--lease", "1", "--lease-renew", "0.4")
        env = {**os.environ, "AGUI_TEST_EFFECTS": str(effects)}

        async def start(kill: bool) -> Served:
            return await stack.enter_async_context(
                agui_serve(
                    "tests.e2e.expense_served:served",
                    *options,
                    tmp=tmp,
                    env={**env, "AGUI_TEST_KILL_STEP": str(kill_step if kill else 0)},
                )
            )

        yield start


async def converse(store: str, tmp: Path, kill_step: int) -> tuple[dict[str, Any], list[list[dict[str, Any]]], Path]:
    effects = tmp / "effects.jsonl"
    thread = f"expense-{kill_step}"
    finished: list[list[dict[str, Any]]] = []
    async with conversation_hosts(store, tmp, effects, kill_step) as start:
        served = await start(kill=True)
        run_input: dict[str, Any] = {
            "threadId": thread, "runId": "run-1", "messages": [], "tools": [], "context": [], "forwardedProps": {},
        }  # fmt: skip
        runs = 1
        kills = 0
        while True:
            events = await post(served, run_input)
            if not events or events[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                kills += 1
                assert kill_step and kills == 1, "only the first host was told to die"
                served = await start(kill=False)  # the same store, a new process
                continue
            last = events[-1]
            if last["type"] == "RUN_ERROR":
                assert last["code"] == "THREAD_BUSY", last  # the dead host's lease, for a second
                await anyio.sleep(0.3)
                continue
            finished.append(events)
            if last["outcome"]["type"] == "success":
                assert kills == (1 if kill_step else 0), f"the host never reached step {kill_step}"
                async with httpx.AsyncClient() as client:
                    view = (await client.get(f"{served.http_url}/threads/{thread}")).json()
                return {"result": last["result"], "view": view}, finished, effects
            runs += 1
            run_input = {**run_input, "runId": f"run-{runs}", "resume": answers(last["outcome"]["interrupts"])}


@pytest.mark.parametrize("kill_step", range(STEPS + 1))  # 0: never killed
@pytest.mark.parametrize("store_kind", ["sqlite", "postgresql"])
async def test_a_host_killed_between_any_two_steps_loses_nothing_and_repeats_nothing(
    store_kind: str, kill_step: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if store_kind == "sqlite":
        store = f"sqlite:{tmp_path / 'threads.sqlite3'}"
    else:
        store = request.getfixturevalue("postgres_url")
    with anyio.fail_after(LIMIT):
        end, finished, effects = await converse(store, tmp_path, kill_step)
    ran = [orjson.loads(line) for line in effects.read_bytes().splitlines()]
    assert [name for name, _ in ran] == ["reimburseEmployee", "bookToLedger", "fileExpense"]  # each exactly once
    assert ran[0][1] == CORRECTED  # what the person approved, edits included
    result = end["result"]
    assert result["filed"] is True and result["record"]["reimbursed"] == 610 and result["record"]["booked"] == 640
    said = [m["content"] for m in end["view"]["messages"] if m["role"] == "assistant" and m.get("content")]
    assert said[0] == "Let's file your expense. First, the receipt." and said[-1].startswith("Filed as EXP-")
    assert max(Counter(said).values()) == 1  # the thread holds each text once
    streamed = [e["delta"] for run in finished for e in run if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert Counter(streamed) == Counter(said)  # and the runs that ended sent each once
