"""The agent ``tests/runtime/test_lease_processes.py`` serves with ``agui serve``: ``served``.

Its first run proposes ``recordOrder``, an approval-gated tool whose side effect appends one
line to the file named by ``$AGUI_TEST_EFFECTS`` (a tool that ran twice shows as two lines).
Its resumed run finishes with ``{"order": status}``; in a process started with
``$AGUI_TEST_HANG`` set it waits forever instead, once the tool has run, so the test can kill
the host mid-run.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio

from agui_core.runtime import RunContext, tool

__all__ = ["served"]


@tool("recordOrder", needs_approval=True)
async def record_order(item: str) -> str:
    with Path(os.environ["AGUI_TEST_EFFECTS"]).open("a") as file:
        file.write(item + "\n")
    return f"recorded {item}"


async def order_agent(ctx: RunContext) -> Any:
    outcome = await ctx.call_tool("recordOrder", {"item": ctx.thread_id})  # the first run ends with its approval
    if os.environ.get("AGUI_TEST_HANG"):
        await anyio.sleep_forever()
    return {"order": outcome.status}


served = SimpleNamespace(agent=order_agent, tools=[record_order])
