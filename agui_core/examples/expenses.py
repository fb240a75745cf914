"""An expense agent, written straight through: a receipt, two payments approved at once, a
confirmation over a limit, and the filing.

1. It asks for the receipt (``ctx.ask``: a form, :data:`RECEIPT_SCHEMA`); a dismissed form
   files nothing.
2. It proposes two gated tool calls in one run (``ctx.gather``): ``reimburseEmployee``, which a
   person may approve with edits (a corrected amount, say), and ``bookToLedger``, which takes
   no edits. The run ends with both approvals open; the run that carries both decisions
   comes back with both outcomes.
3. When what was approved comes to more than :data:`APPROVAL_LIMIT`, it asks for a
   confirmation before filing (``ctx.confirm``).
4. It files the expense with ``fileExpense``, a tool that needs no approval, and returns the
   filing as the run's result.

Every question ends the run that reaches it, and the run that answers it runs the function
again from the top: the steps already taken return what they returned (nothing is sent or
run twice), so the function reads as the conversation it is. Serve it with::

    agui serve agui_core.examples.expenses:expenses --http 127.0.0.1:8000
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from agui_core.protocol.types import JSON
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import ToolOutcome, tool

__all__ = [
    "APPROVAL_LIMIT",
    "FILED",
    "RECEIPT_SCHEMA",
    "TOOLS",
    "book_to_ledger",
    "expense_agent",
    "expenses",
    "file_expense",
    "reimburse_employee",
]

RECEIPT_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "employee": {"type": "string", "minLength": 1},
        "merchant": {"type": "string", "minLength": 1},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
        "category": {"type": "string", "enum": ["travel", "meals", "equipment"]},
    },
    "required": ["employee", "merchant", "amount", "currency", "category"],
    "additionalProperties": False,
}
"""The receipt form."""

APPROVAL_LIMIT = 500
"""Above this total (in the receipt's currency), filing needs a confirmation."""

FILED: list[dict[str, Any]] = []
"""What ``fileExpense`` filed in this process (a stand-in for a finance system)."""

_PAYMENT: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "employee": {"type": "string", "minLength": 1},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP"]},
    },
    "required": ["employee", "amount", "currency"],
    "additionalProperties": False,
}


@tool("reimburseEmployee", needs_approval=True, args_schema=_PAYMENT)
async def reimburse_employee(employee: str, amount: float, currency: str) -> dict[str, JSON]:
    """Pay an employee back (a stand-in: it says what it would pay)."""
    return {"paid": amount, "currency": currency, "to": employee}


@tool("bookToLedger", needs_approval=True, allow_edits=False)
async def book_to_ledger(category: str, merchant: str, amount: float, currency: str) -> dict[str, JSON]:
    """Book the expense to the ledger (a stand-in: it says what it would book)."""
    return {"booked": amount, "currency": currency, "account": f"expenses:{category}", "merchant": merchant}


@tool("fileExpense")
async def file_expense(receipt: dict[str, Any], reimbursed: float, booked: float) -> dict[str, JSON]:
    """File the expense record (no approval: everything in it was approved already)."""
    record = {"id": f"EXP-{len(FILED) + 1:04d}", "receipt": receipt, "reimbursed": reimbursed, "booked": booked}
    FILED.append(record)
    return record


TOOLS = [reimburse_employee, book_to_ledger, file_expense]
"""The tools a host serving :func:`expense_agent` needs."""


def _paid(outcome: ToolOutcome, field: str) -> float:
    if outcome.status != "executed" or not isinstance(outcome.result, dict):
        return 0.0
    value = outcome.result.get(field)
    return float(value) if isinstance(value, int | float) else 0.0


async def expense_agent(ctx: RunContext) -> JSON:
    """Receipt, two approvals, a confirmation over the limit, the filing (see the module docstring)."""
    await ctx.text("Let's file your expense. First, the receipt.")
    form = await ctx.ask("The receipt, please.", RECEIPT_SCHEMA)
    if form.cancelled or not isinstance(form.payload, dict):
        await ctx.text("No receipt, so nothing was filed.")
        return {"filed": False}
    receipt = form.payload
    amount, currency = receipt["amount"], receipt["currency"]
    await ctx.text(f"{receipt['merchant']}: {amount} {currency}. Two payments need your approval.")
    reimbursed, booked = await ctx.gather(
        ctx.call_tool(
            "reimburseEmployee",
            {"employee": receipt["employee"], "amount": amount, "currency": currency},
            message=f"Pay {receipt['employee']} back {amount} {currency}? You can correct the amount.",
        ),
        ctx.call_tool(
            "bookToLedger",
            {"category": receipt["category"], "merchant": receipt["merchant"], "amount": amount, "currency": currency},
            message=f"Book {amount} {currency} to expenses:{receipt['category']}?",
        ),
    )
    paid, ledger = _paid(reimbursed, "paid"), _paid(booked, "booked")
    if reimbursed.status != "executed" and booked.status != "executed":
        await ctx.text("Neither payment was approved, so nothing was filed.")
        return {"filed": False, "reimbursement": reimbursed.status, "booking": booked.status}
    if max(paid, ledger) > APPROVAL_LIMIT and not await ctx.confirm(
        f"The expense comes to {max(paid, ledger)} {currency}, over the limit of {APPROVAL_LIMIT}. File it anyway?"
    ):
        await ctx.text("Not filed.")
        return {"filed": False, "reimbursement": reimbursed.status, "booking": booked.status}
    filed = await ctx.call_tool("fileExpense", {"receipt": receipt, "reimbursed": paid, "booked": ledger})
    record = filed.result if isinstance(filed.result, dict) else {}
    await ctx.text(f"Filed as {record.get('id')}.")
    return {"filed": True, "record": record, "reimbursement": reimbursed.status, "booking": booked.status}


expenses = SimpleNamespace(agent=expense_agent, tools=TOOLS)
"""The agent and its tools, for ``agui serve agui_core.examples.expenses:expenses``."""
