"""The agent the many-hosts tests serve: every run proposes one gated ``act``, every resume runs it.

``act(n)`` appends ``n`` to the file named by ``AGUI_FLEET_LOG``, one line per execution,
fsynced before it returns, so the tests count executions across host processes: a number on
two lines is a tool that ran twice. A resume whose ``forwardedProps`` carry ``pause``
(seconds) waits that long after the tool ran before it finishes: a window in the middle of a
run, between two saves.
"""

from __future__ import annotations

import os

import anyio

from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = ["TOOLS", "act", "agent"]


@tool("act", needs_approval=True)
async def act(n: int) -> str:
    """Record one execution (the side effect that must happen exactly once)."""
    with open(os.environ["AGUI_FLEET_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{n}\n")
        log.flush()
        os.fsync(log.fileno())
    return f"acted {n}"


TOOLS = [act]


async def agent(ctx: RunContext) -> JSON:
    """Propose ``act(n)`` (n from ``forwardedProps.n``); on resume, report what became of it."""
    props = ctx.input.forwarded_props if isinstance(ctx.input.forwarded_props, dict) else {}
    n = await ctx.once("n", lambda: props.get("n"))  # the resume's props may say otherwise
    await ctx.text(f"step {n}")
    outcome = await ctx.call_tool("act", {"n": n})
    pause = props.get("pause")
    if isinstance(pause, int | float):
        await anyio.sleep(pause)
    return {outcome.tool_call_id: outcome.status}
