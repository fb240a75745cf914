"""The input budget, through real transports: every principal may send so many bytes of input
a second over all of its connections; past it, an input is refused unread with
``RATE_LIMITED`` (issue 23, item 5).

The servers run in process with an :class:`InputBudget` on a clock the test moves, so that
"refused" and "refilled" do not depend on how fast the machine is; ``agui serve`` runs as a
process of its own for its flag. An input refused for the budget is one that is not JSON
at all: had it been read, it would have been refused as ``INVALID_INPUT`` instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_transports.connections import InputBudget
from agui_transports.http import HttpTransport
from agui_transports.plugin import ServeOptions, TokenBucket
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.protocol.framing import SSEReader
from agui_core.runtime import Host
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.store import MemoryThreadStore
from tests.transports import agents

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 30.0  # seconds any one test may take: a hang fails instead of blocking the suite
RATE = 10_000  # bytes a second, and so the burst: one second's worth
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef012"


class Clock:
    """The budget's clock: it moves when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def run_input(thread: str, run: str = "run-1", *, size: int = 100) -> bytes:
    """A valid input of at least ``size`` bytes, for an agent that finishes at once."""
    props = {"seconds": 0, "padding": "p" * size}
    return orjson.dumps({"threadId": thread, "runId": run, "messages": [], "forwardedProps": props})


def unreadable(size: int = 100) -> bytes:
    """Not JSON: ``INVALID_INPUT`` if it is read, ``RATE_LIMITED`` if it is refused unread."""
    return b"{nope" + b" " * size


def codes(frames: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(f["type"], f.get("code")) for f in frames if f["type"] in ("RUN_FINISHED", "RUN_ERROR")]


async def ws_exchange(ws: ClientConnection, data: bytes) -> list[dict[str, Any]]:
    await ws.send(data.decode())
    frames = [orjson.loads(await ws.recv())]
    while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        frames.append(orjson.loads(await ws.recv()))
    return frames


async def http_exchange(client: httpx.AsyncClient, data: bytes, token: str | None = None) -> list[dict[str, Any]]:
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    response = await client.post("/", content=data, headers=headers)
    assert response.status_code == 200, response.text
    return [orjson.loads(frame) for frame in SSEReader().feed(response.content)]


def authenticator() -> TokenAuthenticator:
    return TokenAuthenticator({ALICE: "alice", BOB: "bob"})


def as_(token: str) -> dict[str, Any]:
    return {"additional_headers": {"Authorization": f"Bearer {token}"}}


@asynccontextmanager
async def websocket_host(budget: InputBudget, *, authenticated: bool = True) -> AsyncIterator[WebSocketServer]:
    auth = authenticator() if authenticated else None
    async with Host(agents.slow_agent, store=MemoryThreadStore(), authenticator=auth) as host:
        async with WebSocketServer(host, address="127.0.0.1", port=0, input_budget=budget) as server:
            yield server


@asynccontextmanager
async def http_host(budget: InputBudget, *, authenticated: bool = True) -> AsyncIterator[str]:
    found = anyio.Event()
    where: list[str] = []

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    auth = authenticator() if authenticated else None
    async with Host(agents.slow_agent, store=MemoryThreadStore(), authenticator=auth) as host:
        async with anyio.create_task_group() as group:
            stop = anyio.Event()
            options = ServeOptions(address="127.0.0.1:0", stop=stop, grace=1.0, ready=ready, input_budget=budget)
            group.start_soon(HttpTransport().serve, host, options)
            await found.wait()
            yield where[0]
            stop.set()


def http_client(url: str, source: str = "127.0.0.1") -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, transport=httpx.AsyncHTTPTransport(local_address=source))


# -- one budget per principal, over all its connections ---------------------------------------


async def test_over_its_budget_a_principal_is_refused_unread_on_every_websocket_and_others_are_not() -> None:
    clock = Clock()
    budget = InputBudget(RATE, clock=clock)
    with anyio.fail_after(LIMIT):
        async with websocket_host(budget) as server:
            async with connect(server.url, **as_(ALICE)) as first, connect(server.url, **as_(ALICE)) as second:
                # One input larger than the whole burst passes on a full budget, and spends it.
                assert codes(await ws_exchange(first, run_input("a-1", size=RATE + RATE // 2))) == [
                    ("RUN_FINISHED", None)
                ]
                for ws in (first, second):  # the other connection shares the budget
                    refused = await ws_exchange(ws, unreadable())
                    assert codes(refused) == [("RUN_ERROR", "RATE_LIMITED")], refused
                    assert "10,000 bytes of input a second" in refused[0]["message"]
                async with connect(server.url, **as_(BOB)) as bob:
                    assert codes(await ws_exchange(bob, unreadable())) == [("RUN_ERROR", "INVALID_INPUT")]
                    assert codes(await ws_exchange(bob, run_input("b-1"))) == [("RUN_FINISHED", None)]
                assert codes(await ws_exchange(second, run_input("a-2"))) == [("RUN_ERROR", "RATE_LIMITED")]
                clock.now += 1.0  # half a second's worth left after the debt is paid
                assert codes(await ws_exchange(second, run_input("a-3", size=RATE // 4))) == [("RUN_FINISHED", None)]
                assert codes(await ws_exchange(first, unreadable())) == [("RUN_ERROR", "INVALID_INPUT")]


async def test_over_its_budget_a_principal_is_refused_unread_over_http_and_others_are_not() -> None:
    clock = Clock()
    budget = InputBudget(RATE, clock=clock)
    with anyio.fail_after(LIMIT):
        async with http_host(budget) as url, http_client(url) as client:
            assert codes(await http_exchange(client, run_input("a-1", size=RATE + RATE // 2), ALICE)) == [
                ("RUN_FINISHED", None)
            ]
            refused = await http_exchange(client, unreadable(), ALICE)
            assert codes(refused) == [("RUN_ERROR", "RATE_LIMITED")], refused
            assert "10,000 bytes of input a second" in refused[0]["message"]
            async with http_client(url) as another:  # another connection of the same principal
                assert codes(await http_exchange(another, run_input("a-2"), ALICE)) == [("RUN_ERROR", "RATE_LIMITED")]
            assert codes(await http_exchange(client, unreadable(), BOB)) == [("RUN_ERROR", "INVALID_INPUT")]
            assert codes(await http_exchange(client, run_input("b-1"), BOB)) == [("RUN_FINISHED", None)]
            clock.now += 1.0
            assert codes(await http_exchange(client, run_input("a-3", size=RATE // 4), ALICE)) == [
                ("RUN_FINISHED", None)
            ]


async def test_a_budget_shared_by_two_transports_is_one_budget_per_principal() -> None:
    clock = Clock()
    budget = InputBudget(RATE, clock=clock)
    with anyio.fail_after(LIMIT):
        async with websocket_host(budget) as server, http_host(budget) as url, http_client(url) as client:
            async with connect(server.url, **as_(ALICE)) as ws:
                assert codes(await ws_exchange(ws, run_input("a-1", size=RATE))) == [("RUN_FINISHED", None)]
            assert codes(await http_exchange(client, unreadable(), ALICE)) == [("RUN_ERROR", "RATE_LIMITED")]


# -- a client that sends on regardless -------------------------------------------------------------


@pytest.fixture
def pauses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Every ``anyio.sleep`` asked for while the test runs (each still sleeps)."""
    asked: list[float] = []
    sleep = anyio.sleep

    async def recorded(delay: float) -> None:
        asked.append(delay)
        await sleep(delay)

    monkeypatch.setattr(anyio, "sleep", recorded)
    yield asked


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_a_client_over_its_budget_is_not_heard_again_until_the_budget_would_take_its_input(
    transport: str, pauses: list[float]
) -> None:
    clock = Clock()
    budget = InputBudget(RATE, clock=clock)
    big, small = run_input("a-1", size=RATE + RATE // 2), unreadable()
    owed = len(big) - RATE  # after the big input, on a full budget
    with anyio.fail_after(LIMIT):
        if transport == "ws":
            async with websocket_host(budget) as server, connect(server.url, **as_(ALICE)) as ws:
                assert codes(await ws_exchange(ws, big)) == [("RUN_FINISHED", None)]
                assert codes(await ws_exchange(ws, small)) == [("RUN_ERROR", "RATE_LIMITED")]
        else:
            async with http_host(budget) as url, http_client(url) as client:
                assert codes(await http_exchange(client, big, ALICE)) == [("RUN_FINISHED", None)]
                assert codes(await http_exchange(client, small, ALICE)) == [("RUN_ERROR", "RATE_LIMITED")]
    # The clock stood still: the debt and the small input, at RATE bytes a second.
    assert pytest.approx((owed + len(small)) / RATE) in pauses


async def test_a_connection_over_its_rate_limit_is_not_read_again_until_the_limit_would_take_a_frame(
    pauses: list[float],
) -> None:
    with anyio.fail_after(LIMIT):
        async with Host(agents.slow_agent, store=MemoryThreadStore()) as host:
            async with WebSocketServer(host, port=0, rate_limit=4.0, rate_burst=1, input_budget=None) as server:
                async with connect(server.url) as ws:
                    assert codes(await ws_exchange(ws, run_input("r-1"))) == [("RUN_FINISHED", None)]
                    assert codes(await ws_exchange(ws, run_input("r-2"))) == [("RUN_ERROR", "RATE_LIMITED")]
    assert any(0 < pause <= 0.25 for pause in pauses), pauses  # a quarter of a second: a token at 4 a second


# -- without an authenticator: one budget per client address ----------------------------------


async def test_without_an_authenticator_each_client_address_has_a_budget_of_its_own() -> None:
    clock = Clock()
    budget = InputBudget(RATE, clock=clock)
    with anyio.fail_after(LIMIT):
        async with websocket_host(budget, authenticated=False) as server:
            async with connect(server.url, local_addr=("127.0.0.1", 0)) as here:
                assert codes(await ws_exchange(here, run_input("h-1", size=RATE))) == [("RUN_FINISHED", None)]
                assert codes(await ws_exchange(here, unreadable())) == [("RUN_ERROR", "RATE_LIMITED")]
            async with connect(server.url, local_addr=("127.0.0.2", 0)) as there:
                assert codes(await ws_exchange(there, unreadable())) == [("RUN_ERROR", "INVALID_INPUT")]
        async with http_host(budget, authenticated=False) as url:
            async with http_client(url, "127.0.0.1") as here:  # the same budget, over another transport
                assert codes(await http_exchange(here, unreadable())) == [("RUN_ERROR", "RATE_LIMITED")]
            async with http_client(url, "127.0.0.3") as there:
                assert codes(await http_exchange(there, unreadable())) == [("RUN_ERROR", "INVALID_INPUT")]


async def test_a_forwarded_for_header_does_not_buy_an_anonymous_http_client_another_budget() -> None:
    clock = Clock()
    budget = InputBudget(RATE, clock=clock)
    json = {"content-type": "application/json"}
    with anyio.fail_after(LIMIT):
        async with http_host(budget, authenticated=False) as url, http_client(url) as client:
            assert codes(await http_exchange(client, run_input("h-1", size=RATE))) == [("RUN_FINISHED", None)]
            for n in range(3):  # uvicorn takes X-Forwarded-For from a loopback peer for the client's address
                forged = {**json, "x-forwarded-for": f"203.0.113.{n}"}
                response = await client.post("/", content=unreadable(), headers=forged)
                frames = [orjson.loads(frame) for frame in SSEReader().feed(response.content)]
                assert codes(frames) == [("RUN_ERROR", "RATE_LIMITED")], frames


async def test_a_stranger_with_many_addresses_cannot_grow_the_table_of_budgets() -> None:
    clock = Clock()
    budget = InputBudget(RATE, max_budgets=2, clock=clock)
    with anyio.fail_after(LIMIT):
        async with websocket_host(budget, authenticated=False) as server:

            async def spend(source: str, run: str) -> list[tuple[str, str | None]]:
                async with connect(server.url, local_addr=(source, 0)) as ws:
                    return codes(await ws_exchange(ws, run_input(f"s-{run}", size=RATE)))

            assert await spend("127.0.0.2", "1") == [("RUN_FINISHED", None)]
            assert await spend("127.0.0.3", "2") == [("RUN_FINISHED", None)]
            assert budget.held == 2
            # The table is full of budgets in use: newcomers share one more budget.
            assert await spend("127.0.0.4", "3") == [("RUN_FINISHED", None)]
            assert await spend("127.0.0.5", "4") == [("RUN_ERROR", "RATE_LIMITED")]
            assert await spend("127.0.0.6", "5") == [("RUN_ERROR", "RATE_LIMITED")]
            assert budget.held == 2
            # Once the budgets held have refilled, they are forgotten and a newcomer gets its own.
            clock.now += 2.0
            assert await spend("127.0.0.7", "6") == [("RUN_FINISHED", None)]
            assert budget.held == 1


# -- agui serve --input-budget -------------------------------------------------------------------


@pytest.fixture
def tokens(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "tokens"
    path.write_text(f"alice {ALICE}\nbob {BOB}\n")
    os.chmod(path, 0o600)
    yield path


@pytest.mark.parametrize("transport", ["ws", "http"])
async def test_agui_serve_takes_the_input_budget_from_its_flag(transport: str, tokens: Path, tmp_path: Path) -> None:
    """``--input-budget 1000``: a 50 kB input passes on a full budget and leaves alice about 49
    seconds in debt, so her next input is refused whatever the machine's speed; bob's is not.
    ``--input-budget 0``: no budget."""
    big = run_input("a-1", size=50_000)
    async with _agui_serve(transport, ["--auth-tokens", str(tokens), "--input-budget", "1000"], tmp_path) as send:
        assert codes(await send(big, ALICE)) == [("RUN_FINISHED", None)]
        assert codes(await send(unreadable(), ALICE)) == [("RUN_ERROR", "RATE_LIMITED")]
        assert codes(await send(unreadable(), BOB)) == [("RUN_ERROR", "INVALID_INPUT")]
    async with _agui_serve(transport, ["--auth-tokens", str(tokens), "--input-budget", "0"], tmp_path) as send:
        assert codes(await send(big, ALICE)) == [("RUN_FINISHED", None)]
        assert codes(await send(unreadable(), ALICE)) == [("RUN_ERROR", "INVALID_INPUT")]


@asynccontextmanager
async def _agui_serve(transport: str, flags: list[str], tmp_path: Path) -> AsyncIterator[Any]:
    """``agui serve`` in a process of its own, and a function that sends it one input as a
    principal and returns the answer; the process is stopped by its PID."""
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:slow_agent",
        f"--{transport}", "127.0.0.1:0", "--store", f"sqlite:{tmp_path / 'threads.sqlite3'}", *flags,
    ]  # fmt: skip
    with anyio.fail_after(LIMIT):
        process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
        async with process:
            try:
                assert process.stderr is not None
                log = b""
                while not (found := re.search(rb"(ws|http)://127\.0\.0\.1:(\d+)", log)):
                    log += await process.stderr.receive()
                url = found.group(0).decode()

                async def send(data: bytes, token: str) -> list[dict[str, Any]]:
                    if transport == "ws":
                        async with connect(url, **as_(token)) as ws:
                            return await ws_exchange(ws, data)
                    async with httpx.AsyncClient(base_url=url) as client:
                        return await http_exchange(client, data, token)

                yield send
            finally:
                process.terminate()
                await process.wait()


# -- the buckets --------------------------------------------------------------------------------


def test_a_token_bucket_lets_an_action_larger_than_its_burst_through_when_full_and_is_then_in_debt() -> None:
    now = [0.0]
    bucket = TokenBucket(100.0, 100, clock=lambda: now[0])
    assert bucket.take(250)  # full: it passes, and the bucket owes 150
    assert not bucket.take(1)
    now[0] += 1.5  # the debt is paid, nothing more
    assert not bucket.take(1)
    now[0] += 0.5
    assert bucket.take(50) and not bucket.take(1)
    assert not bucket.full()
    now[0] += 1.0
    assert bucket.full()


def test_an_anonymous_budget_is_kept_per_ipv4_address_and_per_ipv6_network() -> None:
    budget = InputBudget(RATE, clock=Clock())
    assert budget.charge("anonymous", "2001:db8::1", RATE)
    assert not budget.charge("anonymous", "2001:db8::ffff:2", 1)  # the same /64
    assert budget.charge("anonymous", "2001:db8:0:1::1", 1)  # another /64
    assert budget.charge("anonymous", "::ffff:192.0.2.7", RATE)
    assert not budget.charge("anonymous", "192.0.2.7", 1)  # the same IPv4 address, mapped or not
    assert budget.charge("anonymous", None, 1)  # a server that does not say: one budget for those
    # A principal's budget is its own wherever it connects from.
    assert budget.charge("alice", "192.0.2.7", RATE)
    assert not budget.charge("alice", "198.51.100.1", 1)
    assert budget.held == 5
    with pytest.raises(ValueError):
        InputBudget(0)
