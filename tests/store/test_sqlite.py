"""Tests for agui_core.store.sqlite: the file, its tables, corrupt rows, locks, two stores on one file.

The contract shared with the memory store is in ``test_store_contract.py``; real processes
are in ``test_sqlite_processes.py``.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import attrs
import orjson
import pytest

from agui_core.machine.record import ThreadRecord, record_to_dict
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.store import SqliteThreadStore, StoreError, VersionConflict
from agui_core.store.sqlite import SCHEMA_VERSION
from tests.machine.driver import NOW, make_input
from tests.store.scenario import (
    ANSWERED,
    CANCELLED,
    RAISED,
    approval_resume,
    persisted,
    scenario_records,
)

pytestmark = pytest.mark.anyio

RECORDS = scenario_records("thread-1")


def raw(path: Path) -> sqlite3.Connection:
    """A plain connection to the file, as an operator's tool would open it."""
    return sqlite3.connect(path, isolation_level=None)


async def saved_file(path: Path, upto: int = len(RECORDS)) -> None:
    async with SqliteThreadStore(path) as store:
        for record in RECORDS[:upto]:
            await store.save(record)


async def test_the_file_is_in_wal_mode_with_the_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 1)
    with raw(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"threads", "messages", "interrupts", "audit", "leases", "purged_audit"}


async def test_nothing_touches_the_file_before_the_first_call(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    store = SqliteThreadStore(path)
    assert not path.exists()
    assert await store.load("x") is None
    assert path.exists()
    await store.aclose()


def test_synchronous_must_be_full_or_normal(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="synchronous"):
        SqliteThreadStore(tmp_path / "x.db", synchronous="OFF")  # type: ignore[arg-type]


async def test_a_row_is_the_record_as_json_text_with_its_version_and_state(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 2)
    with raw(path) as db:
        version, state, text, queried = db.execute(
            "SELECT version, state, record, json_extract(record, '$.open[0].interrupt.id') FROM threads"
        ).fetchone()
        messages = [orjson.loads(m) for (m,) in db.execute("SELECT message FROM messages ORDER BY seq")]
    assert (version, state, queried) == (2, "INTERRUPTED", "thread-1-approve")
    # The messages have rows of their own; the record counts them.
    expected = record_to_dict(RECORDS[1])
    assert messages == expected.pop("messages")
    # So has the audit trail (its table, below): the record counts its entries.
    resolved = expected.pop("resolved")
    assert orjson.loads(text) == {**expected, "messageCount": len(messages), "resolvedCount": len(resolved)}


async def test_the_audit_table_answers_an_operator_in_plain_sql(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path)
    with raw(path) as db:
        rows = db.execute(
            "SELECT seq, interrupt_id, reason, raised_in, raised_at, status, answered_in, answered_at,"
            " outcome,"
            " json_extract(entry, '$.payload.approved') FROM audit WHERE thread_id = 'thread-1' ORDER BY seq"
        ).fetchall()
    raised, answered, cancelled = RAISED.isoformat(), ANSWERED.isoformat(), CANCELLED.isoformat()
    assert rows == [
        (
            0,
            "thread-1-approve",
            "tool_call",
            "thread-1-run-1",
            raised,
            "resolved",
            "thread-1-run-2",
            answered,
            "interrupt",
            1,
        ),
        (
            1,
            "thread-1-confirm",
            "confirmation",
            "thread-1-run-2",
            answered,
            "cancelled",
            "thread-1-run-3",
            cancelled,
            "success",
            None,
        ),
    ]


async def test_a_new_store_on_the_file_finds_everything(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path)
    async with SqliteThreadStore(path, synchronous="NORMAL") as again:
        loaded = await again.load("thread-1")
        assert loaded is not None
        assert orjson.dumps(record_to_dict(loaded)) == orjson.dumps(record_to_dict(RECORDS[-1]))
        assert list(await again.audit("thread-1")) == list(RECORDS[-1].resolved)
        assert await again.thread_of_interrupt("thread-1-confirm") == "thread-1"


async def test_the_audit_trail_only_grows(tmp_path: Path) -> None:
    # A later record that forgot its history cannot erase the audit trail.
    path = tmp_path / "threads.db"
    await saved_file(path)
    async with SqliteThreadStore(path) as store:
        await store.save(attrs.evolve(RECORDS[-1], version=len(RECORDS) + 1, resolved=()))
        assert [r.interrupt.id for r in await store.audit("thread-1")] == [
            "thread-1-approve",
            "thread-1-confirm",
        ]


@pytest.mark.parametrize(
    ("column", "value", "why"),
    [
        ("record", "{not json", "corrupt"),
        ("record", "{}", "corrupt"),
        ("record", '{"threadId": "thread-1", "version": "two"}', "corrupt"),
        ("version", 9, "its row says version 9"),
    ],
)
async def test_a_corrupt_row_is_an_error_naming_the_thread_and_is_left_alone(
    tmp_path: Path, column: str, value: object, why: str
) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 2)
    with raw(path) as db:
        db.execute(f"UPDATE threads SET {column} = ?", (value,))
        before = db.execute("SELECT version, record FROM threads").fetchone()
    async with SqliteThreadStore(path) as store:
        with pytest.raises(StoreError, match=why) as info:
            await store.load("thread-1")
        assert "'thread-1'" in info.value.message
    with raw(path) as db:
        assert db.execute("SELECT version, record FROM threads").fetchone() == before


async def test_a_corrupt_audit_row_is_an_error_naming_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path)
    with raw(path) as db:
        db.execute("UPDATE audit SET entry = '[' WHERE seq = 1")
    async with SqliteThreadStore(path) as store:
        with pytest.raises(StoreError, match="audit trail of thread 'thread-1' is corrupt"):
            await store.audit("thread-1")


async def test_a_record_that_is_not_json_is_refused_and_nothing_is_saved(tmp_path: Path) -> None:
    async with SqliteThreadStore(tmp_path / "threads.db") as store:
        await store.save(RECORDS[0])
        with pytest.raises(StoreError, match="cannot be written as JSON"):
            await store.save(attrs.evolve(RECORDS[1], agent_state={"a set": {1, 2}}))
        assert await store.load("thread-1") == RECORDS[0]
        await store.save(RECORDS[1])


async def test_a_file_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with raw(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    async with SqliteThreadStore(path) as store:
        with pytest.raises(StoreError, match="schema version"):
            await store.load("thread-1")


async def test_a_writer_waits_for_another_to_finish(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 1)
    holder = raw(path)
    holder.execute("BEGIN IMMEDIATE")
    async with SqliteThreadStore(path, busy_timeout=30) as store:
        async with anyio.create_task_group() as group:
            group.start_soon(store.save, RECORDS[1])
            await anyio.sleep(0.05)
            holder.execute("COMMIT")
        assert await store.load("thread-1") == RECORDS[1]
    holder.close()


async def test_a_writer_that_waits_too_long_fails_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 1)
    holder = raw(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        async with SqliteThreadStore(path, busy_timeout=0.01) as store:
            with pytest.raises(StoreError, match="cannot save thread 'thread-1' version 2: database is locked"):
                await store.save(RECORDS[1])
            # Readers are not blocked by a writer in WAL mode.
            assert await store.load("thread-1") == RECORDS[0]
            holder.execute("ROLLBACK")
            await store.save(RECORDS[1])
            assert await store.load("thread-1") == RECORDS[1]
    finally:
        holder.close()


async def save_and_tell(store: SqliteThreadStore, record: ThreadRecord, outcomes: dict[str, str]) -> None:
    """Save ``record``; note under its run id whether it won or met a conflict."""
    assert record.active_run is not None
    try:
        await store.save(record)
    except VersionConflict:
        outcomes[record.active_run.run_id] = "conflict"
    else:
        outcomes[record.active_run.run_id] = "won"


async def test_two_stores_on_one_file_let_exactly_one_resume_through(tmp_path: Path) -> None:
    # Two stores have two connections and run in two worker threads at once, as two hosts would.
    path = tmp_path / "threads.db"
    await saved_file(path, 2)
    stores = [SqliteThreadStore(path), SqliteThreadStore(path)]
    for round_ in range(10):
        # Both load the interrupted record first, so both saves claim the same next version.
        contenders = []
        for n, store in enumerate(stores):
            loaded = await store.load("thread-1")
            assert loaded is not None
            machine = ThreadMachine.from_record(loaded)
            (record,) = persisted(machine.receive_input(approval_resume("thread-1", f"run-{round_}-{n}"), now=NOW))
            contenders.append((store, record))
        outcomes: dict[str, str] = {}
        async with anyio.create_task_group() as group:
            for store, record in contenders:
                group.start_soon(save_and_tell, store, record, outcomes)
        winners = [run for run, outcome in outcomes.items() if outcome == "won"]
        assert len(winners) == 1 and len(outcomes) == 2
        stored = await stores[1].load("thread-1")
        assert stored is not None and stored.active_run is not None
        assert stored.active_run.run_id == winners[0]
        # Back to the interrupted record for the next round, through the compare-and-set too.
        await stores[0].save(attrs.evolve(RECORDS[1], version=stored.version + 1))
    for store in stores:
        await store.aclose()


# -- messages in rows of their own: a save writes what changed --------------------------------


def watch_message_rows(path: Path) -> None:
    """Log every message row a store inserts or deletes, by triggers in the file itself."""
    with raw(path) as db:
        db.executescript(
            """
            CREATE TABLE written (what TEXT, seq INTEGER);
            CREATE TRIGGER inserted AFTER INSERT ON messages BEGIN INSERT INTO written VALUES ('+', NEW.seq); END;
            CREATE TRIGGER deleted AFTER DELETE ON messages BEGIN INSERT INTO written VALUES ('-', OLD.seq); END;
            """
        )


def written(path: Path) -> list[str]:
    """The message rows written since last asked, as ``+seq`` and ``-seq``."""
    with raw(path) as db:
        out = [f"{what}{seq}" for what, seq in db.execute("SELECT what, seq FROM written ORDER BY rowid")]
        db.execute("DELETE FROM written")
    return out


def conversation(machine: ThreadMachine, run_id: str, said: str) -> list[ThreadRecord]:
    """One run on ``machine`` that adds a user message and an answer; the records it saves."""
    records = persisted(
        machine.receive_input(
            make_input("t", run_id, messages=[{"id": f"u-{run_id}", "role": "user", "content": said}]), now=NOW
        )
    )
    for event in (
        ev.TextMessageStartEvent(message_id=f"a-{run_id}", role="assistant"),
        ev.TextMessageContentEvent(message_id=f"a-{run_id}", delta="ok"),
        ev.TextMessageEndEvent(message_id=f"a-{run_id}"),
    ):
        machine.emit(event)
    return records


@pytest.mark.parametrize("fresh_store", [False, True], ids=["same-store", "store-per-save"])
async def test_a_save_appends_new_messages_and_rewrites_only_what_changed(tmp_path: Path, fresh_store: bool) -> None:
    path = tmp_path / "threads.db"
    machine = ThreadMachine("t")
    store = SqliteThreadStore(path)

    async def run(records: list[ThreadRecord]) -> list[str]:
        nonlocal store
        for record in records:
            if fresh_store:  # nothing remembered: the rows' digests say what is stored
                await store.aclose()
                store = SqliteThreadStore(path)
            await store.save(record)
            assert await SqliteThreadStore(path).load("t") == record
        return written(path)

    (started,) = conversation(machine, "run-1", "first")
    await store.save(started)
    watch_message_rows(path)
    assert await run(persisted(machine.finish())) == ["+0", "+1"]
    # Appended: the rows already there are not written again, in the run or at its end.
    assert await run(conversation(machine, "run-2", "second")) == []
    assert await run(persisted(machine.finish())) == ["+2", "+3"]
    # A failed run goes back to where the thread stood: nothing of it was written.
    assert await run(conversation(machine, "run-3", "third")) == []
    assert await run(persisted(machine.fail("boom"))) == []
    # An agent's MESSAGES_SNAPSHOT that changes an early message rewrites from there on.
    await run(conversation(machine, "run-4", "fourth"))
    changed = (*machine.messages[:1], attrs.evolve(machine.messages[1], content="changed"), *machine.messages[2:])
    machine.emit(ev.MessagesSnapshotEvent(messages=changed))
    assert await run(persisted(machine.finish())) == ["-1", "-2", "-3", "+1", "+2", "+3", "+4", "+5"]
    assert [m.id for m in machine.messages] == ["u-run-1", "a-run-1", "u-run-2", "a-run-2", "u-run-4", "a-run-4"]
    # A thread saved as shorter than stored (a record built by hand, say) loses the rest.
    shorter = attrs.evolve(machine.record(), version=machine.version + 1, messages=machine.messages[:2])
    assert await run([shorter]) == ["-2", "-3", "-4", "-5"]
    await store.aclose()


async def test_a_message_count_that_disagrees_with_the_rows_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 2)
    with raw(path) as db:
        db.execute("DELETE FROM messages WHERE seq = 1")
    async with SqliteThreadStore(path) as store:
        with pytest.raises(StoreError, match="thread 'thread-1' is corrupt"):
            await store.load("thread-1")


_SCHEMA_1 = """
CREATE TABLE threads (thread_id TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, state TEXT NOT NULL,
    record TEXT NOT NULL);
CREATE TABLE interrupts (interrupt_id TEXT PRIMARY KEY NOT NULL, thread_id TEXT NOT NULL);
CREATE TABLE audit (thread_id TEXT NOT NULL, seq INTEGER NOT NULL, interrupt_id TEXT NOT NULL,
    reason TEXT NOT NULL, raised_in TEXT NOT NULL, raised_at TEXT, status TEXT NOT NULL, answered_in TEXT,
    answered_at TEXT, outcome TEXT, entry TEXT NOT NULL, PRIMARY KEY (thread_id, seq));
PRAGMA user_version = 1;
"""


async def test_a_version_1_file_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    with raw(path) as db:  # a file as agui-core wrote it before messages had rows of their own
        db.executescript(_SCHEMA_1)
        record = RECORDS[-1]
        db.execute(
            "INSERT INTO threads VALUES (?, ?, ?, ?)",
            (record.thread_id, record.version, record.state.value, orjson.dumps(record_to_dict(record)).decode()),
        )
        db.execute("INSERT INTO threads VALUES ('broken', 1, 'IDLE', '[')")
    async with SqliteThreadStore(path) as store:
        assert await store.load(record.thread_id) == record
        with pytest.raises(StoreError, match="'broken' is corrupt"):
            await store.load("broken")
        assert record.state.value == "IDLE"
        machine = ThreadMachine.from_record(record)
        said = {"id": "after", "role": "user", "content": "and now?"}
        for saved in persisted(machine.receive_input(make_input(record.thread_id, "r-9", messages=[said]), now=NOW)):
            await store.save(saved)
        for saved in persisted(machine.finish()):
            await store.save(saved)
        assert await SqliteThreadStore(path).load(record.thread_id) == machine.record()
    with raw(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        (text,) = db.execute("SELECT record FROM threads WHERE thread_id = ?", (record.thread_id,)).fetchone()
        assert "messages" not in orjson.loads(text)
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (len(record.messages) + 1,)


async def test_what_a_store_remembers_never_hides_another_writer(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    async with SqliteThreadStore(path) as first, SqliteThreadStore(path) as second:
        await first.save(RECORDS[0])
        assert await first.load("thread-1") is RECORDS[0]  # remembered: nothing read but the version
        assert await second.load("thread-1") == RECORDS[0]
        for record in RECORDS[1:4]:
            await second.save(record)
        assert await first.load("thread-1") == RECORDS[3]
        for record in RECORDS[4:]:
            await first.save(record)
        assert await second.load("thread-1") == RECORDS[-1]
    async with SqliteThreadStore(path) as third:
        assert await third.load("thread-1") == RECORDS[-1]


async def test_a_renewal_writes_the_leases_row_only(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 3)  # run-2 in progress (saved without a lease)
    with raw(path) as db:
        before = db.execute("SELECT version, record FROM threads").fetchall()
    async with SqliteThreadStore(path) as store:
        # An instant in another time zone is kept in UTC, so that text order is time order.
        until = datetime(2026, 4, 20, 14, 0, 10, tzinfo=timezone(timedelta(hours=2)))
        assert await store.renew_lease("thread-1", "thread-1-run-2", until) is True
    with raw(path) as db:
        assert db.execute("SELECT version, record FROM threads").fetchall() == before
        assert db.execute("SELECT * FROM leases").fetchall() == [
            ("thread-1", "thread-1-run-2", "2026-04-20T12:00:10.000000+00:00")
        ]


async def test_a_file_of_schema_version_1_gets_the_leases_table(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path, 3)
    with raw(path) as db:  # no leases table, as version 1 had (its records are already version 3 here)
        db.execute("DROP TABLE leases")
        db.execute("PRAGMA user_version = 1")
    async with SqliteThreadStore(path) as store:
        assert await store.load("thread-1") == RECORDS[2]
        # A run saved by a host from before leases: found with no lease, renewed once saved again.
        assert await store.renew_lease("thread-1", "thread-1-run-2", NOW) is False
        await store.save(RECORDS[3])
        assert await store.renew_lease("thread-1", "thread-1-run-2", NOW) is True
    with raw(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (4,)


async def test_a_save_encodes_only_the_messages_it_does_not_share_with_the_record_it_remembers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agui_core.protocol.types import UserMessage
    from agui_core.store import sqlite as sqlite_module

    encoded: list[str] = []
    encode = sqlite_module._message_json

    def counting(message: Any) -> bytes:
        encoded.append(message.id)
        return encode(message)

    monkeypatch.setattr(sqlite_module, "_message_json", counting)
    thread = tuple(UserMessage(id=f"u-{n}", content=f"said {n}") for n in range(300))
    record = ThreadRecord(thread_id="t", version=1, messages=thread, owner="anonymous")
    path = tmp_path / "threads.db"
    async with SqliteThreadStore(path) as store:
        await store.save(record)
        assert len(encoded) == 300
        encoded.clear()
        # A thread machine hands the same message objects on, and appends.
        grown = attrs.evolve(record, version=2, messages=(*thread, UserMessage(id="u-new", content="and more")))
        await store.save(grown)
        assert encoded == ["u-new"]
        encoded.clear()
        # Taken back to where it was (a failed run): nothing encoded, one row deleted.
        await store.save(attrs.evolve(grown, version=3, messages=thread))
        assert encoded == ["u-new"]  # only to count the bytes it no longer holds
    with raw(path) as db:
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (300,)
    async with SqliteThreadStore(path) as store:
        assert await store.load("t") == attrs.evolve(record, version=3)


# -- retention -------------------------------------------------------------------------------


def stamped(thread_id: str, at: datetime, owner: str | None = None) -> list[ThreadRecord]:
    """A scenario thread's records (ending at rest) as a host saves them, each saved at ``at``."""
    return [
        attrs.evolve(r, saved_at=at.isoformat(), owner=owner if owner is not None else r.owner)
        for r in scenario_records(thread_id)
    ]


async def test_a_version_3_file_is_migrated_and_its_threads_count_as_saved_then(tmp_path: Path) -> None:
    path = tmp_path / "threads.db"
    await saved_file(path)
    with raw(path) as db:  # the file as version 3 left it: no saved_at, nothing a purge reads
        for index in ("threads_at_rest", "interrupts_by_thread", "purged_audit_by_age"):
            db.execute(f"DROP INDEX {index}")
        db.execute("DROP TABLE purged_audit")
        db.execute("ALTER TABLE threads DROP COLUMN saved_at")
        db.execute("ALTER TABLE threads DROP COLUMN owner")
        db.execute("PRAGMA user_version = 3")
    before = datetime.now(UTC)
    async with SqliteThreadStore(path) as store:
        assert await store.load("thread-1") == RECORDS[-1]
        assert await store.owner_of("thread-1") == RECORDS[-1].owner == "anonymous"
        assert (await store.purge(idle_before=before - timedelta(seconds=1))).threads == 0
        assert (await store.purge(idle_before=before + timedelta(minutes=1))).threads == 1
    with raw(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (4,)


async def test_a_thread_purged_and_begun_again_elsewhere_is_not_mistaken_for_the_one_remembered(
    tmp_path: Path,
) -> None:
    # Two stores on one file, as two processes: each remembers the records it saw. One purges
    # a thread and saves a new one on its id, up to the same version; the other must not hand
    # back the old thread it remembers (another owner's conversation).
    path = tmp_path / "threads.db"
    old, new = stamped("t", NOW - timedelta(days=40), "ann"), stamped("t", NOW, "eve")
    async with SqliteThreadStore(path) as first, SqliteThreadStore(path) as second:
        for record in old:
            await first.save(record)
        assert await second.load("t") == old[-1]  # remembered by the second store now
        assert (await first.purge(idle_before=NOW - timedelta(days=30))).threads == 1
        for record in new:
            await first.save(record)
        assert await second.load("t") == new[-1]
        assert list(await second.audit("t")) == list(new[-1].resolved)


async def test_two_stores_purging_one_file_at_once_take_turns_and_remove_each_thread_once(
    tmp_path: Path,
) -> None:
    # SQLite lets one writer in at a time: each purge is one write transaction, so the second
    # waits for the first and finds what it left. Running both is harmless; that is why.
    path = tmp_path / "threads.db"
    async with SqliteThreadStore(path) as first, SqliteThreadStore(path) as second:
        for index in range(60):
            await first.save(attrs.evolve(stamped(f"t{index}", NOW - timedelta(days=40))[-1], version=1))
        removed: list[int] = []

        async def sweep(store: SqliteThreadStore) -> None:
            while (purged := await store.purge(idle_before=NOW, limit=7)).threads:
                removed.append(purged.threads)

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(sweep, first)
                group.start_soon(sweep, second)
    assert sum(removed) == 60
    with raw(path) as db:
        assert db.execute("SELECT count(*) FROM threads").fetchone() == (0,)
