"""The agent the stock ``HttpAgent`` test serves through ``agui serve --http``: one gated tool,
whose every execution is written down, so a test in another process can count them.

``sendEmail`` appends a JSON line to the file named by the environment variable
:data:`EXECUTIONS_ENV` (when it is set) each time it really runs.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = ["EXECUTIONS_ENV", "TOOLS", "approval_agent", "send_email"]

EXECUTIONS_ENV = "AGUI_TEST_EXECUTIONS"
"""The environment variable naming the file ``sendEmail`` records its executions in."""


@tool("sendEmail", needs_approval=True)
async def send_email(to: str, subject: str, body: str = "") -> dict[str, Any]:
    """Send an email (after a person approved it)."""
    path = os.environ.get(EXECUTIONS_ENV)
    if path:
        with open(path, "ab") as file:
            file.write(orjson.dumps({"to": to, "subject": subject, "body": body}) + b"\n")
    return {"sent": True, "to": to}


TOOLS = [send_email]


async def approval_agent(ctx: RunContext) -> JSON:
    """A gated ``sendEmail`` call (the first run ends with its approval), then what became of it."""
    await ctx.text(f"I will send the quarterly report to Ann ({ctx.thread_id}).")
    outcome = await ctx.call_tool("sendEmail", {"to": "ann@example.com", "subject": f"Q3 report of {ctx.thread_id}"})
    await ctx.text(f"sendEmail: {outcome.status}")
    return {"emails": {outcome.tool_call_id: outcome.status}}
