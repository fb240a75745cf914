"""End to end against the reference TypeScript client: our hosts, over WebSocket and stdio.

- Every stream our transports emit for the seed's four scenarios passes ``@ag-ui/client``'s
  ``enforceEvents`` + ``verifyEvents`` as it is, with nothing stripped.
- Inputs built by the reference client (its own ``AbstractAgent``: ``prepareRunAgentInput``,
  ``buildResumeArray``, the body as ``HttpAgent`` serializes it) are accepted by our host over
  WebSocket and stdio, and resume the thread correctly.
- A plain Node WebSocket client (the ``ws`` package) drives our WebSocket host through a
  whole interrupt -> resume cycle on one connection.

The WebSocket host runs in process on 127.0.0.1 (a free port); the stdio host is a real
``agui serve ... --stdio --store memory`` process. Node is required: without it the bridge
raises and these tests fail.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from agui_transports.client import FrameConnection, connect_websocket, open_stdio_client
from agui_transports.websocket import WebSocketServer

from agui_core.machine.client import ClientMachine
from agui_core.protocol.codec import decode_event, decode_input, encode_input
from agui_core.protocol.types import RunAgentInput, UserMessage
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.e2e import agents
from tests.e2e.agents import SCENARIOS, SEED_INTERRUPT_IDS, interrupt_id
from tests.interop.nodebridge import json_equal, node_agent_cycles, node_verify, node_ws_cycle

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 60.0  # seconds any one test may take: a hang fails instead of blocking the suite
TRANSPORTS = ("ws", "stdio")
STDIO_COMMAND = [
    sys.executable, "-m", "agui_core.app.cli", "serve", "tests.e2e.agents:seed_agent", "--stdio", "--store", "memory",
]  # fmt: skip

APPROVE = {"status": "resolved", "payload": {"approved": True}}
EDITED = {"to": "bob@example.com", "subject": "Hi", "body": "Hi (revised per my note)"}
FILING = {"quarter": "Q1", "year": 2026, "revenue": 4200000}

ANSWERS: Mapping[str, list[dict[str, Any]]] = {
    "tool_approval": [APPROVE],
    "approve_with_edits": [{"status": "resolved", "payload": {"approved": True, "editedArgs": EDITED}}],
    "parallel": [APPROVE, APPROVE, {"status": "cancelled"}],
    "input_required": [{"status": "resolved", "payload": FILING}],
}
"""The seed's resume of each scenario, one response per interrupt, in the order announced."""


def _sent(tool_call_id: str, to: str, body: str, *, edited: bool = False) -> dict[str, Any]:
    return {"toolCallId": tool_call_id, "status": "executed", "to": to, "body": body, "edited": edited}


RESUMED_RESULTS: Mapping[str, dict[str, Any]] = {
    "tool_approval": {"emails": [_sent("tc-001", "alice@example.com", "Hi Alice!")], "filing": None},
    "approve_with_edits": {"emails": [_sent("tc-42", EDITED["to"], EDITED["body"], edited=True)], "filing": None},
    "parallel": {
        "emails": [
            _sent("tc-a", "a@x.com", "Hi!"),
            _sent("tc-b", "b@x.com", "Hi!"),
            {"toolCallId": "tc-c", "status": "cancelled"},
        ],
        "filing": None,
    },
    "input_required": {"emails": [], "filing": FILING},
}
"""What the resumed run of each scenario returns: the seed's outcome of that resume."""

RESULT_TOOL_CALLS: Mapping[str, list[str]] = {
    "tool_approval": ["tc-001"],
    "approve_with_edits": ["tc-42"],
    "parallel": ["tc-a", "tc-b"],  # tc-c was cancelled: not run, no result (SPEC section 5)
    "input_required": [],
}

TOOL_DEFINITION = {
    "name": "sendEmail",
    "description": "Send an email",
    "parameters": dict(agents.SEND_EMAIL_ARGS_SCHEMA),
}
CONTEXT = {"description": "the user's time zone", "value": "Europe/Berlin"}


def expected_resume(thread_id: str, scenario: str) -> list[dict[str, Any]]:
    ids = SEED_INTERRUPT_IDS[scenario]
    return [{"interruptId": interrupt_id(thread_id, i), **a} for i, a in zip(ids, ANSWERS[scenario], strict=True)]


@asynccontextmanager
async def websocket_host() -> AsyncIterator[WebSocketServer]:
    async with Host(agents.seed_agent, store=MemoryThreadStore(), tools=agents.TOOLS) as host:
        async with WebSocketServer(host, port=0) as server:
            yield server


@asynccontextmanager
async def frame_connection(transport: str) -> AsyncIterator[FrameConnection]:
    """A connection to a host serving ``seed_agent``: in process on WebSocket, or an ``agui
    serve --stdio`` process."""
    if transport == "ws":
        async with websocket_host() as server, connect_websocket(server.url) as client:
            yield client.connection
    else:
        async with open_stdio_client(STDIO_COMMAND, cwd=str(ROOT)) as client:
            yield client.connection


async def one_run(connection: FrameConnection, machine: ClientMachine, run_input: RunAgentInput) -> list[Any]:
    """Send ``run_input``; the run's frames as JSON, each also checked by ``machine``."""
    await connection.send(encode_input(run_input))
    frames = []
    while True:
        frame = await connection.receive()
        event = decode_event(frame)
        machine.receive_event(event, now=datetime.now(UTC))
        frames.append(orjson.loads(frame))
        if event.type in ("RUN_FINISHED", "RUN_ERROR"):
            return frames


async def seed_cycle(connection: FrameConnection, thread_id: str, scenario: str) -> list[list[Any]]:
    """The scenario's interrupted run, then its resume as the seed answers it: both runs' frames."""
    machine = ClientMachine(thread_id)
    start = RunAgentInput(
        thread_id=thread_id,
        run_id=f"run-{uuid.uuid4().hex[:8]}",
        messages=(UserMessage(id=f"user-{thread_id}", content=f"Please run the {scenario} example."),),
        forwarded_props={"scenario": scenario},
    )
    interrupted = await one_run(connection, machine, start)
    answers = dict(zip((i.id for i in machine.open_interrupts), ANSWERS[scenario], strict=True))
    resume = machine.resume(
        answers,
        now=datetime.now(UTC),
        run_id=f"run-{uuid.uuid4().hex[:8]}",
        messages=machine.messages,
        state=machine.state,
    )
    resumed = await one_run(connection, machine, resume)
    assert machine.result == RESUMED_RESULTS[scenario]
    return [interrupted, resumed]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_every_seed_stream_passes_enforce_and_verify_unchanged(transport: str) -> None:
    streams: dict[str, list[Any]] = {}
    with anyio.fail_after(LIMIT):
        async with frame_connection(transport) as connection:
            for scenario in SCENARIOS:
                interrupted, resumed = await seed_cycle(connection, f"{transport}-{scenario}", scenario)
                assert interrupted[-1]["outcome"]["type"] == "interrupt"
                assert [i["id"] for i in interrupted[-1]["outcome"]["interrupts"]] == [
                    interrupt_id(f"{transport}-{scenario}", i) for i in SEED_INTERRUPT_IDS[scenario]
                ]
                assert [e["toolCallId"] for e in resumed if e["type"] == "TOOL_CALL_RESULT"] == (
                    RESULT_TOOL_CALLS[scenario]
                )
                assert not any(e["type"].startswith("TOOL_CALL_") and e["type"] != "TOOL_CALL_RESULT" for e in resumed)
                streams[f"{scenario}: interrupted run"] = interrupted
                streams[f"{scenario}: resumed run"] = resumed
                streams[f"{scenario}: both runs"] = interrupted + resumed

    verdicts = await anyio.to_thread.run_sync(node_verify, list(streams.values()))
    for (name, stream), verdict in zip(streams.items(), verdicts, strict=True):
        assert verdict.ok, f"{transport} {name}: {verdict.error}"
        assert verdict.warnings == (), f"{transport} {name}: {verdict.warnings}"
        assert json_equal(verdict.value, stream), f"{transport} {name}: the client pipeline changed the events"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_inputs_the_reference_client_builds_are_accepted_and_resume_the_thread(transport: str) -> None:
    cases = [
        {
            "threadId": f"ref-{transport}-{scenario}",
            "forwardedProps": {"scenario": scenario},
            "answers": ANSWERS[scenario],
            "messages": [{"id": f"user-{scenario}", "role": "user", "content": f"Run the {scenario} example."}],
            "tools": [TOOL_DEFINITION],
            "context": [CONTEXT],
        }
        for scenario in SCENARIOS
    ]
    with anyio.fail_after(LIMIT):
        if transport == "ws":
            async with websocket_host() as server:
                cycles, ended = await anyio.to_thread.run_sync(
                    node_agent_cycles, {"kind": "ws", "url": server.url}, cases
                )
                for case in cases:
                    record = await server.host.store.load(case["threadId"])
                    assert record is not None and record.open_interrupts == ()
        else:
            wire = {"kind": "stdio", "command": STDIO_COMMAND, "cwd": str(ROOT)}
            cycles, ended = await anyio.to_thread.run_sync(node_agent_cycles, wire, cases)
    assert ended == ({"closeCode": 1000} if transport == "ws" else {"exitCode": 0})

    for case, scenario, cycle in zip(cases, SCENARIOS, cycles, strict=True):
        assert cycle.ok, f"{scenario}: {cycle.error}"
        assert cycle.warnings == (), f"{scenario}: {cycle.warnings}"
        first, second = cycle.inputs
        assert first["protocolVersion"] == second["protocolVersion"] == "1.0"
        assert first.keys() == {
            "threadId", "runId", "protocolVersion", "state", "messages", "tools", "context", "forwardedProps"
        }  # fmt: skip
        assert second.keys() == first.keys() | {"resume"}
        assert first["tools"] == [TOOL_DEFINITION] and first["context"] == [CONTEXT]
        for sent in cycle.inputs:
            assert decode_input(orjson.dumps(sent)).thread_id == case["threadId"]
        assert cycle.resume == second["resume"] == expected_resume(case["threadId"], scenario)
        # The resume carries the history as the client's reducer rebuilt it from the first run.
        assert second["messages"][0]["id"] == f"user-{scenario}"
        assert len(second["messages"]) == 1 + (scenario != "input_required")

        interrupted, resumed = cycle.runs
        assert interrupted[0] == {
            "type": "RUN_STARTED",
            "threadId": case["threadId"],
            "runId": first["runId"],
            "protocolVersion": "1.0",
        }
        assert resumed[0] == {
            "type": "RUN_STARTED",
            "threadId": case["threadId"],
            "runId": second["runId"],
            "protocolVersion": "1.0",
        }
        assert resumed[-1]["outcome"] == {"type": "success"}
        assert [r["result"] for r in cycle.results] == [None, RESUMED_RESULTS[scenario]]
        assert cycle.pending == []


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_a_node_websocket_client_drives_a_whole_interrupt_resume_cycle(scenario: str) -> None:
    thread_id = f"node-ws-{scenario}"
    case = {"threadId": thread_id, "forwardedProps": {"scenario": scenario}, "answers": ANSWERS[scenario]}
    with anyio.fail_after(LIMIT):
        async with websocket_host() as server:
            cycle, close_code = await anyio.to_thread.run_sync(partial(node_ws_cycle, server.url, case))
            record = await server.host.store.load(thread_id)
            assert server.connections == 0
    assert cycle.ok, cycle.error
    assert cycle.warnings == ()
    assert close_code == 1000
    interrupted, resumed = cycle.runs
    assert cycle.verified == [
        {"ok": True, "error": None, "count": len(interrupted)},
        {"ok": True, "error": None, "count": len(resumed)},
    ]
    assert [i["id"] for i in cycle.interrupts] == [interrupt_id(thread_id, i) for i in SEED_INTERRUPT_IDS[scenario]]
    assert cycle.resume == cycle.inputs[1]["resume"] == expected_resume(thread_id, scenario)
    assert interrupted[-1]["outcome"]["type"] == "interrupt"
    assert resumed[-1]["outcome"] == {"type": "success"}
    assert resumed[-1]["result"] == RESUMED_RESULTS[scenario]
    assert record is not None and record.open_interrupts == () and record.active_run is None
