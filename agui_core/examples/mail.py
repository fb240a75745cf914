"""Example agents around an approval-gated ``sendEmail`` tool: one email, or three at once.

``email_agent`` drafts an email to Bob and proposes it through ``sendEmail``, which needs a
person's approval: the run ends with a ``tool_call`` interrupt whose ``responseSchema`` offers
approve-with-edits (``editedArgs`` replaces the arguments whole). ``team_email_agent`` proposes
three emails at once (``ctx.gather``), so the run ends with three parallel approvals. Both are
written straight through: ``await ctx.call_tool(...)`` returns once the person has decided (the
email sent, with their edits if any; denied; or left alone when cancelled), and the agents then
say what became of each email and return it as the run's result.

Nothing is really sent: ``sendEmail`` returns what it would have sent.
"""

from __future__ import annotations

from collections.abc import Mapping

from agui_core.protocol.types import JSON
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import ToolOutcome, tool

__all__ = [
    "DRAFT",
    "SEND_EMAIL_ARGS_SCHEMA",
    "TEAM",
    "TOOLS",
    "email_agent",
    "send_email",
    "team_email_agent",
]

SEND_EMAIL_ARGS_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "format": "email"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
    "required": ["to", "subject", "body"],
    "additionalProperties": False,
}
"""The arguments of ``sendEmail``; an approval offers them as ``editedArgs`` (the seed's pattern),
exactly as the host holds edits to them."""

DRAFT: Mapping[str, JSON] = {"to": "bob@example.com", "subject": "Hi", "body": "Hi Bob, just saying hi."}
"""The email ``email_agent`` proposes."""

TEAM: tuple[str, ...] = ("a@example.com", "b@example.com", "c@example.com")
"""Who ``team_email_agent`` writes to, one email each."""


@tool("sendEmail", needs_approval=True, args_schema=SEND_EMAIL_ARGS_SCHEMA)
async def send_email(to: str, subject: str, body: str = "") -> dict[str, JSON]:
    """Send an email (a stand-in: it returns what it would have sent)."""
    return {"sent": True, "to": to, "subject": subject, "body": body}


TOOLS = [send_email]
"""The tools a host serving these agents needs."""


def _report(outcome: ToolOutcome) -> dict[str, JSON]:
    """What became of one proposed email, as the run's result shows it."""
    report: dict[str, JSON] = {"to": outcome.args.get("to"), "status": outcome.status}
    if outcome.status == "executed":
        report["edited"] = outcome.edited
        report["subject"] = outcome.args.get("subject")
        report["body"] = outcome.args.get("body")
    elif outcome.error is not None:
        report["error"] = outcome.error
    return report


def _sentence(outcome: ToolOutcome) -> str:
    to = outcome.args.get("to")
    if outcome.status == "executed":
        return f"sent to {to}" + (" with your edits" if outcome.edited else "")
    if outcome.status == "denied":
        return f"not sent to {to}: you denied it"
    if outcome.status == "cancelled":
        return f"not sent to {to}: cancelled"
    return f"{outcome.status} for {to}"


async def email_agent(ctx: RunContext) -> JSON:
    """Propose one email to Bob behind an approval, then say what became of it."""
    await ctx.text("I drafted an email to Bob. I will send it once you approve it.")
    outcome = await ctx.call_tool(
        "sendEmail",
        DRAFT,
        message=f"Send the email to {DRAFT['to']} with subject {DRAFT['subject']!r}? You can edit it first.",
    )
    await ctx.text("The email was " + _sentence(outcome) + ".")
    return {"emails": [_report(outcome)]}


async def team_email_agent(ctx: RunContext) -> JSON:
    """Propose one email to each of :data:`TEAM` at once (three parallel approvals), then report."""
    await ctx.text(f"I will email {', '.join(TEAM)}; each email needs your approval.")
    outcomes = await ctx.gather(
        *(
            ctx.call_tool(
                "sendEmail",
                {"to": to, "subject": "Hi", "body": "Hi, just saying hi."},
                message=f"Approve sendEmail to {to}?",
            )
            for to in TEAM
        )
    )
    await ctx.text("Emails: " + "; ".join(_sentence(o) for o in outcomes) + ".")
    return {"emails": [_report(o) for o in outcomes]}
