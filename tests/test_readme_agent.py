"""The README's agent example, run as it is written: its code block saved as ``mymodule.py``
and served by ``agui serve mymodule:agent`` (a real process, over HTTP), then answered as a
person would, both ways."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest

from agui_core.protocol.framing import SSEReader
from tests.transports.served import ROOT, agui_serve

pytestmark = pytest.mark.anyio

LIMIT = 60.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def readme_agent() -> str:
    """The first Python block of the README's "Hosting an agent" section, as it is."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Hosting an agent") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the README's Hosting an agent section has no Python block"
    return found.group(1)


async def run(url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    reader = SSEReader()
    events: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=30) as client, client.stream("POST", url + "/", json=body) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_bytes():
            events += [orjson.loads(frame) for frame in reader.feed(chunk)]
    return events


def base(thread: str, run_id: str, **more: Any) -> dict[str, Any]:
    return {
        "threadId": thread,
        "runId": run_id,
        "messages": [],
        "tools": [],
        "context": [],
        "forwardedProps": {},
        **more,
    }


def texts(events: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]


async def test_the_readme_agent_runs_as_written(tmp_path: Path) -> None:
    (tmp_path / "mymodule.py").write_text(readme_agent(), encoding="utf-8")
    with anyio.fail_after(LIMIT):
        async with agui_serve(
            "mymodule:agent", "--http", "127.0.0.1:0", "--store", "memory", tmp=tmp_path, cwd=tmp_path
        ) as served:
            url = served.http_url
            first = await run(url, base("approved", "run-1"))
            (approval,) = first[-1]["outcome"]["interrupts"]
            assert approval["reason"] == "tool_call" and texts(first) == ["I drafted the email."]
            yes = {"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}
            second = await run(url, base("approved", "run-2", resume=[yes]))
            assert [e["type"] for e in second][1] == "TOOL_CALL_RESULT"  # the email went out, once
            (confirm,) = second[-1]["outcome"]["interrupts"]
            assert confirm["reason"] == "confirmation" and texts(second) == []  # nothing said twice
            told = {"interruptId": confirm["id"], "status": "resolved", "payload": True}
            last = await run(url, base("approved", "run-3", resume=[told]))
            assert texts(last) == ["I will tell Ann."] and last[-1]["result"] == {"email": "executed"}

            first = await run(url, base("denied", "run-1"))
            (approval,) = first[-1]["outcome"]["interrupts"]
            no = {"interruptId": approval["id"], "status": "resolved", "payload": {"approved": False}}
            done = await run(url, base("denied", "run-2", resume=[no]))
            assert done[-1]["result"] == {"email": "denied"}
