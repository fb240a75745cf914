"""The agent the soak test hosts: every run proposes one gated ``act``, every resume runs it.

``act(n)`` appends ``n`` (unique per proposal) to the file named by ``AGUI_SOAK_LOG``, one
line per execution, fsynced before it returns, so the test can count executions across host
processes that were killed: a number on two lines is a tool that ran twice.
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
    with open(os.environ["AGUI_SOAK_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{n}\n")
        log.flush()
        os.fsync(log.fileno())
    return f"acted {n}"


TOOLS = [act]


async def agent(ctx: RunContext) -> JSON:
    """Propose ``act(n)`` (n from ``forwardedProps.n``); on resume, report what became of it."""
    if ctx.resumed:
        await anyio.sleep(0.01)  # a window for a kill in the middle of a resumed run
        return {o.tool_call_id: o.status for o in ctx.tool_outcomes.values()}
    props = ctx.input.forwarded_props
    n = props.get("n") if isinstance(props, dict) else None
    await ctx.text(f"step {n}")
    await ctx.call_tool("act", {"n": n})
    return None
