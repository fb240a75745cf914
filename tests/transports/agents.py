"""Agents the transport tests serve, in process and through ``agui serve``.

``approval_agent`` proposes an email behind the approval-gated ``sendEmail`` tool and so
ends its first run with an interrupt; ``slow_agent`` takes its time (or waits for a gate
the test opens); ``chatty_agent`` emits many events; ``noisy_agent`` writes to standard
output and to the log, which must not reach the stdio transport's output.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, tool

__all__ = [
    "GATES",
    "PROGRESS",
    "SENT",
    "TOOLS",
    "approval_agent",
    "chatty_agent",
    "noisy_agent",
    "send_email",
    "slow_agent",
]

SENT: list[dict[str, Any]] = []
"""The emails ``sendEmail`` sent (visible to tests whose server runs in process)."""

GATES: dict[str, anyio.Event] = {}
"""Per thread id: an event the agents wait for before going on, when a test put one here."""

PROGRESS: dict[str, int] = {}
"""Per thread id: how many events ``chatty_agent`` has emitted so far."""


@tool("sendEmail", needs_approval=True)
async def send_email(to: str, subject: str, body: str = "") -> dict[str, Any]:
    """Send an email (after a person approved it)."""
    SENT.append({"to": to, "subject": subject, "body": body})
    return {"sent": True, "to": to}


TOOLS = [send_email]


def _props(ctx: RunContext) -> dict[str, Any]:
    props = ctx.input.forwarded_props
    return props if isinstance(props, dict) else {}


async def approval_agent(ctx: RunContext) -> JSON:
    """A text, then a gated ``sendEmail`` call (the first run ends with its approval), then the outcome."""
    await ctx.text("I will send the quarterly report to Ann.")
    gate = GATES.get(ctx.thread_id)
    if gate is not None and not ctx.replaying:
        await gate.wait()
    outcome = await ctx.call_tool("sendEmail", {"to": "ann@example.com", "subject": "Q3 report"})
    await ctx.text(f"sendEmail: {outcome.status}")
    return {"email": outcome.status}


async def slow_agent(ctx: RunContext) -> JSON:
    """Says ``working``, waits (for its gate, or ``forwardedProps.seconds``), says ``done``."""
    await ctx.text("working")
    gate = GATES.get(ctx.thread_id)
    if gate is not None:
        await gate.wait()
    else:
        await anyio.sleep(float(_props(ctx).get("seconds", 0.5)))
    await ctx.text("done")
    return {"done": True}


async def chatty_agent(ctx: RunContext) -> JSON:
    """Emits ``forwardedProps.count`` CUSTOM events of about ``size`` bytes each."""
    props = _props(ctx)
    count, filler = int(props.get("count", 100)), "x" * int(props.get("size", 16))
    PROGRESS[ctx.thread_id] = 0
    for n in range(count):
        await ctx.emit(ev.CustomEvent(name="tick", value={"n": n, "filler": filler}))
        PROGRESS[ctx.thread_id] = n + 1
    return {"count": count}


async def noisy_agent(ctx: RunContext) -> JSON:
    """Prints to standard output and logs, then answers."""
    print("a stray print from the agent")
    logging.getLogger("tests.transports.agents").warning("a log line from the agent")
    await ctx.text("hello")
    return {"noisy": True}
