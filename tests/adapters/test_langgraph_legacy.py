"""The legacy LangGraph resume channel, ``forwardedProps.command.resume``, taken by the host.

Served over WebSocket with ``Host(translate_input=translate_legacy_resume)`` (``agui serve
--legacy-resume``): an old client that resumes the LangGraph way is translated into ``resume[]``
when its value can mean one thing only, and refused with ``AMBIGUOUS_LEGACY_RESUME`` otherwise.
The translated input meets every rule a ``resume[]`` does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.adapters.langgraph import langgraph_agent, translate_legacy_resume
from agui_core.errors import RemoteProtocolError, RunErrorCode
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.adapters import graphs
from tests.adapters.graphs import RAN
from tests.adapters.test_langgraph import USER, exchange, finished, frame, interrupts, refused, resolve, texts


@asynccontextmanager
async def legacy(graph: Any, *, translate: bool = True) -> AsyncIterator[ClientConnection]:
    translator = translate_legacy_resume if translate else None
    with anyio.fail_after(30):
        async with Host(langgraph_agent(graph), store=MemoryThreadStore(), translate_input=translator) as host:
            async with WebSocketServer(host, port=0) as server, connect(server.url) as ws:
                yield ws


def old_client(thread: str, run: str, value: Any, **fields: Any) -> dict[str, Any]:
    """What a legacy LangGraph client sends to resume: the value under forwardedProps.command.resume."""
    out = frame(thread, run, messages=[USER])
    out["forwardedProps"] = {"command": {"resume": value}, "nodeName": "review"}
    out.update(fields)
    return out


@pytest.mark.anyio
async def test_a_legacy_resume_of_the_one_open_interrupt_is_carried_out_once_and_replays() -> None:
    async with legacy(graphs.approval_graph()) as ws:
        interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        edited = {"approved": True, "editedArgs": {"to": "carol@example.com", "subject": "hello"}}
        done = await exchange(ws, old_client("t", "r2", edited))
        assert finished(done)["outcome"] == {"type": "success"}
        assert RAN == [("send_email", edited["editedArgs"])]
        again = await exchange(ws, old_client("t", "r3", edited))
        assert finished(again)["outcome"] == {"type": "success"} and len(RAN) == 1


@pytest.mark.anyio
async def test_a_translated_resume_meets_the_payload_schema() -> None:
    async with legacy(graphs.approval_graph()) as ws:
        interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        refused(await exchange(ws, old_client("t", "r2", {"approved": "yes"})), "INVALID_PAYLOAD")
        assert RAN == []


@pytest.mark.parametrize("key", ["langgraph", "ag-ui"])
@pytest.mark.anyio
async def test_one_open_interrupt_takes_a_legacy_map_keyed_by_its_id_as_the_map_form(key: str) -> None:
    async with legacy(graphs.approval_graph()) as ws:
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        named = approval["metadata"]["langgraph"]["interruptId"] if key == "langgraph" else approval["id"]
        done = await exchange(ws, old_client("t", "r2", {named: {"approved": True}}))
        assert finished(done)["outcome"] == {"type": "success"}
        assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]
        # The retry in the same form is a replay: nothing runs again.
        again = await exchange(ws, old_client("t", "r3", {named: {"approved": True}}))
        assert finished(again)["outcome"] == {"type": "success"} and len(RAN) == 1


@pytest.mark.anyio
async def test_parallel_interrupts_take_a_legacy_map_keyed_by_langgraph_id_and_refuse_a_bare_value() -> None:
    async with legacy(graphs.parallel_graph()) as ws:
        pending = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        message = refused(await exchange(ws, old_client("t", "r2", True)), "AMBIGUOUS_LEGACY_RESUME")
        assert "2 interrupts are open" in message
        by_message = {i["message"]: i["metadata"]["langgraph"]["interruptId"] for i in pending}
        value = {by_message["Run alpha?"]: True, by_message["Run beta?"]: False}
        done = await exchange(ws, old_client("t", "r3", value))
        assert texts(done) == ["Done: alpha."] and RAN == [("alpha", True)]


@pytest.mark.parametrize("case", ["both-channels", "nothing-open"])
@pytest.mark.anyio
async def test_an_ambiguous_legacy_resume_is_refused_and_changes_nothing(case: str) -> None:
    async with legacy(graphs.approval_graph()) as ws:
        if case == "nothing-open":
            refused(await exchange(ws, old_client("t", "r0", {"approved": True})), "AMBIGUOUS_LEGACY_RESUME")
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        if case == "both-channels":
            bad = old_client("t", "r2", {"approved": True}, resume=[resolve(approval["id"], {"approved": True})])
            refused(await exchange(ws, bad), "AMBIGUOUS_LEGACY_RESUME")
        assert RAN == []
        ok = await exchange(ws, frame("t", "r3", resume=[resolve(approval["id"], {"approved": True})]))
        assert finished(ok)["outcome"] == {"type": "success"} and len(RAN) == 1


@pytest.mark.anyio
async def test_without_the_option_a_legacy_resume_is_input_while_interrupts_are_pending() -> None:
    async with legacy(graphs.approval_graph(), translate=False) as ws:
        interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        refused(await exchange(ws, old_client("t", "r2", {"approved": True})), "PENDING_INTERRUPTS")
        assert RAN == []


def _open(n: int) -> list[Interrupt]:
    return [
        Interrupt(id=f"lg-{k}.run-1", reason="confirmation", metadata={"langgraph": {"interruptId": f"lg-{k}"}})
        for k in range(n)
    ]


def test_an_input_without_a_legacy_resume_passes_untouched() -> None:
    run_input = RunAgentInput(thread_id="t", run_id="r", forwarded_props={"command": {"goto": "x"}, "a": 1})
    assert translate_legacy_resume(run_input, _open(2)) is run_input


def test_the_translation_keeps_the_rest_of_forwarded_props_and_of_the_command() -> None:
    run_input = RunAgentInput(
        thread_id="t", run_id="r", forwarded_props={"command": {"resume": True, "goto": "x"}, "nodeName": "n"}
    )
    out = translate_legacy_resume(run_input, _open(1))
    assert out.resume == (ResumeEntry(interrupt_id="lg-0.run-1", status="resolved", payload=True),)
    assert out.forwarded_props == {"command": {"goto": "x"}, "nodeName": "n"}


@pytest.mark.parametrize(
    "value",
    [{"lg-0": True}, {"lg-0": True, "lg-1": True, "lg-9": True}, {"lg-0": True, "lg-0.run-1": False}, [True, True]],
)
def test_a_map_that_does_not_name_each_open_interrupt_once_is_ambiguous(value: Any) -> None:
    run_input = RunAgentInput(thread_id="t", run_id="r", forwarded_props={"command": {"resume": value}})
    with pytest.raises(RemoteProtocolError) as refused_:
        translate_legacy_resume(run_input, _open(2))
    assert refused_.value.code is RunErrorCode.AMBIGUOUS_LEGACY_RESUME
