"""The Pydantic AI adapter over HTTP + SSE: real ``pydantic_ai.Agent``s on Pydantic AI's ``FunctionModel``.

Every run goes through the HTTP transport's ASGI application and every stream through a
:class:`ClientMachine` (the reference client's ordering rules). What a tool really did is read
from :data:`pydantic_ai_agents.EXECUTIONS`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from agui_transports.http import HttpApp

from agui_core.adapters.approval import approval_schema
from agui_core.adapters.pydantic_ai import CANCELLED_MESSAGE, PydanticAIAdapter
from agui_core.app.cli import load_agent
from agui_core.machine.client import approve, approve_with_edits, cancel, deny, resolve
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.adapters import pydantic_ai_agents as pa
from tests.adapters.talk import Talk, of, outcome, refusal

pytestmark = pytest.mark.anyio

LIMIT = 30.0
SEND_EMAIL_PARAMETERS = {
    "additionalProperties": False,
    "properties": {"to": {"type": "string"}, "subject": {"type": "string"}},
    "required": ["to", "subject"],
    "type": "object",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def fresh_records() -> Iterator[None]:
    pa.EXECUTIONS.clear()
    pa.HICCUPS.clear()
    yield
    pa.EXECUTIONS.clear()
    pa.HICCUPS.clear()


@asynccontextmanager
async def serving(agent: Any, **host: Any) -> AsyncIterator[httpx.AsyncClient]:
    with anyio.fail_after(LIMIT):
        async with Host(agent, store=host.pop("store", None) or MemoryThreadStore(), **host) as served:
            app = HttpApp(served)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
                yield client


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of(events, "TEXT_MESSAGE_CONTENT"))


async def test_a_tool_that_requires_approval_is_a_tool_call_interrupt_bound_to_its_call() -> None:
    async with serving(PydanticAIAdapter(pa.mailer)) as client:
        events = await Talk(client, "approval-1").start()
    (interrupt,) = outcome(events)["interrupts"]
    (proposed,) = of(events, "TOOL_CALL_START")
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == proposed["toolCallId"]
    assert interrupt["responseSchema"] == approval_schema(SEND_EMAIL_PARAMETERS, allow_edits=False)
    assert interrupt["metadata"] == {"pydantic-ai": {"tool": "send_email"}}
    assert texts(events) == "On it."
    assert [e["type"] for e in events][-3:] == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert pa.EXECUTIONS == []


async def test_an_approved_call_runs_once_and_a_replay_runs_nothing() -> None:
    async with serving(PydanticAIAdapter(pa.mailer)) as client:
        talk = Talk(client, "approval-2")
        await talk.start()
        (interrupt,) = talk.open
        body = talk.resume_body({interrupt.id: approve()})
        events = await talk.send(body)
        replay = await talk.post({**body, "runId": "approval-2-replay"})
    assert outcome(events) == {"type": "success"} and events[-1]["result"] == "Done: sent to bob@example.com: Hi"
    assert [(e["toolCallId"], e["content"]) for e in of(events, "TOOL_CALL_RESULT")] == [
        (interrupt.tool_call_id, "sent to bob@example.com: Hi")
    ]
    assert not of(events, "TOOL_CALL_START")
    assert outcome(replay) == {"type": "success"} and replay[-1]["result"] == events[-1]["result"]
    assert pa.EXECUTIONS == [{"tool": "send_email", "to": "bob@example.com", "subject": "Hi"}]


async def test_a_denial_is_tool_denied_and_a_cancel_says_so_without_a_result() -> None:
    async with serving(PydanticAIAdapter(pa.parallel)) as client:
        talk = Talk(client, "parallel-1")
        events = await talk.start()
        assert len(outcome(events)["interrupts"]) == 2 and len(of(events, "TOOL_CALL_START")) == 3
        bob, ann = talk.open
        partial = await talk.post(talk.entries({bob.id: {"status": "resolved", "payload": {"approved": True}}}))
        assert refusal(partial) == "PARTIAL_RESUME"
        events = await talk.resume({bob.id: deny(), ann.id: cancel()})
    assert outcome(events) == {"type": "success"}
    assert [(e["toolCallId"], e["content"]) for e in of(events, "TOOL_CALL_RESULT")] == [
        (bob.tool_call_id, "The tool call was denied.")
    ]
    assert pa.EXECUTIONS == [{"tool": "look_up", "name": "Cy"}]  # the call that needs no approval
    assert "The tool call was denied." in texts(events) and CANCELLED_MESSAGE in texts(events)


async def test_edits_are_checked_against_the_tools_parameters_and_reach_pydantic_ai_as_override_args() -> None:
    async with serving(pa.edits_adapter) as client:
        talk = Talk(client, "edits-1")
        await talk.start()
        (interrupt,) = talk.open
        assert interrupt.response_schema == approval_schema(SEND_EMAIL_PARAMETERS, allow_edits=True)
        bad = {"approved": True, "editedArgs": {"to": 7}}
        refused = await talk.post(talk.entries({interrupt.id: {"status": "resolved", "payload": bad}}))
        assert refusal(refused) == "INVALID_PAYLOAD"
        events = await talk.resume({interrupt.id: approve_with_edits({"to": "zed@example.com", "subject": "Edited"})})
    assert pa.EXECUTIONS == [{"tool": "send_email", "to": "zed@example.com", "subject": "Edited"}]
    assert [e["content"] for e in of(events, "TOOL_CALL_RESULT")] == ["sent to zed@example.com: Edited"]


async def test_a_deferred_call_is_a_form_whose_answer_is_the_tools_return() -> None:
    async with serving(PydanticAIAdapter(pa.filing)) as client:
        talk = Talk(client, "form-1")
        events = await talk.start()
        approval, form = outcome(events)["interrupts"]
        assert approval["reason"] == "tool_call"
        assert form["reason"] == "input_required" and form["responseSchema"] == pa.FILING_SCHEMA
        assert form["message"] == "Which quarter is the quarterly report for?"
        assert form["toolCallId"] in {e["toolCallId"] for e in of(events, "TOOL_CALL_START")}
        bad = talk.entries(
            {
                approval["id"]: {"status": "resolved", "payload": {"approved": True}},
                form["id"]: {"status": "resolved", "payload": {"quarter": "Q9"}},
            }
        )
        assert refusal(await talk.post(bad)) == "INVALID_PAYLOAD"
        events = await talk.resume({approval["id"]: approve(), form["id"]: resolve({"quarter": "Q3"})})
    assert outcome(events) == {"type": "success"}
    results = {e["toolCallId"]: e["content"] for e in of(events, "TOOL_CALL_RESULT")}
    assert results[form["toolCallId"]] == '{"quarter":"Q3"}'
    assert results[approval["toolCallId"]] == "sent to bob@example.com: Hi"


async def test_an_approved_tool_that_ran_before_the_resume_failed_is_not_run_again_on_retry() -> None:
    pa.HICCUPS.append("the model service hiccuped")
    async with serving(PydanticAIAdapter(pa.mailer)) as client:
        talk = Talk(client, "flaky-1")
        await talk.start()
        (interrupt,) = talk.open
        body = talk.resume_body({interrupt.id: approve()})
        failed = await talk.post(body)
        assert (failed[-1]["type"], failed[-1].get("code")) == ("RUN_ERROR", "AGENT_ERROR")
        changed = await talk.post(talk.entries({interrupt.id: {"status": "cancelled"}}))
        assert refusal(changed) == "INTERRUPT_ALREADY_RESOLVED"
        events = await talk.send({**body, "runId": "flaky-1-retry"})
    assert outcome(events) == {"type": "success"}
    assert len(pa.EXECUTIONS) == 1
    assert [e["content"] for e in of(events, "TOOL_CALL_RESULT")] == ["sent to bob@example.com: Hi"]
    assert texts(events) == "Done: sent to bob@example.com: Hi"


async def test_a_thread_goes_on_from_its_history_after_the_approvals_are_answered() -> None:
    async with serving(PydanticAIAdapter(pa.mailer)) as client:
        talk = Talk(client, "history-1")
        await talk.start("mail bob")
        (interrupt,) = talk.open
        await talk.resume({interrupt.id: approve()})
        events = await talk.start("and again")
    assert outcome(events)["type"] == "interrupt"


async def test_a_ttl_sets_expires_at() -> None:
    async with serving(PydanticAIAdapter(pa.mailer, ttl=timedelta(minutes=5))) as client:
        events = await Talk(client, "ttl-1").start()
    (interrupt,) = outcome(events)["interrupts"]
    expires = datetime.fromisoformat(interrupt["expiresAt"])
    assert timedelta(minutes=4) < expires - datetime.now(UTC) <= timedelta(minutes=5)


def test_agui_serve_takes_a_pydantic_ai_agent_and_the_adapter_refuses_anything_else() -> None:
    agent, tools = load_agent("tests.adapters.pydantic_ai_agents:parallel")
    assert isinstance(agent, PydanticAIAdapter) and tools == ()
    with pytest.raises(TypeError, match=r"pydantic_ai\.Agent"):
        PydanticAIAdapter(object())  # type: ignore[arg-type]
