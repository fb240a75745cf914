"""Agents and tools the attack tests (``test_attacks.py``) serve: every tool records what it ran.

- :data:`RAN` is the log of every tool call that really ran, as ``(tool name, arguments)``.
- :func:`recorded` wraps a shipped tool (the mail example's ``sendEmail``) so that it logs to
  :data:`RAN` and then does exactly what it did before (same name, schema, gating).
- ``wireMoney`` is gated and NOT editable (``allow_edits=False``): only the proposal may run.
- ``deleteAccount`` is a gated tool that takes any keywords: the target of a renamed call.
- :func:`wire_agent` proposes one ``wireMoney`` call; resumed, it reports the outcomes.
- :func:`many_questions_agent` ends its first run with :data:`QUESTIONS` confirmations at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agui_core.protocol.types import JSON, Interrupt
from agui_core.runtime import RunContext, Tool, tool

__all__ = [
    "QUESTIONS",
    "RAN",
    "WIRE",
    "delete_account",
    "many_questions_agent",
    "question_id",
    "recorded",
    "wire_agent",
    "wire_money",
]

RAN: list[tuple[str, dict[str, Any]]] = []
"""Every tool call that ran, in order: ``(tool name, the arguments it got)``."""

WIRE: Mapping[str, JSON] = {"to": "acct-landlord", "amount": 950}
"""What :func:`wire_agent` proposes."""

QUESTIONS = 40
"""How many open interrupts :func:`many_questions_agent` leaves on its thread."""


def recorded(original: Tool) -> Tool:
    """``original``, logging each call to :data:`RAN` before doing what it always did."""
    function: Callable[..., Any] = original.function

    async def run(**kwargs: Any) -> Any:
        RAN.append((original.name, dict(kwargs)))
        return await function(**kwargs)

    return attrs.evolve(original, function=run)


@tool("wireMoney", needs_approval=True, allow_edits=False)
async def wire_money(to: str, amount: int) -> dict[str, JSON]:
    """Wire ``amount`` to ``to`` (a stand-in that records the call)."""
    RAN.append(("wireMoney", {"to": to, "amount": amount}))
    return {"wired": True, "to": to, "amount": amount}


@tool("deleteAccount", needs_approval=True)
async def delete_account(**kwargs: Any) -> dict[str, JSON]:
    """Delete the user's account (a stand-in that records the call)."""
    RAN.append(("deleteAccount", dict(kwargs)))
    return {"deleted": True}


async def wire_agent(ctx: RunContext) -> JSON:
    """Propose one non-editable ``wireMoney`` call, then report what became of it."""
    await ctx.text("Rent is due; I will wire it once you approve.")
    o = await ctx.call_tool("wireMoney", WIRE, message="Wire the rent?")
    return {"outcomes": [{"toolCallId": o.tool_call_id, "status": o.status, "args": dict(o.args), "edited": o.edited}]}


def question_id(n: int) -> str:
    """The id of :func:`many_questions_agent`'s ``n``-th confirmation."""
    return f"question-{n:03d}"


async def many_questions_agent(ctx: RunContext) -> JSON:
    """First run: :data:`QUESTIONS` open confirmations at once. Resumed: how many were yes."""
    if ctx.resumed:
        return {"yes": sum(1 for a in ctx.answers if a.entry.payload is True)}
    await ctx.interrupt(
        *(Interrupt(id=question_id(n), reason="confirmation", message=f"Question {n}?") for n in range(QUESTIONS))
    )
    return None
