"""Leases through the Host, on both stores, with clocks the tests move by hand.

A run's lease is renewed while its agent runs; a run whose lease has run out is closed by the
next host that loads its thread (and the approved tool it had run is not run again); a live
lease means ``THREAD_BUSY``; a host whose run was closed elsewhere stops it; a run past its
``run_timeout`` is no longer renewed. Each host here has a clock of its own, as hosts on
different machines do: the lease's instants come from those clocks, never from anyio's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any

import anyio
import pytest

from agui_core.protocol import events as ev
from agui_core.runtime import Host, ManualClock, RunContext
from agui_core.runtime.lease import LeaseKeeper
from agui_core.store import MemoryThreadStore, StoreError, ThreadStore
from tests.runtime.conversation import NOW, Clock, Conversation, counter, make_input, same_thread, types
from tests.runtime.test_host_errors import APPROVE, ARCHIVE_YES, interrupted, mail_tool, two_interrupts

pytestmark = pytest.mark.anyio

LEASE = 10.0
WAIT = 10.0
"""The most a test waits (real time) for a host to do what it must; never reached when it works."""


class Stuck:
    """A resumed run's agent that waits forever, once its host has carried out the approvals."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.cancelled = False

    async def __call__(self, ctx: RunContext) -> Any:
        self.entered.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


async def lease_of(store: ThreadStore, thread_id: str = "t") -> datetime | None:
    record = await store.load(thread_id)
    if record is None or record.active_run is None or record.active_run.lease_until is None:
        return None
    return datetime.fromisoformat(record.active_run.lease_until)


async def eventually(check: Callable[[], Any]) -> None:
    """Wait until ``await check()`` is true (a renewal is real time away)."""
    with anyio.fail_after(WAIT):
        while not await check():
            await anyio.sleep(0.005)


@asynccontextmanager
async def stuck_run(
    store: ThreadStore, clock: Clock, sent: list[str], **host_options: Any
) -> AsyncIterator[tuple[Stuck, list[ev.Event]]]:
    """Thread ``t`` interrupted, then run-2 approving the e-mail on a host whose agent gets stuck.

    Inside, the approved tool has run and the run is in progress; its stream so far is in the
    list. On the way out the stuck host shuts down.
    """
    async with Host(two_interrupts(), store=store, tools=[mail_tool(sent)], clock=clock, new_id=counter()) as host:
        await interrupted(host, clock)
    stuck, stream = Stuck(), []
    host = Host(two_interrupts(stuck), store=store, tools=[mail_tool(sent)], clock=clock, lease=LEASE, **host_options)

    async def serve() -> None:
        async with host:
            resume = make_input({"threadId": "t", "runId": "run-2", "resume": [APPROVE, ARCHIVE_YES]})
            async for event in host.run(resume):
                stream.append(event)

    async with anyio.create_task_group() as group:
        group.start_soon(serve)
        with anyio.fail_after(WAIT):
            await stuck.entered.wait()
        yield stuck, stream
        group.cancel_scope.cancel()


async def test_the_lease_is_renewed_from_the_hosts_clock_while_the_agent_runs(store: ThreadStore) -> None:
    clock, sent = Clock(), []
    async with stuck_run(store, clock, sent, lease_renew=0.01) as (stuck, _):
        start = NOW  # run-2 was received at the clock's NOW
        assert await lease_of(store) == start + timedelta(seconds=LEASE)
        clock.advance(seconds=30)
        await eventually(lambda: _is(lease_of(store), NOW + timedelta(seconds=30 + LEASE)))
        clock.advance(minutes=2)
        await eventually(lambda: _is(lease_of(store), NOW + timedelta(seconds=150 + LEASE)))
        assert not stuck.cancelled


async def _is(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def test_a_live_lease_is_thread_busy_and_a_run_out_one_is_closed_and_carried_on(store: ThreadStore) -> None:
    clock, sent = Clock(), []
    # The stuck host's clock stands still: its renewals never move the lease past NOW + LEASE,
    # so to a host whose clock goes on it is as good as dead (hung, or on a lost machine).
    async with stuck_run(store, clock, sent) as (_, stream):
        assert sent == ["ops@example.com"]  # the tool ran in run-2, before the agent got stuck
        assert [e.type for e in stream][:2] == ["RUN_STARTED", "TOOL_CALL_RESULT"]
        held = await store.load("t")

        other = Clock(NOW + timedelta(seconds=LEASE, microseconds=-1))
        async with Host(
            two_interrupts(), store=store, tools=[mail_tool(sent)], clock=other, new_id=counter()
        ) as second:
            thread = Conversation(second, "t", other)
            busy = await thread.send({"runId": "run-3", "resume": [APPROVE, ARCHIVE_YES]})
            assert types(busy) == ["RUN_ERROR"] and busy[0]["code"] == "THREAD_BUSY"
            assert await store.load("t") == held  # a refusal changes nothing

            other.advance(microseconds=1)  # the instant the lease runs out
            answered = await thread.send({"runId": "run-3", "resume": [APPROVE, ARCHIVE_YES]})
    # The dead run was closed, its answers were open again, and the same resume carried them:
    # the tool's recorded result is sent again, and the tool did not run a second time.
    assert answered[0] == {"type": "RUN_STARTED", "threadId": "t", "runId": "run-3", "protocolVersion": "1.0"}
    assert answered[1]["type"] == "TOOL_CALL_RESULT" and answered[1]["content"] == "sent to ops@example.com"
    assert answered[-1]["outcome"] == {"type": "success"} and answered[-1]["result"] == {"mail": "executed"}
    assert sent == ["ops@example.com"]
    audit = await store.audit("t")
    assert [(line.interrupt.id, line.answered_in) for line in audit] == [
        ("int-mail", "run-3"),
        ("int-archive", "run-3"),
    ]


async def test_a_host_whose_run_another_host_closed_stops_it(store: ThreadStore) -> None:
    clock, sent = Clock(), []
    async with stuck_run(store, clock, sent, lease_renew=0.01) as (stuck, stream):
        # This host's clock is half an hour ahead (or the first host's behind): to it, the
        # lease the first host keeps renewing to NOW + LEASE ran out long ago.
        ahead = Clock(NOW + timedelta(minutes=30))
        async with Host(two_interrupts(), store=store, tools=[mail_tool(sent)], clock=ahead) as second:
            answered = await Conversation(second, "t", ahead).send({"runId": "run-3", "resume": [APPROVE, ARCHIVE_YES]})
        assert answered[-1]["result"] == {"mail": "executed"}
        # The first host's next renewal is refused: it stops its run, which ends with RUN_ERROR.
        await eventually(lambda: _true(stuck.cancelled and bool(stream) and stream[-1].type == "RUN_ERROR"))
        error = stream[-1]
        assert isinstance(error, ev.RunErrorEvent) and "another host" in error.message
    stored = await store.load("t")
    assert stored is not None and stored.active_run is None and stored.open_interrupts == ()
    assert sent == ["ops@example.com"]


async def _true(value: bool) -> bool:
    return value


async def test_a_run_past_its_run_timeout_is_no_longer_renewed(store: ThreadStore) -> None:
    clock, sent = Clock(), []
    # The run's real deadline is far away; by the host's clock it passes: the renewals stop
    # there, once the run's time and the longest its last step may wait on a caller are up
    # (run_timeout 60 + the default send_timeout 10).
    async with stuck_run(store, clock, sent, lease_renew=0.01, run_timeout=60) as (_, _stream):
        clock.advance(seconds=69)
        await eventually(lambda: _is(lease_of(store), NOW + timedelta(seconds=69 + LEASE)))
        before = await store.load("t")
        clock.advance(seconds=1)
        for _ in range(20):  # twenty renewal periods: none renews
            await anyio.sleep(0.01)
        assert same_thread(await store.load("t"), before)
        assert await lease_of(store) == NOW + timedelta(seconds=69 + LEASE)


async def test_a_refused_renewal_is_a_loss_only_while_the_run_goes_on_here() -> None:
    store = MemoryThreadStore()  # it holds no thread: every renewal is refused
    for running in (False, True):
        lost: list[str] = []
        keeper = LeaseKeeper(
            store,
            "t",
            "run-1",
            clock=Clock(),
            lease=LEASE,
            renew_every=0.001,
            deadline=None,
            running=lambda running=running: running,
            on_lost=lambda lost=lost: lost.append("lost"),
        )
        with anyio.fail_after(WAIT):
            await keeper.keep()  # it stops at the first refusal
        assert keeper.lost is running
        assert lost == (["lost"] if running else [])


class CountedRenewals(MemoryThreadStore):
    """A memory store that grants every renewal, and counts them."""

    renewals = 0

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        self.renewals += 1
        return True


@pytest.mark.parametrize("clock_kind", ["function of the time: on a timer", "moved by hand: in a task"])
async def test_a_stopped_keeper_renews_no_more(clock_kind: str) -> None:
    store = CountedRenewals()
    manual = ManualClock(NOW) if clock_kind.startswith("moved") else None
    keeper = LeaseKeeper(
        store,
        "t",
        "run-1",
        clock=manual if manual is not None else Clock(),
        lease=LEASE,
        renew_every=0.01,
        deadline=None,
        running=lambda: True,
        on_lost=lambda: None,
    )

    async def time_passes() -> None:
        if manual is not None:
            manual.advance(seconds=0.01)
        await anyio.sleep(0.01)

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as group:
            keeper.start(group)
            while store.renewals < 3:
                await time_passes()
            keeper.stop()
            stopped_at = store.renewals
            for _ in range(10):
                await time_passes()
            assert store.renewals == stopped_at
            group.cancel_scope.cancel()  # a keeper that went on would be stopped here, not hang the test


class FlakyRenewals(MemoryThreadStore):
    """A memory store whose first two renewals fail, as a store that lost its connection for a moment."""

    failures = 2

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        if self.failures:
            self.failures -= 1
            raise StoreError("connection reset")
        return await super().renew_lease(thread_id, run_id, until)


async def test_a_failed_renewal_is_tried_again(caplog: pytest.LogCaptureFixture) -> None:
    store, clock, sent = FlakyRenewals(), Clock(), []
    async with stuck_run(store, clock, sent, lease_renew=0.01) as (stuck, _):
        clock.advance(seconds=5)
        await eventually(lambda: _is(lease_of(store), NOW + timedelta(seconds=5 + LEASE)))
        assert store.failures == 0 and not stuck.cancelled
    assert caplog.text.count("could not renew the lease of run 'run-2'") == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lease": 2.0, "lease_renew": 2.0}, "lease_renew < lease"),
        ({"lease": 2.0, "lease_renew": 0.0}, "lease_renew < lease"),
        ({"lease": float("inf")}, "lease_renew < lease"),
        ({"lease": float("nan")}, "lease_renew < lease"),
        ({"run_timeout": 0.0}, "run_timeout"),
    ],
)
def test_lease_and_run_timeout_settings_are_checked(options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Host(two_interrupts(), **options)  # type: ignore[arg-type]
