"""Agents the transport tests serve, in process and through ``agui serve``.

``approval_agent`` proposes an email behind the approval-gated ``sendEmail`` tool and so
ends its first run with an interrupt; ``slow_agent`` takes its time (or waits for a gate
the test opens); ``chatty_agent`` emits many events; ``streaming_agent`` streams text by
deltas; ``noisy_agent`` writes to standard output and to the log, which must not reach the
stdio transport's output.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON
from agui_core.runtime import RunContext, TextStream, tool

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
    "streaming_agent",
]

SENT: list[dict[str, Any]] = []
"""The emails ``sendEmail`` sent (visible to tests whose server runs in process)."""

GATES: dict[str, anyio.Event] = {}
"""Per thread id: an event the agents wait for before going on, when a test put one here."""

PROGRESS: dict[str, int] = {}
"""Per thread id: how many events ``chatty_agent`` (deltas ``streaming_agent``) has emitted so far."""


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


DELTAS = ["plain ", "", 'quote " and \\ back', "line\nbreak\t", "é ü 漢字 🙂", "\u2028\x00\x1f", "</script>"]
"""The deltas ``streaming_agent`` cycles through: escapes, control and non-ASCII characters."""


async def streaming_agent(ctx: RunContext) -> JSON:
    """Streams ``forwardedProps.count`` deltas (cycling through :data:`DELTAS`, or of ``size``
    characters each) into one message, with a CUSTOM event in the middle and a second message.

    ``forwardedProps.via``: ``"delta"`` (the default) streams by ``TextStream.delta``, ``"emit"``
    emits each ``TEXT_MESSAGE_CONTENT`` itself. ``forwardedProps.late``: after the first message
    ended, one more delta for it (``"ended"``) or for a message never started (``"unknown"``),
    which the rules refuse.
    """
    props = _props(ctx)
    count, size, via = int(props.get("count", 10)), props.get("size"), props.get("via", "delta")
    PROGRESS[ctx.thread_id] = 0

    async def send(stream: TextStream, text: str) -> None:
        if via == "emit":
            await ctx.emit(ev.TextMessageContentEvent(message_id=stream.message_id, delta=text))
        else:
            await stream.delta(text)

    async with ctx.message(message_id="first") as first:
        for n in range(count):
            await send(first, "x" * int(size) if size is not None else DELTAS[n % len(DELTAS)])
            PROGRESS[ctx.thread_id] = n + 1
            if n == count // 2:
                await ctx.emit(ev.CustomEvent(name="halfway", value=n))
    async with ctx.message(message_id="second") as second:
        await send(second, "and a second message")
    late = props.get("late")
    if late == "ended":
        await send(first, "too late")
    elif late == "unknown":
        await send(TextStream(ctx, "never-started"), "to nowhere")
    return {"count": count}


async def noisy_agent(ctx: RunContext) -> JSON:
    """Prints to standard output and logs, then answers."""
    print("a stray print from the agent")
    logging.getLogger("tests.transports.agents").warning("a log line from the agent")
    await ctx.text("hello")
    return {"noisy": True}
