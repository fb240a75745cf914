"""The agent the console's tests serve: the shipped examples, plus a form that expires soon.

``forwardedProps.scenario`` picks the example (``email``, ``filing``, ``parallel``) as in
:mod:`agui_core.examples.assistant`; ``expiring`` asks for the quarterly form with an
``expiresAt`` :data:`EXPIRES_IN` ahead, for the tests of expiry; ``review`` raises two
interrupts of reasons no client knows (:data:`REVIEW_SCHEMA`, a nested form, and a free answer);
``scheduled`` gates a tool call with a question of its own (:data:`CHOICE_SCHEMA`), not an
approval; ``booking`` proposes ``bookRoom``, a tool declared with typed parameters (a nested
dataclass) and no ``args_schema``; ``failing`` proposes ``deleteFile``, a tool that raises.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, timedelta

from agui_core.examples import QUARTERLY_FILING_SCHEMA, assistant
from agui_core.examples import TOOLS as EXAMPLE_TOOLS
from agui_core.protocol.types import JSON, Interrupt
from agui_core.runtime.context import RunContext
from agui_core.runtime.tools import tool

__all__ = ["CHOICE_SCHEMA", "EXPIRES_IN", "REVIEW_SCHEMA", "TOOLS", "agent"]


@dataclasses.dataclass
class Room:
    building: str
    floor: int


@tool("bookRoom", needs_approval=True)
async def book_room(title: str, room: Room, hours: float = 1.0) -> dict[str, JSON]:
    """Book a meeting room (a stand-in: it returns the booking)."""
    return {"booked": title, "building": room.building, "floor": room.floor, "hours": hours}


@tool("deleteFile", needs_approval=True)
async def delete_file(name: str) -> str:
    """Delete a file (a stand-in that always fails, as a read-only disk would)."""
    raise PermissionError(f"{name} is on a read-only disk")


TOOLS = [*EXAMPLE_TOOLS, book_room, delete_file]

EXPIRES_IN = timedelta(seconds=4)

REVIEW_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["sign", "revise"]},
        "reviewer": {
            "type": "object",
            "title": "Reviewer",
            "properties": {"name": {"type": "string", "minLength": 1}, "email": {"type": "string", "format": "email"}},
            "required": ["name", "email"],
        },
    },
    "required": ["verdict", "reviewer"],
}


async def review(ctx: RunContext) -> JSON:
    if ctx.resumed:
        said = "; ".join(f"{a.interrupt.reason} {a.entry.status} {a.entry.payload!r}" for a in ctx.answers)
        await ctx.text(f"Noted: {said}.")
        return None
    ctx.continuation = {"review": True}
    await ctx.interrupt(
        Interrupt(
            id=ctx.new_id("review"),
            reason="acme:review",
            message="Review the draft contract.",
            response_schema=REVIEW_SCHEMA,
            metadata={"document": "contract-7.pdf", "pages": 12},
        ),
        Interrupt(id=ctx.new_id("note"), reason="acme:note", message="Anything to add?"),
    )
    return None


CHOICE_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {"send": {"type": "string", "enum": ["now", "tonight"]}},
    "required": ["send"],
}


async def scheduled(ctx: RunContext) -> JSON:
    """A tool call gated by a question of its own (when to send), not by an approval."""
    if ctx.resumed:
        (answer,) = ctx.answers
        await ctx.text(f"Scheduled: {answer.entry.status} {answer.entry.payload!r}.")
        return None
    ctx.continuation = {"scheduled": True}
    call = await ctx.propose_tool_call("sendEmail", {"to": "dan@example.com", "subject": "Minutes"})
    await ctx.interrupt(
        Interrupt(
            id=ctx.new_id("when"),
            reason="tool_call",
            tool_call_id=call,
            message="When should the minutes go out?",
            response_schema=CHOICE_SCHEMA,
        )
    )
    return None


async def booking(ctx: RunContext) -> JSON:
    proposed = {"title": "Planning", "room": {"building": "A", "floor": 2}, "hours": 1.5}
    outcome = await ctx.call_tool("bookRoom", proposed, message="Book a room for the planning meeting?")
    await ctx.text(f"Booking: {outcome.status}.")
    return {"status": outcome.status, "result": outcome.result}


async def failing(ctx: RunContext) -> JSON:
    outcome = await ctx.call_tool("deleteFile", {"name": "c.txt"})
    await ctx.text(f"Deleting c.txt: {outcome.status}.")
    return {"status": outcome.status}


async def agent(ctx: RunContext) -> JSON:
    props = ctx.input.forwarded_props
    kept = ctx.continuation if ctx.resumed else None
    scenario = props.get("scenario") if isinstance(props, dict) else None
    if scenario == "booking" or (isinstance(kept, dict) and kept.get("booking")):
        if not ctx.resumed:
            ctx.continuation = {"booking": True}
        return await booking(ctx)
    if scenario == "failing" or (isinstance(kept, dict) and kept.get("failing")):
        if not ctx.resumed:
            ctx.continuation = {"failing": True}
        return await failing(ctx)
    if (isinstance(props, dict) and props.get("scenario") == "scheduled") or (
        isinstance(kept, dict) and kept.get("scheduled")
    ):
        return await scheduled(ctx)
    if (isinstance(props, dict) and props.get("scenario") == "review") or (
        isinstance(kept, dict) and kept.get("review")
    ):
        return await review(ctx)
    expiring = isinstance(props, dict) and props.get("scenario") == "expiring"
    if ctx.resumed and isinstance(ctx.continuation, dict) and ctx.continuation.get("expiring"):
        entry = ctx.answers[0].entry if ctx.answers else None
        said = "Nothing was filed." if entry is None or entry.status != "resolved" else f"Filed {entry.payload}."
        await ctx.text(said)
        return {"filed": entry is not None and entry.status == "resolved"}
    if not ctx.resumed and not (isinstance(props, dict) and props.get("scenario")):
        # The console's input that only dismisses expired requests answers nothing: the run
        # is a plain one, and this agent has nothing new to ask.
        await ctx.text("Nothing is waiting any more.")
        return None
    if expiring and not ctx.resumed:
        ctx.continuation = {"expiring": True}
        expires_at = (ctx.now().astimezone(UTC) + EXPIRES_IN).isoformat(timespec="milliseconds")
        asked = ctx.ask("Quick: the quarterly numbers, please.", QUARTERLY_FILING_SCHEMA, expires_at=expires_at)
        await ctx.interrupt(asked)
        return None
    return await assistant(ctx)
