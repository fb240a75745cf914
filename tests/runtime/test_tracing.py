"""The OpenTelemetry observer (agui_core/runtime/tracing.py): the spans of an interrupt cycle
served over HTTP, caught by the SDK's in-memory exporter."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from agui_transports.http import HttpTransport
from agui_transports.plugin import ServeOptions
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import ResumeEntry, RunAgentInput, UserMessage
from agui_core.runtime import Host
from agui_core.runtime.metrics import PrometheusObserver
from agui_core.runtime.observe import Observers
from agui_core.runtime.tracing import TracingObserver
from tests.transports import agents
from tests.transports.served import agui_serve
from tests.transports.test_http import events_of

pytestmark = pytest.mark.anyio

LIMIT = 15.0
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


def run_input(thread_id: str, run_id: str, **fields: Any) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread_id, run_id=run_id, messages=(UserMessage(id=f"u-{run_id}", content="hi"),), **fields
    )


async def test_a_cycle_makes_a_span_per_run_per_tool_and_one_interrupt_span_linked_to_both_runs() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # With the metrics too: one host, several observers.
    observer = Observers([TracingObserver(provider), PrometheusObserver()])
    stop, found, where = anyio.Event(), anyio.Event(), []

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    thread = "traced"
    with anyio.fail_after(LIMIT):
        async with Host(agents.approval_agent, tools=agents.TOOLS, observer=observer) as host:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    HttpTransport().serve, host, ServeOptions(address="127.0.0.1:0", stop=stop, ready=ready)
                )
                await found.wait()
                async with httpx.AsyncClient(base_url=where[0]) as client:
                    headers = {"content-type": "application/json", "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
                    first = await client.post("/", content=encode_input(run_input(thread, "r1")), headers=headers)
                    (interrupt,) = events_of(first.content)[-1]["outcome"]["interrupts"]
                    edits = {"approved": True, "editedArgs": {"to": "bob@example.com", "subject": "Q3", "body": "x"}}
                    resume = (ResumeEntry(interrupt_id=interrupt["id"], status="resolved", payload=edits),)
                    second = await client.post(
                        "/",
                        content=encode_input(run_input(thread, "r2", resume=resume)),
                        headers={"content-type": "application/json"},
                    )
                    assert events_of(second.content)[-1]["outcome"] == {"type": "success"}
                stop.set()

    spans: tuple[ReadableSpan, ...] = exporter.get_finished_spans()
    runs = [s for s in spans if s.name == "invoke_agent"]
    assert [s.attributes["agui.run.id"] for s in runs if s.attributes] == ["r1", "r2"]
    raised_in, decided_in = runs
    for run in runs:
        assert run.attributes is not None and run.attributes["gen_ai.conversation.id"] == thread
        assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert raised_in.attributes is not None and raised_in.attributes["agui.run.outcome"] == "interrupt"
    assert decided_in.attributes is not None and decided_in.attributes["agui.run.outcome"] == "success"
    # The first run continues the caller's trace; the second came without one.
    assert raised_in.context is not None and format(raised_in.context.trace_id, "032x") == TRACE_ID
    assert raised_in.parent is not None and format(raised_in.parent.span_id, "016x") == PARENT_ID
    assert decided_in.parent is None

    (tool,) = [s for s in spans if s.name == "execute_tool sendEmail"]
    assert tool.parent is not None and decided_in.context is not None
    assert tool.parent.span_id == decided_in.context.span_id
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.name"] == "sendEmail"
    assert tool.attributes["gen_ai.tool.call.id"] == interrupt["toolCallId"]
    assert tool.attributes["agui.tool.result"] == "executed"

    (waited,) = [s for s in spans if s.name == "interrupt tool_call"]
    assert [link.context.span_id for link in waited.links] == [
        raised_in.context.span_id,
        decided_in.context.span_id,
    ]
    assert waited.attributes == {
        "gen_ai.conversation.id": thread,
        "agui.interrupt.id": interrupt["id"],
        "agui.interrupt.reason": "tool_call",
        "agui.interrupt.status": "resolved",
        "agui.interrupt.edited": True,
    }  # never the payload
    assert waited.start_time is not None and waited.end_time is not None
    assert waited.start_time <= waited.end_time


async def test_agui_serve_with_traces_exports_as_the_otel_variables_say(tmp_path: Path) -> None:
    env = {**os.environ, "OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "50"}
    options = ("--http", "127.0.0.1:0", "--traces", "--store", "memory")
    with anyio.fail_after(LIMIT):
        async with agui_serve("tests.transports.agents:approval_agent", *options, tmp=tmp_path, env=env) as served:
            async with httpx.AsyncClient() as client:
                headers = {"content-type": "application/json", "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
                response = await client.post(
                    served.http_url, content=encode_input(run_input("t", "r1")), headers=headers
                )
                assert events_of(response.content)[-1]["outcome"]["type"] == "interrupt"
            while '"name": "invoke_agent"' not in served.log.read_text():
                await anyio.sleep(0.05)
            assert f'"trace_id": "0x{TRACE_ID}"' in served.log.read_text()
