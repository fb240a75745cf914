"""Every kind of stream the LangGraph adapter produces passes the stock ``@ag-ui/client``.

The streams are recorded over the WebSocket transport from the graphs of ``graphs.py`` (each
scenario of ``test_langgraph.py``: interrupting runs, resumes with edits, denials, cancelled
forms, parallel branches, chained interrupts, replays, streamed tokens and tool calls of a
scripted chat model, two parallel branches streaming at once, a failing node, a retry after a node
failed past the approval, refusals), then run through ``enforceEvents()`` and ``verifyEvents()`` of
``@ag-ui/client`` 1.0.0 in one node process: each must pass with nothing stripped or changed.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.adapters import graphs
from tests.adapters.test_langgraph import USER, cancel, exchange, frame, interrupts, resolve, talking
from tests.interop.nodebridge import NodeResult, json_equal, node_verify

FILING = {"quarter": "Q2", "year": 2026, "revenue": 12.5}


async def _record() -> dict[str, list[dict[str, Any]]]:
    streams: dict[str, list[dict[str, Any]]] = {}
    async with talking(graphs.approval_graph()) as ws:
        streams["approval"] = await exchange(ws, frame("a", "r1", messages=[USER]))
        (approval,) = interrupts(streams["approval"])
        streams["refused-pending"] = await exchange(ws, frame("a", "x", messages=[USER]))
        streams["refused-payload"] = await exchange(ws, frame("a", "y", resume=[resolve(approval["id"], {})]))
        edited = {"approved": True, "editedArgs": {"to": "carol@example.com", "subject": "hello"}}
        streams["approved-with-edits"] = await exchange(ws, frame("a", "r2", resume=[resolve(approval["id"], edited)]))
        streams["replay"] = await exchange(ws, frame("a", "r3", resume=[resolve(approval["id"], edited)]))
        streams["denied"] = await exchange(ws, frame("b", "r1", messages=[USER]))
        (denial,) = interrupts(streams["denied"])
        streams["denial"] = await exchange(ws, frame("b", "r2", resume=[resolve(denial["id"], {"approved": False})]))
    async with talking(graphs.form_graph()) as ws:
        streams["form"] = await exchange(ws, frame("f", "r1", messages=[USER]))
        (form,) = interrupts(streams["form"])
        streams["form-filed"] = await exchange(ws, frame("f", "r2", resume=[resolve(form["id"], FILING)]))
        (form,) = interrupts(await exchange(ws, frame("g", "r1", messages=[USER])))
        streams["form-cancelled"] = await exchange(ws, frame("g", "r2", resume=[cancel(form["id"])]))
    async with talking(graphs.parallel_graph()) as ws:
        streams["parallel"] = await exchange(ws, frame("p", "r1", messages=[USER]))
        alpha, beta = interrupts(streams["parallel"])
        streams["parallel-one-cancelled"] = await exchange(
            ws, frame("p", "r2", resume=[resolve(alpha["id"], True), cancel(beta["id"])])
        )
    async with talking(graphs.parallel_tools_graph()) as ws:
        streams["parallel-tools"] = await exchange(ws, frame("q", "r1", messages=[USER]))
        send, archive = interrupts(streams["parallel-tools"])
        streams["parallel-tools-one-cancelled"] = await exchange(
            ws, frame("q", "r2", resume=[resolve(send["id"], {"approved": True}), cancel(archive["id"])])
        )
    async with talking(graphs.chained_graph()) as ws:
        streams["chained"] = await exchange(ws, frame("c", "r1", messages=[USER]))
        (question,) = interrupts(streams["chained"])
        streams["chained-second"] = await exchange(ws, frame("c", "r2", resume=[resolve(question["id"], "Ann")]))
        (confirmation,) = interrupts(streams["chained-second"])
        streams["chained-done"] = await exchange(ws, frame("c", "r3", resume=[resolve(confirmation["id"], True)]))
    async with talking(graphs.chat_graph()) as ws:
        streams["streamed-tokens"] = await exchange(ws, frame("s", "r1", messages=[USER]))
    async with talking(graphs.llm_tool_graph()) as ws:
        streams["streamed-tool-call"] = await exchange(ws, frame("l", "r1", messages=[USER]))
        (approval,) = interrupts(streams["streamed-tool-call"])
        streams["streamed-tool-call-approved"] = await exchange(
            ws, frame("l", "r2", resume=[resolve(approval["id"], {"approved": True})])
        )
    async with talking(graphs.parallel_streaming_graph()) as ws:
        streams["parallel-streams-interleaved"] = await exchange(ws, frame("m", "r1", messages=[USER]))
        ann, bob = interrupts(streams["parallel-streams-interleaved"])
        streams["parallel-streams-resumed"] = await exchange(
            ws, frame("m", "r2", resume=[resolve(ann["id"], {"approved": True}), cancel(bob["id"])])
        )
    failures = ["the notifier is down"]
    async with talking(graphs.flaky_after_approval_graph(failures)) as ws:
        (approval,) = interrupts(await exchange(ws, frame("n", "r1", messages=[USER])))
        streams["failed-after-approval"] = await exchange(
            ws, frame("n", "r2", resume=[resolve(approval["id"], {"approved": True})])
        )
        streams["retry-with-another-answer"] = await exchange(ws, frame("n", "r3", resume=[cancel(approval["id"])]))
        streams["retry-goes-on"] = await exchange(
            ws, frame("n", "r4", resume=[resolve(approval["id"], {"approved": True})])
        )
    async with talking(graphs.failing_graph()) as ws:
        streams["agent-error"] = await exchange(ws, frame("e", "r1", messages=[USER]))
    return streams


@pytest.fixture(scope="module")
def verdicts() -> dict[str, tuple[list[dict[str, Any]], NodeResult]]:
    streams = anyio.run(_record, backend="asyncio")
    open_call = [e for e in streams["approval"] if e["type"] != "TOOL_CALL_END"]
    results = node_verify([*streams.values(), open_call])
    named = {name: (streams[name], result) for name, result in zip(streams, results, strict=False)}
    named["control: RUN_FINISHED with a tool call open"] = (open_call, results[-1])
    return named


NAMES = [
    "approval",
    "refused-pending",
    "refused-payload",
    "approved-with-edits",
    "replay",
    "denied",
    "denial",
    "form",
    "form-filed",
    "form-cancelled",
    "parallel",
    "parallel-one-cancelled",
    "parallel-tools",
    "parallel-tools-one-cancelled",
    "chained",
    "chained-second",
    "chained-done",
    "streamed-tokens",
    "streamed-tool-call",
    "streamed-tool-call-approved",
    "parallel-streams-interleaved",
    "parallel-streams-resumed",
    "failed-after-approval",
    "retry-with-another-answer",
    "retry-goes-on",
    "agent-error",
]


@pytest.mark.parametrize("name", NAMES)
def test_the_adapters_stream_passes_the_reference_client_untouched(
    name: str, verdicts: dict[str, tuple[list[dict[str, Any]], NodeResult]]
) -> None:
    sent, result = verdicts[name]
    assert result.ok, result.error
    assert result.warnings == () and result.stripped == ()
    assert json_equal(result.value, sent), f"the client changed the stream:\n{result.value}\n!=\n{sent}"


def test_every_recorded_stream_is_judged(verdicts: dict[str, tuple[list[dict[str, Any]], NodeResult]]) -> None:
    assert set(verdicts) == {*NAMES, "control: RUN_FINISHED with a tool call open"}


def test_the_control_stream_is_refused(verdicts: dict[str, tuple[list[dict[str, Any]], NodeResult]]) -> None:
    _, result = verdicts["control: RUN_FINISHED with a tool call open"]
    assert not result.ok and result.error is not None and "call-email" in result.error
