"""The agent the thread-size tests serve (``test_thread_size.py``): a short answer to every input.

A plain input gets ``ok``, one whose ``forwardedProps`` say ``{"confirm": true}`` ends on a
confirmation instead, and the resume that answers it gets ``answered``: one message of the
agent's a run, so what a thread holds is what clients sent, plus one short message an input.
"""

from __future__ import annotations

from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext

__all__ = ["agent"]


async def agent(ctx: RunContext) -> JSON:
    props = ctx.input.forwarded_props if isinstance(ctx.input.forwarded_props, dict) else {}
    if ctx.resumed:
        await ctx.text("answered")
        return None
    if props.get("confirm") is True:
        await ctx.interrupt(ctx.confirm("Go on?"))
        return None
    await ctx.text("ok")
    return None
