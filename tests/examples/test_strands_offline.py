"""The offline Strands example, served as a user would: ``agui serve`` over HTTP, no network.

One run ends with the approval of ``send_email`` (the scripted model asked for it); the resume
that approves it runs the tool once and the model reports its result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.console.conftest import Served, serve


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    yield from serve(tmp_path_factory.mktemp("strands"), target="agui_core.examples.strands_offline:agent")


def post(served: Served, body: dict[str, Any]) -> list[dict[str, Any]]:
    base = {"messages": [], "tools": [], "context": [], "forwardedProps": {}}
    response = httpx.post(served.url + "/", json={**base, **body}, timeout=60)
    response.raise_for_status()
    return [json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")]


def test_the_scripted_strands_agent_asks_approval_then_sends_once_approved(served: Served) -> None:
    ask = [{"id": "m-1", "role": "user", "content": "Email Bob."}]
    first = post(served, {"threadId": "s-1", "runId": "s-1-a", "messages": ask})
    finished = first[-1]
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt", finished
    (approval,) = finished["outcome"]["interrupts"]
    assert approval["reason"] == "tool_call"
    assert approval["message"] == 'Run send_email on "bob@example.com"?'
    assert "I will email Bob." in "".join(e.get("delta", "") for e in first)

    resume = [{"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}]
    second = post(served, {"threadId": "s-1", "runId": "s-1-b", "resume": resume})
    assert second[-1]["type"] == "RUN_FINISHED" and second[-1].get("outcome", {}).get("type", "success") == "success"
    (result,) = [e for e in second if e["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "sent to bob@example.com: Hi"
    said = "".join(e.get("delta", "") for e in second)
    assert "The email: success (sent to bob@example.com: Hi)." in said
