"""What only PostgresThreadStore has: its schema, its migrations and its connections.

The contract every store keeps is in ``test_store_contract.py``. Here: the schema is created
once however many hosts start together, a newer one is refused, the audit trail cannot be
rewritten, and a connection killed by the server (``pg_terminate_backend``) in the middle of a
save makes that save a ``StoreError`` (never a success), leaves the thread as it was, and
costs nothing once the server is back; a host whose save is cut off so fails the run cleanly.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import attrs
import orjson
import pytest

from agui_core.machine.record import record_to_dict
from agui_core.machine.transitions import ThreadState
from agui_core.runtime import Host, tool
from agui_core.store import StoreError, VersionConflict
from agui_core.store.postgres import _MIGRATIONS, SCHEMA_VERSION, PostgresThreadStore
from tests.machine.driver import NOW
from tests.postgres import admin_connection
from tests.runtime.conversation import Conversation, make_input, types
from tests.runtime.crash_host import order_agent
from tests.runtime.test_crash import approval, lines, wall_clock
from tests.store.scenario import scenario_records

pytestmark = pytest.mark.anyio

RECORDS = scenario_records("thread-1")


def schema_of(url: str) -> str:
    return url.rpartition("schema=")[2]


def named_store(url: str, **options: Any) -> PostgresThreadStore:
    """A store whose connections ``pg_stat_activity`` tells apart from everyone else's."""
    return PostgresThreadStore(url, application_name=f"agui-test-{uuid.uuid4().hex[:12]}", **options)


async def backends(admin: asyncpg.Connection, store: PostgresThreadStore, *, waiting: bool = False) -> list[int]:
    """The server processes serving ``store`` (only those waiting for a lock, if ``waiting``)."""
    query = "SELECT pid FROM pg_stat_activity WHERE application_name = $1"
    if waiting:
        query += " AND wait_event_type = 'Lock'"
    return [row["pid"] for row in await admin.fetch(query, store._application_name)]


@asynccontextmanager
async def thread_row_locked(url: str, thread_id: str) -> AsyncIterator[asyncpg.Connection]:
    """Another session holds the thread's row: a save of it waits until the block ends."""
    blocker = await admin_connection()
    try:
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute(f"SELECT 1 FROM {schema_of(url)}.threads WHERE thread_id = $1 FOR UPDATE", thread_id)
        try:
            yield blocker
        finally:
            await transaction.rollback()
    finally:
        await blocker.close()


async def kill_waiting_save(admin: asyncpg.Connection, store: PostgresThreadStore) -> None:
    """Terminate the store's connection as soon as it waits inside a save."""
    with anyio.fail_after(10):
        while not (pids := await backends(admin, store, waiting=True)):
            await anyio.sleep(0.01)
    for pid in pids:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)


async def test_the_schema_is_created_once_and_opening_again_changes_nothing(postgres_url: str) -> None:
    for _ in range(3):
        async with PostgresThreadStore(postgres_url) as store:
            assert await store.load("nobody") is None
    admin = await admin_connection()
    try:
        rows = await admin.fetch(f"SELECT version FROM {schema_of(postgres_url)}.schema_version")
    finally:
        await admin.close()
    assert [row["version"] for row in rows] == list(range(1, SCHEMA_VERSION + 1))


async def test_hosts_starting_together_migrate_once(postgres_url: str) -> None:
    stores = [PostgresThreadStore(postgres_url, min_size=1, max_size=1) for _ in range(8)]
    loaded: list[object] = []

    async def first_call(store: PostgresThreadStore) -> None:
        loaded.append(await store.load("nobody"))

    try:
        async with anyio.create_task_group() as group:
            for store in stores:
                group.start_soon(first_call, store)
        assert loaded == [None] * 8
        await stores[0].save(RECORDS[0])
        assert await stores[-1].load("thread-1") == RECORDS[0]
    finally:
        for store in stores:
            await store.aclose()


async def test_a_version_1_schema_is_migrated_and_keeps_its_threads(postgres_url: str) -> None:
    # Version 1, as the first release of the store left it, holding a thread mid-run.
    s = schema_of(postgres_url)
    record = attrs.evolve(RECORDS[2], version=1)
    admin = await admin_connection()
    try:
        await admin.execute(f"CREATE SCHEMA {s}")
        await admin.execute(f"CREATE TABLE {s}.schema_version (version integer PRIMARY KEY, applied_at timestamptz)")
        await admin.execute(_MIGRATIONS[0].format(s=s))
        await admin.execute(f"INSERT INTO {s}.schema_version (version) VALUES (1)")
        await admin.execute(
            f"SELECT * FROM {s}.save_thread($1, 1, $2, $3, $4, $5, 0)",
            "thread-1",
            record.state.value,
            record.owner,
            orjson.dumps(record_to_dict(record)).decode(),
            ["thread-1-approve"],
        )
    finally:
        await admin.close()
    async with PostgresThreadStore(postgres_url) as store:
        assert await store.load("thread-1") == record
        assert await store.thread_of_interrupt("thread-1-approve") == "thread-1"
        # The run saved before leases can be renewed once its next save holds the lease row.
        assert record.active_run is not None
        await store.save(attrs.evolve(RECORDS[3], version=2))
        assert await store.renew_lease("thread-1", record.active_run.run_id, NOW + timedelta(seconds=10))
    admin = await admin_connection()
    try:
        assert [r["version"] for r in await admin.fetch(f"SELECT version FROM {s}.schema_version ORDER BY 1")] == list(
            range(1, SCHEMA_VERSION + 1)
        )
    finally:
        await admin.close()


async def test_a_schema_newer_than_this_agui_core_is_refused(postgres_url: str) -> None:
    async with PostgresThreadStore(postgres_url) as store:
        await store.save(RECORDS[0])
    admin = await admin_connection()
    try:
        await admin.execute(f"INSERT INTO {schema_of(postgres_url)}.schema_version (version) VALUES (99)")
    finally:
        await admin.close()
    async with PostgresThreadStore(postgres_url) as store:
        with pytest.raises(StoreError, match="version 99"):
            await store.load("thread-1")


async def test_the_schema_comes_from_the_url_or_the_argument() -> None:
    assert PostgresThreadStore("postgresql://h/db?schema=mine").schema == "mine"
    assert PostgresThreadStore("postgresql://h/db?schema=mine", schema="yours").schema == "yours"
    assert PostgresThreadStore("postgresql://h/db").schema == "agui"
    with pytest.raises(ValueError, match="lower-case"):
        PostgresThreadStore("postgresql://h/db", schema='x"; DROP TABLE y; --')


async def test_the_audit_trail_cannot_be_rewritten(postgres_url: str) -> None:
    async with PostgresThreadStore(postgres_url) as store:
        for record in RECORDS:
            await store.save(record)
        admin = await admin_connection()
        try:
            for statement in ("UPDATE {s}.audit SET status = 'resolved'", "DELETE FROM {s}.audit"):
                with pytest.raises(asyncpg.RaiseError, match="append-only"):
                    await admin.execute(statement.format(s=schema_of(postgres_url)))
        finally:
            await admin.close()
        assert list(await store.audit("thread-1")) == list(RECORDS[-1].resolved)


async def test_owner_and_state_are_columns_an_operator_can_query(postgres_url: str) -> None:
    async with PostgresThreadStore(postgres_url) as store:
        owned = attrs.evolve(RECORDS[1], version=1, owner="dana")
        await store.save(owned)
        admin = await admin_connection()
        try:
            row = await admin.fetchrow(f"SELECT version, state, owner FROM {schema_of(postgres_url)}.threads")
        finally:
            await admin.close()
        assert tuple(row) == (1, ThreadState.INTERRUPTED.value, "dana")
        assert (await store.load("thread-1")) == owned


async def test_a_connection_killed_mid_save_is_a_store_error_and_the_thread_is_intact(postgres_url: str) -> None:
    admin = await admin_connection()
    store = named_store(postgres_url)
    try:
        for record in RECORDS[:2]:
            await store.save(record)
        outcome: list[BaseException] = []

        async def save() -> None:
            try:
                await store.save(RECORDS[2])
            except StoreError as exc:
                outcome.append(exc)

        async with thread_row_locked(postgres_url, "thread-1"), anyio.create_task_group() as group:
            group.start_soon(save)
            await kill_waiting_save(admin, store)
        (error,) = outcome
        assert "whether it was saved is unknown" in str(error)
        assert await store.load("thread-1") == RECORDS[1]
        # The pool replaces the dead connection: the same save, made again, goes through.
        await store.save(RECORDS[2])
        assert await store.load("thread-1") == RECORDS[2]
    finally:
        await store.aclose()
        await admin.close()


async def test_connections_killed_while_idle_cost_no_call(postgres_url: str) -> None:
    admin = await admin_connection()
    store = named_store(postgres_url, min_size=2, max_size=2)
    try:
        await store.save(RECORDS[0])
        for round_ in range(3):
            killed = await backends(admin, store)
            assert killed
            for pid in killed:
                await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            await anyio.sleep(0.1)  # the notice of the server's goodbye reaches the pool
            assert await store.load("thread-1") == RECORDS[round_]
            await store.save(RECORDS[round_ + 1])
    finally:
        await store.aclose()
        await admin.close()


async def test_a_server_that_does_not_answer_is_a_store_error() -> None:
    with anyio.fail_after(20):
        # Port 1 on loopback: nothing listens there.
        store = PostgresThreadStore("postgresql://postgres@127.0.0.1:1/test", timeout=2)
        with pytest.raises(StoreError, match="cannot connect"):
            await store.save(RECORDS[0])
        await store.aclose()
        with pytest.raises(StoreError, match="closed"):
            await store.load("thread-1")


# -- through a host ------------------------------------------------------------------------


def locking_order_tool(effects: Path, url: str, locked: Callable[[], Any]) -> Any:
    """``recordOrder(item)``: its side effect, then another session takes the thread's row."""

    @tool("recordOrder", needs_approval=True)
    async def record_order(item: str) -> str:
        with effects.open("a") as file:
            file.write(item + "\n")
        await locked()
        return f"recorded {item}"

    return record_order


async def test_a_host_whose_connection_dies_mid_save_fails_the_run_cleanly(postgres_url: str, tmp_path: Path) -> None:
    # The resumed run's tool has run; the save of its result is cut off by the server killing
    # the store's connection. The run ends with RUN_ERROR, the thread goes back to its open
    # approval, and the retry reports the tool's fate without running it again.
    effects = tmp_path / "effects.txt"
    admin = await admin_connection()
    store = named_store(postgres_url)
    tool_ran, row_held, released = anyio.Event(), anyio.Event(), anyio.Event()

    async def hold_the_row() -> None:
        tool_ran.set()
        await row_held.wait()

    async def blocker() -> None:
        await tool_ran.wait()
        async with thread_row_locked(postgres_url, "order-1"):
            row_held.set()
            await kill_waiting_save(admin, store)
        released.set()

    thread = Conversation(None, "order-1", wall_clock)
    try:
        async with Host(
            order_agent(), store=store, tools=[locking_order_tool(effects, postgres_url, hold_the_row)]
        ) as host:
            first = [e async for e in host.run(make_input({"threadId": "order-1", "runId": "run-1"}))]
            assert thread.check(first)[-1]["outcome"]["type"] == "interrupt"
            async with anyio.create_task_group() as group:
                group.start_soon(blocker)
                cut = thread.check([e async for e in host.run(approval(thread, "run-2"))])
            assert released.is_set()
            assert types(cut)[0] == "RUN_STARTED" and types(cut)[-1] == "RUN_ERROR"
            assert "thread store failed" in cut[-1]["message"]
            stored = await store.load("order-1")
            assert stored is not None and stored.state is ThreadState.INTERRUPTED
            assert [o.interrupt.id for o in stored.open_interrupts] == [i.id for i in thread.client.open_interrupts]
            assert lines(effects) == ["order-1"]

            retry = Conversation(None, "order-1", wall_clock)
            retry.check(first)
            again = retry.check([e async for e in host.run(approval(retry, "run-3"))])
            assert again[-1]["type"] == "RUN_FINISHED"
            assert again[-1]["result"] == {"order": "unknown"}
            assert lines(effects) == ["order-1"]
    finally:
        await store.aclose()
        await admin.close()


async def test_the_inbox_query_reads_the_partial_index_of_waiting_threads(postgres_url: str) -> None:
    async with PostgresThreadStore(postgres_url) as store:
        await store.save(attrs.evolve(RECORDS[1], version=1, owner="dana"))
        assert [w.thread_id for w in await store.waiting("dana")] == ["thread-1"]
        admin = await admin_connection()
        try:
            async with admin.transaction():
                # A table this small is read whole by choice; forbid that to see the path it can take.
                await admin.execute("SET LOCAL enable_seqscan = off")
                await admin.execute(f"SET LOCAL search_path = {schema_of(postgres_url)}")
                plan = "\n".join(row[0] for row in await admin.fetch("EXPLAIN " + store._waiting_sql, "dana", 100))
        finally:
            await admin.close()
    assert "threads_waiting" in plan, plan


# -- retention -------------------------------------------------------------------------------


def stamped(thread_id: str, at: Any) -> list[Any]:
    """A scenario thread's records (ending at rest) as a host saves them, each saved at ``at``."""
    return [attrs.evolve(r, saved_at=at.isoformat()) for r in scenario_records(thread_id)]


async def test_while_one_host_purges_another_does_nothing(postgres_url: str) -> None:
    # One sweep at a time: a purge that finds the schema's sweep lock held returns at once.
    from agui_core.store.postgres import _lock_key

    old = NOW - timedelta(days=40)
    async with PostgresThreadStore(postgres_url) as store:
        for record in stamped("due", old):
            await store.save(record)
        admin = await admin_connection()
        try:
            await admin.execute("SELECT pg_advisory_lock($1)", _lock_key(schema_of(postgres_url), "sweep"))
            held = await store.purge(idle_before=NOW)
            async with Host(order_agent, store=store, retain=30 * 86400.0, clock=lambda: NOW) as host:
                swept = await host.sweep()  # the host's sweep says so too, and does nothing
            still_there = await store.load("due")
            await admin.execute("SELECT pg_advisory_unlock_all()")
        finally:
            await admin.close()
        free = await store.purge(idle_before=NOW)
    assert (held.swept, held.threads) == (False, 0) and (swept.swept, swept.threads) == (False, 0)
    assert still_there is not None
    assert (free.swept, free.threads) == (True, 1)


async def test_hosts_purging_at_once_remove_each_thread_once_and_fail_nothing(postgres_url: str) -> None:
    old = NOW - timedelta(days=40)
    stores = [PostgresThreadStore(postgres_url) for _ in range(3)]
    try:
        for index in range(60):
            await stores[0].save(attrs.evolve(stamped(f"t{index}", old)[-1], version=1))  # at rest, due
        removed: list[int] = []

        async def sweep(store: PostgresThreadStore) -> None:
            while True:
                purged = await store.purge(idle_before=NOW, limit=7)
                removed.append(purged.threads)
                if purged.swept and purged.threads < 7:
                    return
                await anyio.sleep(0)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for store in stores:
                    group.start_soon(sweep, store)
        assert sum(removed) == 60
        assert all([await stores[1].load(f"t{index}") is None for index in range(60)])
    finally:
        for store in stores:
            await store.aclose()


async def test_a_version_3_schema_is_migrated_and_its_threads_count_as_saved_then(postgres_url: str) -> None:
    s = schema_of(postgres_url)
    record = scenario_records("thread-1")[-1]
    admin = await admin_connection()
    try:
        await admin.execute(f"CREATE SCHEMA {s}")
        await admin.execute(f"CREATE TABLE {s}.schema_version (version integer PRIMARY KEY, applied_at timestamptz)")
        for version in (1, 2, 3):
            await admin.execute(_MIGRATIONS[version - 1].format(s=s))
            await admin.execute(f"INSERT INTO {s}.schema_version (version) VALUES ($1)", version)
        await admin.execute(
            f"SELECT * FROM {s}.save_thread($1, 1, $2, $3, $4, $5, 0, NULL, NULL)",
            "thread-1",
            record.state.value,
            record.owner,
            orjson.dumps(record_to_dict(attrs.evolve(record, version=1))).decode(),
            [],
        )
        before = await admin.fetchval("SELECT now()")
    finally:
        await admin.close()
    async with PostgresThreadStore(postgres_url) as store:
        assert await store.load("thread-1") == attrs.evolve(record, version=1)
        assert (await store.purge(idle_before=before)).threads == 0  # nothing goes before its time
        assert (await store.purge(idle_before=before + timedelta(days=1))).threads == 1
    admin = await admin_connection()
    try:
        # A host still on the older agui-core saves as it did: its thread counts as used now.
        saved = await admin.fetchrow(
            f"SELECT * FROM {s}.save_thread($1, 1, $2, NULL, $3, $4, 0, NULL, NULL)",
            "old-host",
            record.state.value,
            orjson.dumps(record_to_dict(attrs.evolve(record, thread_id="old-host", version=1))).decode(),
            [],
        )
        assert saved["saved"] and await admin.fetchval(f"SELECT saved_at >= $1 FROM {s}.threads", before)
        versions = [r["version"] for r in await admin.fetch(f"SELECT version FROM {s}.schema_version ORDER BY 1")]
        # The audit trail stays append-only for everyone but a purge.
        with pytest.raises(asyncpg.RaiseError, match="append-only"):
            await admin.execute(f"DELETE FROM {s}.audit")
    finally:
        await admin.close()
    assert versions == [1, 2, 3, 4]


async def session_of(connection: Any) -> dict[str, Any]:
    """What a session may hold beyond its statements' results: locks, cursors, listeners,
    temporary tables, settings changed since it began, an open transaction."""
    row = await connection.fetchrow(
        "SELECT (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory') AS locks,"
        " (SELECT count(*) FROM pg_cursors WHERE name <> '') AS cursors,"  # '': this query's own portal
        " (SELECT count(*) FROM pg_listening_channels()) AS listening,"
        " pg_my_temp_schema()::int AS temp_schema,"
        " (SELECT array_agg(name ORDER BY name) FROM pg_settings WHERE source = 'session') AS set_here,"
        " pg_backend_pid() AS pid"
    )
    return {**dict(row), "in_transaction": connection.is_in_transaction()}


async def test_the_store_leaves_nothing_in_a_session_so_its_pool_resets_none(postgres_url: str) -> None:
    # The pool hands connections back as they are (no RESET ALL, CLOSE ALL, UNLISTEN, unlock):
    # right only if no call of the store leaves anything in its session. One connection serves
    # every call here, and after each one its session is as a fresh one's.
    old = NOW - timedelta(days=40)
    records = stamped("kept", old)
    async with named_store(postgres_url, min_size=1, max_size=1) as store:
        calls: list[tuple[str, Callable[[], Any]]] = [
            ("load, before the schema exists", lambda: store.load("kept")),
            *((f"save v{r.version}", lambda r=r: store.save(r)) for r in records),
            ("load", lambda: store.load("kept")),
            ("owner_of", lambda: store.owner_of("kept")),
            ("thread_of_interrupt", lambda: store.thread_of_interrupt("kept-int")),
            ("audit", lambda: store.audit("kept")),
            ("waiting", lambda: store.waiting("someone")),
            ("renew_lease", lambda: store.renew_lease("kept", "run-x", NOW)),
            ("purge", lambda: store.purge(idle_before=NOW)),
        ]
        seen: list[dict[str, Any]] = []
        for what, call in calls:
            await call()
            async with store._pool.acquire() as connection:
                seen.append({"after": what, **await session_of(connection)})
        with pytest.raises(VersionConflict):  # purged: version 2 finds no version 1 to follow
            await store.save(records[1])
        async with store._pool.acquire() as connection:
            seen.append({"after": "a save in conflict", **await session_of(connection)})
    pid = seen[0]["pid"]
    fresh = {"locks": 0, "cursors": 0, "listening": 0, "temp_schema": 0, "set_here": None, "in_transaction": False}
    admin = await admin_connection()
    try:
        assert {k: v for k, v in (await session_of(admin)).items() if k in fresh} == fresh  # what a new one holds
    finally:
        await admin.close()
    assert [s for s in seen if {k: s[k] for k in fresh} != fresh or s["pid"] != pid] == []


async def test_concurrent_saves_share_one_statement_and_a_bad_one_fails_alone(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    firsts = [scenario_records(f"batch-{n}")[0] for n in range(8)]
    bad = attrs.evolve(firsts[3], thread_id="batch-\x00")  # text PostgreSQL refuses: the server fails it
    stale = firsts[0]  # saved below: saving version 1 again is a conflict, in a batch as alone
    outcomes: dict[str, object] = {}
    async with PostgresThreadStore(postgres_url, min_size=1, max_size=2) as store:
        await store.save(stale)

        async def save(record: Any, key: str) -> None:
            try:
                await store.save(record)
                outcomes[key] = "saved"
            except Exception as exc:  # what each caller sees of its own save
                outcomes[key] = type(exc).__name__

        with caplog.at_level("INFO", logger="agui_core.store.postgres"), anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(save, firsts[1], "first")  # finds no batch running: goes alone
                group.start_soon(save, stale, "stale")
                group.start_soon(save, bad, "bad")
                for n in (2, 4, 5, 6, 7):
                    group.start_soon(save, firsts[n], f"batch-{n}")
        loaded = [await store.load(f"batch-{n}") for n in range(8) if n != 3]
        # The seven that waited went as one statement, which the bad one made the server refuse.
        assert "a batch of 7 saves was refused" in caplog.text
        caplog.clear()
        seconds = {n: scenario_records(f"batch-{n}")[1] for n in range(8) if n != 3}
        with caplog.at_level("DEBUG", logger="agui_core.store.postgres"), anyio.fail_after(30):
            async with anyio.create_task_group() as group:  # a batch the server takes whole
                for n, record in seconds.items():
                    group.start_soon(save, record, f"again-{n}")
        again = [await store.load(f"batch-{n}") for n in seconds]
    assert "refused" not in caplog.text and "saved a batch of 6 saves in one statement" in caplog.text
    assert [record.version if record else None for record in again] == [2] * 7
    assert [outcomes.pop(f"again-{n}") for n in seconds] == ["saved"] * 7
    assert outcomes == {
        "first": "saved",
        "stale": "VersionConflict",
        "bad": "StoreError",
        **{f"batch-{n}": "saved" for n in (2, 4, 5, 6, 7)},
    }
    assert [record.version if record else None for record in loaded] == [1] * 7
