"""Ids an agent gives a thread, over the real WebSocket transport: the input rule holds for them too.

A client sends a thread's message, tool call and interrupt ids back with its later inputs
(the reference client resends the whole conversation with every run, and a resume names the
interrupts it answers), and an input's ids must be 1 to 256 printable ASCII characters without
spaces. An agent whose id broke that rule used to leave a thread no client could use again:
the run finished, and every later input that carried the id was ``INVALID_INPUT``; an
interrupt with such an id could never be answered. Now the agent's call that gives the id
fails at once (``LocalProtocolError``): the run ends with ``RUN_ERROR AGENT_ERROR`` naming the
id and the rule, nothing of it is saved, and the thread takes the next input.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.machine.history import MAX_ID_LENGTH
from agui_core.machine.record import record_to_dict
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.types import AssistantMessage, FunctionCall, Interrupt, ToolCall
from agui_core.runtime import Host, RunContext
from agui_core.store import MemoryThreadStore
from tests.e2e.test_attacks import exchange

pytestmark = pytest.mark.anyio

LIMIT = 15.0  # seconds any one test may take: a hang fails instead of blocking the suite

GOOD = "id-1"
LONGEST = "x" * MAX_ID_LENGTH

BAD_IDS = {
    "space": ("msg 1", "printable ASCII without spaces"),
    "non-ASCII": ("m\u00e9", "printable ASCII without spaces"),
    "newline": ("m\n", "printable ASCII without spaces"),
    "too long": ("y" * (MAX_ID_LENGTH + 1), f"at most {MAX_ID_LENGTH} characters, not {MAX_ID_LENGTH + 1}"),
    "very long": ("z" * 100_000, f"at most {MAX_ID_LENGTH} characters, not 100000"),
}


async def id_agent(ctx: RunContext) -> Any:
    """Gives the thread the id ``forwardedProps.id`` the way ``forwardedProps.via`` names."""
    props = ctx.input.forwarded_props
    assert isinstance(props, dict)
    via, given = props["via"], props["id"]
    if via == "text":
        await ctx.text("Hello.", message_id=given)
    elif via in ("tool call", "tool result"):
        call_id = given if via == "tool call" else "tc-1"
        await ctx.emit(ev.ToolCallStartEvent(tool_call_id=call_id, tool_call_name="lookup", parent_message_id="a-1"))
        await ctx.emit(ev.ToolCallArgsEvent(tool_call_id=call_id, delta="{}"))
        await ctx.emit(ev.ToolCallEndEvent(tool_call_id=call_id))
        message_id = given if via == "tool result" else "r-1"
        await ctx.emit(ev.ToolCallResultEvent(message_id=message_id, tool_call_id=call_id, content="found"))
    elif via == "snapshot":
        call = ToolCall(id=given, function=FunctionCall(name="lookup", arguments="{}"))
        proposed = AssistantMessage(id="a-1", tool_calls=(call,))
        await ctx.emit(ev.MessagesSnapshotEvent(messages=(*ctx.messages, proposed)))
    elif via == "interrupt":
        if not ctx.resumed:
            await ctx.interrupt(Interrupt(id=given, reason="confirmation", message="Go on?"))
    return "done"


VIAS = {
    "text": "TEXT_MESSAGE_START: messageId",
    "tool call": "TOOL_CALL_START: toolCallId",
    "tool result": "TOOL_CALL_RESULT: messageId",
    "snapshot": "MESSAGES_SNAPSHOT: messages[1].toolCalls[0].id",
    "interrupt": "interrupt",
}


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value, keys and values (so a newline in one is found as it is)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in (key, *_strings(item))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def frame(run: str, messages: list[dict[str, Any]], props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": run,
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": props,
        **extra,
    }


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[ClientConnection, MemoryThreadStore]]:
    store = MemoryThreadStore()
    async with Host(id_agent, store=store) as host, WebSocketServer(host, port=0) as server:
        async with connect(server.url, max_size=None) as ws:
            yield ws, store


async def the_conversation(store: MemoryThreadStore) -> list[dict[str, Any]]:
    """The thread's messages as a client that kept up holds them: what the store keeps."""
    record = await store.load("t")
    assert record is not None
    return list(record_to_dict(record)["messages"])


async def resumed_and_continued(ws: ClientConnection, store: MemoryThreadStore, props: dict[str, Any]) -> None:
    """The thread takes a run that gives it a good id, then an input resending all of it."""
    user = {"id": "u-1", "role": "user", "content": "Hi."}
    ran = await exchange(ws, frame("run-2", [user], {**props, "id": GOOD}))
    assert ran[-1]["type"] == "RUN_FINISHED", ran[-1]
    if props["via"] == "interrupt":
        (pending,) = ran[-1]["outcome"]["interrupts"]
        resume = [{"interruptId": pending["id"], "status": "resolved", "payload": True}]
        answered = await exchange(ws, frame("run-3", [], props, resume=resume))
        assert answered[-1]["type"] == "RUN_FINISHED", answered[-1]
        assert answered[-1]["outcome"]["type"] == "success"
    held = await the_conversation(store)
    more = {"id": "u-2", "role": "user", "content": "Again."}
    again = await exchange(ws, frame("run-4", [*held, more], {**props, "via": "none"}))
    assert again[-1]["type"] == "RUN_FINISHED", again[-1]
    assert [m["id"] for m in await the_conversation(store)] == [m["id"] for m in held] + ["u-2"]


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("kind", BAD_IDS)
async def test_an_agent_id_no_input_could_carry_fails_its_run_and_leaves_the_thread_usable(via: str, kind: str) -> None:
    bad, rule = BAD_IDS[kind]
    props = {"via": via, "id": bad}
    with anyio.fail_after(LIMIT):
        async with serving() as (ws, store):
            frames = await exchange(ws, frame("run-1", [{"id": "u-1", "role": "user", "content": "Hi."}], props))
            error = frames[-1]
            assert (error["type"], error["code"]) == ("RUN_ERROR", "AGENT_ERROR"), error
            assert VIAS[via] in error["message"], error["message"]
            assert f"an id is {rule}" in error["message"], error["message"]
            assert len(error["message"]) < 600  # the id is not echoed back whole
            sent = [orjson.loads(orjson.dumps(f)) for f in frames if f is not error]
            assert not any(bad in _strings(f) for f in sent)
            record = await store.load("t")
            assert record is None or bad not in _strings(record_to_dict(record))
            assert record is None or record.state is ThreadState.IDLE
            await resumed_and_continued(ws, store, props)


@pytest.mark.parametrize("via", VIAS)
async def test_an_agent_id_at_the_limit_is_taken_and_sent_back(via: str) -> None:
    props = {"via": via, "id": LONGEST}
    with anyio.fail_after(LIMIT):
        async with serving() as (ws, store):
            user = {"id": "u-1", "role": "user", "content": "Hi."}
            ran = await exchange(ws, frame("run-1", [user], props))
            assert ran[-1]["type"] == "RUN_FINISHED", ran[-1]
            if via == "interrupt":
                assert [i["id"] for i in ran[-1]["outcome"]["interrupts"]] == [LONGEST]
                resume = [{"interruptId": LONGEST, "status": "resolved", "payload": True}]
                answered = await exchange(ws, frame("run-2", [], props, resume=resume))
                assert answered[-1]["outcome"]["type"] == "success", answered[-1]
            held = await the_conversation(store)
            assert via == "interrupt" or LONGEST in orjson.dumps(held).decode()
            more = {"id": "u-2", "role": "user", "content": "Again."}
            again = await exchange(ws, frame("run-3", [*held, more], {**props, "via": "none"}))
            assert again[-1]["type"] == "RUN_FINISHED", again[-1]


async def test_the_id_the_host_makes_for_a_tool_result_stays_one_a_client_may_send_back() -> None:
    # The host names a tool's result after its call ("result-" + the call id); for a call id
    # near the limit that name would be past it, so it is made to fit (the same one each time).
    from agui_core.runtime import tool

    @tool("lookup")
    async def lookup(query: str) -> str:
        return f"found {query}"

    call_id = "call_" + "c" * (MAX_ID_LENGTH - 5)

    async def agent(ctx: RunContext) -> Any:
        await ctx.call_tool("lookup", {"query": "x"}, tool_call_id=call_id)
        return "done"

    store = MemoryThreadStore()
    user = {"id": "u-1", "role": "user", "content": "Hi."}
    with anyio.fail_after(LIMIT):
        async with Host(agent, store=store, tools=[lookup]) as host, WebSocketServer(host, port=0) as server:
            async with connect(server.url) as ws:
                ran = await exchange(ws, frame("run-1", [user], {}))
                assert ran[-1]["type"] == "RUN_FINISHED", ran[-1]
                (result,) = [f for f in ran if f["type"] == "TOOL_CALL_RESULT"]
                assert result["toolCallId"] == call_id
                assert len(result["messageId"]) <= MAX_ID_LENGTH and " " not in result["messageId"]
                assert result["messageId"].startswith("result-call_ccc")
                held = await the_conversation(store)
                more = {"id": "u-2", "role": "user", "content": "Again."}
                again = await exchange(ws, frame("run-2", [*held, more], {}))
                assert again[-1]["type"] == "RUN_FINISHED", again[-1]
