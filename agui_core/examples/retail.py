"""A small retail shop for ``agui episodes``: a scripted agent (no model) and its gated tools.

``retail_agent`` reads the request in the thread's first user message that makes one: a verb and an order id
(``refund R-1001``, ``cancel R-1002``, ``address R-1003``, ``exchange R-1004``, ``status
R-1005``). It looks the order up (``lookupOrder``, no approval) and then:

- refund: asks for the reason (a form), asks for a confirmation when the total is over
  :data:`REFUND_LIMIT`, and proposes ``refundOrder`` (approval; the amount may be edited);
- cancel: proposes ``cancelOrder`` (approval, no edits);
- address: asks for the new address (a form that expires after ``state.formTtlSeconds``,
  default 600) and proposes ``updateAddress`` (approval);
- exchange: proposes ``refundOrder`` and ``placeOrder`` at once (two approvals in one run);
- status: answers from the lookup, with no interrupt.

The run's result says what was done. Each tool's result carries a number from a counter of
this process (``RF-0001`` ...), so a tool that ran twice reports two different results.

``shop`` serves it with the tools gated as they should be; ``unsafe_shop`` serves the same
agent with ``refundOrder`` and ``cancelOrder`` ungated, so they run with no approval (what
``agui episodes`` must catch). ``halve_refund`` is an edit for the ``edit:`` human::

    agui serve agui_core.examples.retail:shop --http 127.0.0.1:8000 --store memory
    agui episodes http://127.0.0.1:8000 --tasks agui_core/examples/retail_tasks.jsonl --humans approve
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from datetime import UTC, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agui_core.protocol.types import JSON, UserMessage
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import Tool, ToolOutcome, tool

__all__ = [
    "ADDRESS_SCHEMA",
    "ORDERS",
    "REASON_SCHEMA",
    "REFUND_LIMIT",
    "TASKS",
    "TOOLS",
    "UNSAFE_TOOLS",
    "halve_refund",
    "retail_agent",
    "shop",
    "unsafe_shop",
]

TASKS = Path(__file__).with_name("retail_tasks.jsonl")
"""The task set shipped with the shop."""

ORDERS: Mapping[str, Mapping[str, JSON]] = {
    "R-1001": {"item": "kettle", "total": 40.0, "status": "delivered"},
    "R-1002": {"item": "lamp", "total": 25.0, "status": "processing"},
    "R-1003": {"item": "chair", "total": 120.0, "status": "processing"},
    "R-1004": {"item": "shoes", "total": 80.0, "status": "delivered"},
    "R-1005": {"item": "desk", "total": 300.0, "status": "shipped"},
    "R-1006": {"item": "sofa", "total": 900.0, "status": "delivered"},
}
"""The shop's orders (read only)."""

REFUND_LIMIT = 500.0
"""Above this total a refund needs a confirmation first."""

REASON_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {"reason": {"type": "string", "enum": ["damaged", "late", "wrong item", "changed mind"]}},
    "required": ["reason"],
    "additionalProperties": False,
}
"""The refund reason form."""

ADDRESS_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {"street": {"type": "string", "minLength": 1}, "city": {"type": "string", "minLength": 1}},
    "required": ["street", "city"],
    "additionalProperties": False,
}
"""The new address form."""

_counter = itertools.count(1)


def _number(prefix: str) -> str:
    return f"{prefix}-{next(_counter):04d}"


async def lookup_order(orderId: str) -> dict[str, JSON]:
    """The order ``orderId`` (``found: false`` for none)."""
    order = ORDERS.get(orderId)
    return {"found": False} if order is None else {"found": True, "orderId": orderId, **order}


async def refund_order(orderId: str, amount: float) -> dict[str, JSON]:
    """Refund ``amount`` on ``orderId`` (a stand-in: it numbers the refund)."""
    return {"refundId": _number("RF"), "orderId": orderId, "amount": amount}


async def cancel_order(orderId: str) -> dict[str, JSON]:
    """Cancel ``orderId`` (a stand-in)."""
    return {"cancellationId": _number("CX"), "orderId": orderId}


async def update_address(orderId: str, street: str, city: str) -> dict[str, JSON]:
    """Ship ``orderId`` to a new address (a stand-in)."""
    return {"changeId": _number("AD"), "orderId": orderId, "street": street, "city": city}


async def place_order(item: str) -> dict[str, JSON]:
    """Place a new order for ``item`` (a stand-in)."""
    return {"orderId": _number("R"), "item": item}


_AMOUNT: Mapping[str, JSON] = {
    "type": "object",
    "properties": {"orderId": {"type": "string"}, "amount": {"type": "number", "exclusiveMinimum": 0}},
    "required": ["orderId", "amount"],
    "additionalProperties": False,
}


def _tools(gated: bool) -> list[Tool]:
    return [
        tool("lookupOrder")(lookup_order),
        tool("refundOrder", needs_approval=gated, args_schema=_AMOUNT)(refund_order),
        tool("cancelOrder", needs_approval=gated, allow_edits=False)(cancel_order),
        tool("updateAddress", needs_approval=True, allow_edits=False)(update_address),
        tool("placeOrder", needs_approval=True, allow_edits=False)(place_order),
    ]


TOOLS = _tools(gated=True)
"""The shop's tools: every one that changes something needs an approval."""

UNSAFE_TOOLS = _tools(gated=False)
"""The same tools with ``refundOrder`` and ``cancelOrder`` ungated: what a careless agent does."""

_REQUEST = re.compile(r"\b(refund|cancel|address|exchange|status)\b.*?\b(R-\d{4})\b", re.IGNORECASE | re.DOTALL)


def _request(ctx: RunContext) -> tuple[str, str] | None:
    # The thread's first request: later messages ("are you still there?") do not change what
    # the episode is about, and the agent runs again from the top on every run of the thread.
    for message in ctx.messages:
        if isinstance(message, UserMessage) and isinstance(message.content, str):
            found = _REQUEST.search(message.content)
            if found:
                return found.group(1).lower(), found.group(2).upper()
    return None


def _executed(outcome: ToolOutcome) -> bool:
    return outcome.status == "executed"


async def _refund(ctx: RunContext, order_id: str, total: float) -> JSON:
    form = await ctx.ask(f"Why should order {order_id} be refunded?", REASON_SCHEMA)
    if form.cancelled or not isinstance(form.payload, dict):
        await ctx.text("No reason given, so no refund.")
        return {"intent": "refund", "orderId": order_id, "refunded": False}
    if total > REFUND_LIMIT and not await ctx.confirm(f"Order {order_id} comes to {total}: refund it all?"):
        await ctx.text("Not refunded.")
        return {"intent": "refund", "orderId": order_id, "refunded": False}
    outcome = await ctx.call_tool(
        "refundOrder", {"orderId": order_id, "amount": total}, message=f"Refund {total} on order {order_id}?"
    )
    amount = outcome.args.get("amount") if _executed(outcome) else None
    await ctx.text(f"Refund {outcome.status}.")
    return {
        "intent": "refund",
        "orderId": order_id,
        "refunded": _executed(outcome),
        "amount": amount,
        "reason": form.payload["reason"],
    }


async def _address(ctx: RunContext, order_id: str) -> JSON:
    state = ctx.state if isinstance(ctx.state, dict) else {}
    ttl = state.get("formTtlSeconds", 600)
    expires = (ctx.now().astimezone(UTC) + timedelta(seconds=float(ttl))).isoformat(timespec="milliseconds")
    form = await ctx.ask(
        f"Where should order {order_id} go?", ADDRESS_SCHEMA, expires_at=expires.replace("+00:00", "Z")
    )
    if form.status != "resolved" or not isinstance(form.payload, dict):
        await ctx.text(f"The address stays as it was ({form.status}).")
        return {"intent": "address", "orderId": order_id, "addressChanged": False, "form": form.status}
    outcome = await ctx.call_tool(
        "updateAddress", {"orderId": order_id, **form.payload}, message=f"Ship order {order_id} to the new address?"
    )
    return {"intent": "address", "orderId": order_id, "addressChanged": _executed(outcome)}


async def retail_agent(ctx: RunContext) -> JSON:
    """Carry out the request in the last user message (see the module docstring)."""
    request = _request(ctx)
    if request is None:
        await ctx.text("I can refund, cancel, exchange, re-address or look up an order: say which, and its id.")
        return {"intent": None}
    intent, order_id = request
    found = await ctx.call_tool("lookupOrder", {"orderId": order_id})
    order: dict[str, Any] = found.result if isinstance(found.result, dict) else {}
    if not order.get("found"):
        await ctx.text(f"There is no order {order_id}.")
        return {"intent": intent, "orderId": order_id, "found": False}
    total = float(order["total"])
    if intent == "status":
        await ctx.text(f"Order {order_id} is {order['status']}.")
        return {"intent": "status", "orderId": order_id, "status": order["status"]}
    if intent == "refund":
        return await _refund(ctx, order_id, total)
    if intent == "cancel":
        outcome = await ctx.call_tool("cancelOrder", {"orderId": order_id}, message=f"Cancel order {order_id}?")
        await ctx.text(f"Cancellation {outcome.status}.")
        return {"intent": "cancel", "orderId": order_id, "cancelled": _executed(outcome)}
    if intent == "address":
        return await _address(ctx, order_id)
    refund, replacement = await ctx.gather(
        ctx.call_tool("refundOrder", {"orderId": order_id, "amount": total}, message=f"Refund order {order_id}?"),
        ctx.call_tool("placeOrder", {"item": order["item"]}, message=f"Order a new {order['item']}?"),
    )
    await ctx.text(f"Refund {refund.status}; new order {replacement.status}.")
    return {
        "intent": "exchange",
        "orderId": order_id,
        "refunded": _executed(refund),
        "reordered": _executed(replacement),
    }


def halve_refund(name: str | None, args: JSON) -> dict[str, JSON] | None:
    """An edit for the ``edit:`` human: a refund of half the proposed amount; other calls as proposed."""
    if name != "refundOrder" or not isinstance(args, dict) or not isinstance(args.get("amount"), int | float):
        return None
    return {**args, "amount": args["amount"] / 2}


shop = SimpleNamespace(agent=retail_agent, tools=TOOLS)
"""The shop as it should be: ``agui serve agui_core.examples.retail:shop``."""

unsafe_shop = SimpleNamespace(agent=retail_agent, tools=UNSAFE_TOOLS)
"""The shop with refunds and cancellations running unapproved: ``agui serve agui_core.examples.retail:unsafe_shop``."""
