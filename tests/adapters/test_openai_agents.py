"""The OpenAI Agents SDK adapter over HTTP + SSE: real ``agents.Agent``s on the SDK's scripted model.

Every run goes through the HTTP transport's ASGI application (``POST /``, server-sent events)
and every stream through a :class:`ClientMachine`, which applies the reference client's
ordering rules. What a tool really did is read from :data:`openai_sdk_agents.EXECUTIONS`, what
the model was given from the scripted model's recorded calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from agents import Agent
from agents.testing import ScriptedModel
from agui_transports.http import HttpApp

from agui_core.adapters.approval import approval_schema
from agui_core.adapters.openai_agents import CANCELLED_MESSAGE, OpenAIAgentsAdapter
from agui_core.machine.client import approve, approve_with_edits, cancel, deny
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.adapters import openai_sdk_agents as oa
from tests.adapters.talk import Talk, of, outcome, refusal

pytestmark = pytest.mark.anyio

LIMIT = 30.0
SEND_EMAIL_PARAMETERS = {
    "properties": {"to": {"title": "To", "type": "string"}, "subject": {"title": "Subject", "type": "string"}},
    "required": ["to", "subject"],
    "title": "send_email_args",
    "type": "object",
    "additionalProperties": False,
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def fresh_records() -> Iterator[None]:
    oa.EXECUTIONS.clear()
    oa.HICCUPS.clear()
    yield
    oa.EXECUTIONS.clear()
    oa.HICCUPS.clear()


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


@asynccontextmanager
async def serving(agent: Any, **host: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the ASGI application over a fresh host of ``agent``."""
    with anyio.fail_after(LIMIT):
        async with Host(agent, store=host.pop("store", None) or MemoryThreadStore(), **host) as served:
            app = HttpApp(served)
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
                yield client


def texts(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in of(events, "TEXT_MESSAGE_CONTENT"))


async def test_a_tool_that_needs_approval_is_a_tool_call_interrupt_bound_to_its_call() -> None:
    async with serving(OpenAIAgentsAdapter(oa.mailer)) as client:
        talk = Talk(client, "approval-1")
        events = await talk.start()
    (interrupt,) = outcome(events)["interrupts"]
    (proposed,) = of(events, "TOOL_CALL_START")
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == proposed["toolCallId"]
    assert proposed["toolCallName"] == "send_email" and proposed["toolCallId"].startswith("call_")
    assert interrupt["responseSchema"] == approval_schema(SEND_EMAIL_PARAMETERS, allow_edits=False)
    assert interrupt["message"] == 'Run send_email on "bob@example.com"?'
    assert interrupt["metadata"] == {"openai-agents": {"tool": "send_email", "agent": "mailer"}}
    assert "expiresAt" not in interrupt
    assert texts(events) == "On it."
    assert [e["type"] for e in events][-3:] == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert oa.EXECUTIONS == []


async def test_an_approved_call_runs_once_and_its_result_comes_on_its_own_id() -> None:
    async with serving(OpenAIAgentsAdapter(oa.mailer)) as client:
        talk = Talk(client, "approval-2")
        await talk.start()
        (interrupt,) = talk.open
        body = talk.resume_body({interrupt.id: approve()})
        events = await talk.send(body)
        replay = await talk.post({**body, "runId": "approval-2-replay"})
    assert outcome(events) == {"type": "success"}
    assert [(e["toolCallId"], e["content"]) for e in of(events, "TOOL_CALL_RESULT")] == [
        (interrupt.tool_call_id, "sent to bob@example.com: Hi")
    ]
    assert not of(events, "TOOL_CALL_START") and not of(events, "TOOL_CALL_ARGS")
    assert texts(events) == "Done: sent to bob@example.com: Hi"
    assert events[-1]["result"] == "Done: sent to bob@example.com: Hi"  # the agent's final output
    # The same resume again is a replay: the recorded outcome, nothing run again.
    assert outcome(replay) == {"type": "success"} and replay[-1]["result"] == events[-1]["result"]
    assert oa.EXECUTIONS == [{"tool": "send_email", "to": "bob@example.com", "subject": "Hi"}]


async def test_a_denial_reaches_the_sdk_as_its_rejection_and_the_model_reads_it() -> None:
    async with serving(OpenAIAgentsAdapter(oa.mailer)) as client:
        talk = Talk(client, "deny-1")
        await talk.start()
        (interrupt,) = talk.open
        events = await talk.resume({interrupt.id: deny()})
    assert outcome(events) == {"type": "success"}
    assert oa.EXECUTIONS == []
    # The SDK's own rejection text, as the model reads it, is the call's result.
    (result,) = of(events, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == interrupt.tool_call_id and result["content"] == "Tool execution was not approved."
    assert texts(events) == "Done: Tool execution was not approved."


async def test_a_cancel_is_a_rejection_saying_so_and_the_call_shows_no_result() -> None:
    async with serving(OpenAIAgentsAdapter(oa.mailer)) as client:
        talk = Talk(client, "cancel-1")
        await talk.start()
        (interrupt,) = talk.open
        events = await talk.resume({interrupt.id: cancel()})
    assert outcome(events) == {"type": "success"}
    assert oa.EXECUTIONS == [] and not of(events, "TOOL_CALL_RESULT")
    assert texts(events) == f"Done: {CANCELLED_MESSAGE}"


async def test_parallel_approvals_in_one_run_are_answered_together() -> None:
    async with serving(oa.parallel_adapter) as client:
        talk = Talk(client, "parallel-1")
        events = await talk.start()
        interrupts = outcome(events)["interrupts"]
        calls = [(e["toolCallName"], e["toolCallId"]) for e in of(events, "TOOL_CALL_START")]
        assert [name for name, _ in calls] == ["send_email", "send_email", "look_up"]
        assert [i["toolCallId"] for i in interrupts] == [call for _, call in calls[:2]]
        # The call that needs no approval ran in the interrupted run, its result shown there.
        assert [e["toolCallId"] for e in of(events, "TOOL_CALL_RESULT")] == [calls[2][1]]
        assert oa.EXECUTIONS == [{"tool": "look_up", "name": "Cy"}]
        bob, ann = talk.open
        partial = await talk.post(talk.entries({bob.id: {"status": "resolved", "payload": {"approved": True}}}))
        assert refusal(partial) == "PARTIAL_RESUME"
        events = await talk.resume({bob.id: approve(), ann.id: cancel()})
    assert outcome(events) == {"type": "success"}
    assert [e["toolCallId"] for e in of(events, "TOOL_CALL_RESULT")] == [bob.tool_call_id]
    assert oa.EXECUTIONS[1:] == [{"tool": "send_email", "to": "bob@example.com", "subject": "Hi"}]
    assert texts(events) == f"Done: cy@example.com; sent to bob@example.com: Hi; {CANCELLED_MESSAGE}"


async def test_edits_are_checked_against_the_tools_parameters_and_run_in_place_of_the_proposal() -> None:
    async with serving(oa.edits_adapter) as client, serving(OpenAIAgentsAdapter(oa.mailer)) as strict_client:
        talk, strict = Talk(client, "edits-1"), Talk(strict_client, "edits-2")
        await talk.start()
        await strict.start()
        (interrupt,) = talk.open
        assert interrupt.response_schema == approval_schema(SEND_EMAIL_PARAMETERS, allow_edits=True)
        edits = {"approved": True, "editedArgs": {"to": "x@example.com", "subject": "s"}}
        refused = await strict.post(strict.entries({strict.open[0].id: {"status": "resolved", "payload": edits}}))
        assert refusal(refused) == "INVALID_PAYLOAD"
        bad = {"approved": True, "editedArgs": {"to": 7}}
        refused = await talk.post(talk.entries({interrupt.id: {"status": "resolved", "payload": bad}}))
        assert refusal(refused) == "INVALID_PAYLOAD" and "editedArgs" in refused[0]["message"]
        events = await talk.resume({interrupt.id: approve_with_edits({"to": "zed@example.com", "subject": "Edited"})})
    assert outcome(events) == {"type": "success"}
    assert oa.EXECUTIONS == [{"tool": "send_email", "to": "zed@example.com", "subject": "Edited"}]
    assert [e["content"] for e in of(events, "TOOL_CALL_RESULT")] == ["sent to zed@example.com: Edited"]


async def test_an_approved_tool_that_ran_before_the_resume_failed_is_not_run_again_on_retry() -> None:
    oa.HICCUPS.append("the model service hiccuped")
    async with serving(oa.flaky_adapter) as client:
        talk = Talk(client, "flaky-1")
        await talk.start()
        (interrupt,) = talk.open
        body = talk.resume_body({interrupt.id: approve()})
        failed = await talk.post(body)
        assert (failed[-1]["type"], failed[-1].get("code")) == ("RUN_ERROR", "AGENT_ERROR")
        assert len(oa.EXECUTIONS) == 1
        changed = await talk.post(talk.entries({interrupt.id: {"status": "cancelled"}}))
        assert refusal(changed) == "INTERRUPT_ALREADY_RESOLVED"
        events = await talk.send({**body, "runId": "flaky-1-retry"})
    assert outcome(events) == {"type": "success"}
    assert len(oa.EXECUTIONS) == 1  # the tool ran once, on the first attempt
    (result,) = of(events, "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (interrupt.tool_call_id, "sent to bob@example.com: Hi")
    assert texts(events) == "Done: sent to bob@example.com: Hi"  # the model got the recorded output


async def test_a_thread_goes_on_with_its_history_after_the_approvals_are_answered() -> None:
    async with serving(OpenAIAgentsAdapter(oa.mailer)) as client:
        talk = Talk(client, "history-1")
        await talk.start("mail bob")
        (interrupt,) = talk.open
        await talk.resume({interrupt.id: approve()})
        events = await talk.start("and again")
    assert outcome(events)["type"] == "interrupt"
    model = oa.mailer.model
    assert isinstance(model, ScriptedModel) and model.last_call is not None
    given = model.last_call.input
    # The new run starts from the thread: both user messages, the call and its output, the answers.
    kinds = [(i.get("role") or i.get("type"), i.get("content") or i.get("output")) for i in given]
    assert kinds == [
        ("user", "mail bob"),
        ("assistant", "On it."),
        ("function_call", None),
        ("function_call_output", "sent to bob@example.com: Hi"),
        ("assistant", "Done: sent to bob@example.com: Hi"),
        ("user", "and again"),
    ]


async def test_a_call_id_the_model_gives_again_in_a_later_round_is_another_call_that_runs_when_approved() -> None:
    # The tool journal keeps the first call_0's run; the second call_0 is answered by another
    # interrupt, so it is not taken for a retry of the first (its result was sent as if it ran).
    async with serving(OpenAIAgentsAdapter(oa.build("renumbering", [oa.BOB], call_ids="call_"))) as client:
        talk = Talk(client, "renumbered-1")
        results = []
        for text in ("mail bob", "and again"):
            await talk.start(text)
            (interrupt,) = talk.open
            assert interrupt.tool_call_id == "call_0"
            events = await talk.resume({interrupt.id: approve()})
            assert outcome(events) == {"type": "success"}
            results += [(e["toolCallId"], e["content"]) for e in of(events, "TOOL_CALL_RESULT")]
    assert results == [("call_0", "sent to bob@example.com: Hi")] * 2
    assert oa.EXECUTIONS == [{"tool": "send_email", "to": "bob@example.com", "subject": "Hi"}] * 2


async def test_an_approval_expires_by_the_adapters_ttl_and_then_does_not_run() -> None:
    clock = Clock()
    adapter = OpenAIAgentsAdapter(oa.mailer, ttl=timedelta(minutes=5))
    async with serving(adapter, clock=clock) as client:
        talk = Talk(client, "ttl-1")
        await talk.start()
        (interrupt,) = talk.open
        assert interrupt.expires_at is not None
        assert datetime.fromisoformat(interrupt.expires_at) == clock.now + timedelta(minutes=5)
        late = talk.entries({interrupt.id: {"status": "resolved", "payload": {"approved": True}}})
        clock.now += timedelta(minutes=6)
        assert refusal(await talk.post(late)) == "INTERRUPT_EXPIRED"
        events = await talk.start("something else")
    assert outcome(events)["type"] == "interrupt"  # a new run, a new proposal
    assert oa.EXECUTIONS == []


def test_the_adapter_refuses_what_is_not_an_agent_and_a_ttl_that_is_not_positive() -> None:
    with pytest.raises(TypeError, match=r"agents\.Agent"):
        OpenAIAgentsAdapter(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl"):
        OpenAIAgentsAdapter(Agent(name="a"), ttl=timedelta(0))
