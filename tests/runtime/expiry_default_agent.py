"""An agent that asks for approval of a payment with a one-second deadline, declaring that
nobody answering means no (for the active expiry tests that run ``agui serve`` processes)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from agui_core.machine.client import deny
from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = ["TOOLS", "pay_agent"]


@tool(needs_approval=True)
def pay(amount: int) -> str:
    """Pay ``amount``; each payment is a line in the file AGUI_PAYMENTS names."""
    with Path(os.environ["AGUI_PAYMENTS"]).open("a") as out:
        out.write(f"{amount}\n")
    return "paid"


TOOLS = [pay]


async def pay_agent(ctx: RunContext) -> JSON:
    """Proposes a payment that needs approval within a second; unanswered, it is denied."""
    expires = (ctx.now() + timedelta(seconds=1)).isoformat()
    outcome = await ctx.call_tool("pay", {"amount": 120}, expires_at=expires, on_expiry=deny())
    await ctx.text(f"payment {outcome.status}")
    return {"payment": outcome.status}
