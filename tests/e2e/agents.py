"""The agent the end-to-end tests serve: the seed's four examples, built on the agent API.

``seed_agent`` plays, on its first run, the scenario its input names in
``forwardedProps.scenario`` (see :data:`SCENARIOS`), each ending with the interrupts of the
seed's example of that name:

- ``tool_approval``: a ``sendEmail`` call proposed by the agent itself and an approval
  whose ``responseSchema`` is the seed's bare ``{approved}`` (the host still carries out the
  decision, since ``sendEmail`` is one of its gated tools);
- ``approve_with_edits``: a gated ``sendEmail`` call whose approval offers ``editedArgs``
  (the tool's own approval schema) and carries framework ``metadata``;
- ``parallel``: three gated ``sendEmail`` calls in one run, three approvals;
- ``input_required``: the quarterly filing form, a ``responseSchema`` and an ``expiresAt``
  an hour ahead.

The resumed run is the same for all: it reports what became of each email and the form's
answer, in a text message, in the state and as the run's result (the explicit style:
``ctx.resumed``, ``ctx.tool_outcomes``, ``ctx.answers``). Interrupt ids are the seed's,
prefixed with the thread id so that many threads can share one host.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from agui_core.protocol.types import JSON, Interrupt
from agui_core.runtime import APPROVE_SCHEMA, RunContext, ToolOutcome, tool

__all__ = [
    "FILING_SCHEMA",
    "SCENARIOS",
    "SEED_INTERRUPT_IDS",
    "SEND_EMAIL_ARGS_SCHEMA",
    "TOOLS",
    "interrupt_id",
    "seed_agent",
    "send_email",
]

SCENARIOS = ("tool_approval", "approve_with_edits", "parallel", "input_required")
"""The seed's four examples, in the order the seed gives them."""

SEED_INTERRUPT_IDS: Mapping[str, tuple[str, ...]] = {
    "tool_approval": ("int-abc123",),
    "approve_with_edits": ("int-email-edit",),
    "parallel": ("i-1", "i-2", "i-3"),
    "input_required": ("int-form",),
}
"""The seed's ids of each scenario's interrupts, in the order the run announces them."""

SEND_EMAIL_ARGS_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "format": "email"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
}
"""The ``editedArgs`` of the seed's approve-with-edits example."""

FILING_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
        "revenue": {"type": "number"},
    },
    "required": ["quarter", "year", "revenue"],
}
"""The seed's quarterly filing form."""


@tool("sendEmail", needs_approval=True, args_schema=SEND_EMAIL_ARGS_SCHEMA)
async def send_email(to: str, subject: str, body: str = "") -> dict[str, Any]:
    """Send an email (a stand-in: it returns what it would have sent)."""
    return {"sent": True, "to": to, "subject": subject, "body": body}


TOOLS = [send_email]


def interrupt_id(thread_id: str, seed_id: str) -> str:
    """The id ``seed_agent`` gives the seed's interrupt ``seed_id`` on ``thread_id``."""
    return f"{thread_id}.{seed_id}"


def _scenario(ctx: RunContext) -> str:
    props = ctx.input.forwarded_props
    name = props.get("scenario") if isinstance(props, dict) else None
    if name not in SCENARIOS:
        raise ValueError(f"forwardedProps.scenario must be one of {', '.join(SCENARIOS)}, not {name!r}")
    return str(name)


async def _tool_approval(ctx: RunContext) -> None:
    to = "alice@example.com"
    await ctx.text(f"I drafted an email to {to}.")
    call = await ctx.propose_tool_call(
        "sendEmail", {"to": to, "subject": "Hi", "body": "Hi Alice!"}, tool_call_id="tc-001"
    )
    await ctx.interrupt(
        Interrupt(
            id=interrupt_id(ctx.thread_id, "int-abc123"),
            reason="tool_call",
            message=f"Send email to {to} with subject 'Hi'?",
            tool_call_id=call,
            response_schema=APPROVE_SCHEMA,
        )
    )


async def _approve_with_edits(ctx: RunContext) -> None:
    to = "bob@example.com"
    await ctx.text(f"Here is the email to {to}.")
    call = await ctx.propose_tool_call("sendEmail", {"to": to, "subject": "Hi", "body": "Hi"}, tool_call_id="tc-42")
    await ctx.interrupt(
        Interrupt(
            id=interrupt_id(ctx.thread_id, "int-email-edit"),
            reason="tool_call",
            message=f"Send email to {to}? You can edit the body before approving.",
            tool_call_id=call,
            response_schema=send_email.approval_schema,
            metadata={"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}},
        )
    )


async def _parallel(ctx: RunContext) -> None:
    await ctx.text("Three emails, each waiting for your approval.")
    recipients = ("a@x.com", "b@x.com", "c@x.com")
    approvals = []
    for suffix, seed_id, to in zip("abc", SEED_INTERRUPT_IDS["parallel"], recipients, strict=True):
        call = await ctx.propose_tool_call(
            "sendEmail", {"to": to, "subject": "Hi", "body": "Hi!"}, tool_call_id=f"tc-{suffix}"
        )
        approvals.append(
            Interrupt(
                id=interrupt_id(ctx.thread_id, seed_id),
                reason="tool_call",
                message=f"Approve sendEmail to {to}?",
                tool_call_id=call,
                response_schema=send_email.approval_schema,
            )
        )
    await ctx.interrupt(*approvals)


async def _input_required(ctx: RunContext) -> None:
    await ctx.set_state({"filing": None})
    expires = (datetime.now(UTC) + timedelta(hours=1)).isoformat(timespec="seconds").replace("+00:00", "Z")
    await ctx.interrupt(
        Interrupt(
            id=interrupt_id(ctx.thread_id, "int-form"),
            reason="input_required",
            message="Please provide the quarterly filing details.",
            response_schema=FILING_SCHEMA,
            expires_at=expires,
        )
    )


_FIRST_RUNS = {
    "tool_approval": _tool_approval,
    "approve_with_edits": _approve_with_edits,
    "parallel": _parallel,
    "input_required": _input_required,
}


def _email(outcome: ToolOutcome) -> dict[str, JSON]:
    report: dict[str, JSON] = {"toolCallId": outcome.tool_call_id, "status": outcome.status}
    if outcome.status == "executed":
        report.update(to=outcome.args.get("to"), body=outcome.args.get("body"), edited=outcome.edited)
    return report


async def seed_agent(ctx: RunContext) -> JSON:
    """First run: the scenario ``forwardedProps.scenario`` names. Resumed: what became of it."""
    if not ctx.resumed:
        await _FIRST_RUNS[_scenario(ctx)](ctx)
        return None
    emails = [_email(outcome) for outcome in ctx.tool_outcomes.values()]
    forms = {a.interrupt.id: a.entry.payload for a in ctx.answers if a.interrupt.reason == "input_required"}
    filing = next(iter(forms.values()), None)
    if filing is not None:
        await ctx.set_state({"filing": filing})
    done = ", ".join(f"{e['toolCallId']} {e['status']}" for e in emails) or "no emails"
    await ctx.text(f"Done: {done}" + ("; filing received." if filing is not None else "."))
    return {"emails": emails, "filing": filing}
