"""An agent whose question expires a second after it is asked (for the active expiry tests
that run ``agui serve`` processes)."""

from __future__ import annotations

from datetime import timedelta

from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext

__all__ = ["quick_question_agent"]


async def quick_question_agent(ctx: RunContext) -> JSON:
    """Asks which quarter, for one second; then says what it got."""
    expires = (ctx.now() + timedelta(seconds=1)).isoformat()
    reply = await ctx.ask("Which quarter? (one second)", {"type": "string"}, expires_at=expires)
    await ctx.text(f"got {reply.payload!r}")
    return None
