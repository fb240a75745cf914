"""An example agent that asks for a quarterly filing through a form, then for confirmation.

Written straight through: ``await ctx.ask(...)`` ends the first run with an ``input_required``
interrupt carrying the seed's quarterly-filing ``responseSchema`` and an ``expiresAt``
:data:`FORM_TTL` from now (an answer after that gets ``INTERRUPT_EXPIRED``), and returns the
form in the run that answers it. The form is repeated back in a chained ``confirmation``
interrupt (a yes/no, the filing in its ``metadata``); the confirmed filing is the last run's
result. Cancelling either interrupt files nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from agui_core.protocol.types import JSON
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
    await ctx.text("I need the quarterly filing details.")
    form = await ctx.ask(
        "Please provide the quarterly filing details.", QUARTERLY_FILING_SCHEMA, expires_at=_expires_at(ctx.now())
    )
    if form.cancelled or not isinstance(form.payload, dict):
        await ctx.text("The filing was cancelled; nothing was filed.")
        return {"filed": False}
    filing = form.payload
    await ctx.text(f"Ready to file {_describe(filing)}.")
    if not await ctx.confirm(f"File {_describe(filing)} now?", metadata={"filing": filing}):
        await ctx.text("Not filed.")
        return {"filed": False}
    await ctx.text(f"Filed {_describe(filing)}.")
    return {"filed": True, "filing": filing}
