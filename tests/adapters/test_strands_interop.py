"""The stock ``@ag-ui/client`` 1.0.0 accepts every stream the Strands adapter sends.

Each journey of the adapter's tests is played again over HTTP + SSE and every stream, as it
came (interrupts, resumes, a chained interrupt, replays, cancellations, refusals), goes through
``enforceEvents`` then ``verifyEvents`` in Node. Node is required: without it the test fails.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agui_core.machine.client import approve, approve_with_edits, cancel, resolve
from tests.adapters import strands_agents as sa
from tests.adapters.talk import Talk
from tests.adapters.test_strands import serving
from tests.interop.nodebridge import node_verify

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def journeys() -> list[Talk]:
    talks: list[Talk] = []
    async with serving(sa.approval_adapter) as client:
        talk = Talk(client, "edits")
        talks.append(talk)
        await talk.start()
        await talk.post(talk.entries({"no-such-id": {"status": "resolved", "payload": {"approved": True}}}))
        await talk.resume({talk.open[0].id: approve_with_edits({"to": "ann@example.com", "subject": "Hey"})})
        await talk.start("again")
        await talk.resume({talk.open[0].id: approve()})
    async with serving(sa.in_tool_adapter) as client:
        talk = Talk(client, "in-tool")
        talks.append(talk)
        await talk.start()
        await talk.resume({talk.open[0].id: resolve({"quarter": "Q1", "year": 2027})})
    async with serving(sa.parallel_adapter) as client:
        talk = Talk(client, "parallel")
        talks.append(talk)
        await talk.start()
        ann, bob, cy = talk.open
        await talk.resume({ann.id: approve(), bob.id: cancel(), cy.id: approve()})
    async with serving(sa.chained_adapter) as client:
        talk = Talk(client, "chain")
        talks.append(talk)
        await talk.start()
        first = talk.resume_body({talk.open[0].id: approve()})
        await talk.send(first)
        await talk.resume({talk.open[0].id: resolve({"quarter": "Q3", "year": 2026})})
        await talk.post({**copy.deepcopy(first), "runId": "chain-replay"})
    async with serving(sa.exact_hook_adapter) as client:
        talk = Talk(client, "exact")
        talks.append(talk)
        await talk.start()
        await talk.resume({talk.open[0].id: cancel()})
    return talks


async def test_the_reference_client_accepts_every_stream_of_the_adapter() -> None:
    talks = await journeys()
    streams: list[list[dict[str, Any]]] = [s for talk in talks for s in talk.streams]
    assert len(streams) == 15
    results = node_verify(streams)
    for stream, result in zip(streams, results, strict=True):
        assert result.ok, (result.error, stream)
        assert result.stripped == (), (result.stripped, stream)
        assert len(result.value) == len(stream)
    kinds = {e["type"] for s in streams for e in s}
    assert {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT", "MESSAGES_SNAPSHOT", "RUN_ERROR"} <= kinds
