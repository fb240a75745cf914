"""Agents that give a thread one id twice, over the real WebSocket transport.

Nothing stops an agent from reusing an id in a later run: a message id it writes every time,
or a tool call id its model provider numbers afresh every round (``call_0``). The thread then
holds two messages, or two calls, under one id. Each is its own: a client that sends the whole
conversation back goes on, a frontend tool's result for the later call is kept, and a host tool
the person approves for the later call runs, instead of the earlier call's result being sent
again as if it had.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.machine.record import record_to_dict
from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON
from agui_core.runtime import Host, RunContext, tool
from agui_core.store import MemoryThreadStore
from tests.e2e.test_attacks import exchange, frame

pytestmark = pytest.mark.anyio

LIMIT = 20.0


def said(n: int) -> dict[str, Any]:
    return {"id": f"u-{n}", "role": "user", "content": f"Turn {n}."}


def seen_messages(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's text messages as a client assembles them from the events it was sent."""
    out: dict[str, dict[str, Any]] = {}
    for f in frames:
        if f["type"] == "TEXT_MESSAGE_START":
            out[f["messageId"]] = {"id": f["messageId"], "role": "assistant", "content": ""}
        elif f["type"] == "TEXT_MESSAGE_CONTENT":
            out[f["messageId"]]["content"] += f["delta"]
    return list(out.values())


async def same_reply_id(ctx: RunContext) -> JSON:
    """Writes its answer under the one message id ``reply`` in every run."""
    await ctx.emit(ev.TextMessageStartEvent(message_id="reply", role="assistant"))
    await ctx.emit(ev.TextMessageContentEvent(message_id="reply", delta=f"Heard {len(ctx.messages)} messages."))
    await ctx.emit(ev.TextMessageEndEvent(message_id="reply"))
    return None


async def test_a_client_resending_a_conversation_with_a_reused_message_id_goes_on() -> None:
    store = MemoryThreadStore()
    with anyio.fail_after(LIMIT):
        async with Host(same_reply_id, store=store) as host, WebSocketServer(host, port=0) as server:
            async with connect(server.url) as ws:
                held: list[dict[str, Any]] = []
                for turn in range(1, 4):  # every message the client saw, sent back each turn
                    frames = await exchange(ws, frame("t", f"run-{turn}", messages=[*held, said(turn)]))
                    assert frames[-1]["type"] == "RUN_FINISHED", frames[-1]
                    held += [said(turn), *seen_messages(frames)]
                record = await store.load("t")
                assert record is not None
                thread = [(m["id"], m.get("content")) for m in record_to_dict(record)["messages"]]
                assert thread == [(m["id"], m["content"]) for m in held]
                assert [i for i, _ in thread] == ["u-1", "reply", "u-2", "reply", "u-3", "reply"]
                assert len({text for i, text in thread if i == "reply"}) == 3

                # Either copy may be sent back, but neither may be rewritten.
                rewritten = [*held[:1], {**held[1], "content": "Heard nothing."}, *held[2:], said(4)]
                refused = await exchange(ws, frame("t", "run-4", messages=rewritten))
                assert [(f["type"], f.get("code")) for f in refused] == [("RUN_ERROR", "HISTORY_CONFLICT")]
                assert "messages[1] (id 'reply'): its content differs" in refused[0]["message"]
                assert await store.load("t") == record


async def frontend_pick(ctx: RunContext) -> JSON:
    """Asks the client's ``pick`` tool under the call id ``call_0`` every run, and says what results it holds."""
    results = [m.content for m in ctx.messages if m.role == "tool"]
    await ctx.text(f"Results so far: {results}")
    parent = ctx.new_id("msg")
    await ctx.emit(ev.ToolCallStartEvent(tool_call_id="call_0", tool_call_name="pick", parent_message_id=parent))
    await ctx.emit(ev.ToolCallArgsEvent(tool_call_id="call_0", delta="{}"))
    await ctx.emit(ev.ToolCallEndEvent(tool_call_id="call_0"))
    return None


def picked(n: int) -> dict[str, Any]:
    return {"id": f"pick-{n}", "role": "tool", "toolCallId": "call_0", "content": f"picked {n}"}


async def test_each_round_of_a_reused_frontend_tool_call_id_takes_its_result() -> None:
    store = MemoryThreadStore()
    with anyio.fail_after(LIMIT):
        async with Host(frontend_pick, store=store) as host, WebSocketServer(host, port=0) as server:
            async with connect(server.url) as ws:
                first = await exchange(ws, frame("t", "run-1", messages=[said(1)]))
                assert first[-1]["type"] == "RUN_FINISHED", first[-1]
                second = await exchange(ws, frame("t", "run-2", messages=[picked(1)]))
                assert seen_messages(second)[0]["content"] == "Results so far: ['picked 1']"
                third = await exchange(ws, frame("t", "run-3", messages=[picked(2)]))
                assert seen_messages(third)[0]["content"] == "Results so far: ['picked 1', 'picked 2']"

                # Three proposals of call_0, two answered: one more result is taken, and no other.
                fourth = await exchange(ws, frame("t", "run-4", messages=[picked(3), picked(4)]))
                assert seen_messages(fourth)[0]["content"] == "Results so far: ['picked 1', 'picked 2', 'picked 3']"


CALLED: list[str] = []


@tool(needs_approval=True)
def send_email(to: str) -> str:
    """Send an email."""
    CALLED.append(to)
    return f"email {len(CALLED)} sent to {to}"


@tool
def look_up(name: str) -> str:
    """Look up a person's address (needs no approval)."""
    CALLED.append(name)
    return f"{name.lower()}@example.com ({len(CALLED)})"


def under_call_0(tool_name: str, arg: str) -> Callable[[RunContext], Awaitable[JSON]]:
    """An agent that calls ``tool_name`` on the last user message, under the tool call id ``call_0`` every time."""

    async def agent(ctx: RunContext) -> JSON:
        said = str([m for m in ctx.messages if m.role == "user"][-1].content)
        outcome = await ctx.call_tool(tool_name, {arg: said}, tool_call_id="call_0")
        await ctx.text(f"{outcome.status}: {outcome.result}")
        return None

    return agent


async def test_an_approved_host_tool_under_a_reused_call_id_runs_for_the_later_call_too() -> None:
    CALLED.clear()
    with anyio.fail_after(LIMIT):
        async with Host(under_call_0("send_email", "to"), store=MemoryThreadStore(), tools=[send_email]) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                for turn, to in enumerate(("bob@example.com", "carol@example.com"), start=1):
                    asked = await exchange(
                        ws, frame("t", f"ask-{turn}", messages=[{"id": f"u-{turn}", "role": "user", "content": to}])
                    )
                    (approval,) = asked[-1]["outcome"]["interrupts"]
                    assert approval["toolCallId"] == "call_0"
                    answer = [{"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}]
                    done = await exchange(ws, frame("t", f"answer-{turn}", resume=answer))
                    results = [(f["toolCallId"], f["content"]) for f in done if f["type"] == "TOOL_CALL_RESULT"]
                    assert results == [("call_0", f"email {turn} sent to {to}")], done
                    assert seen_messages(done)[0]["content"] == f"executed: email {turn} sent to {to}"

                # The later call's resume sent again is a replay: its tool does not run twice.
                again = await exchange(ws, frame("t", "answer-2", resume=answer))
                assert again[-1]["type"] == "RUN_FINISHED", again[-1]
                assert [f["content"] for f in again if f["type"] == "TOOL_CALL_RESULT"] == [
                    "email 2 sent to carol@example.com"
                ]
    assert CALLED == ["bob@example.com", "carol@example.com"]


async def test_a_host_tool_without_approval_under_a_reused_call_id_runs_in_each_execution() -> None:
    CALLED.clear()
    with anyio.fail_after(LIMIT):
        async with Host(under_call_0("look_up", "name"), store=MemoryThreadStore(), tools=[look_up]) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                said_back = []
                for turn, name in enumerate(("Ann", "Bo"), start=1):
                    user = {"id": f"u-{turn}", "role": "user", "content": name}
                    done = await exchange(ws, frame("t", f"run-{turn}", messages=[user]))
                    assert done[-1]["type"] == "RUN_FINISHED", done[-1]
                    said_back += [m["content"] for m in seen_messages(done)]
    assert CALLED == ["Ann", "Bo"]
    assert said_back == ["executed: ann@example.com (1)", "executed: bo@example.com (2)"]


async def test_a_failed_run_retried_after_a_later_call_took_its_call_id_does_not_run_its_tool_again() -> None:
    # The later call's journal entry takes the id; the failed run's stays beside it for its retry.
    CALLED.clear()
    failing = {"run-1"}

    async def agent(ctx: RunContext) -> JSON:
        name = str([m for m in ctx.messages if m.role == "user"][-1].content)
        outcome = await ctx.call_tool("look_up", {"name": name}, tool_call_id="call_0")
        if ctx.run_id in failing:
            failing.discard(ctx.run_id)
            raise RuntimeError("the model call after the tool failed")
        return outcome.result

    ann = {"id": "u-1", "role": "user", "content": "Ann"}
    bo = {"id": "u-2", "role": "user", "content": "Bo"}
    with anyio.fail_after(LIMIT):
        async with Host(agent, store=MemoryThreadStore(), tools=[look_up]) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                failed = await exchange(ws, frame("t", "run-1", messages=[ann]))
                assert failed[-1]["type"] == "RUN_ERROR" and CALLED == ["Ann"], failed[-1]
                later = await exchange(ws, frame("t", "run-2", messages=[bo]))
                assert later[-1]["result"] == "bo@example.com (2)", later[-1]
                retried = await exchange(ws, frame("t", "run-1", messages=[ann]))
                assert retried[-1]["result"] == "ann@example.com (1)", retried[-1]  # what the tool returned then
    assert CALLED == ["Ann", "Bo"]


async def test_an_approved_tool_under_an_id_a_tool_without_approval_had_runs() -> None:
    # The journal's entry of the id is of look_up, which nobody approved: not this call's.
    CALLED.clear()

    async def agent(ctx: RunContext) -> JSON:
        said = str([m for m in ctx.messages if m.role == "user"][-1].content)
        name, arg = ("look_up", "name") if "@" not in said else ("send_email", "to")
        outcome = await ctx.call_tool(name, {arg: said}, tool_call_id="call_0")
        return outcome.result

    with anyio.fail_after(LIMIT):
        async with Host(agent, store=MemoryThreadStore(), tools=[look_up, send_email]) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                looked = await exchange(
                    ws, frame("t", "run-1", messages=[{"id": "u-1", "role": "user", "content": "Ann"}])
                )
                assert looked[-1]["result"] == "ann@example.com (1)", looked[-1]
                asked = await exchange(
                    ws, frame("t", "run-2", messages=[{"id": "u-2", "role": "user", "content": "bo@example.com"}])
                )
                (approval,) = asked[-1]["outcome"]["interrupts"]
                answer = [{"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}]
                done = await exchange(ws, frame("t", "run-3", resume=answer))
    assert done[-1]["result"] == "email 2 sent to bo@example.com", done[-1]
    assert CALLED == ["Ann", "bo@example.com"]


async def test_an_approved_call_under_the_id_of_the_same_tool_run_without_approval_runs() -> None:
    # A small transfer runs at once as call_0; a large one, later, is call_0 again behind an approval.
    CALLED.clear()

    @tool
    def transfer(amount: int) -> str:
        """Transfer money."""
        CALLED.append(f"transfer {amount}")
        return f"sent {amount}"

    async def agent(ctx: RunContext) -> JSON:
        if ctx.resumed:
            done = ctx.tool_outcomes["call_0"]
            return f"{done.status}: {done.result}"
        amount = int(str([m for m in ctx.messages if m.role == "user"][-1].content))
        if amount < 100:
            return (await ctx.call_tool("transfer", {"amount": amount}, tool_call_id="call_0")).result
        await ctx.propose_tool_call("transfer", {"amount": amount}, tool_call_id="call_0")
        await ctx.interrupt(ctx.approval("call_0"))
        return None

    def said(n: int, amount: str) -> list[dict[str, Any]]:
        return [{"id": f"u-{n}", "role": "user", "content": amount}]

    with anyio.fail_after(LIMIT):
        async with Host(agent, store=MemoryThreadStore(), tools=[transfer]) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                small = await exchange(ws, frame("t", "run-1", messages=said(1, "5")))
                assert small[-1]["result"] == "sent 5", small[-1]
                large = await exchange(ws, frame("t", "run-2", messages=said(2, "500")))
                (approval,) = large[-1]["outcome"]["interrupts"]
                answer = [{"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}]
                done = await exchange(ws, frame("t", "run-3", resume=answer))
    assert done[-1]["result"] == "executed: sent 500", done[-1]
    assert CALLED == ["transfer 5", "transfer 500"]
