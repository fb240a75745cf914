"""The agent the console's tests serve: the shipped examples, plus a form that expires soon.

``forwardedProps.scenario`` picks the example (``email``, ``filing``, ``parallel``) as in
:mod:`agui_core.examples.assistant`; ``expiring`` asks for the quarterly form with an
``expiresAt`` :data:`EXPIRES_IN` ahead, for the tests of expiry.
"""

from __future__ import annotations

from datetime import UTC, timedelta

from agui_core.examples import QUARTERLY_FILING_SCHEMA, TOOLS, assistant
from agui_core.protocol.types import JSON
from agui_core.runtime.context import RunContext

__all__ = ["EXPIRES_IN", "TOOLS", "agent"]

EXPIRES_IN = timedelta(seconds=4)


async def agent(ctx: RunContext) -> JSON:
    props = ctx.input.forwarded_props
    expiring = isinstance(props, dict) and props.get("scenario") == "expiring"
    if ctx.resumed and isinstance(ctx.continuation, dict) and ctx.continuation.get("expiring"):
        entry = ctx.answers[0].entry if ctx.answers else None
        said = "Nothing was filed." if entry is None or entry.status != "resolved" else f"Filed {entry.payload}."
        await ctx.text(said)
        return {"filed": entry is not None and entry.status == "resolved"}
    if not ctx.resumed and not (isinstance(props, dict) and props.get("scenario")):
        # The console's input that only dismisses expired requests answers nothing: the run
        # is a plain one, and this agent has nothing new to ask.
        await ctx.text("Nothing is waiting any more.")
        return None
    if expiring and not ctx.resumed:
        ctx.continuation = {"expiring": True}
        expires_at = (ctx.now().astimezone(UTC) + EXPIRES_IN).isoformat(timespec="milliseconds")
        asked = ctx.ask("Quick: the quarterly numbers, please.", QUARTERLY_FILING_SCHEMA, expires_at=expires_at)
        await ctx.interrupt(asked)
        return None
    return await assistant(ctx)
