"""The agent the browser tests serve with ``agui serve``: one per scenario, picked by the user's words.

The page types a request; the agent reads the last user message and plays the scenario it
names:

- ``team``: three ``sendEmail`` calls proposed at once (``ctx.gather``), so the run ends with
  three parallel ``tool_call`` approvals; the resumed run says what became of each email;
- ``form``: one ``input_required`` interrupt (a name and a head count, by ``responseSchema``);
- ``expiring``: one ``confirmation`` that expires a few seconds after it is raised.

The server runs in its own process, so the tool writes each email it really sends as a JSON
line to the file named by ``AGUI_FRONTENDS_TOOL_LOG``: the tests read it to see that an
approved tool ran once, and a denied or cancelled one never.
"""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = ["EXPIRES_IN", "FORM_SCHEMA", "TEAM", "TOOLS", "agent", "send_email"]

TEAM = ("ann@example.com", "bob@example.com", "cid@example.com")
"""Who the ``team`` scenario emails, one approval each, in this order."""

FORM_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1}, "guests": {"type": "integer", "minimum": 1}},
    "required": ["name", "guests"],
    "additionalProperties": False,
}
"""What the ``form`` scenario asks for."""

EXPIRES_IN = timedelta(seconds=float(os.environ.get("AGUI_FRONTENDS_EXPIRES_IN", "3")))
"""How long the ``expiring`` scenario's confirmation stays open."""


@tool("sendEmail", needs_approval=True)
async def send_email(to: str, subject: str) -> dict[str, JSON]:
    """Send an email (recorded in the tool log, nothing leaves the machine)."""
    log = os.environ.get("AGUI_FRONTENDS_TOOL_LOG")
    if log:
        with Path(log).open("a", encoding="utf-8") as sink:
            sink.write(json.dumps({"tool": "sendEmail", "to": to, "subject": subject}) + "\n")
    return {"sent": True, "to": to}


TOOLS = [send_email]


def _request(ctx: RunContext) -> str:
    """The last thing the user typed, lower-cased ("" when nothing)."""
    for message in reversed(ctx.messages):
        if message.role == "user" and isinstance(message.content, str):
            return message.content.strip().lower()
    return ""


async def agent(ctx: RunContext) -> JSON:
    """Play the scenario the user's last message names (see the module's docstring)."""
    request = _request(ctx)
    if "form" in request:
        reply = await ctx.ask("Who is coming, and how many?", FORM_SCHEMA)
        if reply.cancelled:
            await ctx.text("form: cancelled")
            return {"form": "cancelled"}
        await ctx.text(f"form: {json.dumps(reply.payload, sort_keys=True)}")
        return {"form": reply.payload}
    if "expiring" in request:
        deadline = (ctx.now() + EXPIRES_IN).isoformat()
        confirmed = await ctx.confirm("Go ahead before this expires?", expires_at=deadline)
        await ctx.text(f"expiring: {confirmed}")
        return {"expiring": confirmed}
    if "team" in request:
        await ctx.text("Three emails, each needs your approval.")
        outcomes = await ctx.gather(
            *(ctx.call_tool("sendEmail", {"to": to, "subject": "Hi"}, message=f"Email {to}?") for to in TEAM)
        )
        summary = ", ".join(f"{o.args.get('to')}={o.status}" for o in outcomes)
        await ctx.text(f"emails: {summary}")
        return {"emails": {str(o.args.get("to")): o.status for o in outcomes}}
    await ctx.text(f"echo: {request}")
    return {"echo": request}
