"""The demo's agent: one entry point that hands each thread to one of the example agents.

A thread's first run picks its agent by ``forwardedProps.scenario`` (one of :data:`AGENTS`),
or, without one, by the words of the last user message. The choice is a step of its own
(``ctx.once``): kept in the thread's step journal, which only the server holds, so the runs
that answer the chosen agent's questions go to the same agent whatever the client sends as
state or messages (a fresh client sends ``{}``; any client may send anything). The state shows
the choice too, for the user interface. Serve it with::

    agui serve agui_core.examples.assistant:assistant
"""

from __future__ import annotations

from collections.abc import Mapping

from agui_core.examples.filing import filing_agent
from agui_core.examples.mail import email_agent, send_email, team_email_agent
from agui_core.protocol.types import JSON, UserMessage
from agui_core.runtime.context import RunContext
from agui_core.runtime.host import Agent
from agui_core.runtime.tools import Tool

__all__ = ["AGENTS", "TOOLS", "assistant", "pick_scenario"]

AGENTS: Mapping[str, Agent] = {
    "email": email_agent,
    "filing": filing_agent,
    "parallel": team_email_agent,
}
"""The example agents, by scenario name."""

TOOLS: list[Tool] = [send_email]
"""The tools the example agents call."""

_KEYWORDS = (("filing", ("file", "filing", "quarter", "form")), ("parallel", ("team", "each", "everyone", "three")))


def pick_scenario(props: JSON, text: str) -> str:
    """The scenario a new thread goes to: ``props["scenario"]`` if it names one, else by ``text``."""
    if isinstance(props, dict) and isinstance(props.get("scenario"), str) and props["scenario"] in AGENTS:
        return str(props["scenario"])
    words = text.lower()
    for name, keywords in _KEYWORDS:
        if any(word in words for word in keywords):
            return name
    return "email"


async def assistant(ctx: RunContext) -> JSON:
    """Run the thread's example agent (see the module docstring)."""
    said = [m.content for m in ctx.messages if isinstance(m, UserMessage) and isinstance(m.content, str)]
    chosen = await ctx.once("scenario", pick_scenario, ctx.input.forwarded_props, said[-1] if said else "")
    await ctx.set_state({"scenario": chosen})
    return await AGENTS[chosen](ctx)
