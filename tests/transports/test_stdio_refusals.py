"""The stdio transport refuses a line with the error's own code, as every transport does."""

from __future__ import annotations

import anyio
import orjson
import pytest
from agui_transports.plugin import MAX_INPUT_DEPTH
from agui_transports.stdio import serve_json_lines

from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.transports import agents

pytestmark = pytest.mark.anyio

LIMIT = 10.0  # seconds any one test may take: a hang fails instead of blocking the suite


def line(**fields: object) -> bytes:
    base = {"threadId": "t", "runId": "run-1", "messages": [], "tools": [], "context": []}
    return orjson.dumps({**base, **fields}) + b"\n"


def nested(depth: int) -> object:
    value: object = []
    for _ in range(depth - 2):  # the input's own object and the innermost array are two levels
        value = [value]
    return value


async def test_each_refusal_carries_its_errors_code() -> None:
    lines = [
        line(resume=[{"interruptId": "int-1", "status": "approved-ish"}]),
        line(threadId=7),
        line(state=nested(MAX_INPUT_DEPTH + 1)),  # decodes, but the host could not record it
        line(runId="run-2", forwardedProps={"seconds": 0}, state=nested(MAX_INPUT_DEPTH)),
    ]
    to_server_send, to_server = anyio.create_memory_object_stream[bytes](16)
    from_server, from_server_receive = anyio.create_memory_object_stream[bytes](256)
    with anyio.fail_after(LIMIT):
        async with to_server_send, to_server, from_server, from_server_receive:
            async with Host(agents.slow_agent, store=MemoryThreadStore()) as host:
                await to_server_send.send(b"".join(lines))
                await to_server_send.aclose()
                await serve_json_lines(host, to_server, from_server)
            from_server.close()
            out = b"".join([chunk async for chunk in from_server_receive])
    frames = [orjson.loads(raw) for raw in out.splitlines()]
    assert [f.get("code") for f in frames[:3]] == ["INVALID_RESUME", "INVALID_INPUT", "INVALID_INPUT"]
    assert "$.resume[0].status" in frames[0]["message"]
    assert f"at most {MAX_INPUT_DEPTH} levels" in frames[2]["message"]
    assert frames[-1]["type"] == "RUN_FINISHED"
