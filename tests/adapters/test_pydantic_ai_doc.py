"""docs/pydantic-ai.md's example, run as it is written: its Python block saved as ``filing.py`` and
served by ``agui serve filing:agent`` (a real process, over HTTP), then answered as a person
would: the form with its answer, the approval with edits."""

from __future__ import annotations

import re
from pathlib import Path

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
    page = (ROOT / "docs" / "pydantic-ai.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert found is not None, "docs/pydantic-ai.md has no Python block"
    return found.group(1)


async def test_the_pydantic_ai_page_example_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "filing.py").write_text(example(), encoding="utf-8")
    user = {"id": "u-1", "role": "user", "content": "File the sales report."}
    with anyio.fail_after(LIMIT):
        async with agui_serve(
            "filing:agent", "--http", "127.0.0.1:0", "--store", "memory", tmp=tmp_path, cwd=tmp_path
        ) as served:
            url = served.http_url
            first = await run(url, base("filing", "run-1", messages=[user]))
            approval, form = first[-1]["outcome"]["interrupts"]
            assert texts(first) == ["I will file the report."]
            assert form["reason"] == "input_required" and form["message"] == "Which quarter is the sales report for?"
            assert form["responseSchema"]["properties"]["quarter"]["enum"] == ["Q1", "Q2", "Q3", "Q4"]
            assert approval["reason"] == "tool_call"
            assert set(approval["responseSchema"]["properties"]["editedArgs"]["properties"]) == {"kind"}
            resume = [
                {"interruptId": form["id"], "status": "resolved", "payload": {"quarter": "Q3"}},
                {
                    "interruptId": approval["id"],
                    "status": "resolved",
                    "payload": {"approved": True, "editedArgs": {"kind": "marketing"}},
                },
            ]
            done = await run(url, base("filing", "run-2", messages=[user], resume=resume))
    results = {e["toolCallId"]: e["content"] for e in done if e["type"] == "TOOL_CALL_RESULT"}
    assert results == {form["toolCallId"]: '{"quarter":"Q3"}', approval["toolCallId"]: "filed the marketing report"}
    assert done[-1]["type"] == "RUN_FINISHED" and done[-1]["outcome"] == {"type": "success"}
    assert texts(done) == ['Done: {"quarter":"Q3"}; filed the marketing report']
