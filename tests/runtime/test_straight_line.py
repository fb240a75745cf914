"""Straight-line agents (``answer = await ctx.ask(...)``), through a :class:`Host` and its store.

Each test writes an agent as one function, answers its questions run by run as a client
would, and checks three things: what the function got back at each step, what went over the
wire (nothing sent twice: each text is streamed once, in the run that first reached it), and
what ran (each tool once). A replay that diverges from its journal, a step never awaited, and
the explicit style beside the straight one are covered too.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from agui_core.examples import expense_agent
from agui_core.examples.expenses import TOOLS as EXPENSE_TOOLS
from agui_core.machine.journal import MAX_STEPS, execution_id
from agui_core.protocol.types import JSON
from agui_core.runtime import Host, RunContext, tool
from agui_core.store import ThreadStore
from tests.runtime.conversation import Clock, Conversation, counter, types

pytestmark = pytest.mark.anyio

RECEIPT = {"employee": "Ann", "merchant": "Rail Co", "amount": 640, "currency": "EUR", "category": "travel"}


def interrupts(stream: list[dict[str, Any]]) -> list[dict[str, Any]]:
    outcome = stream[-1].get("outcome", {})
    assert stream[-1]["type"] == "RUN_FINISHED" and outcome.get("type") == "interrupt", stream[-1]
    return list(outcome["interrupts"])


def texts(stream: list[dict[str, Any]]) -> list[str]:
    return [e["delta"] for e in stream if e["type"] == "TEXT_MESSAGE_CONTENT"]


def resolved(interrupt: dict[str, Any], payload: JSON) -> dict[str, Any]:
    return {"interruptId": interrupt["id"], "status": "resolved", "payload": payload}


def cancelled(interrupt: dict[str, Any]) -> dict[str, Any]:
    return {"interruptId": interrupt["id"], "status": "cancelled"}


def recording_tools(ran: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The expense agent's tools, each also writing down what it ran with."""
    tools = []
    for original in EXPENSE_TOOLS:

        def make(original: Any = original) -> Any:
            async def run(**kwargs: Any) -> Any:
                ran.append((original.name, kwargs))
                return await original.invoke(kwargs)

            return tool(
                original.name,
                needs_approval=original.needs_approval,
                allow_edits=original.allow_edits,
                args_schema=original.parameters,
            )(run)

        tools.append(make())
    return tools


async def test_the_expense_agent_answered_step_by_step(store: ThreadStore) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    clock = Clock()
    async with Host(expense_agent, store=store, tools=recording_tools(ran), clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "expense-1", clock)
        first = await thread.send({"runId": "run-1"})
        (form,) = interrupts(first)
        assert form["reason"] == "input_required" and form["responseSchema"]["required"][0] == "employee"

        second = await thread.send({"runId": "run-2", "resume": [resolved(form, RECEIPT)]})
        reimburse, book = interrupts(second)  # two approvals at once
        assert [reimburse["reason"], book["reason"]] == ["tool_call", "tool_call"]
        assert "editedArgs" in reimburse["responseSchema"]["properties"]
        assert "editedArgs" not in book["responseSchema"]["properties"]
        assert ran == []

        corrected = {"employee": "Ann", "amount": 610, "currency": "EUR"}
        third = await thread.send(
            {
                "runId": "run-3",
                "resume": [
                    resolved(reimburse, {"approved": True, "editedArgs": corrected}),
                    resolved(book, {"approved": True}),
                ],
            }
        )
        (confirm,) = interrupts(third)  # 640 booked is over the limit: confirm first
        assert confirm["reason"] == "confirmation" and "640" in confirm["message"]
        assert [name for name, _ in ran] == ["reimburseEmployee", "bookToLedger"]
        assert ran[0][1] == corrected  # what ran is what the person approved

        last = await thread.send({"runId": "run-4", "resume": [resolved(confirm, True)]})
    assert last[-1]["type"] == "RUN_FINISHED" and last[-1]["outcome"] == {"type": "success"}
    result = last[-1]["result"]
    assert result["filed"] is True and result["record"]["reimbursed"] == 610 and result["record"]["booked"] == 640
    assert [name for name, _ in ran] == ["reimburseEmployee", "bookToLedger", "fileExpense"]  # each once
    # Each text went out once, in the run that first reached it.
    said = [texts(stream) for stream in thread.streams]
    assert said[0] == ["Let's file your expense. First, the receipt."]
    assert said[1] == ["Rail Co: 640 EUR. Two payments need your approval."]
    assert said[2] == [] and len(said[3]) == 1 and said[3][0].startswith("Filed as EXP-")
    every = Counter(t for run in said for t in run)
    assert max(every.values()) == 1
    # The thread holds each message once, and its step journal is gone with the execution.
    stored = await store.load("expense-1")
    assert stored is not None and stored.step_journal is None
    ids = [m.id for m in stored.messages]
    assert len(ids) == len(set(ids))


async def test_a_dismissed_form_and_denied_payments_end_the_expense_early(store: ThreadStore) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    clock = Clock()
    async with Host(expense_agent, store=store, tools=recording_tools(ran), clock=clock, new_id=counter()) as host:
        dismissed = Conversation(host, "expense-2", clock)
        (form,) = interrupts(await dismissed.send({"runId": "run-1"}))
        done = await dismissed.send({"runId": "run-2", "resume": [cancelled(form)]})
        assert done[-1]["result"] == {"filed": False}
        denied = Conversation(host, "expense-3", clock)
        (form,) = interrupts(await denied.send({"runId": "run-1"}))
        reimburse, book = interrupts(await denied.send({"runId": "run-2", "resume": [resolved(form, RECEIPT)]}))
        done = await denied.send(
            {"runId": "run-3", "resume": [resolved(reimburse, {"approved": False}), cancelled(book)]}
        )
    assert done[-1]["result"] == {"filed": False, "reimbursement": "denied", "booking": "cancelled"}
    assert ran == []


async def test_a_replay_that_diverges_is_an_agent_error_naming_the_step_and_the_thread_stays_answerable(
    store: ThreadStore,
) -> None:
    ran: list[str] = []
    runs = Counter[str]()

    @tool("charge", needs_approval=True)
    async def charge(amount: int) -> str:
        ran.append(f"charge {amount}")
        return "charged"

    async def agent(ctx: RunContext) -> JSON:
        runs["runs"] += 1
        await ctx.text("Charging.")
        # Not the same on every run: the second run asks to charge another amount.
        amount = 10 if runs["runs"] == 1 else 99
        outcome = await ctx.call_tool("charge", {"amount": amount})
        return outcome.status

    clock = Clock()
    async with Host(agent, store=store, tools=[charge], clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "diverging", clock)
        (approval,) = interrupts(await thread.send({"runId": "run-1"}))
        refused = await thread.send({"runId": "run-2", "resume": [resolved(approval, {"approved": True})]})
        stored = await store.load("diverging")
    assert types(refused)[-1] == "RUN_ERROR" and refused[-1]["code"] == "AGENT_ERROR"
    message = refused[-1]["message"]
    assert "step 2" in message and "ctx.call_tool" in message and "other arguments" in message
    assert "test_straight_line.py:" in message  # the line of the call that diverged
    assert ran == ["charge 10"]  # the approved proposal ran, as bound; nothing of the divergent call
    assert stored is not None and [o.interrupt.id for o in stored.open_interrupts] == [approval["id"]]


async def test_a_question_never_awaited_is_an_agent_error_naming_it_not_a_success(store: ThreadStore) -> None:
    async def forgets_to_await(ctx: RunContext) -> JSON:
        await ctx.text("One question.")
        ctx.ask("Your name?", {"type": "string"})  # never awaited: nothing would be asked
        return "done"

    async def forgets_a_text(ctx: RunContext) -> JSON:
        ctx.text("never sent")
        return "done"

    clock = Clock()
    for agent, what in ((forgets_to_await, "ctx.ask"), (forgets_a_text, "ctx.text")):
        async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
            stream = await Conversation(host, f"unawaited-{what}", clock).send({"runId": "run-1"})
        assert stream[-1]["type"] == "RUN_ERROR" and stream[-1]["code"] == "AGENT_ERROR", stream[-1]
        assert f"{what}(...) at test_straight_line.py:" in stream[-1]["message"]
        assert "never awaited" in stream[-1]["message"]


async def test_once_runs_what_may_differ_once_and_replays_its_value(store: ThreadStore) -> None:
    calls: list[int] = []

    def draw() -> int:
        calls.append(len(calls))
        return 41 + len(calls)

    async def agent(ctx: RunContext) -> JSON:
        number = await ctx.once("draw", draw)
        ok = await ctx.confirm(f"Keep {number}?")
        second = await ctx.confirm("Sure?")
        return {"number": number, "ok": ok, "sure": second}

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "once", clock)
        (keep,) = interrupts(await thread.send({"runId": "run-1"}))
        assert keep["message"] == "Keep 42?"
        (sure,) = interrupts(await thread.send({"runId": "run-2", "resume": [resolved(keep, True)]}))
        done = await thread.send({"runId": "run-3", "resume": [cancelled(sure)]})
    assert done[-1]["result"] == {"number": 42, "ok": True, "sure": False}  # a cancel is no
    assert calls == [0]


async def test_a_tool_without_approval_runs_once_across_replays(store: ThreadStore) -> None:
    ran: list[str] = []

    @tool("lookup")
    async def lookup(key: str) -> dict[str, str]:
        ran.append(key)
        return {"key": key, "value": key.upper()}

    async def agent(ctx: RunContext) -> JSON:
        found = await ctx.call_tool("lookup", {"key": "abc"})
        reply = await ctx.ask("Which?", {"type": "string"})
        return {"found": found.result, "status": found.status, "reply": reply.payload}

    clock = Clock()
    async with Host(agent, store=store, tools=[lookup], clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "lookup", clock)
        first = await thread.send({"runId": "run-1"})
        (which,) = interrupts(first)
        done = await thread.send({"runId": "run-2", "resume": [resolved(which, "that one")]})
    assert ran == ["abc"]
    assert done[-1]["result"] == {"found": {"key": "abc", "value": "ABC"}, "status": "executed", "reply": "that one"}
    assert "TOOL_CALL_RESULT" in types(first) and "TOOL_CALL_RESULT" not in types(done)
    # The execution is over: its tool journal entry went with it (records do not grow per run).
    stored = await store.load("lookup")
    assert stored is not None and stored.tool_journal == () and stored.step_journal is None


async def test_steps_and_subagents_open_across_a_question_start_again_after_the_replay(store: ThreadStore) -> None:
    async def agent(ctx: RunContext) -> JSON:
        async with ctx.subagent("researcher") as sub, ctx.step("gathering"):
            await ctx.text("Looking.")
            topic = await ctx.ask("Topic?", {"type": "string"})
            await ctx.text(f"On {topic.payload}.")
        return {"subagent": sub}

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "scoped", clock)
        first = await thread.send({"runId": "run-1"})
        (topic,) = interrupts(first)
        done = await thread.send({"runId": "run-2", "resume": [resolved(topic, "otters")]})
    assert types(first)[:3] == ["RUN_STARTED", "SUBAGENT_STARTED", "STEP_STARTED"]
    suspended = next(e for e in first if e["type"] == "SUBAGENT_FINISHED")
    assert suspended["outcome"]["type"] == "suspended"
    # The continuation: the same subagent started again, the step too, then what came after the answer.
    assert types(done)[1:3] == ["SUBAGENT_STARTED", "STEP_STARTED"]
    started = next(e for e in done if e["type"] == "SUBAGENT_STARTED")
    assert started["subagentRunId"] == suspended["subagentRunId"] == done[-1]["result"]["subagent"]
    assert texts(done) == ["On otters."]


async def test_the_explicit_style_stays_and_keeps_no_journal(store: ThreadStore) -> None:
    async def explicit(ctx: RunContext) -> JSON:
        if not ctx.resumed:
            await ctx.text("Asking, the explicit way.")
            await ctx.interrupt(ctx.ask("Year?", {"type": "integer"}))
            return None
        return {"year": ctx.answers[0].entry.payload}

    clock = Clock()
    async with Host(explicit, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "explicit", clock)
        (year,) = interrupts(await thread.send({"runId": "run-1"}))
        assert year["id"].startswith("input-")
        stored = await store.load("explicit")
        assert stored is not None and stored.step_journal is None
        done = await thread.send({"runId": "run-2", "resume": [resolved(year, 2026)]})
    assert done[-1]["result"] == {"year": 2026}


async def test_a_caught_suspension_still_ends_the_run_for_the_person(store: ThreadStore) -> None:
    async def stubborn(ctx: RunContext) -> JSON:
        try:
            await ctx.confirm("Go?")
        except BaseException:  # an agent that catches everything still asks
            pass
        await ctx.text("after the question")  # not sent: the run is ending for the person
        return "never"

    clock = Clock()
    async with Host(stubborn, store=store, clock=clock, new_id=counter()) as host:
        first = await Conversation(host, "stubborn", clock).send({"runId": "run-1"})
    assert interrupts(first)[0]["reason"] == "confirmation"
    assert texts(first) == []


async def test_asking_inside_a_streamed_message_is_refused(store: ThreadStore) -> None:
    async def streaming(ctx: RunContext) -> JSON:
        async with ctx.message() as message:
            await message.delta("Tell me ")
            await ctx.confirm("Now?")
        return None

    clock = Clock()
    async with Host(streaming, store=store, clock=clock, new_id=counter()) as host:
        stream = await Conversation(host, "streaming", clock).send({"runId": "run-1"})
    assert stream[-1]["code"] == "AGENT_ERROR" and "inside ctx.message()" in stream[-1]["message"]


async def test_an_expired_question_comes_back_expired(store: ThreadStore) -> None:
    async def agent(ctx: RunContext) -> JSON:
        expires = ctx.now().replace(microsecond=0).isoformat()
        first = await ctx.ask("Quick?", {"type": "string"}, expires_at=expires)
        second = await ctx.confirm("And this?")
        return {"first": first.status, "cancelled": first.cancelled, "second": second}

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "expiring", clock)
        (quick,) = interrupts(await thread.send({"runId": "run-1"}))
        clock.advance(seconds=1)
        (second,) = interrupts(await thread.send({"runId": "run-2", "resume": [cancelled(quick)]}))
        done = await thread.send({"runId": "run-3", "resume": [resolved(second, True)]})
    assert done[-1]["result"] == {"first": "expired", "cancelled": True, "second": True}


async def test_gather_takes_steps_only(store: ThreadStore) -> None:
    async def agent(ctx: RunContext) -> JSON:
        async def elsewhere() -> int:
            return 1

        await ctx.gather(elsewhere())  # type: ignore[arg-type]
        return None

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        stream = await Conversation(host, "gather", clock).send({"runId": "run-1"})
    assert stream[-1]["code"] == "AGENT_ERROR" and "ctx.gather takes steps" in stream[-1]["message"]


async def test_a_run_may_take_any_number_of_steps_but_keeps_a_bounded_journal(store: ThreadStore) -> None:
    async def chatty(ctx: RunContext) -> JSON:
        for n in range(MAX_STEPS + 1):
            await ctx.text(f"{n}")
        return "said"

    async def asks_at_the_end(ctx: RunContext) -> JSON:
        for n in range(MAX_STEPS + 1):
            await ctx.text(f"{n}")
        return await ctx.confirm("Now?")

    clock = Clock()
    async with Host(chatty, store=store, clock=clock, new_id=counter()) as host:
        said = await Conversation(host, "chatty", clock).send({"runId": "run-1"})
    async with Host(asks_at_the_end, store=store, clock=clock, new_id=counter()) as host:
        refused = await Conversation(host, "long", clock).send({"runId": "run-1"})
    assert said[-1]["result"] == "said"  # asking nothing, a run keeps no journal
    assert refused[-1]["code"] == "AGENT_ERROR" and f"keeps at most {MAX_STEPS}" in refused[-1]["message"]


async def test_a_question_asked_inside_a_task_group_of_the_agent_ends_the_run_and_the_host_lives_on(
    store: ThreadStore,
) -> None:
    async def grouped(ctx: RunContext) -> JSON:
        replies: list[Any] = []

        async def ask() -> None:
            replies.append(await ctx.ask("Name?", {"type": "string"}))

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
        return {"name": replies[0].payload}

    async def broken(ctx: RunContext) -> JSON:
        async with anyio.create_task_group() as group:
            group.start_soon(ctx.confirm, "Sure?")  # type: ignore[arg-type]
            raise SystemExit(3)  # with the question: an exception group holding both
        return None

    clock = Clock()
    async with Host(grouped, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "grouped", clock)
        (name,) = interrupts(await thread.send({"runId": "run-1"}))
        done = await thread.send({"runId": "run-2", "resume": [resolved(name, "Ann")]})
        assert done[-1]["result"] == {"name": "Ann"}
    async with Host(broken, store=store, clock=clock, new_id=counter()) as host:
        failed = await Conversation(host, "broken", clock).send({"runId": "run-1"})
        assert failed[-1]["code"] == "AGENT_ERROR"
        alive = await Conversation(host, "still-served", clock).send({"runId": "run-1"})  # the host lives on
    assert alive[-1]["type"] == "RUN_ERROR" and alive[-1]["code"] == "AGENT_ERROR"  # the same agent, run again


async def test_a_retry_that_answers_otherwise_after_the_first_attempt_acted_is_refused(store: ThreadStore) -> None:
    ran: list[str] = []
    fail = [True]

    @tool("charge")
    async def charge(amount: int) -> str:
        ran.append(f"charge {amount}")
        return "charged"

    @tool("refund")
    async def refund(amount: int) -> str:
        ran.append(f"refund {amount}")
        return "refunded"

    async def agent(ctx: RunContext) -> JSON:
        yes = await ctx.confirm("Charge 100?")
        outcome = await ctx.call_tool("charge" if yes else "refund", {"amount": 100})
        if fail[0]:
            fail[0] = False
            raise RuntimeError("after the tool ran")
        return outcome.result

    clock = Clock()
    async with Host(agent, store=store, tools=[charge, refund], clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "branch", clock)
        (question,) = interrupts(await thread.send({"runId": "run-1"}))
        failed = await thread.send({"runId": "run-2", "resume": [resolved(question, True)]})
        refused = await thread.send({"runId": "run-3", "resume": [resolved(question, False)]})
        done = await thread.send({"runId": "run-4", "resume": [resolved(question, True)]})
    assert failed[-1]["code"] == "AGENT_ERROR"
    assert [(e["type"], e.get("code")) for e in refused] == [("RUN_ERROR", "INTERRUPT_ALREADY_RESOLVED")]
    assert done[-1]["result"] == "charged"
    assert ran == ["charge 100"]  # once; the refund never ran


async def test_ids_made_with_new_id_are_the_same_on_every_run_and_never_a_clients(store: ThreadStore) -> None:
    async def agent(ctx: RunContext) -> JSON:
        call = await ctx.propose_tool_call("lookUp", {"q": "x"})
        ok = await ctx.confirm("Answer it?")
        await ctx.tool_result(call, "found" if ok else "skipped")
        return call

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "ids", clock)
        first = await thread.send({"runId": "run-1"})
        (confirm,) = interrupts(first)
        proposed = next(e["toolCallId"] for e in first if e["type"] == "TOOL_CALL_START")
        done = await thread.send({"runId": "run-2", "resume": [resolved(confirm, True)]})
        stored = await store.load("ids")
    assert done[-1]["result"] == proposed
    assert [e["toolCallId"] for e in done if e["type"] == "TOOL_CALL_RESULT"] == [proposed]
    assert stored is not None
    ids = [m.id for m in stored.messages]
    assert len(ids) == len(set(ids))
    # A client that sends the ids a run would make first (they are made from its runId) does not
    # make the agent clash with them: the agent takes the next free ones.
    mine = f"msg-{execution_id('planted', 'run-1')}-1"
    planted = {"id": mine, "role": "user", "content": "I took your id"}
    async with Host(expense_agent, store=store, tools=EXPENSE_TOOLS, clock=clock, new_id=counter()) as host:
        first = await Conversation(host, "planted", clock).send({"runId": "run-1", "messages": [planted]})
        stored = await store.load("planted")
    assert stored is not None
    assert next(e["messageId"] for e in first if e["type"] == "TEXT_MESSAGE_START") == f"{mine}-2"
    ids = [m.id for m in stored.messages]
    assert len(ids) == len(set(ids))


async def test_a_step_inside_once_and_a_replay_that_stops_short_are_named(store: ThreadStore) -> None:
    async def drafts_in_once(ctx: RunContext) -> JSON:
        async def draft() -> str:
            await ctx.text("Drafting...")
            return "draft"

        return await ctx.once("draft", draft)

    runs = Counter[str]()

    async def stops_short(ctx: RunContext) -> JSON:
        runs["runs"] += 1
        if runs["runs"] > 1:
            return "skipped the question"  # not the same on every run
        return await ctx.confirm("Go?")

    clock = Clock()
    async with Host(drafts_in_once, store=store, clock=clock, new_id=counter()) as host:
        nested = await Conversation(host, "nested", clock).send({"runId": "run-1"})
    async with Host(stops_short, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "short", clock)
        (go,) = interrupts(await thread.send({"runId": "run-1"}))
        short = await thread.send({"runId": "run-2", "resume": [resolved(go, True)]})
    assert nested[-1]["code"] == "AGENT_ERROR" and "ctx.text inside ctx.once('draft')" in nested[-1]["message"]
    assert (
        short[-1]["code"] == "AGENT_ERROR"
        and "ended after 0 steps, but the run it resumes took 1" in short[-1]["message"]
    )


async def test_calls_made_ahead_are_fine_but_an_interrupt_or_state_never_awaited_is_named(store: ThreadStore) -> None:
    async def ahead(ctx: RunContext) -> JSON:
        first = ctx.confirm("One?")
        second = ctx.confirm("Two?")
        return [await first, await second]  # the first ends the run: the second is for later

    async def forgets_interrupt(ctx: RunContext) -> JSON:
        ctx.interrupt(ctx.approval("nothing"))
        return "done"

    async def forgets_state(ctx: RunContext) -> JSON:
        ctx.set_state({"lost": True})
        return "done"

    clock = Clock()
    async with Host(ahead, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "ahead", clock)
        (one,) = interrupts(await thread.send({"runId": "run-1"}))
        (two,) = interrupts(await thread.send({"runId": "run-2", "resume": [resolved(one, True)]}))
        done = await thread.send({"runId": "run-3", "resume": [resolved(two, False)]})
    assert done[-1]["result"] == [True, False]
    for agent, name in ((forgets_interrupt, "ctx.interrupt"), (forgets_state, "ctx.set_state")):
        async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
            stream = await Conversation(host, f"forgets-{name}", clock).send({"runId": "run-1"})
        assert stream[-1]["code"] == "AGENT_ERROR" and f"{name}(...) at test_straight_line.py:" in stream[-1]["message"]


async def test_a_tools_value_is_the_same_json_on_every_run(store: ThreadStore) -> None:
    seen: list[Any] = []

    @tool("when")
    async def when() -> dict[str, Any]:
        return {"at": datetime(2026, 1, 2, tzinfo=UTC), "pair": (1, 2)}

    async def agent(ctx: RunContext) -> JSON:
        found = await ctx.call_tool("when", {})
        seen.append(found.result)
        await ctx.confirm("Fine?")
        return None

    clock = Clock()
    async with Host(agent, store=store, tools=[when], clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "values", clock)
        (fine,) = interrupts(await thread.send({"runId": "run-1"}))
        await thread.send({"runId": "run-2", "resume": [resolved(fine, True)]})
    assert seen == [{"at": "2026-01-02T00:00:00+00:00", "pair": [1, 2]}] * 2


async def test_failed_first_runs_do_not_grow_the_record(store: ThreadStore) -> None:
    async def agent(ctx: RunContext) -> JSON:
        await ctx.once("draw", lambda: "x" * 1000)
        raise RuntimeError("always")

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "failing", clock)
        for n in range(12):
            assert (await thread.send({"runId": f"run-{n}"}))[-1]["code"] == "AGENT_ERROR"
        stored = await store.load("failing")
    assert stored is not None and len(stored.tool_journal) <= 5  # the latest executions' only
