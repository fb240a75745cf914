"""The Prometheus observer (agui_core/runtime/metrics.py), scraped over the real transports:
``GET /metrics`` on the HTTP transport under uvicorn and on the WebSocket port's plain side."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from agui_transports.http import HttpTransport
from agui_transports.plugin import ServeOptions
from agui_transports.websocket import WebSocketServer
from prometheus_client.parser import text_string_to_metric_families

from agui_core.app.cli import main
from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import ResumeEntry, RunAgentInput, UserMessage
from agui_core.runtime import Host
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.runtime.metrics import PrometheusObserver
from agui_core.runtime.observe import ObservedStore
from agui_core.store import MemoryThreadStore
from tests.transports import agents
from tests.transports.served import agui_serve
from tests.transports.test_http import events_of

pytestmark = pytest.mark.anyio

LIMIT = 15.0
JSON_HEADERS = {"content-type": "application/json"}
ANN = "token-of-ann-0123456789"


def run_input(thread_id: str, run_id: str, **fields: Any) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread_id, run_id=run_id, messages=(UserMessage(id=f"u-{run_id}", content="hi"),), **fields
    )


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and sorted labels."""
    found: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


@asynccontextmanager
async def served(authenticator: Any = None, **trust: Any) -> AsyncIterator[tuple[str, Host]]:
    """The ``http`` plugin serving the approval agent with a Prometheus observer; its URL and host."""
    stop, found, where = anyio.Event(), anyio.Event(), []

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    observer = PrometheusObserver(store_cache=0)
    store = ObservedStore(MemoryThreadStore(), observer)
    async with Host(
        agents.approval_agent, store=store, tools=agents.TOOLS, authenticator=authenticator, observer=observer
    ) as host:
        async with anyio.create_task_group() as group:
            options = ServeOptions(address="127.0.0.1:0", stop=stop, ready=ready, **trust)
            group.start_soon(HttpTransport().serve, host, options)
            await found.wait()
            yield where[0], host
            stop.set()


async def test_a_scrape_during_an_interrupt_cycle_sees_the_interrupt_open_then_decided() -> None:
    thread = "metered"
    with anyio.fail_after(LIMIT):
        async with served() as (url, _), httpx.AsyncClient(base_url=url) as client:

            async def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
                response = await client.get("/metrics")
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
                assert thread not in response.text  # no thread id in any label
                return samples(response.text)

            before = await scrape()
            assert before[("agui_interrupt_oldest_age_seconds", ())] == 0

            first = events_of(
                (await client.post("/", content=encode_input(run_input(thread, "r1")), headers=JSON_HEADERS)).content
            )
            (interrupt,) = first[-1]["outcome"]["interrupts"]
            waiting = await scrape()
            assert waiting[("agui_interrupts_open", (("reason", "tool_call"),))] == 1
            assert waiting[("agui_interrupts_raised_total", (("reason", "tool_call"),))] == 1
            assert waiting[("agui_run_duration_seconds_count", (("outcome", "interrupt"),))] == 1
            assert waiting[("agui_runs_in_flight", ())] == 0

            approve = run_input(
                thread,
                "r2",
                resume=(ResumeEntry(interrupt_id=interrupt["id"], status="resolved", payload={"approved": True}),),
            )
            resumed = events_of((await client.post("/", content=encode_input(approve), headers=JSON_HEADERS)).content)
            assert resumed[-1]["outcome"] == {"type": "success"}
            decided = await scrape()
            assert decided[("agui_interrupts_open", (("reason", "tool_call"),))] == 0
            decision = (("reason", "tool_call"), ("status", "resolved"))
            assert decided[("agui_decision_seconds_count", decision)] == 1
            assert decided[("agui_decisions_total", (("edited", "false"), ("status", "resolved")))] == 1
            assert decided[("agui_tool_executions_total", (("result", "executed"), ("tool", "sendEmail")))] == 1
            assert decided[("agui_run_duration_seconds_count", (("outcome", "success"),))] == 1
            assert decided[("agui_store_operation_seconds_count", (("operation", "save"),))] >= 3
            assert decided[("agui_connections", (("transport", "http"),))] >= 1

            # A resume of an interrupt never raised is refused: counted by its code.
            again = run_input(
                thread, "r3", resume=(ResumeEntry(interrupt_id="never-raised", status="resolved", payload={}),)
            )
            refused = events_of((await client.post("/", content=encode_input(again), headers=JSON_HEADERS)).content)
            assert refused[-1]["type"] == "RUN_ERROR"
            after = await scrape()
            assert after[("agui_refusals_total", (("code", refused[-1]["code"]),))] == 1


async def test_metrics_are_behind_the_authenticator_unless_public() -> None:
    tokens = TokenAuthenticator({ANN: "ann"})
    with anyio.fail_after(LIMIT):
        async with served(tokens) as (url, _), httpx.AsyncClient(base_url=url) as client:
            assert (await client.get("/metrics")).status_code == 401
            signed = await client.get("/metrics", headers={"authorization": f"Bearer {ANN}"})
            assert signed.status_code == 200 and "agui_runs_in_flight" in signed.text
        async with served(tokens, public_metrics=True) as (url, _), httpx.AsyncClient(base_url=url) as client:
            assert (await client.get("/metrics")).status_code == 200


async def test_a_host_without_metrics_answers_404() -> None:
    stop, found, where = anyio.Event(), anyio.Event(), []

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    with anyio.fail_after(LIMIT):
        async with Host(agents.approval_agent, tools=agents.TOOLS) as host, anyio.create_task_group() as group:
            group.start_soon(HttpTransport().serve, host, ServeOptions(address="127.0.0.1:0", stop=stop, ready=ready))
            await found.wait()
            async with httpx.AsyncClient(base_url=where[0]) as client:
                assert (await client.get("/metrics")).status_code == 404
            stop.set()


async def test_the_websocket_port_serves_metrics_on_a_plain_get() -> None:
    tokens = TokenAuthenticator({ANN: "ann"})
    observer = PrometheusObserver(store_cache=0)
    with anyio.fail_after(LIMIT):
        async with Host(agents.approval_agent, tools=agents.TOOLS, authenticator=tokens, observer=observer) as host:
            async with WebSocketServer(host, port=0) as server, httpx.AsyncClient() as client:
                base = f"http://127.0.0.1:{server.port}"
                assert (await client.get(f"{base}/metrics")).status_code == 401
                response = await client.get(f"{base}/metrics", headers={"authorization": f"Bearer {ANN}"})
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
                assert ("agui_interrupt_oldest_age_seconds", ()) in samples(response.text)


async def test_agui_serve_with_metrics_serves_them_on_both_transports(tmp_path: Path) -> None:
    target = "tests.transports.agents:approval_agent"
    with anyio.fail_after(LIMIT * 2):
        for transport in ("--http", "--ws"):
            async with agui_serve(
                target, transport, "127.0.0.1:0", "--metrics", "--store", "memory", tmp=tmp_path
            ) as s:
                async with httpx.AsyncClient() as client:
                    response = await client.get(f"{s.http_url}/metrics")
            assert response.status_code == 200, response.text
            assert ("agui_runs_in_flight", ()) in samples(response.text)


def test_public_metrics_without_metrics_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "tests.transports.agents:approval_agent", "--http", "127.0.0.1:0", "--public-metrics"]) == 2
    assert "--public-metrics opens the metrics of --metrics" in capsys.readouterr().err
