"""What goes wrong around a run, through the Host, on both stores: agent errors, broken rules,
bad resumes, other threads' interrupts, busy threads, runs out of time, callers that leave,
failing stores and hosts that shut down. In every case the stored thread is left as it was
(apart from its save counter where the run had started) and the open interrupts stay answerable.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import anyio
import attrs
import pytest

from agui_core.errors import RunErrorCode
from agui_core.machine.effects import Persist
from agui_core.machine.record import ResolvedInterrupt, ThreadRecord
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.types import Interrupt, ResumeEntry
from agui_core.runtime import Host, RunContext, Tool, tool
from agui_core.store import StoreError, ThreadStore
from tests.runtime.conversation import NOW, Clock, Conversation, counter, make_input, same_thread, types

pytestmark = pytest.mark.anyio

APPROVE = {"interruptId": "int-mail", "status": "resolved", "payload": {"approved": True}}
ARCHIVE_YES = {"interruptId": "int-archive", "status": "resolved", "payload": True}
ARCHIVE_CANCEL = {"interruptId": "int-archive", "status": "cancelled"}
ARCHIVE_EXPIRES = NOW + timedelta(hours=1)


def mail_tool(sent: list[str]) -> Tool:
    @tool("sendEmail", needs_approval=True)
    def send_email(to: str) -> str:
        sent.append(to)
        return f"sent to {to}"

    return send_email


def two_interrupts(
    then: Callable[[RunContext], Awaitable[Any]] | None = None,
) -> Callable[[RunContext], Awaitable[Any]]:
    """An agent whose first run asks to approve an e-mail and to confirm archiving (expires in
    an hour); a resumed run does ``then`` (by default: finish with what became of the e-mail)."""

    async def agent(ctx: RunContext) -> Any:
        await ctx.text("Two questions.")
        mail, _ = await ctx.gather(
            ctx.call_tool("sendEmail", {"to": "ops@example.com"}, tool_call_id="tc-1", interrupt_id="int-mail"),
            ctx.confirm("Archive the thread too?", interrupt_id="int-archive", expires_at=ARCHIVE_EXPIRES.isoformat()),
        )
        if then is not None:
            return await then(ctx)
        return {"mail": mail.status}

    return agent


async def interrupted(host: Host, clock: Clock, thread_id: str = "t") -> Conversation:
    thread = Conversation(host, thread_id, clock)
    first = await thread.send({"runId": "run-1"})
    assert first[-1]["outcome"]["type"] == "interrupt"
    return thread


# ---------------------------------------------------------------------------------------------
# The agent's own failures.
# ---------------------------------------------------------------------------------------------


class SecretFailure(Exception):
    pass


async def test_an_agent_exception_is_agent_error_without_traceback_and_logged(
    store: ThreadStore, caplog: pytest.LogCaptureFixture
) -> None:
    async def fails(ctx: RunContext) -> Any:
        if ctx.run_id == "run-2":
            await ctx.text("working on it")
            raise SecretFailure("db password is hunter2")
        return {"mail": ctx.tool_outcomes["tc-1"].status}

    clock = Clock()
    sent: list[str] = []
    caplog.set_level(logging.INFO, logger="agui_core.host")
    async with Host(two_interrupts(fails), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        thread = await interrupted(host, clock)
        before = await store.load("t")
        failed = await thread.send({"runId": "run-2", "resume": [APPROVE, ARCHIVE_YES]})
        after = await store.load("t")
        # The answers were not lost: the same resume is answerable again (and the tool, which
        # ran in the failed run, is not run a second time).
        retried = await thread.send({"runId": "run-3", "resume": [APPROVE, ARCHIVE_YES]})

    assert types(failed)[-1] == "RUN_ERROR"
    error = failed[-1]
    assert error["code"] == "AGENT_ERROR"
    assert "SecretFailure" in error["message"]
    assert "hunter2" not in error["message"] and "Traceback" not in error["message"]
    assert ".py" not in error["message"]
    logged = [r for r in caplog.records if r.exc_info and r.exc_info[0] is SecretFailure]
    assert len(logged) == 1 and logged[0].levelno == logging.ERROR
    assert "hunter2" in caplog.text and "Traceback" in caplog.text

    assert before is not None and after is not None
    # Apart from the save counter, the only traces of the failed run are the journal of the tool
    # it ran (so the tool is never run twice) and the answers it ran it on (a retry must carry them).
    assert [j.tool_call_id for j in after.tool_journal] == ["tc-1"]
    assert sorted(a[0] for a in after.acted_on) == ["int-archive", "int-mail"]
    assert same_thread(before, attrs.evolve(after, tool_journal=(), acted_on=(), acted_in=None, acted=()))
    assert after.state is ThreadState.INTERRUPTED and after.active_run is None
    assert sent == ["ops@example.com"]
    assert types(retried) == ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert retried[1]["content"] == "sent to ops@example.com"  # the journaled result
    assert retried[-1]["result"] == {"mail": "executed"}


async def test_a_failed_new_run_leaves_the_stored_thread_as_it_was(store: ThreadStore) -> None:
    async def agent(ctx: RunContext) -> Any:
        await ctx.set_state({"step": len(ctx.messages)})
        await ctx.text("hello")
        if ctx.run_id == "run-2":
            raise RuntimeError("boom")
        return "ok"

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "t", clock)
        await thread.send({"runId": "run-1"})
        before = await store.load("t")
        failed = await thread.send({"runId": "run-2"})
        after = await store.load("t")
    assert types(failed)[-1] == "RUN_ERROR" and failed[-1]["code"] == "AGENT_ERROR"
    assert same_thread(before, after)
    assert after is not None and after.state is ThreadState.IDLE


@pytest.mark.parametrize("second", ["denied", "cancelled"])
async def test_an_answer_changed_after_the_tool_ran_is_refused_and_the_first_still_carries_on(
    store: ThreadStore, second: str
) -> None:
    # run-2 approves and the tool runs, then the agent fails: the interrupts are open again and
    # the client answers differently. The tool did run on the first answer, which cannot be taken
    # back: the different one is INTERRUPT_ALREADY_RESOLVED, nothing changes, and the answer the
    # tool ran on carries the thread on (its recorded result sent again, the tool not run again).
    seen: list[str] = []

    async def flaky(ctx: RunContext) -> Any:
        seen.append(ctx.tool_outcomes["tc-1"].status)
        if ctx.run_id == "run-2":
            raise RuntimeError("flaky")
        return {"mail": ctx.tool_outcomes["tc-1"].status}

    clock = Clock()
    sent: list[str] = []
    async with Host(two_interrupts(flaky), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        thread = await interrupted(host, clock)
        await thread.send({"runId": "run-2", "resume": [APPROVE, ARCHIVE_YES]})
        changed = {"interruptId": "int-mail", "status": "resolved", "payload": {"approved": False}}
        if second == "cancelled":
            changed = {"interruptId": "int-mail", "status": "cancelled"}
        before = await store.load("t")
        refused = await thread.send({"runId": "run-3", "resume": [changed, ARCHIVE_YES]})
        assert same_thread(before, await store.load("t"))
        answered = await thread.send({"runId": "run-4", "resume": [APPROVE, ARCHIVE_YES]})
    assert [(e["type"], e.get("code")) for e in refused] == [("RUN_ERROR", "INTERRUPT_ALREADY_RESOLVED")]
    assert "int-mail" in refused[0]["message"] and "int-archive" not in refused[0]["message"]
    assert sent == ["ops@example.com"]
    assert seen == ["executed", "executed"]
    assert answered[-1]["result"] == {"mail": "executed"}
    assert [e for e in answered if e["type"] == "TOOL_CALL_RESULT"] == [
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "result-tc-1",
            "toolCallId": "tc-1",
            "content": "sent to ops@example.com",
        }
    ]


async def test_an_agents_own_timeout_error_is_an_agent_error(store: ThreadStore) -> None:
    async def times_out(ctx: RunContext) -> Any:
        raise TimeoutError("the model API did not answer")

    clock = Clock()
    async with Host(times_out, store=store, clock=clock, new_id=counter(), run_timeout=60) as host:
        failed = await Conversation(host, "t", clock).send({"runId": "run-1"})
    assert failed[-1]["code"] == "AGENT_ERROR"
    assert "TimeoutError" in failed[-1]["message"] and "longer than" not in failed[-1]["message"]


@pytest.mark.parametrize(
    "misbehaviour",
    [
        "text message left open",
        "tool_call interrupt on an open call",
        "tool_call interrupt without toolCallId",
        "reserved core: reason",
        "RUN_FINISHED by hand",
        "result for a cancelled call",
        "start of an answered call again",
        "unregistered tool",
        "interrupt with nothing",
        "bad JSON Patch",
    ],
)
async def test_an_agent_breaking_a_protocol_rule_fails_the_run_cleanly(
    store: ThreadStore, misbehaviour: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def breaks(ctx: RunContext) -> Any:
        if misbehaviour == "text message left open":
            await ctx.emit(ev.TextMessageStartEvent(message_id="m-open", role="assistant"))
            return "done"
        if misbehaviour == "tool_call interrupt on an open call":
            await ctx.emit(ev.ToolCallStartEvent(tool_call_id="tc-open", tool_call_name="sendEmail"))
            await ctx.interrupt(ctx.approval("tc-open"))
        if misbehaviour == "tool_call interrupt without toolCallId":
            await ctx.interrupt(Interrupt(id="int-x", reason="tool_call", message="?"))
        if misbehaviour == "reserved core: reason":
            await ctx.interrupt(Interrupt(id="int-x", reason="core:approval", message="?"))
        if misbehaviour == "RUN_FINISHED by hand":
            await ctx.emit(ev.RunFinishedEvent(thread_id="t", run_id=ctx.run_id))
        if misbehaviour == "result for a cancelled call":
            await ctx.tool_result("tc-1", "ran anyway")
        if misbehaviour == "start of an answered call again":
            await ctx.emit(ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="sendEmail"))
        if misbehaviour == "unregistered tool":
            await ctx.call_tool("deleteEverything", {})
        if misbehaviour == "interrupt with nothing":
            await ctx.interrupt()
        if misbehaviour == "bad JSON Patch":
            await ctx.patch_state([{"op": "remove", "path": "/missing"}])
        return "done"

    clock = Clock()
    sent: list[str] = []
    caplog.set_level(logging.WARNING, logger="agui_core.host")
    async with Host(
        two_interrupts(breaks), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()
    ) as host:
        thread = await interrupted(host, clock)
        before = await store.load("t")
        # tc-1's approval is cancelled, so nothing runs and the journal stays empty.
        failed = await thread.send(
            {"runId": "run-2", "resume": [{"interruptId": "int-mail", "status": "cancelled"}, ARCHIVE_YES]}
        )
        after = await store.load("t")
    assert types(failed)[0] == "RUN_STARTED"
    assert types(failed)[-1] == "RUN_ERROR"
    assert failed[-1]["code"] == "AGENT_ERROR"
    assert "Traceback" not in failed[-1]["message"]
    assert same_thread(before, after)
    assert sent == []
    assert caplog.records, "the broken rule is logged"


async def test_an_agent_acting_after_its_run_ended_does_not_spoil_the_stream(store: ThreadStore) -> None:
    async def agent(ctx: RunContext) -> Any:
        await ctx.finish("early")
        await ctx.text("too late")  # refused: the run has ended
        return "ignored"

    clock = Clock()
    async with Host(agent, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "t", clock)
        stream = await thread.send({"runId": "run-1"})
    assert types(stream) == ["RUN_STARTED", "RUN_FINISHED"]
    assert stream[-1]["result"] == "early"
    stored = await store.load("t")
    assert stored is not None and stored.state is ThreadState.IDLE


# ---------------------------------------------------------------------------------------------
# Bad resumes: every RUN_ERROR code the client can earn, and nothing changes.
# ---------------------------------------------------------------------------------------------

BAD_RESUMES: list[tuple[str, list[Any], timedelta, str]] = [
    ("no resume", [], timedelta(0), "PENDING_INTERRUPTS"),
    ("one of two", [APPROVE], timedelta(0), "PARTIAL_RESUME"),
    (
        "unknown id",
        [APPROVE, ARCHIVE_YES, {"interruptId": "int-nope", "status": "cancelled"}],
        timedelta(0),
        "UNKNOWN_INTERRUPT_ID",
    ),
    ("twice", [APPROVE, ARCHIVE_YES, ARCHIVE_CANCEL], timedelta(0), "DUPLICATE_RESUME_ENTRY"),
    (
        "cancelled with payload",
        [APPROVE, ResumeEntry(interrupt_id="int-archive", status="cancelled", payload=True)],
        timedelta(0),
        "INVALID_RESUME",
    ),
    (
        "bad status",
        [APPROVE, ResumeEntry(interrupt_id="int-archive", status="approved", payload=True)],  # type: ignore[arg-type]
        timedelta(0),
        "INVALID_RESUME",
    ),
    (
        "metadata not an object",
        [APPROVE, ResumeEntry(interrupt_id="int-archive", status="resolved", payload=True, metadata=["x"])],  # type: ignore[arg-type]
        timedelta(0),
        "INVALID_RESUME",
    ),
    (
        "payload against the schema",
        [{**APPROVE, "payload": {"approved": "yes"}}, ARCHIVE_YES],
        timedelta(0),
        "INVALID_PAYLOAD",
    ),
    (
        "payload missing",
        [{"interruptId": "int-mail", "status": "resolved"}, ARCHIVE_YES],
        timedelta(0),
        "INVALID_PAYLOAD",
    ),
    ("confirmation not a boolean", [APPROVE, {**ARCHIVE_YES, "payload": "yes"}], timedelta(0), "INVALID_PAYLOAD"),
    ("late", [APPROVE, ARCHIVE_YES], timedelta(hours=1), "INTERRUPT_EXPIRED"),
]


def resume_input(run_id: str, entries: Sequence[Any], thread_id: str = "t") -> Any:
    """An input whose resume mixes wire dicts and ResumeEntry objects (which no decoder would
    let through: they stand for a host embedded behind a transport that does not validate)."""
    wire_entries = [e for e in entries if isinstance(e, dict)]
    run_input = make_input({"threadId": thread_id, "runId": run_id, **({"resume": wire_entries} if entries else {})})
    if all(isinstance(e, dict) for e in entries):
        return run_input
    decoded = {e.interrupt_id: e for e in run_input.resume or ()}
    return attrs.evolve(
        run_input, resume=tuple(decoded[e["interruptId"]] if isinstance(e, dict) else e for e in entries)
    )


@pytest.mark.parametrize(("case", "entries", "later", "code"), BAD_RESUMES, ids=[c[0] for c in BAD_RESUMES])
async def test_a_bad_resume_is_refused_and_changes_nothing(
    store: ThreadStore, case: str, entries: list[Any], later: timedelta, code: str
) -> None:
    clock = Clock()
    sent: list[str] = []
    async with Host(two_interrupts(), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        thread = await interrupted(host, clock)
        before = await store.load("t")
        clock.advance(seconds=later.total_seconds())
        refused = thread.check([e async for e in host.run(resume_input("run-2", entries))])
        assert await store.load("t") == before
        # Still answerable: the e-mail approved, the archive question cancelled (allowed when expired too).
        answered = await thread.send({"runId": "run-3", "resume": [APPROVE, ARCHIVE_CANCEL]})
    assert types(refused) == ["RUN_ERROR"]
    assert refused[0]["code"] == code
    assert "Traceback" not in refused[0]["message"]
    assert sent == ["ops@example.com"]
    assert answered[-1]["outcome"] == {"type": "success"}


async def test_an_interrupt_answered_again_differently_is_already_resolved(store: ThreadStore) -> None:
    clock = Clock()
    sent: list[str] = []
    async with Host(two_interrupts(), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        thread = await interrupted(host, clock)
        await thread.send({"runId": "run-2", "resume": [APPROVE, ARCHIVE_YES]})
        before = await store.load("t")
        refused = await thread.send({"runId": "run-3", "resume": [APPROVE, {**ARCHIVE_YES, "payload": False}]})
        assert await store.load("t") == before
    assert types(refused) == ["RUN_ERROR"]
    assert refused[0]["code"] == "INTERRUPT_ALREADY_RESOLVED"
    assert sent == ["ops@example.com"]


async def test_a_resume_naming_another_threads_interrupt_is_thread_mismatch(store: ThreadStore) -> None:
    clock = Clock()
    sent: list[str] = []
    async with Host(two_interrupts(), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        a = await interrupted(host, clock, "thread-A")
        b = await interrupted(host, clock, "thread-B")  # its interrupts have the same ids as A's
        c = Conversation(host, "thread-C", clock)  # never seen before
        stored_a, stored_b = await store.load("thread-A"), await store.load("thread-B")
        on_c = await c.send({"runId": "run-c", "resume": [APPROVE, ARCHIVE_YES]})
        assert await store.load("thread-C") is None
        # thread-B knows ids of the same name as A's, so naming them on B is B's own business;
        # an id only A raised, named on B, is not.
        await a.send({"runId": "run-a2", "resume": [APPROVE, ARCHIVE_YES]})
        stored_a = await store.load("thread-A")

        async def chained(ctx: RunContext) -> Any:
            await ctx.interrupt(Interrupt(id="int-only-on-A", reason="confirmation", message="More?"))

        async with Host(chained, store=store, clock=clock, new_id=counter()) as other:
            chain = Conversation(other, "thread-A", clock)
            await chain.send({"runId": "run-a3"})
        stored_a = await store.load("thread-A")
        on_b = await b.send(
            {
                "runId": "run-b2",
                "resume": [APPROVE, ARCHIVE_YES, {"interruptId": "int-only-on-A", "status": "cancelled"}],
            }
        )
        assert await store.load("thread-A") == stored_a
        assert await store.load("thread-B") == stored_b
    for refused in (on_c, on_b):
        assert types(refused) == ["RUN_ERROR"]
        assert refused[0]["code"] == "THREAD_MISMATCH"
        # The owning thread is never named (SPEC section 9: no error reveals another thread's ids).
        assert "thread-A" not in refused[0]["message"]
    assert "int-mail" in on_c[0]["message"] and "int-only-on-A" in on_b[0]["message"]


# ---------------------------------------------------------------------------------------------
# One run at a time per thread.
# ---------------------------------------------------------------------------------------------


async def test_a_second_run_on_a_busy_thread_is_thread_busy(store: ThreadStore) -> None:
    entered, release = anyio.Event(), anyio.Event()

    async def slow(ctx: RunContext) -> Any:
        await ctx.text(f"{ctx.thread_id} working")
        entered.set()
        await release.wait()
        return "done"

    clock = Clock()
    async with Host(slow, store=store, clock=clock, new_id=counter()) as host:
        t = Conversation(host, "t", clock)
        first: list[dict[str, Any]] = []

        async def run_first() -> None:
            first.extend(await t.send({"runId": "run-1"}))

        async with anyio.create_task_group() as group:
            group.start_soon(run_first)
            await entered.wait()
            held = await store.load("t")
            busy = await Conversation(host, "t", clock).send({"runId": "run-2"})
            # A second host on the same store sees the run in the store, and says the same.
            async with Host(slow, store=store, clock=clock, new_id=counter()) as second_host:
                busy_elsewhere = await Conversation(second_host, "t", clock).send({"runId": "run-3"})
            assert await store.load("t") == held
            release.set()
        # Another thread was never blocked, and the busy thread takes inputs again once done.
        other = await Conversation(host, "u", clock).send({"runId": "run-u"})
        again = await t.send({"runId": "run-4"})
    for refused in (busy, busy_elsewhere):
        assert types(refused) == ["RUN_ERROR"]
        assert refused[0]["code"] == "THREAD_BUSY"
    assert first[-1]["result"] == "done"
    assert other[-1]["result"] == "done" and again[-1]["result"] == "done"


async def test_a_run_out_of_time_fails_cleanly(store: ThreadStore) -> None:
    async def stuck(ctx: RunContext) -> Any:
        await ctx.text("thinking")
        await anyio.sleep_forever()

    clock = Clock()
    sent: list[str] = []
    agent = two_interrupts(stuck)
    async with Host(agent, store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        thread = await interrupted(host, clock)
    before = await store.load("t")
    # Only the stuck run gets the short timeout, so a slow disk cannot fail the first run.
    async with Host(agent, store=store, tools=[mail_tool(sent)], clock=clock, run_timeout=0.2) as host:
        thread.host = host
        failed = await thread.send({"runId": "run-2", "resume": [APPROVE, ARCHIVE_YES]})
    after = await store.load("t")
    assert types(failed)[-1] == "RUN_ERROR" and failed[-1]["code"] == "AGENT_ERROR"
    assert "longer than 0.2 s" in failed[-1]["message"]
    assert after is not None and after.active_run is None and after.state is ThreadState.INTERRUPTED
    # The tool ran on these answers: its journal, and the answers it ran on, are kept.
    assert same_thread(before, attrs.evolve(after, tool_journal=(), acted_on=(), acted_in=None, acted=()))


@pytest.mark.parametrize("ending", ["interrupt", "finish"])
async def test_a_run_whose_time_ran_out_while_it_was_blocked_still_ends_whole(store: ThreadStore, ending: str) -> None:
    # The agent blocks the event loop past the deadline, then ends the run: the deadline is
    # noticed in the middle of the host saving and sending that end. The end must still be
    # saved and sent whole, or the stream has no end and the thread stays busy.
    async def blocking(ctx: RunContext) -> Any:
        time.sleep(0.3)
        if ending == "interrupt":
            await ctx.interrupt(ctx.confirm("Go on?"))
        return "finished"

    clock = Clock()
    async with Host(blocking, store=store, clock=clock, new_id=counter(), run_timeout=0.1) as host:
        thread = Conversation(host, "t", clock)
        stream = await thread.send({"runId": "run-1"})  # checked: it has its end
        stored = await store.load("t")
        if ending == "interrupt":
            (interrupt,) = stream[-1]["outcome"]["interrupts"]
            follow = await thread.send(
                {"runId": "run-2", "resume": [{"interruptId": interrupt["id"], "status": "cancelled"}]}
            )
        else:
            assert stream[-1]["result"] == "finished"
            follow = await thread.send({"runId": "run-2"})
    assert types(stream)[-1] == "RUN_FINISHED"
    assert stored is not None and stored.active_run is None
    assert types(follow)[0] == "RUN_STARTED"


# ---------------------------------------------------------------------------------------------
# Callers that leave, stores that fail, hosts that stop.
# ---------------------------------------------------------------------------------------------


async def test_a_caller_that_stops_listening_does_not_stop_the_run(store: ThreadStore) -> None:
    gate = anyio.Event()

    async def chatty(ctx: RunContext) -> Any:
        if ctx.resumed:
            return {"answer": ctx.answers[0].entry.payload}
        async with ctx.message() as message:
            for word in "a run outlives the caller that started it".split():
                await message.delta(word + " ")
                if word == "outlives":
                    await gate.wait()
        await ctx.interrupt(Interrupt(id="int-there", reason="confirmation", message="Still there?"))

    clock = Clock()
    seen: list[str] = []
    # A buffer of one: the host would block on a caller that is gone if it kept sending to it.
    async with Host(chatty, store=store, clock=clock, new_id=counter(), buffer=1) as host:
        async for event in host.run(make_input({"threadId": "t", "runId": "run-1"})):
            seen.append(event.type)
            if event.type == "TEXT_MESSAGE_CONTENT":
                break
        gate.set()
    # Leaving the host waited for the run: it ended and was saved.
    assert seen == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    stored = await store.load("t")
    assert stored is not None and stored.state is ThreadState.INTERRUPTED
    assert [o.interrupt.id for o in stored.open_interrupts] == ["int-there"]
    # The interrupt is answerable, by a new host on the same store; the client that missed the
    # end of run-1 first gets it again by retrying run-1, then answers.
    async with Host(chatty, store=store, clock=clock, new_id=counter()) as host:
        thread = Conversation(host, "t", clock)
        retried = await thread.send({"runId": "run-1"})
        answered = await thread.send(
            {"runId": "run-2", "resume": [{"interruptId": "int-there", "status": "resolved", "payload": True}]}
        )
    assert types(retried) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert answered[-1]["result"] == {"answer": True}


class FailingStore:
    """A real store, one of whose saves can be made to raise ``StoreError`` (a full disk, say)."""

    def __init__(self, inner: ThreadStore) -> None:
        self.inner = inner
        self._countdown: int | None = None

    def fail_save(self, nth: int) -> None:
        """Make the ``nth`` save from now fail (1: the next one)."""
        self._countdown = nth

    async def load(self, thread_id: str) -> ThreadRecord | None:
        return await self.inner.load(thread_id)

    async def save(self, record: ThreadRecord) -> None:
        if self._countdown is not None:
            self._countdown -= 1
            if self._countdown == 0:
                self._countdown = None
                raise StoreError("disk full at /var/lib/agui/threads.db")
        await self.inner.save(record)

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        return await self.inner.renew_lease(thread_id, run_id, until)

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        return await self.inner.thread_of_interrupt(interrupt_id)

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        return await self.inner.audit(thread_id)

    async def aclose(self) -> None:
        await self.inner.aclose()


class RacingStore(FailingStore):
    """A real store where, just before the host's next save, another host's save lands first:
    ``racer`` starting a run on the thread (the host's save then loses with ``VersionConflict``)."""

    def __init__(self, inner: ThreadStore, racer: str) -> None:
        super().__init__(inner)
        self.racer = racer
        self.raced = False

    async def save(self, record: ThreadRecord) -> None:
        if not self.raced:
            self.raced = True
            loaded = await self.inner.load(record.thread_id)
            machine = ThreadMachine(record.thread_id) if loaded is None else ThreadMachine.from_record(loaded)
            effects = machine.receive_input(
                make_input({"threadId": record.thread_id, "runId": "run-other"}), now=NOW, principal=self.racer
            )
            (persist,) = [e for e in effects if isinstance(e, Persist)]
            await self.inner.save(persist.record)
        await self.inner.save(record)


@pytest.mark.parametrize(("racer", "heard"), [("alice", "THREAD_BUSY"), ("bob", "FORBIDDEN")])
async def test_an_input_that_loses_the_race_to_another_host_is_refused_as_the_machine_says(
    store: ThreadStore, racer: str, heard: str
) -> None:
    # alice's input loses the thread's first save to another host's run: hers (busy) or a
    # stranger's, who now owns the new thread: to alice it must not even say it is busy.
    racing = RacingStore(store, racer)

    async def agent(ctx: RunContext) -> Any:
        return "ran"

    async with Host(agent, store=racing, clock=Clock(), new_id=counter()) as host:
        events = [event async for event in host.run(make_input({"threadId": "t", "runId": "run-1"}), principal="alice")]
    stored = await store.load("t")
    assert [e.type for e in events] == ["RUN_ERROR"]
    assert events[0].code == heard  # type: ignore[union-attr]
    if heard == "FORBIDDEN":  # nothing about the other principal's run
        assert "busy" not in events[0].message and "run-other" not in events[0].message  # type: ignore[union-attr]
    assert stored is not None and stored.owner == racer and stored.active_run is not None
    assert stored.active_run.run_id == "run-other"


@pytest.mark.parametrize(
    ("failing_save", "then"),
    [(1, "executed"), (2, "executed"), (3, "unknown")],
    ids=["run start", "tool about to run", "tool result"],
)
async def test_a_store_failure_fails_one_run_not_the_host(store: ThreadStore, failing_save: int, then: str) -> None:
    clock = Clock()
    sent: list[str] = []
    failing = FailingStore(store)
    async with Host(two_interrupts(), store=failing, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        thread = await interrupted(host, clock)
        before = await store.load("t")
        failing.fail_save(failing_save)  # of run-2's saves: its start, the tool journaled, its result
        failed = await thread.send({"runId": "run-2", "resume": [APPROVE, ARCHIVE_YES]})
        after = await store.load("t")
        # The host still serves: other threads, and this one at once (no waiting for run_timeout).
        other = await Conversation(host, "u", clock).send({"runId": "run-u"})
        answered = await thread.send({"runId": "run-3", "resume": [APPROVE, ARCHIVE_YES]})
    assert types(failed)[-1] == "RUN_ERROR"
    assert failed[-1]["code"] == "AGENT_ERROR"
    assert "/var/lib" not in failed[-1]["message"]
    assert before is not None and after is not None
    assert after.active_run is None and after.state is ThreadState.INTERRUPTED
    # The tool ran on these answers: its journal, and the answers it ran on, are kept.
    assert same_thread(before, attrs.evolve(after, tool_journal=(), acted_on=(), acted_in=None, acted=()))
    assert other[-1]["outcome"]["type"] == "interrupt"
    # The tool ran once, in run-2 (its result lost with the failed save) or in run-3.
    assert sent == ["ops@example.com"]
    assert answered[-1]["result"] == {"mail": then}


async def test_a_host_that_shuts_down_mid_run_leaves_the_thread_answerable(store: ThreadStore) -> None:
    entered = anyio.Event()

    async def stuck(ctx: RunContext) -> Any:
        entered.set()
        await anyio.sleep_forever()

    clock = Clock()
    sent: list[str] = []
    async with Host(two_interrupts(), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        await interrupted(host, clock)
    before = await store.load("t")

    async with anyio.create_task_group() as group:

        async def serve() -> None:
            async with Host(two_interrupts(stuck), store=store, tools=[mail_tool(sent)], clock=clock) as host:
                async for _ in host.run(
                    make_input({"threadId": "t", "runId": "run-2", "resume": [APPROVE, ARCHIVE_YES]})
                ):
                    pass

        group.start_soon(serve)
        await entered.wait()
        group.cancel_scope.cancel()  # the server shuts down

    after = await store.load("t")
    assert after is not None and after.active_run is None
    # The tool ran on these answers: its journal, and the answers it ran on, are kept.
    assert same_thread(before, attrs.evolve(after, tool_journal=(), acted_on=(), acted_in=None, acted=()))
    # No need to wait for run_timeout: the answers are accepted again at once.
    async with Host(two_interrupts(), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        answered = await Conversation(host, "t", clock).send({"runId": "run-3", "resume": [APPROVE, ARCHIVE_YES]})
    assert answered[-1]["outcome"] == {"type": "success"}
    assert sent == ["ops@example.com"]


def test_the_run_error_codes_the_host_tests_cover() -> None:
    covered = {code for *_, code in BAD_RESUMES} | {
        "INTERRUPT_ALREADY_RESOLVED",
        "THREAD_MISMATCH",
        "THREAD_BUSY",
        "AGENT_ERROR",
        "FORBIDDEN",  # tests/runtime/test_trust.py
        "HISTORY_CONFLICT",  # tests/runtime/test_trust.py
        "AMBIGUOUS_LEGACY_RESUME",  # tests/adapters/test_langgraph_legacy.py (Host.translate_input)
        "THREAD_TOO_LARGE",  # tests/e2e/test_thread_size.py (through agui serve)
        "INVALID_SIGNATURE",  # tests/transports/test_approvers.py (a host with a policy and approver keys)
    }
    # INVALID_INPUT and RATE_LIMITED belong to the transports: the host is handed inputs already
    # decoded, and never those over a connection's rate limit (tests/transports/test_limits.py).
    assert covered == {code.value for code in RunErrorCode} - {"INVALID_INPUT", "RATE_LIMITED"}
