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
from pathlib import Path
from typing import Any

from agui_core.examples.filing import QUARTERLY_FILING_SCHEMA
from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = ["EXECUTIONS", "FORM_TTL", "TOOLS", "conformance_agent", "marking_tools", "send_email"]

FORM_TTL = timedelta(seconds=2)
"""How long the form stays answerable: long enough for a probe, short enough for R7 in CI."""

EXECUTIONS = itertools.count(1)
"""Numbers each execution of ``sendEmail`` in this process."""


@tool("sendEmail", needs_approval=True)
async def send_email(to: str, subject: str, body: str = "") -> dict[str, Any]:
    """Send an email (a stand-in that numbers its executions)."""
    return {"sent": True, "to": to, "execution": next(EXECUTIONS)}


TOOLS = [send_email]


def marking_tools(directory: Path) -> list[Any]:
    """The tools of :func:`conformance_agent`, whose ``sendEmail`` leaves a file in ``directory``
    each time it runs: the mark a test looks for to know whether a gated tool ran."""

    @tool("sendEmail", needs_approval=True)
    async def send_marked_email(to: str, subject: str, body: str = "") -> dict[str, Any]:
        """Send an email (a stand-in that writes a file per execution)."""
        execution = next(EXECUTIONS)
        (directory / f"sent-{execution}-{to}").write_text(subject, encoding="utf-8")
        return {"sent": True, "to": to, "execution": execution}

    return [send_marked_email]


async def conformance_agent(ctx: RunContext) -> JSON:
    """Two approvals and an expiring form, asked at once; then what became of each."""
    await ctx.text("I will email Ann and Bob and file the quarter; each needs you.")
    expires = (ctx.now().astimezone(UTC) + FORM_TTL).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    *sent, form = await ctx.gather(
        *(
            ctx.call_tool("sendEmail", {"to": to, "subject": "Hi"}, message=f"Send the email to {to}?")
            for to in ("ann@example.com", "bob@example.com")
        ),
        ctx.ask("Please provide the quarterly filing details.", QUARTERLY_FILING_SCHEMA, expires_at=expires),
    )
    emails = {outcome.tool_call_id: outcome.status for outcome in sent}
    filing = None if form.cancelled else form.payload
    await ctx.text(f"emails: {emails}; filing: {[filing]}")
    return {"emails": emails, "filing": filing}
