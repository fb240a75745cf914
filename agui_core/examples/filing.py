"""An example agent that asks for a quarterly filing through a form, then for confirmation.

The first run ends with an ``input_required`` interrupt carrying the seed's quarterly-filing
``responseSchema`` and an ``expiresAt`` :data:`FORM_TTL` from now (an answer after that gets
``INTERRUPT_EXPIRED``). The answered form is repeated back in a chained ``confirmation``
interrupt (a yes/no, the filing in its ``metadata``); the confirmed filing is the last run's
result. Cancelling either interrupt files nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from agui_core.protocol.types import JSON, Interrupt
from agui_core.runtime.context import RunContext

__all__ = ["FORM_TTL", "QUARTERLY_FILING_SCHEMA", "filing_agent"]

QUARTERLY_FILING_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
        "revenue": {"type": "number"},
    },
    "required": ["quarter", "year", "revenue"],
}
"""The form, as the seed document gives it."""

FORM_TTL = timedelta(minutes=10)
"""How long the form stays answerable."""


def _expires_at(now: datetime) -> str:
    return (now.astimezone(UTC) + FORM_TTL).isoformat(timespec="seconds").replace("+00:00", "Z")


def _describe(filing: Mapping[str, JSON]) -> str:
    revenue = filing.get("revenue")
    amount = f"{revenue:,}" if isinstance(revenue, int | float) and not isinstance(revenue, bool) else revenue
    return f"{filing.get('quarter')} {filing.get('year')}, revenue {amount}"


async def filing_agent(ctx: RunContext) -> JSON:
    """Form, then confirmation, then the filing (see the module docstring)."""
    if not ctx.resumed:
        await ctx.text("I need the quarterly filing details.")
        await ctx.interrupt(
            ctx.ask(
                "Please provide the quarterly filing details.",
                QUARTERLY_FILING_SCHEMA,
                expires_at=_expires_at(ctx.now()),
            )
        )
        return None
    answer = ctx.answers[0]
    entry = answer.entry
    if answer.interrupt.reason == "input_required":
        if entry.status == "cancelled" or not isinstance(entry.payload, dict):
            await ctx.text("The filing was cancelled; nothing was filed.")
            return {"filed": False}
        filing = entry.payload
        await ctx.text(f"Ready to file {_describe(filing)}.")
        await ctx.interrupt(
            Interrupt(
                id=ctx.new_id("confirm"),
                reason="confirmation",
                message=f"File {_describe(filing)} now?",
                metadata={"filing": filing},
            )
        )
        return None
    metadata = answer.interrupt.metadata or {}
    confirmed = metadata.get("filing")
    if entry.status == "resolved" and entry.payload is True and isinstance(confirmed, dict):
        await ctx.text(f"Filed {_describe(confirmed)}.")
        return {"filed": True, "filing": confirmed}
    await ctx.text("Not filed.")
    return {"filed": False}
