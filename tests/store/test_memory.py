"""Tests for agui_core.store.memory: what MemoryThreadStore does beyond the shared contract.

The contract itself (compare-and-set, interrupts, audit) is in ``test_store_contract.py``.
"""

from __future__ import annotations

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
