"""docs/openai-agents.md's example, run as it is written: its Python block saved as ``mailroom.py``
and served by ``agui serve mailroom:agent`` (a real process, over HTTP), then answered as a person
would: an edited approval, then a denial on another thread."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.test_readme_agent import base, run, texts
from tests.transports.served import ROOT, agui_serve

pytestmark = pytest.mark.anyio

LIMIT = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def example() -> str:
    page = (ROOT / "docs" / "openai-agents.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert found is not None, "docs/openai-agents.md has no Python block"
    return found.group(1)


def answer(interrupt: dict[str, Any], payload: Any) -> list[dict[str, Any]]:
    return [{"interruptId": interrupt["id"], "status": "resolved", "payload": payload}]


async def test_the_openai_agents_page_example_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "mailroom.py").write_text(example(), encoding="utf-8")
    user = {"id": "u-1", "role": "user", "content": "Email Bob."}
    with anyio.fail_after(LIMIT):
        async with agui_serve(
            "mailroom:agent", "--http", "127.0.0.1:0", "--store", "memory", tmp=tmp_path, cwd=tmp_path
        ) as served:
            url = served.http_url
            first = await run(url, base("edited", "run-1", messages=[user]))
            (approval,) = first[-1]["outcome"]["interrupts"]
            assert approval["reason"] == "tool_call" and texts(first) == ["I will email Bob."]
            assert approval["message"] == 'Run send_email on "bob@example.com"?'
            assert set(approval["responseSchema"]["properties"]["editedArgs"]["properties"]) == {"to", "subject"}
            assert "expiresAt" in approval
            edited = {"approved": True, "editedArgs": {"to": "ann@example.com", "subject": "Hello"}}
            done = await run(url, base("edited", "run-2", messages=[user], resume=answer(approval, edited)))
            results = [e["content"] for e in done if e["type"] == "TOOL_CALL_RESULT"]
            assert results == ["sent to ann@example.com: Hello"]
            assert texts(done) == ["Done: sent to ann@example.com: Hello"]

            first = await run(url, base("denied", "run-1", messages=[user]))
            (approval,) = first[-1]["outcome"]["interrupts"]
            done = await run(
                url, base("denied", "run-2", messages=[user], resume=answer(approval, {"approved": False}))
            )
            assert texts(done) == ["Done: Tool execution was not approved."]
            assert done[-1]["type"] == "RUN_FINISHED" and done[-1]["outcome"] == {"type": "success"}
