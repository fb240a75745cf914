"""The ThreadStore contract, run against every store: memory, SQLite and PostgreSQL.

Records come from a real ThreadMachine driven through a scenario (see ``scenario.py``): each
``Persist`` effect's record is saved in turn, as a host does.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path

import anyio
import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_core.machine.record import ThreadRecord, record_to_dict
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.store import (
    DeliveryLedger,
    MemoryThreadStore,
    Purged,
    SqliteThreadStore,
    StoreError,
    ThreadStore,
    VersionConflict,
)
from agui_core.store.postgres import PostgresThreadStore
from tests.machine.driver import NOW, make_input
from tests.store.scenario import (
    ANSWERED,
    CANCELLED,
    RAISED,
    after_approval,
    approval_resume,
    persisted,
    scenario_records,
)

pytestmark = pytest.mark.anyio

RECORDS = scenario_records("thread-1")
"""Versions 1 to 8 of thread-1, in the states ``scenario.STATES`` lists."""


@pytest.fixture(params=["memory", "memory-json", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[ThreadStore]:
    made: ThreadStore
    if request.param == "memory":
        made = MemoryThreadStore()
    elif request.param == "memory-json":
        made = MemoryThreadStore(recent=0)  # every thread held as JSON between calls
    elif request.param == "sqlite":
        made = SqliteThreadStore(tmp_path / "threads.db")
    else:
        made = PostgresThreadStore(request.getfixturevalue("postgres_url"))
    yield made
    await made.aclose()


def as_json(record: ThreadRecord) -> bytes:
    return orjson.dumps(record_to_dict(record))


async def save_up_to(store: ThreadStore, version: int, records: list[ThreadRecord] = RECORDS) -> None:
    for record in records[:version]:
        await store.save(record)


async def test_a_store_is_a_thread_store(store: ThreadStore) -> None:
    assert isinstance(store, ThreadStore)


async def test_a_thread_never_saved_loads_as_none(store: ThreadStore) -> None:
    assert await store.load("nobody") is None


async def test_every_record_of_a_run_loads_back_bit_for_bit(store: ThreadStore) -> None:
    for record in RECORDS:
        await store.save(record)
        loaded = await store.load("thread-1")
        assert loaded == record
        assert as_json(loaded) == as_json(record)
    # What the records carry between them: a live run's events, open interrupts, the tool
    # journal, closed interrupts and replay data.
    assert RECORDS[0].active_run is not None and RECORDS[0].active_run.events
    assert RECORDS[1].open_interrupts and RECORDS[4].tool_journal[0].result is not None
    assert RECORDS[-1].resolved and RECORDS[-1].completed_resumes


async def test_a_loaded_record_carries_a_run_on_where_it_stood(store: ThreadStore) -> None:
    # Version 3 is saved as the resumed run starts: a new process picks the run up from it
    # and saves exactly the records the uninterrupted machine saved next.
    await save_up_to(store, 3)
    loaded = await store.load("thread-1")
    assert loaded is not None and loaded.active_run is not None
    records = after_approval(ThreadMachine.from_record(loaded), "thread-1")
    for record in records:
        await store.save(record)
    assert [as_json(r) for r in records] == [as_json(r) for r in RECORDS[3:6]]


async def test_version_one_of_a_thread_that_exists_is_a_conflict(store: ThreadStore) -> None:
    await store.save(RECORDS[0])
    other = attrs.evolve(RECORDS[0], agent_state={"someone": "else"})
    with pytest.raises(VersionConflict) as info:
        await store.save(other)
    assert (info.value.thread_id, info.value.expected, info.value.found) == ("thread-1", 0, 1)
    assert await store.load("thread-1") == RECORDS[0]


async def test_a_stale_version_is_a_conflict_and_changes_nothing(store: ThreadStore) -> None:
    await save_up_to(store, 3)
    stale = attrs.evolve(RECORDS[2], agent_state={"stale": True})
    with pytest.raises(VersionConflict) as info:
        await store.save(stale)
    assert (info.value.expected, info.value.found) == (2, 3)
    assert as_json(await store.load("thread-1")) == as_json(RECORDS[2])  # type: ignore[arg-type]


async def test_a_skipped_version_is_a_conflict(store: ThreadStore) -> None:
    await store.save(RECORDS[0])
    with pytest.raises(VersionConflict) as info:
        await store.save(RECORDS[2])
    assert (info.value.expected, info.value.found) == (2, 1)
    with pytest.raises(VersionConflict) as info:
        await store.save(attrs.evolve(RECORDS[1], thread_id="never-saved"))
    assert (info.value.thread_id, info.value.expected, info.value.found) == ("never-saved", 1, None)
    assert await store.load("never-saved") is None
    assert await store.load("thread-1") == RECORDS[0]


async def test_a_conflict_tells_the_host_the_thread_is_busy(store: ThreadStore) -> None:
    await store.save(RECORDS[0])
    with pytest.raises(StoreError) as info:
        await store.save(RECORDS[0])
    assert info.value.code.value == "THREAD_BUSY"
    assert "thread-1" in info.value.message


async def test_version_zero_is_never_saved(store: ThreadStore) -> None:
    with pytest.raises(ValueError, match="version 1 or more"):
        await store.save(ThreadRecord(thread_id="t"))
    assert await store.load("t") is None


async def test_thread_of_interrupt_knows_open_and_closed_interrupts(store: ThreadStore) -> None:
    await save_up_to(store, 2)
    assert await store.thread_of_interrupt("thread-1-approve") == "thread-1"
    assert await store.thread_of_interrupt("thread-1-confirm") is None
    for record in RECORDS[2:]:
        await store.save(record)
    assert (await store.load("thread-1")).open_interrupts == ()  # type: ignore[union-attr]
    assert await store.thread_of_interrupt("thread-1-approve") == "thread-1"
    assert await store.thread_of_interrupt("thread-1-confirm") == "thread-1"
    assert await store.thread_of_interrupt("no-such-interrupt") is None


async def test_thread_of_interrupt_knows_an_interrupt_being_answered(store: ThreadStore) -> None:
    # A record first saved mid-resume (a thread moved from another store) still names the
    # interrupts its run is answering.
    await store.save(attrs.evolve(RECORDS[2], version=1))
    assert await store.thread_of_interrupt("thread-1-approve") == "thread-1"


async def test_thread_of_interrupt_tells_threads_apart(store: ThreadStore) -> None:
    await save_up_to(store, 2)
    await save_up_to(store, 2, scenario_records("thread-2"))
    assert await store.thread_of_interrupt("thread-1-approve") == "thread-1"
    assert await store.thread_of_interrupt("thread-2-approve") == "thread-2"


async def test_an_interrupt_id_reused_by_another_thread_stays_with_the_first(
    store: ThreadStore,
) -> None:
    # Interrupt ids are unique per thread only; the thread that raised one first keeps it.
    await save_up_to(store, 2)
    copy = attrs.evolve(RECORDS[1], thread_id="thread-copy", version=1)
    await store.save(copy)
    assert await store.thread_of_interrupt("thread-1-approve") == "thread-1"


async def test_audit_lists_every_closed_interrupt_in_order(store: ThreadStore) -> None:
    assert list(await store.audit("thread-1")) == []
    await save_up_to(store, 5)
    assert list(await store.audit("thread-1")) == []
    await store.save(RECORDS[5])
    assert [r.interrupt.id for r in await store.audit("thread-1")] == ["thread-1-approve"]
    for record in RECORDS[6:]:
        await store.save(record)

    trail = list(await store.audit("thread-1"))
    assert trail == list(RECORDS[-1].resolved)
    approve, confirm = trail
    # Raised when and by which run; the answer (status, payload, metadata), when it came and
    # in which run; what came of that run.
    assert (approve.interrupt.id, approve.run_id, approve.raised_at) == (
        "thread-1-approve",
        "thread-1-run-1",
        RAISED.isoformat(),
    )
    assert approve.status == "resolved"
    assert approve.payload == {
        "approved": True,
        "editedArgs": {"to": "ops@example.com", "cc": None},
    }
    assert approve.metadata == {"reviewer": "dana", "note": None}
    assert (approve.answered_in, approve.answered_at, approve.outcome) == (
        "thread-1-run-2",
        ANSWERED.isoformat(),
        "interrupt",
    )
    assert approve.interrupt.tool_call_id == "thread-1-call"
    assert (confirm.interrupt.id, confirm.run_id, confirm.raised_at) == (
        "thread-1-confirm",
        "thread-1-run-2",
        ANSWERED.isoformat(),
    )
    assert (confirm.status, confirm.payload, confirm.metadata) == ("cancelled", None, None)
    assert (confirm.answered_in, confirm.answered_at, confirm.outcome) == (
        "thread-1-run-3",
        CANCELLED.isoformat(),
        "success",
    )
    assert list(await store.audit("someone-else")) == []


async def test_saves_of_one_version_at_once_let_exactly_one_through(store: ThreadStore) -> None:
    await save_up_to(store, 2)
    # Every contender resumes the same interrupted record, as two hosts given one resume would.
    contenders = []
    for n in range(8):
        machine = ThreadMachine.from_record(RECORDS[1])
        (record,) = persisted(machine.receive_input(approval_resume("thread-1", f"run-{n}"), now=NOW))
        contenders.append(record)
    won: list[str] = []
    lost: list[VersionConflict] = []

    async def attempt(record: ThreadRecord) -> None:
        try:
            await store.save(record)
        except VersionConflict as conflict:
            lost.append(conflict)
        else:
            assert record.active_run is not None
            won.append(record.active_run.run_id)

    async with anyio.create_task_group() as group:
        for record in contenders:
            group.start_soon(attempt, record)
    assert len(won) == 1 and len(lost) == 7
    assert all((c.expected, c.found) == (2, 3) for c in lost)
    stored = await store.load("thread-1")
    assert stored is not None and stored.active_run is not None
    assert stored.active_run.run_id == won[0]


async def test_a_closed_store_refuses_every_call(store: ThreadStore) -> None:
    await store.save(RECORDS[0])
    await store.aclose()
    await store.aclose()
    for call in (
        lambda: store.load("thread-1"),
        lambda: store.save(RECORDS[1]),
        lambda: store.thread_of_interrupt("x"),
        lambda: store.audit("thread-1"),
        lambda: store.renew_lease("thread-1", "thread-1-run-1", NOW),
        lambda: store.owner_of("thread-1"),
        lambda: store.purge(idle_before=NOW),
    ):
        with pytest.raises(StoreError, match="closed"):
            await call()


_example = itertools.count()


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attempts=st.lists(st.tuples(st.integers(0, 2), st.integers(1, 5)), max_size=20))
async def test_saves_follow_the_compare_and_set_model(store: ThreadStore, attempts: list[tuple[int, int]]) -> None:
    # The model: a save of version v succeeds exactly when the stored version is v - 1.
    prefix = f"ex{next(_example)}"
    template = RECORDS[1]
    model: dict[str, int] = {}
    for thread, version in attempts:
        thread_id = f"{prefix}-{thread}"
        record = attrs.evolve(template, thread_id=thread_id, version=version, agent_state={"v": version})
        expected_ok = model.get(thread_id, 0) == version - 1
        try:
            await store.save(record)
        except VersionConflict as conflict:
            assert not expected_ok
            assert conflict.found == model.get(thread_id)
        else:
            assert expected_ok
            model[thread_id] = version
    for thread in range(3):
        thread_id = f"{prefix}-{thread}"
        loaded = await store.load(thread_id)
        if thread_id in model:
            assert loaded is not None
            assert (loaded.version, loaded.agent_state) == (
                model[thread_id],
                {"v": model[thread_id]},
            )
        else:
            assert loaded is None


# -- leases ------------------------------------------------------------------------------

LEASE = timedelta(seconds=10)


def leased_run(thread_id: str = "leased", run_id: str = "run-1") -> tuple[ThreadMachine, ThreadRecord]:
    """A machine whose run ``run_id`` was received at NOW with a lease until NOW + LEASE, and its first record."""
    machine = ThreadMachine(thread_id)
    (record,) = persisted(machine.receive_input(make_input(thread_id, run_id), now=NOW, lease_until=NOW + LEASE))
    return machine, record


def mid_run_save(machine: ThreadMachine, call: str) -> ThreadRecord:
    """The record the run saves as it starts a tool for tool call ``call`` (the journal's save)."""
    machine.emit(ev.ToolCallStartEvent(tool_call_id=call, tool_call_name="lookup"))
    machine.emit(ev.ToolCallEndEvent(tool_call_id=call))
    (record,) = persisted(machine.tool_started(call, now=NOW))
    return record


async def lease_of(store: ThreadStore, thread_id: str = "leased") -> datetime | None:
    record = await store.load(thread_id)
    assert record is not None and record.active_run is not None
    until = record.active_run.lease_until
    return None if until is None else datetime.fromisoformat(until)


def without_lease(record: ThreadRecord | None) -> ThreadRecord | None:
    if record is None or record.active_run is None:
        return record
    return attrs.evolve(record, active_run=attrs.evolve(record.active_run, lease_until=None))


async def test_a_run_holds_the_lease_its_record_brings(store: ThreadStore) -> None:
    _, record = leased_run()
    await store.save(record)
    assert await lease_of(store) == NOW + LEASE


async def test_a_renewal_extends_the_lease_of_the_run_in_progress_and_changes_nothing_else(store: ThreadStore) -> None:
    _, record = leased_run()
    await store.save(record)
    assert await store.renew_lease("leased", "run-1", NOW + 3 * LEASE) is True
    assert await lease_of(store) == NOW + 3 * LEASE
    loaded = await store.load("leased")
    assert loaded is not None and loaded.version == record.version  # no new version: saves never race it
    assert without_lease(loaded) == without_lease(record)


async def test_a_lease_is_never_shortened(store: ThreadStore) -> None:
    _, record = leased_run()
    await store.save(record)
    assert await store.renew_lease("leased", "run-1", NOW + LEASE / 2) is True  # still the run in progress
    assert await lease_of(store) == NOW + LEASE


async def test_only_the_run_in_progress_can_renew_its_lease(store: ThreadStore) -> None:
    assert await store.renew_lease("leased", "run-1", NOW + LEASE) is False  # a thread never saved
    machine, record = leased_run()
    await store.save(record)
    assert await store.renew_lease("leased", "run-0", NOW + 2 * LEASE) is False
    assert await store.renew_lease("elsewhere", "run-1", NOW + 2 * LEASE) is False
    assert await lease_of(store) == NOW + LEASE
    # Ended (here closed by a host that found it abandoned): no run left to renew.
    (ended,) = persisted(machine.close_abandoned_run(NOW + LEASE))
    await store.save(ended)
    assert await store.renew_lease("leased", "run-1", NOW + 2 * LEASE) is False
    assert await store.load("leased") == ended
    # An interrupted thread has no run in progress either.
    await save_up_to(store, 2)
    assert await store.renew_lease("thread-1", "thread-1-run-1", NOW + LEASE) is False
    assert await store.load("thread-1") == RECORDS[1]


async def test_a_save_by_the_same_run_does_not_undo_a_renewal(store: ThreadStore) -> None:
    machine, record = leased_run()
    await store.save(record)
    await store.renew_lease("leased", "run-1", NOW + 3 * LEASE)
    # The host's machine still knows the lease the run started with, and saves it.
    journaled = mid_run_save(machine, "tc-1")
    assert journaled.active_run is not None and journaled.active_run.lease_until == (NOW + LEASE).isoformat()
    await store.save(journaled)
    assert await lease_of(store) == NOW + 3 * LEASE
    assert without_lease(await store.load("leased")) == without_lease(journaled)


async def test_a_new_run_starts_with_its_own_lease_not_the_last_runs(store: ThreadStore) -> None:
    machine, record = leased_run()
    await store.save(record)
    await store.renew_lease("leased", "run-1", NOW + 30 * LEASE)
    (finished,) = persisted(machine.finish())
    await store.save(finished)
    later = NOW + timedelta(minutes=1)
    (started,) = persisted(machine.receive_input(make_input("leased", "run-2"), now=later, lease_until=later + LEASE))
    await store.save(started)
    assert await lease_of(store) == later + LEASE
    assert await store.renew_lease("leased", "run-1", NOW + 40 * LEASE) is False
    # A record whose run in progress is another one replaces the lease whole, even with no
    # save in between that ended the first (a thread moved over from another store, say).
    _, other = leased_run(run_id="run-3")
    await store.save(attrs.evolve(other, version=started.version + 1))
    assert await lease_of(store) == NOW + LEASE


async def test_a_run_saved_without_a_lease_can_be_renewed_and_keeps_it(store: ThreadStore) -> None:
    # A record from a host before leases: a run in progress with no lease.
    await save_up_to(store, 3)
    assert RECORDS[2].active_run is not None and RECORDS[2].active_run.lease_until is None
    assert await store.renew_lease("thread-1", "thread-1-run-2", NOW + LEASE) is True
    await store.save(RECORDS[3])  # the same run, still without a lease of its own
    assert await lease_of(store, "thread-1") == NOW + LEASE


async def test_a_lease_ends_at_an_aware_instant(store: ThreadStore) -> None:
    _, record = leased_run()
    await store.save(record)
    with pytest.raises(ValueError, match="aware"):
        await store.renew_lease("leased", "run-1", (NOW + LEASE).replace(tzinfo=None))


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(st.sampled_from(["renew", "save"]), st.integers(-60, 60)), max_size=12))
async def test_the_lease_is_the_latest_of_the_start_and_every_renewal(
    store: ThreadStore, steps: list[tuple[str, int]]
) -> None:
    # The model: renewals (of any instant, later or not) and saves by the run in between
    # leave the lease at the latest instant any of them named.
    thread_id = f"lease-{next(_example)}"
    machine, record = leased_run(thread_id)
    await store.save(record)
    expected = NOW + LEASE
    for step, seconds in steps:
        if step == "renew":
            until = NOW + timedelta(seconds=seconds)
            assert await store.renew_lease(thread_id, "run-1", until) is True
            expected = max(expected, until)
        else:
            await store.save(mid_run_save(machine, f"tc-{len(machine.tool_journal)}"))
        assert await lease_of(store, thread_id) == expected


# -- owners and retention --------------------------------------------------------------------


def saved(records: list[ThreadRecord], at: datetime, *, owner: str | None = None) -> list[ThreadRecord]:
    """``records`` as a host saves them: each with ``saved_at`` (a second apart, the last at ``at``)."""
    last = len(records) - 1
    return [
        attrs.evolve(
            r,
            saved_at=(at - timedelta(seconds=last - i)).isoformat(),
            owner=owner if owner is not None else r.owner,
        )
        for i, r in enumerate(records)
    ]


async def save_all(store: ThreadStore, records: list[ThreadRecord]) -> None:
    for record in records:
        await store.save(record)


async def test_owner_of_names_the_principal_of_a_saved_thread_only(store: ThreadStore) -> None:
    assert await store.owner_of("thread-1") is None
    await save_all(store, saved(RECORDS[:2], NOW, owner="ann"))
    await save_all(store, scenario_records("anon")[:1])  # a thread of the anonymous principal
    await store.save(attrs.evolve(RECORDS[0], thread_id="old", owner=None))  # saved before owners
    assert await store.owner_of("thread-1") == "ann"
    assert await store.owner_of("anon") == "anonymous"
    assert await store.owner_of("old") == "anonymous"
    assert await store.owner_of("thread-2") is None


async def test_a_purge_removes_whole_the_threads_at_rest_saved_before_the_cutoff_and_no_other(
    store: ThreadStore,
) -> None:
    old = NOW - timedelta(days=40)
    await save_all(store, saved(RECORDS, old))  # thread-1: at rest (IDLE), old: due
    await save_all(store, saved(scenario_records("waiting")[:2], old))  # an open interrupt: never
    await save_all(store, saved(scenario_records("running")[:1], old))  # a run in progress: never
    await save_all(store, saved(scenario_records("recent"), NOW))  # at rest, but used since the cutoff
    await save_all(store, scenario_records("unstamped"))  # at rest, saved without a time: never
    kept = {t: await store.load(t) for t in ("waiting", "running", "recent", "unstamped")}

    purged = await store.purge(idle_before=NOW - timedelta(days=30))

    assert purged == Purged(threads=1, audit_trails=0, swept=True)
    assert await store.load("thread-1") is None and await store.owner_of("thread-1") is None
    assert list(await store.audit("thread-1")) == []
    assert await store.thread_of_interrupt("thread-1-approve") is None
    assert await store.thread_of_interrupt("thread-1-confirm") is None
    assert {t: await store.load(t) for t in kept} == kept
    assert await store.thread_of_interrupt("waiting-approve") == "waiting"
    assert await store.purge(idle_before=NOW - timedelta(days=30)) == Purged(threads=0)


async def test_a_purge_takes_the_longest_unused_first_and_no_more_than_its_limit(store: ThreadStore) -> None:
    for age in (5, 3, 9, 1, 7):
        await save_all(store, saved(scenario_records(f"aged-{age}"), NOW - timedelta(days=age)))
    assert (await store.purge(idle_before=NOW, limit=2)).threads == 2
    left = {age for age in (5, 3, 9, 1, 7) if await store.load(f"aged-{age}") is not None}
    assert left == {5, 3, 1}
    assert (await store.purge(idle_before=NOW, limit=2)).threads == 2
    assert (await store.purge(idle_before=NOW, limit=2)).threads == 1
    assert await store.owner_of("aged-1") is None


async def test_a_save_that_comes_after_its_thread_was_purged_loses_and_the_id_starts_afresh(
    store: ThreadStore,
) -> None:
    # Compare-and-set: a host that loaded the thread before the purge cannot bring it back.
    records = saved(RECORDS, NOW - timedelta(days=40), owner="ann")
    await save_all(store, records)
    assert (await store.purge(idle_before=NOW)).threads == 1
    with pytest.raises(VersionConflict) as info:
        await store.save(attrs.evolve(records[-1], version=9))
    assert (info.value.expected, info.value.found) == (8, None)
    # The id is free: a new thread on it may be anyone's, and has nothing of the old one.
    again = saved(RECORDS, NOW, owner="eve")
    await store.save(again[0])
    assert await store.owner_of("thread-1") == "eve" and list(await store.audit("thread-1")) == []
    await save_all(store, again[1:])
    assert list(await store.audit("thread-1")) == list(again[-1].resolved)  # its own trail only
    assert await store.load("thread-1") == again[-1]


async def test_a_purge_keeps_audit_trails_apart_until_they_are_past_audit_before(store: ThreadStore) -> None:
    await save_all(store, saved(RECORDS, NOW - timedelta(days=40)))  # a trail of two entries
    await save_all(store, saved(scenario_records("no-trail")[:1], NOW - timedelta(days=40)))
    await store.save(
        attrs.evolve(
            saved(RECORDS[:1], NOW - timedelta(days=40))[0], thread_id="quiet", state=RECORDS[-1].state, active_run=None
        )
    )  # at rest, never interrupted
    kept = await store.purge(idle_before=NOW - timedelta(days=30), audit_before=NOW - timedelta(days=365))
    assert (kept.threads, kept.audit_trails) == (2, 0)
    assert await store.load("thread-1") is None and list(await store.audit("thread-1")) == []  # not served
    assert (await store.purge(idle_before=NOW, audit_before=NOW - timedelta(days=41))).audit_trails == 0
    assert (await store.purge(idle_before=NOW, audit_before=NOW - timedelta(days=39))).audit_trails == 1
    assert (await store.purge(idle_before=NOW, audit_before=NOW)).audit_trails == 0


@pytest.mark.parametrize(
    ("idle_before", "audit_before", "limit", "says"),
    [
        (NOW.replace(tzinfo=None), None, 10, "aware"),
        (NOW, NOW.replace(tzinfo=None), 10, "aware"),
        (NOW, NOW + timedelta(seconds=1), 10, "at least as long"),
        (NOW, None, 0, "1 thread or more"),
    ],
)
async def test_a_purge_refuses_cutoffs_it_cannot_keep_to(
    store: ThreadStore, idle_before: datetime, audit_before: datetime | None, limit: int, says: str
) -> None:
    with pytest.raises(ValueError, match=says):
        await store.purge(idle_before=idle_before, audit_before=audit_before, limit=limit)


@pytest.mark.parametrize("saved_at", ["yesterday", "2026-01-01T00:00:00"])
async def test_a_save_whose_time_cannot_be_compared_fails_alone(store: ThreadStore, saved_at: str) -> None:
    await store.save(RECORDS[0])
    with pytest.raises(StoreError, match="saved_at"):
        await store.save(attrs.evolve(RECORDS[1], saved_at=saved_at))
    assert await store.load("thread-1") == RECORDS[0]
    await store.save(RECORDS[1])


# -- the ledger of deliveries (webhooks) ----------------------------------------------------


async def test_a_delivery_is_claimed_by_one_holder_until_its_claim_runs_out(store: ThreadStore) -> None:
    assert isinstance(store, DeliveryLedger)
    soon, later = NOW + timedelta(seconds=30), NOW + timedelta(seconds=60)
    assert await store.claim_delivery("k", holder="a", now=NOW, until=soon) == 1
    assert await store.claim_delivery("k", holder="b", now=NOW, until=soon) is None  # a holds it
    # a's claim ran out (its host died mid-attempt): b takes it over, as the second attempt.
    assert await store.claim_delivery("k", holder="b", now=soon, until=later) == 2
    await store.finish_delivery("k", holder="a", delivered=True)  # a's word counts no more
    assert await store.claim_delivery("k", holder="c", now=later, until=later + timedelta(seconds=30)) == 3


async def test_a_failed_delivery_waits_for_its_retry_and_a_delivered_one_is_never_claimed_again(
    store: ThreadStore,
) -> None:
    assert isinstance(store, DeliveryLedger)
    until = NOW + timedelta(seconds=30)
    assert await store.claim_delivery("k", holder="a", now=NOW, until=until) == 1
    await store.finish_delivery("k", holder="a", delivered=False, retry_at=NOW + timedelta(seconds=10))
    assert await store.claim_delivery("k", holder="b", now=NOW + timedelta(seconds=5), until=until) is None
    assert await store.claim_delivery("k", holder="b", now=NOW + timedelta(seconds=10), until=until) == 2
    await store.finish_delivery("k", holder="b", delivered=False)  # no wait: claimable at once
    assert await store.claim_delivery("k", holder="a", now=NOW + timedelta(seconds=10), until=until) == 3
    await store.finish_delivery("k", holder="a", delivered=True)
    far = NOW + timedelta(days=3)
    assert await store.claim_delivery("k", holder="b", now=far, until=far + timedelta(seconds=1)) is None
    # Another key is a delivery of its own.
    assert await store.claim_delivery("other", holder="b", now=NOW, until=until) == 1


async def test_of_many_claims_at_once_one_wins(store: ThreadStore) -> None:
    assert isinstance(store, DeliveryLedger)
    won: list[str] = []

    async def claim(holder: str) -> None:
        if await store.claim_delivery("race", holder=holder, now=NOW, until=NOW + timedelta(seconds=30)):
            won.append(holder)

    async with anyio.create_task_group() as group:
        for n in range(8):
            group.start_soon(claim, f"h{n}")
    assert len(won) == 1


async def test_a_claim_needs_aware_instants_and_an_end_after_now(store: ThreadStore) -> None:
    assert isinstance(store, DeliveryLedger)
    with pytest.raises(ValueError, match="aware"):
        await store.claim_delivery("k", holder="a", now=NOW.replace(tzinfo=None), until=NOW + timedelta(seconds=1))
    with pytest.raises(ValueError, match="after now"):
        await store.claim_delivery("k", holder="a", now=NOW, until=NOW)
