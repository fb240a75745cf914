"""Straight-line agents that get it wrong, served by ``agui serve`` for the wire tests.

``divergent`` proposes a gated ``charge`` for an amount its process counts up, so the run that
answers the approval calls the tool with other arguments than the journal recorded: a replay
that diverges. ``forgetful`` makes a question and never awaits it. ``charge`` appends what it
ran to ``$AGUI_TEST_EFFECTS``.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from types import SimpleNamespace

from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = ["divergent", "forgetful"]

_amounts = itertools.count(10)


@tool("charge", needs_approval=True)
async def charge(amount: int) -> str:
    with Path(os.environ["AGUI_TEST_EFFECTS"]).open("a") as file:
        file.write(f"charge {amount}\n")
    return f"charged {amount}"


async def _divergent(ctx: RunContext) -> JSON:
    await ctx.text("Charging.")
    outcome = await ctx.call_tool("charge", {"amount": next(_amounts)})  # not the same on every run
    return outcome.status


async def _forgetful(ctx: RunContext) -> JSON:
    await ctx.text("One question.")
    ctx.ask("Your name?", {"type": "string"})  # never awaited: nothing would be asked
    return "done"


divergent = SimpleNamespace(agent=_divergent, tools=[charge])
forgetful = SimpleNamespace(agent=_forgetful, tools=[])
