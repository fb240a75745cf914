"""Real LangGraph graphs hosted through the adapter, driven over the WebSocket transport.

Each test serves a graph of ``graphs.py`` (compiled with LangGraph's ``InMemorySaver``) through
``langgraph_agent`` and a :class:`~agui_core.runtime.Host` behind a
:class:`~agui_transports.websocket.WebSocketServer` on port 0, and talks to it with raw JSON
frames, as a hostile client would. ``graphs.RAN`` shows what the nodes really did.
"""

from __future__ import annotations

import typing
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import orjson
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect

from agui_core.adapters.langgraph import CANCELLED, DEFAULT_REASON, LangGraphAgent, is_compiled_graph, langgraph_agent
from agui_core.runtime import Host
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.store import MemoryThreadStore
from tests.adapters import graphs
from tests.adapters.graphs import APPROVE_WITH_EDITS, FILING_SCHEMA, RAN

pytestmark = pytest.mark.anyio

LIMIT = 30.0
USER = {"id": "u-1", "role": "user", "content": "Please email Bob."}
FILING = {"quarter": "Q1", "year": 2026, "revenue": 4200000}


@asynccontextmanager
async def serving(graph: Any, **host_options: Any) -> AsyncIterator[str]:
    with anyio.fail_after(LIMIT):
        async with Host(langgraph_agent(graph), store=MemoryThreadStore(), **host_options) as host:
            async with WebSocketServer(host, port=0) as server:
                yield server.url


@asynccontextmanager
async def talking(graph: Any) -> AsyncIterator[ClientConnection]:
    async with serving(graph) as url, connect(url) as ws:
        yield ws


def frame(
    thread: str, run: str, *, messages: Sequence[dict[str, Any]] = (), resume: Sequence[dict[str, Any]] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "threadId": thread,
        "runId": run,
        "state": {},
        "messages": list(messages),
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    if resume is not None:
        out["resume"] = list(resume)
    return out


def resolve(interrupt_id: str, payload: Any) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "resolved", "payload": payload}


def cancel(interrupt_id: str) -> dict[str, Any]:
    return {"interruptId": interrupt_id, "status": "cancelled"}


async def exchange(ws: ClientConnection, data: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(orjson.dumps(data).decode())
    out: list[dict[str, Any]] = []
    while True:
        event = orjson.loads(await ws.recv())
        out.append(event)
        if event["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return out


def finished(frames: list[dict[str, Any]]) -> dict[str, Any]:
    types = [f["type"] for f in frames]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED" and "RUN_ERROR" not in types, frames
    return frames[-1]


def interrupts(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = finished(frames)["outcome"]
    assert outcome["type"] == "interrupt", outcome
    return list(outcome["interrupts"])


def refused(frames: list[dict[str, Any]], code: str) -> str:
    assert [(f["type"], f.get("code")) for f in frames] == [("RUN_ERROR", code)], frames
    return str(frames[0]["message"])


def of_type(frames: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [f for f in frames if f["type"] == kind]


def texts(frames: list[dict[str, Any]]) -> list[str]:
    by_id: dict[str, str] = {}
    for f in of_type(frames, "TEXT_MESSAGE_CONTENT"):
        by_id[f["messageId"]] = by_id.get(f["messageId"], "") + f["delta"]
    return list(by_id.values())


# -- tool approval with edits -----------------------------------------------------------------


async def test_a_tool_approval_with_edits_runs_the_edited_call_once_and_reports_it_on_its_tool_call() -> None:
    async with talking(graphs.approval_graph()) as ws:
        first = await exchange(ws, frame("t", "r1", messages=[USER]))
        (approval,) = interrupts(first)
        assert approval["reason"] == "tool_call" and approval["toolCallId"] == "call-email"
        assert approval["responseSchema"] == APPROVE_WITH_EDITS
        assert approval["metadata"]["langgraph"]["interruptId"] in approval["id"]
        (start,) = of_type(first, "TOOL_CALL_START")
        assert start["toolCallName"] == "send_email" and start["toolCallId"] == "call-email"
        assert texts(first) == ["I will email Bob."]
        assert [f["type"] for f in first[-3:]] == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert RAN == []

        edited = {"to": "carol@example.com", "subject": "hello"}
        second = await exchange(
            ws, frame("t", "r2", resume=[resolve(approval["id"], {"approved": True, "editedArgs": edited})])
        )
        assert finished(second)["outcome"] == {"type": "success"}
        assert of_type(second, "TOOL_CALL_START") == [] and of_type(second, "TOOL_CALL_ARGS") == []
        (result,) = of_type(second, "TOOL_CALL_RESULT")
        assert result["toolCallId"] == "call-email" and result["content"] == "sent to carol@example.com: hello"
        assert RAN == [("send_email", edited)]


async def test_a_denial_sends_nothing() -> None:
    async with talking(graphs.approval_graph()) as ws:
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        second = await exchange(ws, frame("t", "r2", resume=[resolve(approval["id"], {"approved": False})]))
        (result,) = of_type(second, "TOOL_CALL_RESULT")
        assert result["content"] == "not sent" and RAN == []


async def test_edits_that_fail_the_schema_are_refused_and_the_approval_stays_open() -> None:
    async with talking(graphs.approval_graph()) as ws:
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        bad = {"approved": True, "editedArgs": {"to": "carol@example.com", "subject": "x", "bcc": "eve@example.com"}}
        frames = await exchange(ws, frame("t", "r2", resume=[resolve(approval["id"], bad)]))
        message = refused(frames, "INVALID_PAYLOAD")
        assert "editedArgs" in message
        assert RAN == []
        ok = await exchange(ws, frame("t", "r3", resume=[resolve(approval["id"], {"approved": True})]))
        assert finished(ok)["outcome"] == {"type": "success"}
        assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]


# -- a form with a schema and an expiry -------------------------------------------------------


async def test_a_form_carries_its_schema_and_expiry_and_a_filled_form_is_filed() -> None:
    async with talking(graphs.form_graph()) as ws:
        before = datetime.now(UTC)
        (form,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        assert form["reason"] == "input_required" and form["responseSchema"] == FILING_SCHEMA
        expires = datetime.fromisoformat(form["expiresAt"])
        assert before + timedelta(minutes=9) < expires <= datetime.now(UTC) + timedelta(minutes=10)
        wrong = await exchange(ws, frame("t", "r2", resume=[resolve(form["id"], {**FILING, "quarter": "Q5"})]))
        assert "quarter" in refused(wrong, "INVALID_PAYLOAD")
        done = await exchange(ws, frame("t", "r3", resume=[resolve(form["id"], FILING)]))
        assert finished(done)["outcome"] == {"type": "success"}
        assert texts(done) == ["Filed Q1 2026."]
        (state,) = of_type(done, "STATE_SNAPSHOT")
        assert state["snapshot"]["filing"] == FILING
        assert RAN == [("file", FILING)]


async def test_a_form_answered_after_its_expiry_is_refused_and_files_nothing() -> None:
    graphs.FORM_TTL[0] = timedelta(milliseconds=300)
    async with talking(graphs.form_graph()) as ws:
        (form,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        while datetime.now(UTC) <= datetime.fromisoformat(form["expiresAt"]):
            await anyio.sleep(0.05)
        late = await exchange(ws, frame("t", "r2", resume=[resolve(form["id"], FILING)]))
        assert form["id"] in refused(late, "INTERRUPT_EXPIRED")
        assert RAN == []


async def test_after_a_form_expired_the_next_input_is_not_blocked_and_the_graph_moves_on() -> None:
    graphs.FORM_TTL[0] = timedelta(milliseconds=300)
    async with talking(graphs.form_graph()) as ws:
        (form,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        while datetime.now(UTC) <= datetime.fromisoformat(form["expiresAt"]):
            await anyio.sleep(0.05)
        graphs.FORM_TTL[0] = timedelta(minutes=10)
        again = {"id": "u-2", "role": "user", "content": "Let us try again."}
        frames = await exchange(ws, frame("t", "r2", messages=[USER, again]))
        # The graph got EXPIRED for the old form (nothing filed), then the new input: a new form.
        assert texts(frames) == ["Nothing filed."]
        (new_form,) = interrupts(frames)
        assert new_form["id"] != form["id"] and new_form["reason"] == "input_required"
        assert datetime.fromisoformat(new_form["expiresAt"]) > datetime.now(UTC) + timedelta(minutes=9)
        assert RAN == []
        done = await exchange(ws, frame("t", "r3", resume=[resolve(new_form["id"], FILING)]))
        assert texts(done) == ["Filed Q1 2026."] and RAN == [("file", FILING)]


async def test_langgraphs_own_response_schema_is_published_and_a_typed_one_is_neither_cancelled_nor_expired() -> None:
    graphs.FORM_TTL[0] = timedelta(milliseconds=300)
    async with talking(
        graphs.value_graph({"message": "Approve?"}, response_schema=graphs.Approval, expiring=True)
    ) as ws:
        (asked,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        assert asked["reason"] == "input_required"
        assert asked["responseSchema"] == graphs.Approval.model_json_schema()
        # None (a cancel, an expiry) fails the model in LangGraph: no expiry, and a cancel is refused.
        assert "expiresAt" not in asked and isinstance(asked["metadata"]["langgraph"]["expiresAt"], str)
        cancelled = await exchange(ws, frame("t", "r2", resume=[cancel(asked["id"])]))
        assert [f["type"] for f in cancelled] == ["RUN_STARTED", "RUN_ERROR"]
        assert "cannot be cancelled" in cancelled[-1]["message"] and cancelled[-1]["code"] == "INVALID_RESUME"
        await anyio.sleep(0.4)
        assert "approved" in refused(
            await exchange(ws, frame("t", "r3", resume=[resolve(asked["id"], {"approved": "maybe"})])),
            "INVALID_PAYLOAD",
        )
        done = await exchange(ws, frame("t", "r4", resume=[resolve(asked["id"], {"approved": True})]))
        assert finished(done)["outcome"] == {"type": "success"}
    assert RAN == [("answer", graphs.Approval(approved=True))]


async def test_a_response_schema_that_accepts_none_can_be_cancelled_and_expire() -> None:
    graphs.FORM_TTL[0] = timedelta(milliseconds=300)
    graph = graphs.value_graph({"message": "Approve?"}, response_schema=graphs.Approval | None, expiring=True)
    async with talking(graph) as ws:
        (asked,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        assert asked["reason"] == "input_required" and "expiresAt" in asked
        while datetime.now(UTC) <= datetime.fromisoformat(asked["expiresAt"]):
            await anyio.sleep(0.05)
        graphs.FORM_TTL[0] = timedelta(minutes=10)
        again = {"id": "u-2", "role": "user", "content": "Again."}
        (asked_again,) = interrupts(await exchange(ws, frame("t", "r2", messages=[USER, again])))
        assert RAN == [("answer", None)]
        finished(await exchange(ws, frame("t", "r3", resume=[cancel(asked_again["id"])])))
    assert RAN == [("answer", None), ("answer", None)]


async def test_a_dict_response_schema_is_published_and_enforced() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    async with talking(graphs.value_graph("Pick a number.", response_schema=schema)) as ws:
        (asked,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        assert (asked["reason"], asked["message"], asked["responseSchema"]) == (
            "input_required",
            "Pick a number.",
            schema,
        )
        wrong = await exchange(ws, frame("t", "r2", resume=[resolve(asked["id"], {"n": "seven"})]))
        assert "n" in refused(wrong, "INVALID_PAYLOAD") and RAN == []
        finished(await exchange(ws, frame("t", "r3", resume=[resolve(asked["id"], {"n": 7})])))
    assert RAN == [("answer", {"n": 7})]


@pytest.mark.parametrize(
    ("value", "published", "kept"),
    [
        ({"message": {"text": "hi"}}, {}, {"message": {"text": "hi"}}),
        ({"message": "m", "metadata": "oops"}, {"message": "m"}, {"metadata": "oops"}),
        ({"message": "m", "responseSchema": "string"}, {"message": "m"}, {"responseSchema": "string"}),
        ({"reason": 7, "toolCallId": 5, "message": "m"}, {"message": "m"}, {"reason": 7, "toolCallId": 5}),
        ({"message": "m", "expiresAt": 1700000000}, {"message": "m"}, {"expiresAt": 1700000000}),
        ({"message": "m", "metadata": {"team": "ops"}}, {"message": "m", "metadata": {"team": "ops"}}, {}),
    ],
)
async def test_interrupt_fields_of_the_wrong_type_go_to_metadata_langgraph(
    value: dict[str, Any], published: dict[str, Any], kept: dict[str, Any]
) -> None:
    async with talking(graphs.value_graph(value)) as ws:
        (asked,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        lg = asked["metadata"]["langgraph"]
        assert lg == {"interruptId": lg["interruptId"], **kept}
        assert asked["reason"] == DEFAULT_REASON
        assert {k: v for k, v in asked.items() if k not in ("id", "reason")} == {
            **{k: v for k, v in published.items() if k != "metadata"},
            "metadata": {**published.get("metadata", {}), "langgraph": lg},
        }
        finished(await exchange(ws, frame("t", "r2", resume=[resolve(asked["id"], {"ok": True})])))
    assert RAN == [("answer", {"ok": True})]


async def test_a_datetime_expiry_is_published_and_enforced_and_the_next_message_reaches_the_graph() -> None:
    graphs.FORM_TTL[0] = timedelta(milliseconds=300)
    graph = graphs.value_graph({"message": "The form."}, expiring=True)
    async with talking(graph) as ws:
        (asked,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        while datetime.now(UTC) <= datetime.fromisoformat(asked["expiresAt"]):
            await anyio.sleep(0.05)
        graphs.FORM_TTL[0] = timedelta(minutes=10)
        again = {"id": "u-2", "role": "user", "content": "Again."}
        frames = await exchange(ws, frame("t", "r2", messages=[USER, again]))
        assert texts(frames) == ["Got None."]
        (asked_again,) = interrupts(frames)
        assert asked_again["id"] != asked["id"]
    snapshot = await graph.aget_state({"configurable": {"thread_id": "t"}})
    assert [m.id for m in snapshot.values["messages"] if m.type == "human"] == ["u-1", "u-2"]
    assert RAN == [("answer", None)]


async def test_a_new_message_for_a_graph_paused_on_interrupts_the_record_does_not_know_is_refused() -> None:
    from langchain_core.messages import HumanMessage

    graph = graphs.approval_graph()
    # The graph ran and paused, and the run's end never reached agui-core (a host that died).
    async for _ in graph.astream(
        {"messages": [HumanMessage(USER["content"], id=USER["id"])]}, {"configurable": {"thread_id": "t"}}
    ):
        pass
    async with talking(graph) as ws:
        again = {"id": "u-2", "role": "user", "content": "And Carol."}
        frames = await exchange(ws, frame("t", "r1", messages=[USER, again]))
        assert [f["type"] for f in frames] == ["RUN_STARTED", "RUN_ERROR"]
        assert "paused" in frames[-1]["message"] and frames[-1]["code"] == "PENDING_INTERRUPTS"
        (approval,) = interrupts(await exchange(ws, frame("t", "r2", messages=[USER])))
        assert approval["toolCallId"] == "call-email"
        finished(await exchange(ws, frame("t", "r3", resume=[resolve(approval["id"], {"approved": True})])))
    assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]
    snapshot = await graph.aget_state({"configurable": {"thread_id": "t"}})
    assert "u-2" not in [m.id for m in snapshot.values["messages"]]


async def test_a_cancelled_form_reaches_the_graph_as_cancelled() -> None:
    assert CANCELLED is None
    async with talking(graphs.form_graph()) as ws:
        (form,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        done = await exchange(ws, frame("t", "r2", resume=[cancel(form["id"])]))
        assert texts(done) == ["Nothing filed."] and RAN == []


# -- parallel branches --------------------------------------------------------------------------


async def test_two_parallel_interrupts_are_resumed_together_and_the_cancelled_branch_does_not_run() -> None:
    async with talking(graphs.parallel_graph()) as ws:
        pending = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        assert sorted(i["message"] for i in pending) == ["Run alpha?", "Run beta?"]
        by_name = {i["message"]: i["id"] for i in pending}
        assert len({i["metadata"]["langgraph"]["interruptId"] for i in pending}) == 2

        partial = await exchange(ws, frame("t", "r2", resume=[resolve(by_name["Run alpha?"], True)]))
        assert by_name["Run beta?"] in refused(partial, "PARTIAL_RESUME")
        both = [resolve(by_name["Run alpha?"], True), cancel(by_name["Run beta?"])]
        done = await exchange(ws, frame("t", "r3", resume=both))
        assert finished(done)["outcome"] == {"type": "success"}
        assert texts(done) == ["Done: alpha."]
        assert RAN == [("alpha", True)]


async def test_an_expired_parallel_interrupt_reaches_the_graph_as_expired_with_the_others_answers() -> None:
    graphs.FORM_TTL[0] = timedelta(milliseconds=300)
    async with talking(graphs.parallel_expiring_graph()) as ws:
        pending = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        (expiring,) = [i for i in pending if "expiresAt" in i]
        (beta,) = [i for i in pending if "expiresAt" not in i]
        while datetime.now(UTC) <= datetime.fromisoformat(expiring["expiresAt"]):
            await anyio.sleep(0.05)
        late = await exchange(ws, frame("t", "r2", resume=[resolve(expiring["id"], True), resolve(beta["id"], True)]))
        refused(late, "INTERRUPT_EXPIRED")
        done = await exchange(ws, frame("t", "r3", resume=[resolve(beta["id"], True)]))
        assert finished(done)["outcome"] == {"type": "success"}
        assert texts(done) == ["Done: beta."] and RAN == [("beta", True)]


async def test_both_parallel_branches_approved_both_run_once() -> None:
    async with talking(graphs.parallel_graph()) as ws:
        pending = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        done = await exchange(ws, frame("t", "r2", resume=[resolve(i["id"], True) for i in pending]))
        assert texts(done) == ["Done: alpha, beta."]
        assert sorted(RAN) == [("alpha", True), ("beta", True)]


async def test_two_tool_calls_approved_in_parallel_one_cancelled_shows_no_result_for_the_cancelled_call() -> None:
    async with talking(graphs.parallel_tools_graph()) as ws:
        pending = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        by_call = {i["toolCallId"]: i["id"] for i in pending}
        assert set(by_call) == {"call-send_email", "call-archive"}
        answers = [resolve(by_call["call-send_email"], {"approved": True}), cancel(by_call["call-archive"])]
        done = await exchange(ws, frame("t", "r2", resume=answers))
        assert finished(done)["outcome"] == {"type": "success"}
        results = [(f["toolCallId"], f["content"]) for f in of_type(done, "TOOL_CALL_RESULT")]
        assert results == [("call-send_email", "send_email done")]
        assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]


# -- chained interrupts ------------------------------------------------------------------------


async def test_a_chained_interrupt_after_a_resume_is_announced_and_answered_in_turn() -> None:
    async with talking(graphs.chained_graph()) as ws:
        (question,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        assert question["reason"] == "input_required"
        (confirmation,) = interrupts(await exchange(ws, frame("t", "r2", resume=[resolve(question["id"], "Ann")])))
        assert confirmation["reason"] == "confirmation" and confirmation["message"] == "Greet Ann?"
        assert confirmation["id"] != question["id"]
        # The first answer again is a replay: the same chained interrupt, the node not run again.
        stale = await exchange(ws, frame("t", "r3", resume=[resolve(question["id"], "Ann")]))
        assert interrupts(stale) == [confirmation]
        done = await exchange(ws, frame("t", "r4", resume=[resolve(confirmation["id"], True)]))
        assert texts(done) == ["Hello, Ann!"] and RAN == [("greet", "Ann")]


async def test_an_interrupt_value_without_a_reason_gets_the_namespaced_default() -> None:
    async with talking(graphs.parallel_graph()) as ws:
        pending = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
    assert {i["reason"] for i in pending} == {"confirmation"}
    assert DEFAULT_REASON.startswith("langgraph:")


async def test_an_interrupt_raised_inside_a_subgraph_is_announced_and_resumed() -> None:
    async with talking(graphs.subgraph_graph()) as ws:
        (inside,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        assert inside["message"] == "Go on inside?"
        done = await exchange(ws, frame("t", "r2", resume=[resolve(inside["id"], True)]))
        assert texts(done) == ["Inside: True."] and RAN == [("inner", True)]


# -- replay ------------------------------------------------------------------------------------


async def test_the_same_resume_again_replays_the_outcome_without_running_the_node_again() -> None:
    async with talking(graphs.approval_graph()) as ws:
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        answer = [resolve(approval["id"], {"approved": True})]
        first = await exchange(ws, frame("t", "r2", resume=answer))
        again = await exchange(ws, frame("t", "r3", resume=answer))
        assert finished(again)["outcome"] == finished(first)["outcome"] == {"type": "success"}
        assert of_type(again, "TOOL_CALL_RESULT") == of_type(first, "TOOL_CALL_RESULT")
        assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]
        other = await exchange(ws, frame("t", "r4", resume=[resolve(approval["id"], {"approved": False})]))
        refused(other, "INTERRUPT_ALREADY_RESOLVED")
        assert len(RAN) == 1


async def test_two_identical_resumes_at_once_run_the_node_once() -> None:
    async with serving(graphs.approval_graph()) as url, connect(url) as ws, connect(url) as ws2:
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        answer = [resolve(approval["id"], {"approved": True})]
        results: list[list[dict[str, Any]]] = []

        async def send(conn: ClientConnection, run: str) -> None:
            results.append(await exchange(conn, frame("t", run, resume=answer)))

        async with anyio.create_task_group() as tg:
            tg.start_soon(send, ws, "r2")
            tg.start_soon(send, ws2, "r3")
        assert len(RAN) == 1
        for frames in results:
            assert frames[-1]["type"] == "RUN_FINISHED" or frames[0].get("code") == "THREAD_BUSY", frames


# -- every rejection code ----------------------------------------------------------------------


def _bad_resumes(approval_id: str) -> list[tuple[str, list[dict[str, Any]] | None, str]]:
    return [
        ("PENDING_INTERRUPTS", None, "t"),
        ("UNKNOWN_INTERRUPT_ID", [resolve("no-such-interrupt", {"approved": True})], "t"),
        ("DUPLICATE_RESUME_ENTRY", [resolve(approval_id, {"approved": True})] * 2, "t"),
        ("INVALID_RESUME", [{"interruptId": approval_id, "status": "cancelled", "payload": {"approved": True}}], "t"),
        ("INVALID_RESUME", [{**resolve(approval_id, {"approved": True}), "metadata": None}], "t"),
        ("INVALID_PAYLOAD", [resolve(approval_id, {"approved": "yes"})], "t"),
        ("INVALID_PAYLOAD", [{"interruptId": approval_id, "status": "resolved"}], "t"),
        ("THREAD_MISMATCH", [resolve(approval_id, {"approved": True})], "other"),
    ]


@pytest.mark.parametrize("case", range(8))
async def test_every_refused_resume_changes_nothing_and_the_valid_one_still_works(case: int) -> None:
    async with talking(graphs.approval_graph()) as ws:
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        if case == 7:  # the other thread has interrupts of its own
            interrupts(await exchange(ws, frame("other", "o1", messages=[USER])))
        code, resume, thread = _bad_resumes(approval["id"])[case]
        bad = frame(thread, "bad", messages=[{"id": "u-2", "role": "user", "content": "hello?"}], resume=resume)
        refused(await exchange(ws, bad), code)
        assert RAN == []
        ok = await exchange(ws, frame("t", "r2", resume=[resolve(approval["id"], {"approved": True})]))
        assert finished(ok)["outcome"] == {"type": "success"} and len(RAN) == 1


async def test_an_input_that_fails_the_wire_schema_is_invalid_input() -> None:
    async with talking(graphs.approval_graph()) as ws:
        refused(await exchange(ws, {"threadId": "t", "runId": 7, "messages": "no"}), "INVALID_INPUT")


async def test_a_node_that_raises_ends_the_run_in_agent_error_and_keeps_nothing_half_done() -> None:
    async with talking(graphs.failing_graph()) as ws:
        frames = await exchange(ws, frame("t", "r1", messages=[USER]))
        assert frames[0]["type"] == "RUN_STARTED"
        assert (frames[-1]["type"], frames[-1].get("code")) == ("RUN_ERROR", "AGENT_ERROR")
        assert "Traceback" not in frames[-1]["message"]


async def test_a_node_failing_after_the_approval_a_retry_cannot_change_the_answer_and_the_same_one_goes_on() -> None:
    failures = ["the notifier is down"]
    graph = graphs.flaky_after_approval_graph(failures)
    async with talking(graph) as ws:
        (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        failed = await exchange(ws, frame("t", "r2", resume=[resolve(approval["id"], {"approved": True})]))
        assert (failed[-1]["type"], failed[-1].get("code")) == ("RUN_ERROR", "AGENT_ERROR")
        assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]
        # The graph took the approval and sent the email: a cancel now is refused, not recorded.
        changed = await exchange(ws, frame("t", "r3", resume=[cancel(approval["id"])]))
        # Refused at the door by the thread machine, as for every agent: no run starts.
        assert [f["type"] for f in changed] == ["RUN_ERROR"]
        assert "already answered" in changed[-1]["message"]
        assert changed[-1]["code"] == "INTERRUPT_ALREADY_RESOLVED"
        # The same approval again: the graph goes on from where it failed; nothing runs twice.
        done = await exchange(ws, frame("t", "r4", resume=[resolve(approval["id"], {"approved": True})]))
        assert finished(done)["outcome"] == {"type": "success"}
        assert [(f["toolCallId"], f["content"]) for f in of_type(done, "TOOL_CALL_RESULT")] == [
            ("call-email", "sent to bob@example.com: hi")
        ]
    assert RAN == [
        ("send_email", {"to": "bob@example.com", "subject": "hi"}),
        ("notify", "sent to bob@example.com: hi"),
    ]
    assert (await graph.aget_state({"configurable": {"thread_id": "t"}})).next == ()


async def test_a_node_failing_after_its_interrupt_returned_keeps_the_answer_it_took() -> None:
    async with talking(graphs.failing_review_graph(["the node broke"])) as ws:
        (question,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        failed = await exchange(ws, frame("t", "r2", resume=[resolve(question["id"], {"go": True})]))
        assert (failed[-1]["type"], failed[-1].get("code")) == ("RUN_ERROR", "AGENT_ERROR")
        # LangGraph would give the node {"go": True} again whatever the retry says: refused.
        changed = await exchange(ws, frame("t", "r3", resume=[cancel(question["id"])]))
        # Refused at the door by the thread machine, as for every agent: no run starts.
        assert [f["type"] for f in changed] == ["RUN_ERROR"]
        assert "already answered" in changed[-1]["message"]
        assert changed[-1]["code"] == "INTERRUPT_ALREADY_RESOLVED"
        done = await exchange(ws, frame("t", "r4", resume=[resolve(question["id"], {"go": True})]))
        assert texts(done) == ["Went on with {'go': True}."]
    # The node itself runs again on the retry (LangGraph's own rule: no checkpoint inside a node).
    assert RAN == [("review", {"go": True}), ("review", {"go": True})]


async def test_an_input_while_the_graph_runs_is_thread_busy() -> None:
    gate = anyio.Event()
    async with serving(graphs.blocking_graph(gate)) as url, connect(url) as ws, connect(url) as ws2:
        await ws.send(orjson.dumps(frame("t", "r1", messages=[USER])).decode())
        assert orjson.loads(await ws.recv())["type"] == "RUN_STARTED"
        refused(await exchange(ws2, frame("t", "r2", messages=[USER])), "THREAD_BUSY")
        gate.set()
        rest = []
        while not rest or rest[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
            rest.append(orjson.loads(await ws.recv()))
        assert rest[-1]["outcome"]["type"] == "interrupt"


async def test_another_principal_is_forbidden_and_learns_nothing_of_the_thread() -> None:
    tokens = TokenAuthenticator({"ann-token-0123456789abcdef": "ann", "bob-token-0123456789abcdef": "bob"})
    async with serving(graphs.approval_graph(), authenticator=tokens) as url:
        async with connect(url, additional_headers={"Authorization": "Bearer ann-token-0123456789abcdef"}) as ann:
            (approval,) = interrupts(await exchange(ann, frame("t", "r1", messages=[USER])))
            async with connect(url, additional_headers={"Authorization": "Bearer bob-token-0123456789abcdef"}) as bob:
                answer = [resolve(approval["id"], {"approved": True})]
                message = refused(await exchange(bob, frame("t", "b1", resume=answer)), "FORBIDDEN")
                assert approval["id"] not in message
            assert RAN == []
            ok = await exchange(ann, frame("t", "r2", resume=[resolve(approval["id"], {"approved": True})]))
            assert finished(ok)["outcome"] == {"type": "success"}


# -- streaming, state, the graph's own shape --------------------------------------------------


async def test_a_scripted_chat_model_streams_its_tokens_as_text_deltas() -> None:
    async with talking(graphs.chat_graph()) as ws:
        first = await exchange(ws, frame("t", "r1", messages=[USER]))
        assert len(of_type(first, "TEXT_MESSAGE_CONTENT")) > 3
        assert texts(first) == ["Hello there, how can I help?"]
        (confirmation,) = interrupts(first)
        done = await exchange(ws, frame("t", "r2", resume=[resolve(confirmation["id"], True)]))
        (state,) = of_type(done, "STATE_SNAPSHOT")
        assert state["snapshot"]["sent"] == ["yes"]


async def test_a_chat_models_streamed_tool_call_is_proposed_whole_after_its_text_and_gated() -> None:
    async with talking(graphs.llm_tool_graph()) as ws:
        first = await exchange(ws, frame("t", "r1", messages=[USER]))
        assert texts(first) == ["Let me email Bob."] and len(of_type(first, "TEXT_MESSAGE_CONTENT")) == 4
        kinds = [f["type"] for f in first]
        assert kinds.index("TEXT_MESSAGE_END") < kinds.index("TOOL_CALL_START")
        (start,) = of_type(first, "TOOL_CALL_START")
        (args,) = of_type(first, "TOOL_CALL_ARGS")
        assert (start["toolCallId"], start["toolCallName"]) == ("call-llm", "send_email")
        assert start["parentMessageId"] == of_type(first, "TEXT_MESSAGE_START")[0]["messageId"]
        assert orjson.loads(args["delta"]) == {"to": "bob@example.com", "subject": "hi"}
        (approval,) = interrupts(first)
        assert approval["toolCallId"] == "call-llm" and RAN == []
        done = await exchange(ws, frame("t", "r2", resume=[resolve(approval["id"], {"approved": True})]))
        assert [(f["toolCallId"], f["content"]) for f in of_type(done, "TOOL_CALL_RESULT")] == [
            ("call-llm", "sent to bob@example.com: hi")
        ]
        assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]


async def test_parallel_branches_streaming_at_once_keep_their_whole_text_and_their_tool_calls() -> None:
    async with talking(graphs.parallel_streaming_graph()) as ws:
        first = await exchange(ws, frame("t", "r1", messages=[USER]))
        starts = [f["messageId"] for f in of_type(first, "TEXT_MESSAGE_START")]
        assert len(starts) == 2
        # The two streams did interleave: the second began before the first ended.
        kinds = [(f["type"], f.get("messageId")) for f in first]
        assert kinds.index(("TEXT_MESSAGE_START", starts[1])) < kinds.index(("TEXT_MESSAGE_END", starts[0]))
        assert sorted(texts(first)) == ["ann-0 ann-1 ann-2 ann-3 ", "bob-0 bob-1 bob-2 bob-3 "]
        calls = {f["toolCallId"]: f["parentMessageId"] for f in of_type(first, "TOOL_CALL_START")}
        assert sorted(calls) == ["call-ann", "call-bob"] and set(calls.values()) == set(starts)
        assert sorted(orjson.loads(f["delta"])["to"] for f in of_type(first, "TOOL_CALL_ARGS")) == [
            "ann@example.com",
            "bob@example.com",
        ]
        ann, bob = sorted(interrupts(first), key=lambda i: i["toolCallId"])
        assert (ann["toolCallId"], bob["toolCallId"]) == ("call-ann", "call-bob")
        done = await exchange(ws, frame("t", "r2", resume=[resolve(ann["id"], {"approved": True}), cancel(bob["id"])]))
        assert finished(done)["outcome"] == {"type": "success"}
    assert RAN == [("send_email", {"to": "ann@example.com", "subject": "hi"})]


async def test_a_typing_typeddict_state_runs() -> None:
    # typing's TypedDict, not typing_extensions' (the reference fails on its first run on 3.11).
    assert type(graphs.Chat) is type(typing.TypedDict("Probe", {"x": int}))
    async with talking(graphs.approval_graph()) as ws:
        interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))


async def test_the_graph_keeps_its_own_messages_and_takes_only_new_user_messages() -> None:
    graph = graphs.chained_graph()
    async with talking(graph) as ws:
        (question,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
        await exchange(ws, frame("t", "r2", resume=[resolve(question["id"], "Ann")]))
    held = (await graph.aget_state({"configurable": {"thread_id": "t"}})).values["messages"]
    assert [m.id for m in held] == ["u-1"]


async def test_a_graph_without_messages_runs_on_every_input_and_its_state_is_the_threads() -> None:
    async with talking(graphs.counter_graph()) as ws:
        for run, expected in (("r1", 1), ("r2", 2)):
            frames = await exchange(ws, frame("t", run))
            assert finished(frames)["outcome"] == {"type": "success"}
            (state,) = of_type(frames, "STATE_SNAPSHOT")
            assert state["snapshot"] == {"count": expected}


def test_the_adapter_refuses_what_is_not_a_compiled_graph_with_a_checkpointer() -> None:
    from langgraph.graph import StateGraph

    builder = StateGraph(graphs.Chat)
    builder.add_node("n", lambda state: {})
    builder.set_entry_point("n")
    with pytest.raises(TypeError, match="compiled"):
        LangGraphAgent(builder)
    with pytest.raises(ValueError, match="checkpointer"):
        LangGraphAgent(builder.compile())
    assert is_compiled_graph(builder.compile()) and not is_compiled_graph(builder)
