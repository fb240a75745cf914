"""Tests for agui_core.store.memory: what MemoryThreadStore does beyond the shared contract.

The contract itself (compare-and-set, interrupts, audit) is in ``test_store_contract.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
import pytest

from agui_core.store import MemoryThreadStore
from tests.store.scenario import scenario_records

pytestmark = pytest.mark.anyio

RECORDS = scenario_records("thread-1")


async def test_a_load_hands_back_the_saved_object_itself() -> None:
    # Records are immutable, so the store keeps no copy: a suspended thread costs its record.
    store = MemoryThreadStore()
    await store.save(RECORDS[0])
    await store.save(RECORDS[1])
    assert await store.load("thread-1") is RECORDS[1]
    assert await store.audit("thread-1") is RECORDS[1].resolved


async def test_the_interrupt_index_holds_the_record_strings_not_copies() -> None:
    store = MemoryThreadStore()
    await store.save(RECORDS[0])
    await store.save(RECORDS[1])
    found = await store.thread_of_interrupt("thread-" + "1-approve")  # an equal, distinct str
    assert found is RECORDS[0].thread_id


async def test_len_counts_the_threads() -> None:
    store = MemoryThreadStore()
    assert len(store) == 0
    for thread_id in ("a", "b"):
        for record in scenario_records(thread_id)[:2]:
            await store.save(record)
    assert len(store) == 2


async def test_closing_lets_go_of_every_thread() -> None:
    async with MemoryThreadStore() as store:
        await store.save(RECORDS[0])
    assert len(store) == 0


async def test_a_thread_no_longer_recent_loads_equal_to_what_was_saved_but_decoded_again() -> None:
    store = MemoryThreadStore(recent=1)
    await store.save(RECORDS[0])
    await store.save(RECORDS[1])
    other = scenario_records("thread-2")[0]
    await store.save(other)  # thread-1 is no longer among the recent: held as JSON
    loaded = await store.load("thread-1")
    assert loaded is not RECORDS[1] and loaded == RECORDS[1]
    assert await store.load("thread-1") is loaded  # recent again: the decoded object itself
    assert await store.load("thread-2") == other and await store.load("thread-2") is not other


async def test_every_record_of_a_thread_survives_being_held_as_json() -> None:
    # All eight states: a run with events and a lease, open and closed interrupts, the journal.
    store = MemoryThreadStore(recent=0)
    for record in RECORDS:
        await store.save(record)
        assert await store.load("thread-1") == record
        assert await store.audit("thread-1") == record.resolved
    assert await store.thread_of_interrupt("thread-1-approve") == "thread-1"


async def test_a_renewed_lease_outlives_the_json_form_and_a_later_save() -> None:
    store = MemoryThreadStore(recent=0)
    for record in RECORDS[:3]:
        await store.save(record)
    run = RECORDS[2].active_run  # run-2, still in progress at version 4
    assert run is not None and RECORDS[3].active_run is not None
    assert RECORDS[3].active_run.run_id == run.run_id and RECORDS[3].active_run.lease_until is None
    later = datetime(2026, 4, 20, 12, 5, tzinfo=UTC)
    assert await store.renew_lease("thread-1", run.run_id, later)
    await store.save(RECORDS[3])  # brings the lease run-2 started with: the renewal stays
    loaded = await store.load("thread-1")
    assert loaded is not None and loaded.version == 4 and loaded.active_run is not None
    assert datetime.fromisoformat(loaded.active_run.lease_until or "") == later


async def test_a_record_json_cannot_hold_stays_the_object_it_was() -> None:
    store = MemoryThreadStore(recent=0)
    odd = attrs.evolve(RECORDS[0], agent_state={"seen": {1, 2}})  # a set: no JSON form
    await store.save(odd)
    assert await store.load("thread-1") is odd


def test_recent_is_a_count() -> None:
    with pytest.raises(ValueError, match="recent"):
        MemoryThreadStore(recent=-1)


async def test_the_recent_threads_are_bounded_by_the_bytes_of_their_messages_but_the_last() -> None:
    # Records as a thread machine makes them, each saying how many bytes its messages hold.
    store = MemoryThreadStore(recent=32, recent_bytes=1_000)
    big = [attrs.evolve(scenario_records(f"big-{n}")[0], message_bytes=600) for n in range(3)]
    for record in big:
        await store.save(record)
    # Two of 600 bytes do not fit in 1,000: only the last one is held as the object saved.
    assert await store.load("big-2") is big[2]
    assert await store.load("big-0") == big[0] and await store.load("big-0") is not big[0]
    # A thread bigger than the whole room is still held while it is the one in use.
    huge = attrs.evolve(scenario_records("huge")[0], message_bytes=5_000)
    await store.save(huge)
    assert await store.load("huge") is huge
    with pytest.raises(ValueError, match="recent_bytes"):
        MemoryThreadStore(recent_bytes=-1)
