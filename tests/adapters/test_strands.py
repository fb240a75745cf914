"""The Strands adapter over HTTP + SSE: real ``strands-agents`` agents on a scripted model.

Every run goes through the HTTP transport's ASGI application (``POST /``, server-sent events)
and every stream through a :class:`ClientMachine`, which applies the reference client's
ordering rules. What a tool really did is read from :data:`strands_agents.EXECUTIONS`, what a
hook or tool was handed from :data:`strands_agents.ANSWERS`.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import httpx
import pytest
from agui_transports.http import HttpApp

from agui_core.adapters.strands import CANCELLED, StrandsAdapter, approval_schema
from agui_core.machine.client import approve, approve_with_edits, cancel, deny, resolve
from agui_core.runtime import Host
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.store import MemoryThreadStore
from tests.adapters import strands_agents as sa
from tests.adapters.talk import Talk, of, outcome, refusal

pytestmark = pytest.mark.anyio

LIMIT = 30.0
ANN = "token-of-ann-0123456789"
BOB = "token-of-bob-0123456789"
SEND_EMAIL_INPUT = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "description": "Parameter to"},
        "subject": {"type": "string", "description": "Parameter subject"},
    },
    "required": ["to", "subject"],
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def fresh_records() -> Iterator[None]:
    sa.EXECUTIONS.clear()
    sa.ANSWERS.clear()
    sa.HICCUPS.clear()
    yield
    sa.EXECUTIONS.clear()
    sa.ANSWERS.clear()
    sa.HICCUPS.clear()


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC).replace(microsecond=0)

    def __call__(self) -> datetime:
        return self.now


@asynccontextmanager
async def serving(agent: Any, **host: Any) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the ASGI application over a fresh host of ``agent``."""
    async with Host(agent, store=host.pop("store", None) or MemoryThreadStore(), **host) as served:
        app = HttpApp(served)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
            yield client


# -- approval before a tool call -------------------------------------------------------------


async def test_an_approval_before_a_tool_call_is_a_tool_call_interrupt_that_offers_edits() -> None:
    async with serving(sa.approval_adapter) as client:
        talk = Talk(client, "approval-1")
        events = await talk.start()
    (interrupt,) = outcome(events)["interrupts"]
    (proposed,) = of(events, "TOOL_CALL_START")
    assert interrupt["reason"] == "tool_call" and interrupt["toolCallId"] == proposed["toolCallId"]
    assert proposed["toolCallName"] == "send_email"
    assert interrupt["id"].startswith("v1:before_tool_call:")  # Strands' own id
    assert interrupt["responseSchema"] == approval_schema(SEND_EMAIL_INPUT, allow_edits=True)
    assert interrupt["metadata"] == {"strands": {"name": "approval"}}
    assert [e["type"] for e in events][-3:] == ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert sa.EXECUTIONS == []


async def test_an_approved_call_runs_once_with_the_edits_and_its_result_comes_on_its_own_id() -> None:
    edited = {"to": "ann@example.com", "subject": "Hello"}
    async with serving(sa.approval_adapter) as client:
        talk = Talk(client, "approval-2")
        await talk.start()
        (interrupt,) = talk.open
        events = await talk.resume({interrupt.id: approve_with_edits(edited)})
    assert outcome(events) == {"type": "success"}
    assert [(e["toolCallId"], e["content"]) for e in of(events, "TOOL_CALL_RESULT")] == [
        (interrupt.tool_call_id, "sent to ann@example.com: Hello")
    ]
    assert not of(events, "TOOL_CALL_START") and not of(events, "TOOL_CALL_ARGS")
    assert sa.EXECUTIONS == [{"tool": "send_email", **edited}]
    assert "sent to ann@example.com" in "".join(e["delta"] for e in of(events, "TEXT_MESSAGE_CONTENT"))


async def test_a_denied_call_does_not_run() -> None:
    async with serving(sa.approval_adapter) as client:
        talk = Talk(client, "approval-3")
        await talk.start()
        (interrupt,) = talk.open
        events = await talk.resume({interrupt.id: deny()})
    assert outcome(events) == {"type": "success"}
    assert sa.EXECUTIONS == []
    (result,) = of(events, "TOOL_CALL_RESULT")
    assert result["content"] == "error: The person did not approve this tool call."


async def test_edits_of_a_tool_that_allows_none_and_edits_that_break_its_schema_are_invalid_payloads() -> None:
    async with serving(sa.parallel_adapter) as client, serving(sa.approval_adapter) as other:
        strict, loose = Talk(client, "edits-1"), Talk(other, "edits-2")
        await strict.start()
        await loose.start()
        first = strict.open[0]
        assert first.response_schema == approval_schema(None, allow_edits=False)
        edits = {"approved": True, "editedArgs": {"to": "x@example.com", "subject": "s"}}
        refused = await strict.post(
            strict.entries({i.id: {"status": "resolved", "payload": edits} for i in strict.open})
        )
        assert refusal(refused) == "INVALID_PAYLOAD"
        bad = {"approved": True, "editedArgs": {"to": 7}}
        refused = await loose.post(loose.entries({loose.open[0].id: {"status": "resolved", "payload": bad}}))
        assert refusal(refused) == "INVALID_PAYLOAD" and "editedArgs" in refused[0]["message"]
        # Nothing changed: the valid answers still go through.
        await strict.resume({i.id: approve() for i in strict.open})
        await loose.resume({loose.open[0].id: approve()})
    assert len(sa.EXECUTIONS) == 4


async def test_edits_of_a_tool_with_a_model_parameter_are_checked_against_its_definitions_and_run() -> None:
    async with serving(sa.mail_adapter) as client:
        talk = Talk(client, "mail-1")
        events = await talk.start()
        (interrupt,) = talk.open
        schema = outcome(events)["interrupts"][0]["responseSchema"]
        # Strands refers to the model by "#/$defs/Email": the definitions sit at the schema's root.
        assert schema["properties"]["editedArgs"]["properties"]["mail"]["$ref"] == "#/$defs/Email"
        assert set(schema["$defs"]) == {"Email"}
        bad = {"approved": True, "editedArgs": {"mail": {"to": 7, "subject": "Hi"}}}
        refused = await talk.post(talk.entries({interrupt.id: {"status": "resolved", "payload": bad}}))
        assert refusal(refused) == "INVALID_PAYLOAD" and "editedArgs" in refused[0]["message"]
        edited = {"mail": {"to": "ann@example.com", "subject": "Hello"}}
        events = await talk.resume({interrupt.id: approve_with_edits(edited)})
    assert outcome(events) == {"type": "success"}
    assert sa.EXECUTIONS == [{"tool": "send_mail", "to": "ann@example.com", "subject": "Hello"}]
    assert [e["content"] for e in of(events, "TOOL_CALL_RESULT")] == ["mailed ann@example.com: Hello"]


def test_an_approval_schema_moves_the_input_schemas_definitions_and_references_to_its_root() -> None:
    input_schema = {
        "type": "object",
        "definitions": {"Tag": {"type": "string"}},
        "$defs": {"Email": {"type": "object", "properties": {"tags": {"items": {"$ref": "#/definitions/Tag"}}}}},
        "properties": {"mail": {"$ref": "#/$defs/Email"}, "copy": {"$ref": "#/properties/mail"}},
    }
    schema = approval_schema(input_schema, allow_edits=True)
    edited = schema["properties"]["editedArgs"]
    assert "$defs" not in edited and "definitions" not in edited
    assert schema["$defs"] == input_schema["$defs"] and schema["definitions"] == input_schema["definitions"]
    assert edited["properties"] == {
        "mail": {"$ref": "#/$defs/Email"},
        "copy": {"$ref": "#/properties/editedArgs/properties/mail"},
    }


async def test_a_hook_gets_exactly_the_payload_the_person_sent() -> None:
    async with serving(sa.exact_hook_adapter) as client:
        talk = Talk(client, "exact-1")
        await talk.start()
        (interrupt,) = talk.open
        assert interrupt.reason == "tool_call" and interrupt.message == "Send the release notes to the team?"
        events = await talk.resume({interrupt.id: approve()})
    assert sa.ANSWERS == [{"approved": True}]
    assert sa.EXECUTIONS == [{"tool": "send_email", "to": "team@example.com", "subject": "release notes"}]
    assert outcome(events) == {"type": "success"}


async def test_a_cancelled_answer_reaches_strands_as_an_explicit_value_and_the_call_does_not_run() -> None:
    async with serving(sa.exact_hook_adapter) as client, serving(sa.careless_adapter) as other:
        checked, careless = Talk(client, "cancel-1"), Talk(other, "cancel-2")
        for talk in (checked, careless):
            await talk.start()
            (interrupt,) = talk.open
            events = await talk.resume({interrupt.id: cancel()})
            assert outcome(events) == {"type": "success"}
            assert not of(events, "TOOL_CALL_RESULT")  # not run, so no result
    assert sa.ANSWERS == [CANCELLED, CANCELLED]
    assert sa.EXECUTIONS == []  # the careless hook ignored the answer; the call still did not run


# -- an interrupt raised inside a tool -------------------------------------------------------


async def test_an_interrupt_raised_inside_a_tool_asks_with_its_schema_and_gets_the_answer() -> None:
    async with serving(sa.in_tool_adapter) as client:
        talk = Talk(client, "in-tool-1")
        events = await talk.start()
        (interrupt,) = outcome(events)["interrupts"]
        (proposed,) = of(events, "TOOL_CALL_START")
        assert interrupt["reason"] == "input_required" and interrupt["toolCallId"] == proposed["toolCallId"]
        assert interrupt["id"].startswith("v1:tool_call:")
        assert interrupt["responseSchema"] == sa.FILING_SCHEMA
        assert interrupt["message"] == "Which quarter is the quarterly report for?"
        refused = await talk.post(talk.entries({interrupt["id"]: {"status": "resolved", "payload": {"year": 1999}}}))
        assert refusal(refused) == "INVALID_PAYLOAD"
        events = await talk.resume({interrupt["id"]: resolve({"quarter": "Q2", "year": 2026})})
    assert sa.ANSWERS == [{"quarter": "Q2", "year": 2026}]
    assert sa.EXECUTIONS == [{"tool": "file_report", "kind": "quarterly", "quarter": "Q2", "year": 2026}]
    assert [e["content"] for e in of(events, "TOOL_CALL_RESULT")] == ["filed quarterly for Q2 2026"]
    # What the tool put in the Strands agent's state is the thread's state.
    (state,) = of(events, "STATE_SNAPSHOT")
    assert state["snapshot"] == {"filed": {"kind": "quarterly", "quarter": "Q2", "year": 2026}}
    assert talk.machine.state == state["snapshot"]


async def test_a_cancelled_question_inside_a_tool_stops_the_tool() -> None:
    async with serving(sa.in_tool_adapter) as client:
        talk = Talk(client, "in-tool-2")
        await talk.start()
        (interrupt,) = talk.open
        events = await talk.resume({interrupt.id: cancel()})
    assert outcome(events) == {"type": "success"}
    assert not of(events, "TOOL_CALL_RESULT")
    assert sa.EXECUTIONS == [] and sa.ANSWERS == []  # the tool was not run again to hear the answer


# -- parallel interrupts ---------------------------------------------------------------------


async def test_parallel_approvals_are_answered_together_and_the_cancelled_call_does_not_run() -> None:
    async with serving(sa.parallel_adapter) as client:
        talk = Talk(client, "parallel-1")
        events = await talk.start()
        interrupts = outcome(events)["interrupts"]
        calls = [e["toolCallId"] for e in of(events, "TOOL_CALL_START")]
        assert [i["toolCallId"] for i in interrupts] == calls and len(calls) == 3
        assert {i["reason"] for i in interrupts} == {"tool_call"}
        ann, bob, cy = talk.open
        partial = await talk.post(talk.entries({ann.id: {"status": "resolved", "payload": {"approved": True}}}))
        assert refusal(partial) == "PARTIAL_RESUME"
        events = await talk.resume({ann.id: approve(), bob.id: cancel(), cy.id: approve()})
    assert outcome(events) == {"type": "success"}
    assert [e["toolCallId"] for e in of(events, "TOOL_CALL_RESULT")] == [ann.tool_call_id, cy.tool_call_id]
    assert [r["to"] for r in sa.EXECUTIONS] == ["ann@example.com", "cy@example.com"]


# -- chained interrupts and replay -----------------------------------------------------------


async def test_a_chained_interrupt_then_the_first_resume_replayed_runs_nothing_again() -> None:
    async with serving(sa.chained_adapter) as client:
        talk = Talk(client, "chain-1")
        await talk.start()
        (approval,) = talk.open
        assert approval.reason == "tool_call"
        first = talk.resume_body({approval.id: approve()})
        chained = await talk.send(first)
        (question,) = outcome(chained)["interrupts"]
        assert question["reason"] == "input_required" and question["responseSchema"] == sa.FILING_SCHEMA
        # The tool call was proposed by the first run: the chained interrupt names it in metadata.
        assert "toolCallId" not in question
        assert question["metadata"] == {"strands": {"name": "quarter", "toolUseId": approval.tool_call_id}}
        assert sa.EXECUTIONS == []
        done = await talk.resume({question["id"]: resolve({"quarter": "Q3", "year": 2026})})
        assert outcome(done) == {"type": "success"}
        assert sa.EXECUTIONS == [{"tool": "file_report", "kind": "quarterly", "quarter": "Q3", "year": 2026}]

        replay = copy.deepcopy(first)
        replay["runId"] = "chain-1-replay"
        replayed = await talk.post(replay)
        # The same outcome as the first time (the chained interrupt), and nothing runs again.
        assert outcome(replayed) == outcome(chained)
        assert replayed[-1]["runId"] == "chain-1-replay"
        again = await talk.post({**replay, "runId": "chain-1-replay-2"})
        assert outcome(again) == outcome(chained)
        changed = copy.deepcopy(first)
        changed["runId"] = "chain-1-changed"
        changed["resume"][0]["payload"] = {"approved": False}
        assert refusal(await talk.post(changed)) == "INTERRUPT_ALREADY_RESOLVED"
    assert len(sa.EXECUTIONS) == 1
    assert sa.ANSWERS == [{"quarter": "Q3", "year": 2026}]


async def test_a_thread_goes_on_with_a_new_message_after_the_interrupts_are_answered() -> None:
    async with serving(sa.approval_adapter) as client:
        talk = Talk(client, "turns-1")
        await talk.start("first")
        await talk.resume({talk.open[0].id: approve()})
        events = await talk.start("second")
        assert outcome(events)["type"] == "interrupt"
        await talk.resume({talk.open[0].id: approve()})
    assert len(sa.EXECUTIONS) == 2


async def test_a_resume_whose_history_rewrites_the_proposal_does_not_change_what_runs() -> None:
    async with serving(sa.approval_adapter) as client:
        talk = Talk(client, "tamper-1")
        await talk.start()
        (interrupt,) = talk.open
        body = talk.resume_body({interrupt.id: approve()})
        for message in body["messages"]:
            for call in message.get("toolCalls", []):
                call["function"]["arguments"] = '{"to": "mallory@example.com", "subject": "Hi"}'
        events = await talk.post(body)
    # The resume is carried out from the server's record (the Strands snapshot), not the history sent.
    assert outcome(events) == {"type": "success"}
    assert sa.EXECUTIONS == [{"tool": "send_email", "to": "bob@example.com", "subject": "Hi"}]


# -- refusals --------------------------------------------------------------------------------


async def test_every_refusal_is_a_run_error_with_its_code_and_changes_nothing() -> None:
    clock = Clock()
    authenticator = TokenAuthenticator({ANN: "ann", BOB: "bob"})
    ann = {"authorization": f"Bearer {ANN}"}
    async with serving(sa.expiring_adapter, clock=clock, authenticator=authenticator) as client:
        talk, other = Talk(client, "refuse-1", ann), Talk(client, "refuse-2", ann)
        await talk.start()
        await other.start()
        (interrupt,) = talk.open
        ok = {"status": "resolved", "payload": {"approved": True}}
        expected = clock.now + timedelta(minutes=5)
        assert interrupt.expires_at == expected.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        codes = {
            "PENDING_INTERRUPTS": await talk.post({k: v for k, v in talk.entries({}).items() if k != "resume"}),
            "UNKNOWN_INTERRUPT_ID": await talk.post(talk.entries({interrupt.id: ok, "no-such-id": ok})),
            "THREAD_MISMATCH": await other.post(other.entries({interrupt.id: ok, other.open[0].id: ok})),
            "DUPLICATE_RESUME_ENTRY": await talk.post(
                {**talk.entries({}), "resume": [{"interruptId": interrupt.id, **ok}] * 2}
            ),
            "INVALID_RESUME": await talk.post(talk.entries({interrupt.id: {"status": "cancelled", "payload": 1}})),
            "INVALID_PAYLOAD": await talk.post(talk.entries({interrupt.id: {"status": "resolved", "payload": {}}})),
            "INVALID_INPUT": await talk.post({"threadId": "refuse-1"}),
        }
        metadata_null = await talk.post(talk.entries({interrupt.id: {**ok, "metadata": None}}))
        stranger = Talk(client, "refuse-1", {"authorization": f"Bearer {BOB}"})
        codes["FORBIDDEN"] = await stranger.post(stranger.entries({interrupt.id: ok}))
        for code, events in codes.items():
            assert refusal(events) == code, code
        assert refusal(metadata_null) == "INVALID_RESUME"
        assert "refuse-1" not in codes["FORBIDDEN"][0]["message"]
        # None of those changed anything: the valid resume is carried out.
        events = await talk.resume({interrupt.id: approve()})
        assert outcome(events) == {"type": "success"} and len(sa.EXECUTIONS) == 1
        # Expiry: past expiresAt the answer is refused, and the thread is not blocked for good.
        clock.now += timedelta(minutes=5)
        late = await other.post(other.entries({other.open[0].id: ok}))
        assert refusal(late) == "INTERRUPT_EXPIRED"
        events = await other.start("again")
        assert outcome(events)["type"] == "interrupt"
    assert len(sa.EXECUTIONS) == 1


async def test_a_second_input_while_a_run_is_in_progress_is_thread_busy() -> None:
    sa.GATE.clear()
    async with serving(sa.gated_adapter) as client:
        talk = Talk(client, "busy-1")
        await talk.start()
        (interrupt,) = talk.open
        body = talk.resume_body({interrupt.id: approve()})
        results: list[list[dict[str, Any]]] = []

        async def first() -> None:
            results.append(await talk.post(body))

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as group:
                group.start_soon(first)
                while not sa.EXECUTIONS:  # the tool ran; the model is held at the gate
                    await anyio.sleep(0.01)
                busy = await talk.post({**body, "runId": "busy-1-other"})
                sa.GATE.set()
    assert refusal(busy) == "THREAD_BUSY"
    (events,) = results
    assert outcome(events) == {"type": "success"} and len(sa.EXECUTIONS) == 1


async def test_a_failing_strands_agent_is_an_agent_error() -> None:
    async with serving(sa.broken_adapter) as client:
        events = await Talk(client, "broken-1").post(
            {"threadId": "broken-1", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "go"}]}
        )
    assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1]["code"] == "AGENT_ERROR"


# -- a resume that fails after its approved tool ran -----------------------------------------


def failed(events: list[dict[str, Any]]) -> str:
    assert events[0]["type"] == "RUN_STARTED" and events[-1]["type"] == "RUN_ERROR", events
    code: str = events[-1]["code"]
    return code


async def test_an_approved_tool_that_ran_before_the_resume_failed_is_not_run_again_on_retry() -> None:
    edited = {"to": "ann@example.com", "subject": "Hello"}
    async with serving(sa.flaky_adapter) as client:
        talk = Talk(client, "flaky-1")
        await talk.start()
        (interrupt,) = talk.open
        sa.HICCUPS.append("after the tool")
        answer = {interrupt.id: {"status": "resolved", "payload": {"approved": True, "editedArgs": edited}}}
        first = await talk.post(talk.entries(answer))
        assert failed(first) == "AGENT_ERROR"
        assert sa.EXECUTIONS == [{"tool": "send_email", **edited}]
        (sent,) = of(first, "TOOL_CALL_RESULT")
        # The retry, the same approval: the email is not sent again, its recorded result stands.
        events = await talk.resume({interrupt.id: approve_with_edits(edited)})
    assert outcome(events) == {"type": "success"}
    assert sa.EXECUTIONS == [{"tool": "send_email", **edited}]
    (again,) = of(events, "TOOL_CALL_RESULT")
    assert (again["messageId"], again["content"]) == (sent["messageId"], "sent to ann@example.com: Hello")
    said = "".join(e["delta"] for e in of(events, "TEXT_MESSAGE_CONTENT"))
    assert "success: sent to ann@example.com: Hello" in said  # what Strands got back is the recorded result


async def test_another_answer_after_the_tool_ran_is_refused_and_decides_nothing() -> None:
    async with serving(sa.flaky_adapter) as client:
        talk = Talk(client, "flaky-2")
        await talk.start()
        (interrupt,) = talk.open
        sa.HICCUPS.append("after the tool")
        assert failed(
            await talk.post(talk.entries({interrupt.id: {"status": "resolved", "payload": {"approved": True}}}))
        ) == ("AGENT_ERROR")
        assert len(sa.EXECUTIONS) == 1
        other_edits = {"approved": True, "editedArgs": {"to": "cy@example.com", "subject": "Hi"}}
        for reply in ({"status": "cancelled"}, {"status": "resolved", "payload": {"approved": False}},
                      {"status": "resolved", "payload": other_edits}):  # fmt: skip
            refused = await talk.post(talk.entries({interrupt.id: reply}))
            # The thread machine refuses it at the door, as for every agent: no run starts.
            assert [(e["type"], e.get("code")) for e in refused] == [("RUN_ERROR", "INTERRUPT_ALREADY_RESOLVED")]
            assert "already ran" in refused[-1]["message"]
            assert not of(refused, "TOOL_CALL_RESULT")
        # Nothing was recorded as decided: the interrupt is still open, and the approval it ran with goes on.
        assert talk.open == (interrupt,)
        events = await talk.resume({interrupt.id: approve()})
    assert outcome(events) == {"type": "success"}
    assert sa.EXECUTIONS == [{"tool": "send_email", "to": "bob@example.com", "subject": "Hi"}]


async def test_a_chained_tool_runs_on_once_its_question_is_answered_and_not_again_after_a_failure() -> None:
    async with serving(sa.flaky_chained_adapter) as client:
        talk = Talk(client, "flaky-3")
        await talk.start()
        (approval,) = talk.open
        await talk.resume({approval.id: approve()})  # the tool starts, then asks a question
        (question,) = talk.open
        assert sa.EXECUTIONS == []
        sa.HICCUPS.append("after the tool")
        answer = {"quarter": "Q1", "year": 2027}
        failure = await talk.post(talk.entries({question.id: {"status": "resolved", "payload": answer}}))
        assert failed(failure) == "AGENT_ERROR"
        assert len(sa.EXECUTIONS) == 1
        events = await talk.resume({question.id: resolve(answer)})
    assert outcome(events) == {"type": "success"}
    assert sa.EXECUTIONS == [{"tool": "file_report", "kind": "quarterly", "quarter": "Q1", "year": 2027}]
    assert [e["content"] for e in of(events, "TOOL_CALL_RESULT")] == ["filed quarterly for Q1 2027"]


async def test_a_tool_cut_short_by_the_end_of_its_run_is_reported_unknown_and_not_started_again() -> None:
    async with serving(sa.stuck_adapter, run_timeout=1.0) as client:
        talk = Talk(client, "stuck-1")
        await talk.start()
        (interrupt,) = talk.open
        cut = await talk.post(talk.entries({interrupt.id: {"status": "resolved", "payload": {"approved": True}}}))
        assert failed(cut) == "AGENT_ERROR" and "longer" in cut[-1]["message"]
        events = await talk.resume({interrupt.id: approve()})
    assert outcome(events) == {"type": "success"}
    assert sa.EXECUTIONS == [{"tool": "stuck_email", "to": "bob@example.com", "event": "start"}]
    (result,) = of(events, "TOOL_CALL_RESULT")
    assert result["content"] == "the host stopped while this call ran; it was not run again"


# -- the adapter's own API -------------------------------------------------------------------


async def test_a_template_agent_is_reset_before_each_run_so_threads_do_not_mix() -> None:
    async with serving(sa.template_adapter) as client:
        one, two = Talk(client, "template-1"), Talk(client, "template-2")
        await one.start("for one")
        await two.start("for two")
        await one.resume({one.open[0].id: approve()})
        events = await two.resume({two.open[0].id: deny()})
    assert len(sa.EXECUTIONS) == 1 and outcome(events) == {"type": "success"}
    user_texts = [m.content for m in two.machine.messages if m.role == "user"]
    assert user_texts == ["for two"]


def test_the_adapter_refuses_what_is_not_a_strands_agent() -> None:
    async def agent(ctx: Any) -> None:
        return None

    not_agents: list[Callable[..., Any] | Any] = [agent, 42]
    for value in not_agents:
        with pytest.raises(TypeError, match="Strands Agent"):
            StrandsAdapter(value)
    with pytest.raises(ValueError, match="ttl"):
        StrandsAdapter(sa.approval_agent, ttl=timedelta(0))
