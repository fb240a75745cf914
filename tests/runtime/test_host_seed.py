"""The seed document's four worked examples, end to end through the Host, on both stores.

Each example is played by a real agent written against the agent API (``RunContext``), with
``sendEmail`` registered as an approval-gated tool whose calls the test records. Every stream
is checked by :class:`~tests.runtime.conversation.Conversation` (wire schemas, the ordering
rules, the client's interrupt rules). The seed's e-mail addresses are masked in the page it
was taken from (``[email protected]``); real addresses stand in, so ``"format": "email"`` holds.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from agui_core.machine.record import Proposal, ResolvedInterrupt
from agui_core.machine.transitions import ThreadState
from agui_core.protocol.codec import converter
from agui_core.protocol.types import Interrupt
from agui_core.runtime import Host, RunContext, Tool, ToolOutcome, tool
from agui_core.store import ThreadStore
from tests.runtime.conversation import NOW, Clock, Conversation, counter, types
from tests.seed import (
    EMAIL_ARGS_SCHEMA,
    MASKED_ADDRESS,
    QUARTERLY_EXPIRES_AT,
    QUARTERLY_SCHEMA,
    SEED_RESUME_INPUTS,
    SEED_RUN_FINISHED,
)

pytestmark = pytest.mark.anyio

ALICE = "alice@example.com"
BOB = "bob@example.com"
CAROL = "carol@example.com"


def seed_finished_to(example: str, address: str) -> dict[str, Any]:
    """The seed's ``RUN_FINISHED`` of ``example`` with ``address`` where the page has a masked one."""
    finished = copy.deepcopy(SEED_RUN_FINISHED[example])
    (interrupt,) = finished["outcome"]["interrupts"]
    interrupt["message"] = interrupt["message"].replace(MASKED_ADDRESS, address)
    return finished


def email_tool(sent: list[dict[str, Any]], **options: Any) -> Tool:
    """``sendEmail``, gated behind approval; every call it really makes lands in ``sent``."""

    @tool("sendEmail", needs_approval=True, **options)
    async def send_email(to: str, subject: str, body: str = "", cc: str | None = None) -> dict[str, Any]:
        sent.append({"to": to, "subject": subject, "body": body, "cc": cc})
        return {"sent": True, "to": to, "body": body}

    return send_email


def tool_call_args(stream: list[dict[str, Any]], tool_call_id: str) -> Any:
    """The arguments a stream proposed for ``tool_call_id`` (its TOOL_CALL_ARGS, joined)."""
    text = "".join(e["delta"] for e in stream if e["type"] == "TOOL_CALL_ARGS" and e["toolCallId"] == tool_call_id)
    return orjson.loads(text)


def results(stream: list[dict[str, Any]]) -> dict[str, Any]:
    """The TOOL_CALL_RESULTs of a stream: tool call id -> content."""
    return {e["toolCallId"]: e["content"] for e in stream if e["type"] == "TOOL_CALL_RESULT"}


# ---------------------------------------------------------------------------------------------
# Minimal tool approval (thread-1).
# ---------------------------------------------------------------------------------------------

SEED_MINIMAL_FINISHED = seed_finished_to("minimal-tool-approval", ALICE)


def minimal_agent(seen: list[ToolOutcome]) -> Any:
    async def agent(ctx: RunContext) -> Any:
        outcome = await ctx.call_tool(  # the first run ends with its approval; the next returns here
            "sendEmail",
            {"to": ALICE, "subject": "Hi"},
            tool_call_id="tc-001",
            interrupt_id="int-abc123",
            message=f"Send email to {ALICE} with subject 'Hi'?",
        )
        seen.append(outcome)
        return {"email": outcome.status}

    return agent


async def test_minimal_tool_approval(store: ThreadStore) -> None:
    sent: list[dict[str, Any]] = []
    seen: list[ToolOutcome] = []
    clock = Clock()
    tools = [email_tool(sent, allow_edits=False)]
    async with Host(minimal_agent(seen), store=store, tools=tools, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-1", clock)
        first = await thread.send({"runId": "run-1"})
        assert types(first) == [
            "RUN_STARTED",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "STATE_SNAPSHOT",
            "MESSAGES_SNAPSHOT",
            "RUN_FINISHED",
        ]
        assert first[-1] == SEED_MINIMAL_FINISHED
        assert tool_call_args(first, "tc-001") == {"to": ALICE, "subject": "Hi"}
        assert sent == []  # proposed, not run
        assert [i.id for i in thread.client.open_interrupts] == ["int-abc123"]

        clock.advance(minutes=2)
        second = await thread.send(
            {
                "runId": "run-2",
                "resume": [{"interruptId": "int-abc123", "status": "resolved", "payload": {"approved": True}}],
            }
        )
    # run-2: the result for tc-001 (no TOOL_CALL_START/ARGS/END again), then success.
    assert types(second) == ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert second[1]["toolCallId"] == "tc-001"
    assert orjson.loads(second[1]["content"]) == {"sent": True, "to": ALICE, "body": ""}
    assert second[-1] == {
        "type": "RUN_FINISHED",
        "threadId": "thread-1",
        "runId": "run-2",
        "result": {"email": "executed"},
        "outcome": {"type": "success"},
    }
    assert sent == [{"to": ALICE, "subject": "Hi", "body": "", "cc": None}]  # the original args, once
    (outcome,) = seen
    assert (outcome.status, outcome.args, outcome.edited) == ("executed", {"to": ALICE, "subject": "Hi"}, False)
    stored = await store.load("thread-1")
    assert stored is not None and stored.state is ThreadState.IDLE and stored.active_run is None


async def test_a_denied_call_is_not_run_and_the_agent_is_told(store: ThreadStore) -> None:
    sent: list[dict[str, Any]] = []
    seen: list[ToolOutcome] = []
    clock = Clock()
    tools = [email_tool(sent, allow_edits=False)]
    async with Host(minimal_agent(seen), store=store, tools=tools, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-1", clock)
        await thread.send({"runId": "run-1"})
        second = await thread.send(
            {
                "runId": "run-2",
                "resume": [{"interruptId": "int-abc123", "status": "resolved", "payload": {"approved": False}}],
            }
        )
    assert sent == []
    assert types(second) == ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert second[1]["toolCallId"] == "tc-001"
    assert "denied" in second[1]["content"]
    assert second[-1]["result"] == {"email": "denied"}
    (outcome,) = seen
    assert (outcome.status, outcome.result) == ("denied", None)


async def test_the_same_resume_again_is_a_replay_that_runs_nothing(store: ThreadStore) -> None:
    sent: list[dict[str, Any]] = []
    clock = Clock()
    tools = [email_tool(sent, allow_edits=False)]
    resume = [{"interruptId": "int-abc123", "status": "resolved", "payload": {"approved": True}}]
    async with Host(minimal_agent([]), store=store, tools=tools, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-1", clock)
        await thread.send({"runId": "run-1"})
        second = await thread.send({"runId": "run-2", "resume": resume})
        stored = await store.load("thread-1")
        again = await thread.send({"runId": "run-2b", "resume": resume})
        assert await store.load("thread-1") == stored  # a replay saves nothing
    assert sent == [{"to": ALICE, "subject": "Hi", "body": "", "cc": None}]
    assert types(again) == types(second)
    assert again[1] == second[1]  # the recorded TOOL_CALL_RESULT, sent again
    assert again[-1] == {**second[-1], "runId": "run-2b"}


# ---------------------------------------------------------------------------------------------
# Approve with edits, and its audit trail (thread-2).
# ---------------------------------------------------------------------------------------------

SEED_EDIT_FINISHED = seed_finished_to("approve-with-edits", BOB)
# The seed's editedArgs schema leaves unknown keys unsaid; the host publishes the schema it holds
# edits to, which refuses them (issue 25: the published edit schema is the enforced one).
SEED_EDIT_FINISHED["outcome"]["interrupts"][0]["responseSchema"] = {
    **SEED_RUN_FINISHED["approve-with-edits"]["outcome"]["interrupts"][0]["responseSchema"],
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {**EMAIL_ARGS_SCHEMA, "additionalProperties": False},
    },
}

PROPOSED = {"to": BOB, "subject": "Hi", "body": "Hi", "cc": CAROL}
EDITED = {"to": BOB, "subject": "Hi", "body": "Hi (revised per my note)"}


async def edit_agent(ctx: RunContext) -> Any:
    await ctx.text("I drafted the e-mail.")
    outcome = await ctx.call_tool(
        "sendEmail",
        PROPOSED,
        tool_call_id="tc-42",
        interrupt_id="int-email-edit",
        message=f"Send email to {BOB}? You can edit the body before approving.",
        metadata={"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}},
    )
    await ctx.text(f"Sent to {outcome.args['to']}.")
    return {"edited": outcome.edited, "args": dict(outcome.args)}


async def test_approve_with_edits_runs_the_edited_args_whole_and_keeps_the_audit_trail(store: ThreadStore) -> None:
    sent: list[dict[str, Any]] = []
    clock = Clock()
    tools = [email_tool(sent, args_schema=EMAIL_ARGS_SCHEMA)]
    async with Host(edit_agent, store=store, tools=tools, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-2", clock)
        proposal = await thread.send({"runId": "run-10"})
        raised_at = clock()
        clock.advance(minutes=3)
        payload = {"approved": True, "editedArgs": EDITED}
        resumed = await thread.send(
            {"runId": "run-11", "resume": [{"interruptId": "int-email-edit", "status": "resolved", "payload": payload}]}
        )
        answered_at = clock()

    assert types(proposal) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "STATE_SNAPSHOT",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    assert proposal[-1] == SEED_EDIT_FINISHED
    # The tool call belongs to the message streamed before it: one assistant message.
    assert proposal[4]["parentMessageId"] == proposal[1]["messageId"]
    assert types(resumed) == [
        "RUN_STARTED",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    # editedArgs replaced the arguments whole: the proposed cc is gone, not merged back.
    assert sent == [{**EDITED, "cc": None}]
    assert resumed[-1]["result"] == {"edited": True, "args": EDITED}

    # The audit trail of tc-42 spans the two runs: the proposal, the decision, what happened.
    assert tool_call_args(proposal, "tc-42") == PROPOSED
    assert orjson.loads(results(resumed)["tc-42"]) == {"sent": True, "to": BOB, "body": EDITED["body"]}
    (line,) = await store.audit("thread-2")
    (announced,) = SEED_EDIT_FINISHED["outcome"]["interrupts"]  # type: ignore[index]
    assert line == ResolvedInterrupt(
        interrupt=converter.structure(announced, Interrupt),
        run_id="run-10",
        raised_at=raised_at.isoformat(),
        status="resolved",
        payload=payload,
        metadata=None,
        answered_in="run-11",
        answered_at=answered_at.isoformat(),
        outcome="success",
        # The proposal as bound when the run interrupted, and what really ran (SPEC section 9).
        proposal=Proposal(
            tool_call_id="tc-42",
            name="sendEmail",
            arguments=orjson.dumps(PROPOSED).decode(),
            parameters=line.proposal.parameters if line.proposal is not None else None,
        ),
        ran=Proposal(tool_call_id="tc-42", name="sendEmail", arguments=orjson.dumps(EDITED).decode()),
        decided_by="anonymous",  # who decided (issue 31): the thread's principal, here the only one
    )


async def test_a_payload_breaking_the_tools_args_schema_is_refused(store: ThreadStore) -> None:
    sent: list[dict[str, Any]] = []
    clock = Clock()
    tools = [email_tool(sent, args_schema=EMAIL_ARGS_SCHEMA)]
    async with Host(edit_agent, store=store, tools=tools, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-2", clock)
        await thread.send({"runId": "run-10"})
        before = await store.load("thread-2")
        bad = {"approved": True, "editedArgs": {**EDITED, "to": "[email protected]"}}
        refused = await thread.send(
            {"runId": "run-11", "resume": [{"interruptId": "int-email-edit", "status": "resolved", "payload": bad}]}
        )
        assert await store.load("thread-2") == before
    assert types(refused) == ["RUN_ERROR"]
    assert refused[0]["code"] == "INVALID_PAYLOAD"
    assert "editedArgs.to" in refused[0]["message"]
    assert sent == []


# ---------------------------------------------------------------------------------------------
# Parallel interrupts, one cancelled (thread-3).
# ---------------------------------------------------------------------------------------------

PARALLEL = [("i-1", "tc-a", ALICE), ("i-2", "tc-b", BOB), ("i-3", "tc-c", CAROL)]


def parallel_agent(seen: dict[str, ToolOutcome]) -> Any:
    async def agent(ctx: RunContext) -> Any:
        outcomes = await ctx.gather(
            *(
                ctx.call_tool(
                    "sendEmail",
                    {"to": to, "subject": "Hi"},
                    tool_call_id=call_id,
                    interrupt_id=interrupt_id,
                    message=f"Approve sendEmail to {to}?",
                )
                for interrupt_id, call_id, to in PARALLEL
            )
        )
        seen.update((o.tool_call_id, o) for o in outcomes)
        return {o.tool_call_id: o.status for o in sorted(outcomes, key=lambda o: o.tool_call_id)}

    return agent


async def test_parallel_approvals_with_one_cancelled(store: ThreadStore) -> None:
    sent: list[dict[str, Any]] = []
    seen: dict[str, ToolOutcome] = {}
    clock = Clock()
    tools = [email_tool(sent)]
    async with Host(parallel_agent(seen), store=store, tools=tools, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-3", clock)
        first = await thread.send({"runId": "run-20"})
        resumed = await thread.send(
            {
                "runId": "run-21",
                "resume": [
                    {"interruptId": "i-1", "status": "resolved", "payload": {"approved": True}},
                    {"interruptId": "i-2", "status": "resolved", "payload": {"approved": True}},
                    {"interruptId": "i-3", "status": "cancelled"},
                ],
            }
        )

    assert types(first) == [
        "RUN_STARTED",
        *["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"] * 3,
        "STATE_SNAPSHOT",
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
    ]
    # One RUN_FINISHED carries the three approvals, in the order the calls were made.
    interrupts = first[-1]["outcome"]["interrupts"]
    assert [(i["id"], i["reason"], i["toolCallId"], i["message"]) for i in interrupts] == [
        (iid, "tool_call", call_id, f"Approve sendEmail to {to}?") for iid, call_id, to in PARALLEL
    ]
    # tc-a and tc-b ran and have results; tc-c was not run and has none.
    assert types(resumed) == ["RUN_STARTED", "TOOL_CALL_RESULT", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert list(results(resumed)) == ["tc-a", "tc-b"]
    assert [s["to"] for s in sent] == [ALICE, BOB]
    assert {call_id: o.status for call_id, o in seen.items()} == {
        "tc-a": "executed",
        "tc-b": "executed",
        "tc-c": "cancelled",
    }
    assert resumed[-1]["result"] == {"tc-a": "executed", "tc-b": "executed", "tc-c": "cancelled"}
    audit = await store.audit("thread-3")
    assert [(a.interrupt.id, a.status, a.answered_in) for a in audit] == [
        ("i-1", "resolved", "run-21"),
        ("i-2", "resolved", "run-21"),
        ("i-3", "cancelled", "run-21"),
    ]


# ---------------------------------------------------------------------------------------------
# A non-tool input request with expiresAt (thread-4).
# ---------------------------------------------------------------------------------------------

SEED_FORM_FINISHED = SEED_RUN_FINISHED["non-tool-input-request"]
SEED_FORM_RESUME = SEED_RESUME_INPUTS["non-tool-input-request"]


async def filing_agent(ctx: RunContext) -> Any:
    answer = next(iter(ctx.answers), None)
    if answer is None:
        # The first form gets the seed's id; a form asked again (the first expired) a new one.
        asked = (ctx.state or {}).get("asked", 0)
        await ctx.set_state({"asked": asked + 1})
        message = "Please provide the quarterly filing details."
        form = Interrupt(
            id="int-form" if asked == 0 else f"int-form-{asked + 1}",
            reason="input_required",
            message=message,
            response_schema=QUARTERLY_SCHEMA,
            expires_at=QUARTERLY_EXPIRES_AT,
        )
        await ctx.interrupt(form)
        return None
    await ctx.set_state({"filed": answer.entry.payload})
    return {"filed": answer.entry.payload}


async def test_the_quarterly_form_answered_in_time(store: ThreadStore) -> None:
    clock = Clock()
    async with Host(filing_agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-4", clock)
        asked = await thread.send({"runId": "run-30"})
        clock.advance(hours=4, minutes=59, seconds=59)  # 16:59:59, one second before expiresAt
        answered = await thread.send(SEED_FORM_RESUME)
    assert types(asked) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert asked[-1] == SEED_FORM_FINISHED
    payload = SEED_FORM_RESUME["resume"][0]["payload"]  # type: ignore[index]
    assert types(answered) == ["RUN_STARTED", "STATE_SNAPSHOT", "RUN_FINISHED"]
    assert answered[-1]["result"] == {"filed": payload}
    assert answered[-1]["outcome"] == {"type": "success"}


async def test_the_quarterly_form_answered_at_expires_at_is_late(store: ThreadStore) -> None:
    clock = Clock()
    async with Host(filing_agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "thread-4", clock)
        await thread.send({"runId": "run-30"})
        before = await store.load("thread-4")
        clock.advance(hours=5)  # 17:00:00: the instant itself counts as expired
        late = await thread.send(SEED_FORM_RESUME)
        assert await store.load("thread-4") == before  # a rejected input changes nothing
        # The thread is not blocked forever: a new input is accepted and the form is closed as expired.
        fresh = await thread.send({"runId": "run-32"})
    assert types(late) == ["RUN_ERROR"]
    assert late[0]["code"] == "INTERRUPT_EXPIRED"
    assert "int-form" in late[0]["message"]
    assert types(fresh) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    (expired,) = await store.audit("thread-4")
    assert (expired.interrupt.id, expired.status, expired.answered_at, expired.raised_at) == (
        "int-form",
        "expired",
        QUARTERLY_EXPIRES_AT,
        NOW.isoformat(),
    )
    assert [i["id"] for i in fresh[-1]["outcome"]["interrupts"]] == ["int-form-2"]
