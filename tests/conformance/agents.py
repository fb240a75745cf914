"""The agent the conformance tests serve: every check of the kit applies to it.

Its first run proposes two approval-gated emails and asks for a quarterly filing through a
form whose ``expiresAt`` is :data:`FORM_TTL` away, so one run ends with three interrupts: two
``tool_call`` (R3 applies: a partial resume is possible), one ``input_required`` with a
``responseSchema`` (R6) and an ``expiresAt`` (R7, reached in seconds). ``sendEmail`` counts its
executions in its result, so a tool run twice shows in the stream.
"""

from __future__ import annotations

import itertools
from datetime import UTC, timedelta
from typing import Any

from agui_core.examples.filing import QUARTERLY_FILING_SCHEMA
from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = ["EXECUTIONS", "FORM_TTL", "TOOLS", "conformance_agent", "send_email"]

FORM_TTL = timedelta(seconds=2)
"""How long the form stays answerable: long enough for a probe, short enough for R7 in CI."""

EXECUTIONS = itertools.count(1)
"""Numbers each execution of ``sendEmail`` in this process."""


@tool("sendEmail", needs_approval=True)
async def send_email(to: str, subject: str, body: str = "") -> dict[str, Any]:
    """Send an email (a stand-in that numbers its executions)."""
    return {"sent": True, "to": to, "execution": next(EXECUTIONS)}


TOOLS = [send_email]


async def conformance_agent(ctx: RunContext) -> JSON:
    """Two approvals and an expiring form; on resume, what became of each."""
    if ctx.resumed:
        emails = {call: outcome.status for call, outcome in ctx.tool_outcomes.items()}
        forms = [a.entry.payload for a in ctx.answers if a.interrupt.reason == "input_required"]
        await ctx.text(f"emails: {emails}; filing: {forms}")
        return {"emails": emails, "filing": forms[0] if forms else None}
    await ctx.text("I will email Ann and Bob and file the quarter; each needs you.")
    for to in ("ann@example.com", "bob@example.com"):
        await ctx.call_tool("sendEmail", {"to": to, "subject": "Hi"}, message=f"Send the email to {to}?")
    expires = (ctx.now().astimezone(UTC) + FORM_TTL).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    form = ctx.ask("Please provide the quarterly filing details.", QUARTERLY_FILING_SCHEMA, expires_at=expires)
    await ctx.interrupt(form)
    return None
