"""What an agent gives a thread must be what its clients can be sent and send back, over the real
WebSocket transport.

A thread's state, an event's free JSON and a run's result are saved and announced as JSON, and
the messages the agent's events write are sent back by clients with their later inputs. A value
JSON cannot hold (a set, an ``object()``, a dict with a key that is not a string, text with a
lone surrogate), or a field of
the wrong type (a name that is ``None``, a delta or an id that is a number, a tool result or an
activity of the wrong shape), used to be taken, and failed later: as a store failure when the
thread was saved, as an invalid event on the wire, or as a thread whose history no client could
send back. Now the agent's call fails at once (``LocalProtocolError``): the run ends with
``RUN_ERROR AGENT_ERROR`` naming the field, nothing of it is saved, and the thread goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import orjson
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.errors import LocalProtocolError
from agui_core.machine.client import resolve
from agui_core.machine.record import record_to_dict
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.codec import decode_event
from agui_core.protocol.types import Interrupt, TextInputContent
from agui_core.runtime import Host, RunContext, tool
from agui_core.store import SqliteThreadStore, ThreadStore
from tests.e2e.test_attacks import exchange

pytestmark = pytest.mark.anyio

LIMIT = 15.0

Act = Callable[[RunContext], Awaitable[Any]]


async def _tool(
    ctx: RunContext, *, name: Any = "lookup", delta: Any = "{}", content: Any = "found", role: Any = None
) -> None:
    await ctx.emit(ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name=name, parent_message_id="a-1"))
    await ctx.emit(ev.ToolCallArgsEvent(tool_call_id="tc-1", delta=delta))
    await ctx.emit(ev.ToolCallEndEvent(tool_call_id="tc-1"))
    await ctx.emit(ev.ToolCallResultEvent(message_id="r-1", tool_call_id="tc-1", content=content, role=role))


async def _text(ctx: RunContext, *, message_id: Any = "m-1", delta: Any = "Hello.") -> None:
    await ctx.emit(ev.TextMessageStartEvent(message_id=message_id))
    await ctx.emit(ev.TextMessageContentEvent(message_id=message_id, delta=delta))
    await ctx.emit(ev.TextMessageEndEvent(message_id=message_id))


async def _activity_patched(ctx: RunContext, patch: list[dict[str, Any]]) -> None:
    await ctx.emit(ev.ActivitySnapshotEvent(message_id="act-1", activity_type="plan", content={"step": 1}))
    await ctx.emit(ev.ActivityDeltaEvent(message_id="act-1", activity_type="plan", patch=tuple(patch)))


_LATER = (datetime.now(UTC) + timedelta(days=1)).isoformat()
"""A deadline no run of these tests reaches."""


class _Name(str):
    """A subclass of ``str``, as some libraries hand out (``numpy.str_``)."""


async def _raises_surrogate(ctx: RunContext) -> None:
    raise LocalProtocolError(b"cannot open report-\xff.txt".decode(errors="surrogateescape"))


async def _streamed(ctx: RunContext) -> None:
    async with ctx.message() as message:
        await message.delta("Found ")
        await message.delta("file \udcff")


async def _finish(ctx: RunContext, result: Any) -> Any:
    await _text(ctx)
    return result


CASES: dict[str, tuple[Act, str]] = {
    "a set in the state": (
        lambda ctx: ctx.set_state({"draft": {"tags": {"a", "b"}}}),
        "STATE_SNAPSHOT: at $.snapshot.draft.tags: not JSON (Type is not JSON serializable: set)",
    ),
    "a key that is no string": (
        lambda ctx: ctx.set_state({"counts": {1: "one"}}),
        "STATE_SNAPSHOT: at $.snapshot.counts: not JSON: an object key that is not a string (int 1)",
    ),
    "an integer past 64 bits": (
        lambda ctx: ctx.emit(ev.CustomEvent(name="tally", value=[1, 2**70])),
        "CUSTOM: at $.value[1]: not JSON (Integer exceeds 64-bit range)",
    ),
    "an object in the result": (
        lambda ctx: _finish(ctx, {"when": object()}),
        "RUN_FINISHED: at $.result.when: not JSON (Type is not JSON serializable: object)",
    ),
    "a set in an interrupt's metadata": (
        lambda ctx: ctx.interrupt(Interrupt(id="i-1", reason="confirmation", metadata={"seen": {1}})),
        "RUN_FINISHED: at $.outcome.interrupts[0].metadata.seen: not JSON (Type is not JSON serializable: set)",
    ),
    "an interrupt id that is a number": (
        lambda ctx: ctx.interrupt(Interrupt(id=7, reason="confirmation")),  # type: ignore[arg-type]
        "an interrupt's id must be a string, not int",
    ),
    "an interrupt reason that is a number": (
        lambda ctx: ctx.interrupt(Interrupt(id="i-1", reason=7)),  # type: ignore[arg-type]
        "an interrupt's reason must be a string, not int",
    ),
    "a result part whose text is a number": (
        lambda ctx: _tool(ctx, content=(TextInputContent(text=5),)),  # type: ignore[arg-type]
        "TOOL_CALL_RESULT: invalid event at $.content[0].text: a string, not a number",
    ),
    "an event whose extra holds its own field": (
        lambda ctx: ctx.emit(ev.TextMessageStartEvent(message_id="m-1", extra={"messageId": "m 2"})),
        "TEXT_MESSAGE_START: extra holds 'messageId', the event's own fields: set those instead",
    ),
    "an interrupt whose extra has a key that is no string": (
        lambda ctx: ctx.interrupt(Interrupt(id="i-1", reason="confirmation", extra={1: "one"})),  # type: ignore[dict-item]
        "RUN_FINISHED: at $.outcome.interrupts[0]: not JSON: an object key that is not a string (int)",
    ),
    "a tool without a name": (
        lambda ctx: _tool(ctx, name=None),
        "TOOL_CALL_START: toolCallName must be a string, not NoneType",
    ),
    "arguments that are a number": (lambda ctx: _tool(ctx, delta=7), "TOOL_CALL_ARGS: delta must be a string, not int"),
    "a result of plain dicts": (
        lambda ctx: _tool(ctx, content=[{"type": "text", "text": "found"}]),
        "TOOL_CALL_RESULT: content must be a string or content parts, not a list holding dict",
    ),
    "a result that is a dict": (
        lambda ctx: _tool(ctx, content={"found": True}),
        "TOOL_CALL_RESULT: content must be a string or content parts, not dict",
    ),
    "a text delta that is a number": (
        lambda ctx: _text(ctx, delta=3),
        "TEXT_MESSAGE_CONTENT: delta must be a string, not int",
    ),
    "a message id that is a number": (
        lambda ctx: _text(ctx, message_id=42),
        "TEXT_MESSAGE_START: messageId must be a string, not int",
    ),
    "a message role no client may send": (
        lambda ctx: ctx.emit(ev.TextMessageStartEvent(message_id="m-1", role="tool")),  # type: ignore[arg-type]
        "TEXT_MESSAGE_START: role must be one of 'developer', 'system', 'assistant', 'user', not 'tool'",
    ),
    "a message name that is a number": (
        lambda ctx: ctx.emit(ev.TextMessageStartEvent(message_id="m-1", name=5)),  # type: ignore[arg-type]
        "TEXT_MESSAGE_START: name must be a string, not int",
    ),
    "an activity patched into a list": (
        lambda ctx: _activity_patched(ctx, [{"op": "replace", "path": "", "value": [1]}]),
        "ACTIVITY_DELTA: the patched activity must be a JSON object, not list",
    ),
    "an activity that is a list": (
        lambda ctx: ctx.emit(ev.ActivitySnapshotEvent(message_id="act-1", activity_type="plan", content=[1])),  # type: ignore[arg-type]
        "ACTIVITY_SNAPSHOT: content must be a JSON object, not list",
    ),
    # A lone surrogate: what Python decodes bytes that are not UTF-8 to with errors="surrogateescape"
    # (file names, a subprocess's output). JSON cannot carry it; it used to end the connection.
    "a lone surrogate in a streamed delta": (
        _streamed,
        "TEXT_MESSAGE_CONTENT: delta holds the lone surrogate U+DCFF at index 5, which is not Unicode text",
    ),
    "a lone surrogate in a text delta": (
        lambda ctx: _text(ctx, delta="caf\udce9"),
        "TEXT_MESSAGE_CONTENT: delta holds the lone surrogate U+DCE9 at index 3",
    ),
    "a lone surrogate in a tool result": (
        lambda ctx: _tool(ctx, content="report-\udcff.txt"),
        "TOOL_CALL_RESULT: content holds the lone surrogate U+DCFF at index 7",
    ),
    "a lone surrogate in arguments": (
        lambda ctx: _tool(ctx, delta='{"path": "\ud800"}'),
        "TOOL_CALL_ARGS: delta holds the lone surrogate U+D800 at index 10",
    ),
    "a lone surrogate in a tool's name": (
        lambda ctx: _tool(ctx, name="look\udc80up"),
        "TOOL_CALL_START: toolCallName holds the lone surrogate U+DC80 at index 4",
    ),
    "a lone surrogate in an interrupt's message": (
        lambda ctx: ctx.interrupt(Interrupt(id="i-1", reason="confirmation", message="Delete \udcff?")),
        "an interrupt's message holds the lone surrogate U+DCFF at index 7",
    ),
    "a lone surrogate in a step's name": (
        lambda ctx: ctx.emit(ev.StepStartedEvent(step_name="scan \udcff")),
        "STEP_STARTED: stepName holds the lone surrogate U+DCFF at index 5",
    ),
    "a lone surrogate given to ctx.text": (
        lambda ctx: ctx.text("caf\udce9"),
        "ctx.text was given what is not JSON: a string holds the lone surrogate U+DCE9 at index 3",
    ),
    "a lone surrogate in any event's subagentRunId": (
        lambda ctx: ctx.emit(ev.StepStartedEvent(step_name="scan", subagent_run_id="sub-\udcff")),
        "STEP_STARTED: subagentRunId holds the lone surrogate U+DCFF at index 4",
    ),
    "a lone surrogate in a tool result's role": (
        lambda ctx: _tool(ctx, role="tool\udcff"),
        "TOOL_CALL_RESULT: role holds the lone surrogate U+DCFF at index 4",
    ),
    "a lone surrogate in an interrupt's subagentRunId": (
        lambda ctx: ctx.interrupt(Interrupt(id="i-1", reason="confirmation", subagent_run_id="sub-\udcff")),
        "an interrupt's subagentRunId holds the lone surrogate U+DCFF at index 4",
    ),
    "a lone surrogate in a subclass of str": (
        lambda ctx: ctx.emit(ev.StepStartedEvent(step_name=_Name("scan \udcff"))),
        "STEP_STARTED: stepName holds the lone surrogate U+DCFF at index 5",
    ),
    "a lone surrogate in the answer an agent declares for expiry": (
        lambda ctx: ctx.ask("Which report?", {"type": "string"}, expires_at=_LATER, on_expiry=resolve("report-\udcff")),
        "at $.payload: not JSON: a string holds the lone surrogate U+DCFF at index 7",
    ),
    "a lone surrogate in what the agent raises": (
        _raises_surrogate,
        "the agent broke a protocol rule: cannot open report-\ufffd.txt",  # replaced, and sent
    ),
}


async def value_agent(ctx: RunContext) -> Any:
    """Plays ``forwardedProps.case`` on the first run of its thread, and says hello on the others."""
    props = ctx.input.forwarded_props
    assert isinstance(props, dict)
    if props.get("case") is None:
        await _text(ctx, message_id=ctx.new_id("m"))
        return "fine"
    act, _ = CASES[props["case"]]
    return await act(ctx)


def frame(run: str, messages: list[dict[str, Any]], props: dict[str, Any]) -> dict[str, Any]:
    base = {"threadId": "t", "runId": run, "state": {}, "tools": [], "context": [], "forwardedProps": props}
    return {**base, "messages": messages}


@asynccontextmanager
async def serving(tmp_path: Any) -> AsyncIterator[tuple[ClientConnection, ThreadStore]]:
    # SQLite: a value JSON cannot hold used to fail here, as "the thread store failed".
    store = SqliteThreadStore(tmp_path / "threads.db")
    async with Host(value_agent, store=store) as host, WebSocketServer(host, port=0) as server:
        async with connect(server.url) as ws:
            yield ws, store
    await store.aclose()


@pytest.mark.parametrize("case", CASES)
async def test_a_value_no_client_could_be_sent_fails_the_run_at_once_and_the_thread_goes_on(
    case: str, tmp_path: Any
) -> None:
    user = {"id": "u-1", "role": "user", "content": "Hi."}
    with anyio.fail_after(LIMIT):
        async with serving(tmp_path) as (ws, store):
            frames = await exchange(ws, frame("run-1", [user], {"case": case}))
            error = frames[-1]
            assert (error["type"], error["code"]) == ("RUN_ERROR", "AGENT_ERROR"), error
            assert CASES[case][1] in error["message"], error["message"]
            # Every frame before it is a valid event (decoding checks each against its schema),
            # and none carries what was refused.
            for sent in frames[:-1]:
                decode_event(orjson.dumps(sent))
            assert all(f["type"] not in ("STATE_SNAPSHOT", "CUSTOM", "ACTIVITY_DELTA", "STEP_STARTED") for f in frames)
            # The failed run went back to where the thread stood before it: nothing.
            record = await store.load("t")
            assert record is None or (record.state is ThreadState.IDLE and record.messages == ())

            more = {"id": "u-2", "role": "user", "content": "Again."}
            again = await exchange(ws, frame("run-2", [user, more], {}))
            assert again[-1]["type"] == "RUN_FINISHED", again[-1]
            assert again[-1]["result"] == "fine"
            saved = await store.load("t")
            assert saved is not None
            assert orjson.loads(orjson.dumps(record_to_dict(saved)))["messages"][:2] == [user, more]


async def test_a_tool_whose_failure_names_bytes_that_are_not_utf8_is_reported_and_the_run_goes_on(
    tmp_path: Any,
) -> None:
    # The host writes that result: its text is made sendable, and the agent handles the failure.
    @tool
    def open_report(name: str) -> str:
        """Open a report."""
        raise FileNotFoundError("no such file: " + b"report-\xff.txt".decode(errors="surrogateescape"))

    async def agent(ctx: RunContext) -> Any:
        opened = await ctx.call_tool("open_report", {"name": "q1"})
        return {"status": opened.status, "error": opened.error is not None}

    store = SqliteThreadStore(tmp_path / "threads.db")
    user = {"id": "u-1", "role": "user", "content": "Open it."}
    with anyio.fail_after(LIMIT):
        async with Host(agent, store=store, tools=[open_report]) as host, WebSocketServer(host, port=0) as server:
            async with connect(server.url) as ws:
                frames = await exchange(ws, frame("run-1", [user], {}))
    await store.aclose()
    assert frames[-1]["type"] == "RUN_FINISHED", frames[-1]
    assert frames[-1]["result"] == {"status": "failed", "error": True}
    (result,) = [f for f in frames if f["type"] == "TOOL_CALL_RESULT"]
    assert result["content"] == "the tool failed (FileNotFoundError: no such file: report-\ufffd.txt)"
