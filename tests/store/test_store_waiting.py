"""``ThreadStore.waiting``, the approval console's inbox, against every store.

Threads are made by a real host (the example email agent, one approval per thread) whose
clock moves on a minute per run, so each thread's interrupt has a time of its own.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agui_core.examples import TOOLS, email_agent
from agui_core.protocol.types import ResumeEntry, RunAgentInput, UserMessage
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore, SqliteThreadStore, ThreadStore
from agui_core.store.postgres import PostgresThreadStore

pytestmark = pytest.mark.anyio

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ThreadStore]:
    made: ThreadStore
    if request.param == "memory":
        made = MemoryThreadStore()
    elif request.param == "sqlite":
        made = SqliteThreadStore(tmp_path / "threads.db")
    else:
        made = PostgresThreadStore(request.getfixturevalue("postgres_url"))
    yield made
    await made.aclose()


def minutes() -> Iterator[datetime]:
    return (START + timedelta(minutes=n) for n in itertools.count())


def start(thread_id: str) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread_id,
        run_id=f"{thread_id}-1",
        messages=(UserMessage(id=f"{thread_id}-m", content="Email Bob."),),
        tools=(),
        context=(),
        forwarded_props={},
    )


async def test_waiting_lists_an_owners_open_threads_newest_first_and_drops_answered_ones(store: ThreadStore) -> None:
    clock = minutes()
    async with Host(email_agent, store=store, tools=TOOLS, clock=lambda: next(clock)) as host:
        for thread_id, who in [("t1", "ann"), ("t2", "bob"), ("t3", "ann"), ("t4", "ann")]:
            events = [e async for e in host.run(start(thread_id), principal=who)]
            assert events[-1].outcome.type == "interrupt"  # type: ignore[union-attr]

        waiting = await store.waiting("ann")
        assert [w.thread_id for w in waiting] == ["t4", "t3", "t1"]  # newest first, ann's only
        assert [w.raised_at is not None for w in waiting] == [True, True, True]
        assert waiting[0].raised_at is not None and waiting[1].raised_at is not None
        assert waiting[0].raised_at > waiting[1].raised_at
        (approval,) = waiting[0].interrupts
        assert approval.interrupt.reason == "tool_call" and approval.proposal is not None
        assert approval.proposal.name == "sendEmail" and approval.proposal.args["to"] == "bob@example.com"
        assert [w.thread_id for w in await store.waiting("ann", limit=2)] == ["t4", "t3"]
        assert [w.thread_id for w in await store.waiting("bob")] == ["t2"]
        assert await store.waiting("carol") == []

        # Answered, t3 waits no more; the others do.
        resume = RunAgentInput(
            thread_id="t3",
            run_id="t3-2",
            messages=(),
            tools=(),
            context=(),
            forwarded_props={},
            resume=(ResumeEntry(interrupt_id=approval_id(waiting[1]), status="resolved", payload={"approved": False}),),
        )
        events = [e async for e in host.run(resume, principal="ann")]
        assert events[-1].outcome.type == "success"  # type: ignore[union-attr]
        assert [w.thread_id for w in await store.waiting("ann")] == ["t4", "t1"]


def approval_id(waiting: object) -> str:
    interrupts = waiting.interrupts  # type: ignore[attr-defined]
    interrupt_id: str = interrupts[0].interrupt.id
    return interrupt_id


async def test_all_waiting_lists_every_owners_open_threads_newest_first_with_their_owners(store: ThreadStore) -> None:
    clock = minutes()
    async with Host(email_agent, store=store, tools=TOOLS, clock=lambda: next(clock)) as host:
        assert await store.all_waiting() == []
        for thread_id, who in [("t1", "ann"), ("t2", "bob"), ("t3", "ann")]:
            events = [e async for e in host.run(start(thread_id), principal=who)]
            assert events[-1].outcome.type == "interrupt"  # type: ignore[union-attr]

        waiting = await store.all_waiting()
        assert [(w.thread_id, w.owner) for w in waiting] == [("t3", "ann"), ("t2", "bob"), ("t1", "ann")]
        assert all(w.interrupts[0].interrupt.reason == "tool_call" for w in waiting)
        assert [w.thread_id for w in await store.all_waiting(limit=1)] == ["t3"]

        resume = RunAgentInput(
            thread_id="t2",
            run_id="t2-2",
            messages=(),
            tools=(),
            context=(),
            forwarded_props={},
            resume=(ResumeEntry(interrupt_id=approval_id(waiting[1]), status="resolved", payload={"approved": True}),),
        )
        events = [e async for e in host.run(resume, principal="bob")]
        assert events[-1].outcome.type == "success"  # type: ignore[union-attr]
        assert [w.thread_id for w in await store.all_waiting()] == ["t3", "t1"]


async def test_audit_since_lists_every_threads_closed_interrupts_oldest_first_from_an_instant(
    store: ThreadStore,
) -> None:
    clock = minutes()
    async with Host(email_agent, store=store, tools=TOOLS, clock=lambda: next(clock)) as host:
        for thread_id, who in [("t1", "ann"), ("t2", "bob")]:
            events = [e async for e in host.run(start(thread_id), principal=who)]
            assert events[-1].outcome.type == "interrupt"  # type: ignore[union-attr]
        waiting = {w.thread_id: w for w in await store.all_waiting()}
        for thread_id, who in [("t2", "bob"), ("t1", "ann")]:  # t2 decided first
            resume = RunAgentInput(
                thread_id=thread_id,
                run_id=f"{thread_id}-2",
                messages=(),
                resume=(
                    ResumeEntry(
                        interrupt_id=approval_id(waiting[thread_id]), status="resolved", payload={"approved": True}
                    ),
                ),
            )
            events = [e async for e in host.run(resume, principal=who)]
            assert events[-1].outcome.type == "success"  # type: ignore[union-attr]

        lines = await store.audit_since(START)
        assert [(thread_id, line.status) for thread_id, line in lines] == [("t2", "resolved"), ("t1", "resolved")]
        first_closed = datetime.fromisoformat(lines[0][1].answered_at or "")
        later = await store.audit_since(first_closed + timedelta(seconds=1))
        assert [thread_id for thread_id, _ in later] == ["t1"]
        assert [thread_id for thread_id, _ in await store.audit_since(START, limit=1)] == ["t2"]
        assert await store.audit_since(START + timedelta(days=2)) == []
