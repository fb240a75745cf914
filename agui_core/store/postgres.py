"""PostgresThreadStore: threads in PostgreSQL, shared by any number of hosts on any number of machines.

Needs the ``postgres`` extra (``pip install 'agui-core[postgres]'``: the asyncpg driver) and an
asyncio event loop (the host's). Everything lives in one schema of the database (``agui``
unless told otherwise), which the store creates and migrates itself:

``schema_version(version, applied_at)``
    one row per migration applied; a schema newer than this agui-core reads is refused.
``threads(thread_id, version, state, owner, record, saved_at)``
    one row per thread: its last record as JSON (:func:`record_to_dict`, kept as text, byte for
    byte), the record's version (the compare-and-set key), its state and its owner (so an
    operator can query them), and when it was last saved (the record's ``saved_at``; ``NULL``:
    its saver did not say). The partial index ``threads_at_rest`` (``saved_at`` of the threads
    in state ``IDLE``) finds what a purge removes.
``interrupts(interrupt_id, thread_id)``
    every interrupt ever raised, open or closed, and its thread (``THREAD_MISMATCH``); indexed
    by thread too (``interrupts_by_thread``), for a purge.
``audit(thread_id, seq, interrupt_id, reason, raised_in, raised_at, status, answered_in, answered_at, outcome, entry)``
    the audit trail, one row per closed interrupt in the order it was closed, the whole entry
    as JSON in ``entry``. Rows are only ever added: a later save cannot rewrite history, and a
    trigger refuses every change or removal but a purge's (:meth:`PostgresThreadStore.purge`).
``purged_audit(thread_id, owner, last_saved_at, entries)``
    the audit trails of purged threads kept longer than the threads: one row per trail, its
    entries as a JSON array, until ``last_saved_at`` (the thread's last save) passes the audit
    cutoff. For the operator: no host serves them.
``threads_waiting``
    a partial index of the interrupted threads by owner: the approval console's inbox
    (:meth:`PostgresThreadStore.waiting`).
``leases(thread_id, run_id, until)``
    one row per thread with a run in progress: the run, and until when its host holds the
    thread. Each save writes it in its transaction (keeping the later lease when the run is
    the same); a renewal is one ``UPDATE`` of this small row alone, never of the record, and a
    load reads it with the record in the same statement.

One round trip per call. A save is one call of the server-side function ``save_thread``: in
one transaction it does the compare-and-set on the version (an ``UPDATE ... WHERE version =``
the previous one, or an ``INSERT`` for version 1), keeps when the thread was saved, holds the
run's lease, indexes the record's interrupts, and
appends the audit rows of the interrupts closed since the last save (read from the record's
JSON on the server, so the hot path sends the record once). Two hosts saving the same
version serialise on the thread's row, and exactly one moves the thread on; the other gets
:class:`~agui_core.store.base.VersionConflict`. A load is one ``SELECT``.

Saves made at the same moment share a round trip and a commit: while one batch of saves is
at the server, the saves that arrive wait and go together as the next, one statement that
calls ``save_thread`` for each, in the order of their threads. Each is still its own
compare-and-set (a conflict is that save's alone); a batch the server refuses as a whole
is sent again one save at a time, so the save at fault fails alone. Connections go back to
the pool without asyncpg's reset: the store leaves nothing in a session to reset.

Migrations. The first call of a store checks the schema version; a schema that is missing or
older is created or migrated inside a transaction holding an advisory lock named after the
schema, so hosts starting together migrate once, one after the other, and a migration either
happens whole or not at all.

Retention. A purge is one call of the server-side function ``purge_threads``, in one
transaction: it takes a transaction-level advisory lock named after the schema's sweep with
``pg_try_advisory_xact_lock``, so when hosts sharing the schema purge at the same moment one
does and the others return at once (``swept=False``); it locks the due rows it removes
(``FOR UPDATE SKIP LOCKED``: a thread being saved right now is left for the next purge), so a
save racing the removal of its thread waits for it and finds the thread gone (a
``VersionConflict``), or was first and the thread is no longer due.

Connection loss. A call that fails for the connection (lost, refused, timed out after
``timeout`` seconds) raises :class:`~agui_core.store.base.StoreError`. A save whose outcome is
unknown (the connection went away after the statement left) is never reported as done: it
raises ``StoreError`` whether or not it committed, and the host fails the run from what the
store then holds. Reads are retried once on a fresh connection, since reading twice is
harmless; saves are never retried. A pooled connection that died while idle is replaced when
it is next taken, so losing one costs no run.

Text in PostgreSQL cannot hold the character U+0000: a thread or interrupt id containing it
cannot be saved (``StoreError``); inside messages and state it is escaped in the JSON and
kept.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal, Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import orjson

from agui_core.machine.record import (
    ANONYMOUS,
    ResolvedInterrupt,
    ThreadRecord,
    record_from_dict,
    record_to_dict,
    resolved_from_dicts,
)
from agui_core.store.base import (
    AUDIT_MARGIN,
    Purged,
    StoreError,
    VersionConflict,
    WaitingThread,
    audit_lines_since,
    check_claim,
    check_purge,
    extend_lease,
    saved_instant,
    waiting_from_json,
)

try:
    import asyncpg
except ImportError as exc:  # pragma: no cover - the extra is part of the test install
    raise ImportError("PostgresThreadStore needs asyncpg: pip install 'agui-core[postgres]'") from exc

__all__ = ["DEFAULT_SCHEMA", "SCHEMA_VERSION", "PostgresThreadStore"]

log = logging.getLogger("agui_core.store.postgres")

SCHEMA_VERSION = 4
"""The layout of the schema, kept in its ``schema_version`` table; a newer schema is refused."""

DEFAULT_SCHEMA = "agui"

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

# Migration n takes the schema from version n - 1 to n. "{s}" stands for the schema's name.
_MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE {s}.threads (
        thread_id text PRIMARY KEY,
        version bigint NOT NULL,
        state text NOT NULL,
        owner text,
        record json NOT NULL
    );
    CREATE TABLE {s}.interrupts (
        interrupt_id text PRIMARY KEY,
        thread_id text NOT NULL
    );
    CREATE TABLE {s}.audit (
        thread_id text NOT NULL,
        seq integer NOT NULL,
        interrupt_id text NOT NULL,
        reason text NOT NULL,
        raised_in text NOT NULL,
        raised_at text,
        status text NOT NULL,
        answered_in text,
        answered_at text,
        outcome text,
        entry json NOT NULL,
        PRIMARY KEY (thread_id, seq)
    );
    -- The audit trail only grows: rows can be added, never changed or taken away.
    CREATE FUNCTION {s}.audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'the audit trail is append-only';
    END $$;
    CREATE TRIGGER audit_is_append_only BEFORE UPDATE OR DELETE ON {s}.audit
        FOR EACH STATEMENT EXECUTE FUNCTION {s}.audit_is_append_only();

    -- A save, whole, in one call: the compare-and-set, the interrupt index, the audit rows.
    -- saved is false on a conflict, and stored is then the version stored (NULL: none).
    CREATE FUNCTION {s}.save_thread(
        p_thread_id text,
        p_version bigint,
        p_state text,
        p_owner text,
        p_record json,
        p_interrupt_ids text[],
        p_resolved integer,
        OUT saved boolean,
        OUT stored bigint
    ) LANGUAGE plpgsql AS $$
    DECLARE
        known integer;
    BEGIN
        IF p_version = 1 THEN
            INSERT INTO {s}.threads (thread_id, version, state, owner, record)
            VALUES (p_thread_id, 1, p_state, p_owner, p_record)
            ON CONFLICT (thread_id) DO NOTHING;
        ELSE
            UPDATE {s}.threads SET version = p_version, state = p_state, owner = p_owner, record = p_record
            WHERE thread_id = p_thread_id AND version = p_version - 1;
        END IF;
        saved := FOUND;
        IF NOT saved THEN
            SELECT t.version INTO stored FROM {s}.threads AS t WHERE t.thread_id = p_thread_id;
            RETURN;
        END IF;
        -- An id already known keeps the thread that raised it first (interrupt ids are
        -- unique per thread, not across threads).
        INSERT INTO {s}.interrupts (interrupt_id, thread_id)
        SELECT id, p_thread_id FROM unnest(p_interrupt_ids) AS id
        ON CONFLICT (interrupt_id) DO NOTHING;
        IF p_resolved > 0 THEN
            SELECT coalesce(max(a.seq) + 1, 0) INTO known FROM {s}.audit AS a WHERE a.thread_id = p_thread_id;
            IF p_resolved > known THEN
                -- The row lock the compare-and-set took orders the saves of this thread, so
                -- no other save appends to its trail meanwhile.
                INSERT INTO {s}.audit (thread_id, seq, interrupt_id, reason, raised_in, raised_at, status,
                                       answered_in, answered_at, outcome, entry)
                SELECT p_thread_id, (n - 1)::integer, e -> 'interrupt' ->> 'id', e -> 'interrupt' ->> 'reason',
                       e ->> 'runId', e ->> 'raisedAt', e ->> 'status', e ->> 'answeredIn', e ->> 'answeredAt',
                       e ->> 'outcome', e
                FROM json_array_elements(p_record -> 'resolved') WITH ORDINALITY AS r(e, n)
                WHERE n > known;
                INSERT INTO {s}.interrupts (interrupt_id, thread_id)
                SELECT e -> 'interrupt' ->> 'id', p_thread_id
                FROM json_array_elements(p_record -> 'resolved') WITH ORDINALITY AS r(e, n)
                WHERE n > known
                ON CONFLICT (interrupt_id) DO NOTHING;
            END IF;
        END IF;
    END $$;
    """,
    """
    CREATE TABLE {s}.leases (
        thread_id text PRIMARY KEY,
        run_id text NOT NULL,
        until timestamptz
    );
    DROP FUNCTION {s}.save_thread(text, bigint, text, text, json, text[], integer);

    -- Version 1's save, and the lease of the run in progress: a save by the run that holds
    -- the row keeps the later lease (greatest ignores NULL), a new run brings its own, and a
    -- record with no run in progress lets the thread go.
    CREATE FUNCTION {s}.save_thread(
        p_thread_id text,
        p_version bigint,
        p_state text,
        p_owner text,
        p_record json,
        p_interrupt_ids text[],
        p_resolved integer,
        p_run_id text,
        p_lease_until timestamptz,
        OUT saved boolean,
        OUT stored bigint
    ) LANGUAGE plpgsql AS $$
    DECLARE
        known integer;
    BEGIN
        IF p_version = 1 THEN
            INSERT INTO {s}.threads (thread_id, version, state, owner, record)
            VALUES (p_thread_id, 1, p_state, p_owner, p_record)
            ON CONFLICT (thread_id) DO NOTHING;
        ELSE
            UPDATE {s}.threads SET version = p_version, state = p_state, owner = p_owner, record = p_record
            WHERE thread_id = p_thread_id AND version = p_version - 1;
        END IF;
        saved := FOUND;
        IF NOT saved THEN
            SELECT t.version INTO stored FROM {s}.threads AS t WHERE t.thread_id = p_thread_id;
            RETURN;
        END IF;
        IF p_run_id IS NULL THEN
            DELETE FROM {s}.leases AS l WHERE l.thread_id = p_thread_id;
        ELSE
            INSERT INTO {s}.leases AS l (thread_id, run_id, until) VALUES (p_thread_id, p_run_id, p_lease_until)
            ON CONFLICT (thread_id) DO UPDATE SET
                until = CASE WHEN l.run_id = p_run_id THEN greatest(l.until, p_lease_until) ELSE p_lease_until END,
                run_id = p_run_id;
        END IF;
        INSERT INTO {s}.interrupts (interrupt_id, thread_id)
        SELECT id, p_thread_id FROM unnest(p_interrupt_ids) AS id
        ON CONFLICT (interrupt_id) DO NOTHING;
        IF p_resolved > 0 THEN
            SELECT coalesce(max(a.seq) + 1, 0) INTO known FROM {s}.audit AS a WHERE a.thread_id = p_thread_id;
            IF p_resolved > known THEN
                INSERT INTO {s}.audit (thread_id, seq, interrupt_id, reason, raised_in, raised_at, status,
                                       answered_in, answered_at, outcome, entry)
                SELECT p_thread_id, (n - 1)::integer, e -> 'interrupt' ->> 'id', e -> 'interrupt' ->> 'reason',
                       e ->> 'runId', e ->> 'raisedAt', e ->> 'status', e ->> 'answeredIn', e ->> 'answeredAt',
                       e ->> 'outcome', e
                FROM json_array_elements(p_record -> 'resolved') WITH ORDINALITY AS r(e, n)
                WHERE n > known;
                INSERT INTO {s}.interrupts (interrupt_id, thread_id)
                SELECT e -> 'interrupt' ->> 'id', p_thread_id
                FROM json_array_elements(p_record -> 'resolved') WITH ORDINALITY AS r(e, n)
                WHERE n > known
                ON CONFLICT (interrupt_id) DO NOTHING;
            END IF;
        END IF;
    END $$;
    """,
    """
    -- The approval console's inbox: an owner's threads with open interrupts, read on every
    -- change of one of them, without walking every thread of every owner.
    CREATE INDEX threads_waiting ON {s}.threads (owner) WHERE state = 'INTERRUPTED';
    """,
    """
    -- Retention: each thread's last save, what a purge reads, and the trails it keeps apart.
    -- The threads already there count as saved now: nothing is purged before its time.
    ALTER TABLE {s}.threads ADD COLUMN saved_at timestamptz;
    UPDATE {s}.threads SET saved_at = now();
    CREATE INDEX threads_at_rest ON {s}.threads (saved_at) WHERE state = 'IDLE';
    CREATE INDEX interrupts_by_thread ON {s}.interrupts (thread_id);
    CREATE TABLE {s}.purged_audit (
        thread_id text NOT NULL,
        owner text,
        last_saved_at timestamptz NOT NULL,
        entries json NOT NULL
    );
    CREATE INDEX purged_audit_by_age ON {s}.purged_audit (last_saved_at);

    -- The audit trail stays append-only, but for the removals of a purge, which says so
    -- for its own transaction.
    CREATE OR REPLACE FUNCTION {s}.audit_is_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' AND current_setting('agui.purging', true) = 'on' THEN
            RETURN NULL;
        END IF;
        RAISE EXCEPTION 'the audit trail is append-only';
    END $$;

    -- Version 2's save, which also keeps when the thread was saved (p_saved_at, the record's own
    -- saved_at: read by the client, which has it at hand, not parsed out of the record here).
    CREATE FUNCTION {s}.save_thread(
        p_thread_id text,
        p_version bigint,
        p_state text,
        p_owner text,
        p_record json,
        p_interrupt_ids text[],
        p_resolved integer,
        p_run_id text,
        p_lease_until timestamptz,
        p_saved_at timestamptz,
        OUT saved boolean,
        OUT stored bigint
    ) LANGUAGE plpgsql AS $$
    DECLARE
        known integer;
    BEGIN
        IF p_version = 1 THEN
            INSERT INTO {s}.threads (thread_id, version, state, owner, record, saved_at)
            VALUES (p_thread_id, 1, p_state, p_owner, p_record, p_saved_at)
            ON CONFLICT (thread_id) DO NOTHING;
        ELSE
            UPDATE {s}.threads
            SET version = p_version, state = p_state, owner = p_owner, record = p_record, saved_at = p_saved_at
            WHERE thread_id = p_thread_id AND version = p_version - 1;
        END IF;
        saved := FOUND;
        IF NOT saved THEN
            SELECT t.version INTO stored FROM {s}.threads AS t WHERE t.thread_id = p_thread_id;
            RETURN;
        END IF;
        IF p_run_id IS NULL THEN
            DELETE FROM {s}.leases AS l WHERE l.thread_id = p_thread_id;
        ELSE
            INSERT INTO {s}.leases AS l (thread_id, run_id, until) VALUES (p_thread_id, p_run_id, p_lease_until)
            ON CONFLICT (thread_id) DO UPDATE SET
                until = CASE WHEN l.run_id = p_run_id THEN greatest(l.until, p_lease_until) ELSE p_lease_until END,
                run_id = p_run_id;
        END IF;
        INSERT INTO {s}.interrupts (interrupt_id, thread_id)
        SELECT id, p_thread_id FROM unnest(p_interrupt_ids) AS id
        ON CONFLICT (interrupt_id) DO NOTHING;
        IF p_resolved > 0 THEN
            SELECT coalesce(max(a.seq) + 1, 0) INTO known FROM {s}.audit AS a WHERE a.thread_id = p_thread_id;
            IF p_resolved > known THEN
                INSERT INTO {s}.audit (thread_id, seq, interrupt_id, reason, raised_in, raised_at, status,
                                       answered_in, answered_at, outcome, entry)
                SELECT p_thread_id, (n - 1)::integer, e -> 'interrupt' ->> 'id', e -> 'interrupt' ->> 'reason',
                       e ->> 'runId', e ->> 'raisedAt', e ->> 'status', e ->> 'answeredIn', e ->> 'answeredAt',
                       e ->> 'outcome', e
                FROM json_array_elements(p_record -> 'resolved') WITH ORDINALITY AS r(e, n)
                WHERE n > known;
                INSERT INTO {s}.interrupts (interrupt_id, thread_id)
                SELECT e -> 'interrupt' ->> 'id', p_thread_id
                FROM json_array_elements(p_record -> 'resolved') WITH ORDINALITY AS r(e, n)
                WHERE n > known
                ON CONFLICT (interrupt_id) DO NOTHING;
            END IF;
        END IF;
    END $$;

    -- Version 2's save stays for hosts still running an older agui-core while others migrate:
    -- what they save counts as used now, so no purge takes a thread they just used.
    CREATE OR REPLACE FUNCTION {s}.save_thread(
        p_thread_id text,
        p_version bigint,
        p_state text,
        p_owner text,
        p_record json,
        p_interrupt_ids text[],
        p_resolved integer,
        p_run_id text,
        p_lease_until timestamptz,
        OUT saved boolean,
        OUT stored bigint
    ) LANGUAGE sql AS $$
        SELECT * FROM {s}.save_thread(
            p_thread_id, p_version, p_state, p_owner, p_record, p_interrupt_ids, p_resolved, p_run_id,
            p_lease_until, now()
        )
    $$;

    -- A purge, whole, in one call (see the module docstring). swept is false when another
    -- host holds the sweep's lock: nothing was done.
    CREATE FUNCTION {s}.purge_threads(
        p_lock bigint,
        p_idle_before timestamptz,
        p_audit_before timestamptz,
        p_limit integer,
        OUT swept boolean,
        OUT threads integer,
        OUT trails integer
    ) LANGUAGE plpgsql AS $$
    DECLARE
        ids text[];
    BEGIN
        threads := 0;
        trails := 0;
        swept := pg_try_advisory_xact_lock(p_lock);
        IF NOT swept THEN
            RETURN;
        END IF;
        PERFORM set_config('agui.purging', 'on', true);
        SELECT coalesce(array_agg(t.thread_id), '{{}}') INTO ids FROM (
            SELECT thread_id FROM {s}.threads
            WHERE state = 'IDLE' AND saved_at < p_idle_before
            ORDER BY saved_at LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        ) AS t;
        threads := cardinality(ids);
        IF threads > 0 THEN
            IF p_audit_before IS NOT NULL THEN
                INSERT INTO {s}.purged_audit (thread_id, owner, last_saved_at, entries)
                SELECT t.thread_id, t.owner, t.saved_at, trail.entries
                FROM {s}.threads AS t
                JOIN (
                    SELECT a.thread_id, json_agg(a.entry ORDER BY a.seq) AS entries
                    FROM {s}.audit AS a WHERE a.thread_id = ANY (ids) GROUP BY a.thread_id
                ) AS trail USING (thread_id);
            END IF;
            DELETE FROM {s}.audit WHERE thread_id = ANY (ids);
            DELETE FROM {s}.interrupts WHERE thread_id = ANY (ids);
            DELETE FROM {s}.leases WHERE thread_id = ANY (ids);
            DELETE FROM {s}.threads WHERE thread_id = ANY (ids);
        END IF;
        IF p_audit_before IS NOT NULL THEN
            DELETE FROM {s}.purged_audit WHERE ctid IN (
                SELECT ctid FROM {s}.purged_audit WHERE last_saved_at < p_audit_before
                ORDER BY last_saved_at LIMIT p_limit
            );
            GET DIAGNOSTICS trails = ROW_COUNT;
        END IF;
    END $$;
    """,
)

assert len(_MIGRATIONS) == SCHEMA_VERSION

# What a lost, refused, reset or timed-out connection raises (asyncpg's own errors, the
# socket's, and its timeouts); a PostgresError is the server refusing a statement.
_FAILURES: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
    TimeoutError,
)
# Opening also fails on a DSN asyncpg cannot read.
_OPEN_FAILURES: tuple[type[BaseException], ...] = (*_FAILURES, ValueError)
_CONNECTION_LOST: tuple[type[BaseException], ...] = (
    asyncpg.InterfaceError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    OSError,
)


class _Save:
    """A save waiting for its batch (``args``: save_thread's), then its outcome: ``done``, and
    ``outcome`` (saved, the version stored) or the ``error`` it raises."""

    __slots__ = ("args", "done", "error", "outcome")

    def __init__(self, args: tuple[Any, ...]) -> None:
        self.args = args
        self.done = False
        self.outcome: tuple[bool, int | None] = (False, None)
        self.error: StoreError | None = None


def _unknown(save: _Save, exc: BaseException) -> StoreError:
    thread_id, version = save.args[0], save.args[1]
    error = StoreError(f"cannot save thread {thread_id!r} version {version}; whether it was saved is unknown: {exc}")
    error.__cause__ = exc
    return error


async def _keep_session(connection: Any) -> None:
    """What a connection goes back to the pool with: its session as it is.

    asyncpg resets every connection it takes back (``pg_advisory_unlock_all``, ``CLOSE ALL``,
    ``UNLISTEN *``, ``RESET ALL``: a round trip and four statements a call) unless told how.
    The store leaves nothing in a session to reset: every statement runs alone or in a
    transaction that ends with it, the only advisory locks are transaction-level ones, no
    cursor outlives its transaction, nothing listens and nothing is ``SET``. (asyncpg still
    rolls back a transaction a cancelled call left open, before this is called.)
    ``tests/store/test_postgres.py`` holds the store to that."""


def _split_schema(dsn: str) -> tuple[str, str | None]:
    """``dsn`` without its ``schema`` query parameter, and that parameter (``None``: absent)."""
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    if not schemas:
        return dsn, None
    rest = urlencode([(key, value) for key, value in query if key != "schema"])
    return urlunsplit(parts._replace(query=rest)), schemas[-1]


def _lock_key(schema: str, purpose: str = "schema") -> int:
    """The advisory lock ``schema``'s migrations (or its purges, ``purpose="sweep"``) hold:
    a stable signed 64-bit number."""
    digest = hashlib.blake2b(f"agui-core {purpose} {schema}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresThreadStore:
    """A :class:`~agui_core.store.base.ThreadStore` in the PostgreSQL database at ``dsn``.

    ``dsn`` is a libpq URL (``postgresql://user:password@host:port/database``); a ``schema``
    query parameter in it names the schema, as ``schema`` does (the argument wins; default
    ``agui``: lower-case letters, digits and ``_``). What the URL leaves out comes from libpq's
    variables, as asyncpg reads them: the password from ``PGPASSWORD`` or the file
    ``PGPASSFILE`` names (``~/.pgpass`` by default), so it need not be in the URL. The schema
    and its tables are created or migrated on first use (or by :meth:`open`). The store keeps
    a pool of ``min_size`` to ``max_size`` connections, opened on first use; a call fails with
    ``StoreError`` when a connection or a statement takes longer than ``timeout`` seconds.
    ``application_name`` is what PostgreSQL's ``pg_stat_activity`` shows for the store's
    connections.
    ``synchronous_commit`` is PostgreSQL's setting for the store's sessions: ``"on"`` (a save
    that returned survives a crash of the database server) or ``"off"`` (faster; a crash of the
    server may lose the last fraction of a second of saves, never corrupt a thread).
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        application_name: str = "agui-core",
        synchronous_commit: Literal["on", "off"] = "on",
    ) -> None:
        if synchronous_commit not in ("on", "off"):
            raise ValueError(f"synchronous_commit must be 'on' or 'off', not {synchronous_commit!r}")
        dsn, named = _split_schema(dsn)
        schema = schema if schema is not None else (named or DEFAULT_SCHEMA)
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(f"schema {schema!r}: use lower-case letters, digits and _ (63 at most)")
        self._dsn = dsn
        self._schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._timeout = timeout
        self._application_name = application_name
        self._synchronous_commit = synchronous_commit
        self._pool: Any = None
        self._opening = anyio.Lock()
        self._closed = False
        s = schema
        self._load_sql = (
            f"SELECT t.version, t.record, l.run_id, l.until FROM {s}.threads AS t"
            f" LEFT JOIN {s}.leases AS l USING (thread_id) WHERE t.thread_id = $1"
        )
        self._save_sql = f"SELECT saved, stored FROM {s}.save_thread($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        # Many saves in one statement, so one round trip and one commit: save_thread for each
        # row, in the rows' order (by thread, then version: every host takes the rows' locks
        # in one order). Each save's interrupt ids come as a JSON array (arrays of arrays of
        # text must all be of one length).
        self._save_many_sql = (
            f"SELECT s.saved, s.stored FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[],"
            " $5::json[], $6::json[], $7::integer[], $8::text[], $9::timestamptz[], $10::timestamptz[])"
            " WITH ORDINALITY AS b(thread_id, version, state, owner, record, ids, resolved, run_id, until, saved_at, n)"
            f" CROSS JOIN LATERAL {s}.save_thread(b.thread_id, b.version, b.state, b.owner, b.record,"
            " ARRAY(SELECT json_array_elements_text(b.ids)), b.resolved, b.run_id, b.until, b.saved_at) AS s"
            " ORDER BY b.n"
        )
        self._saves: list[_Save] = []  # waiting for their batch (used only from the event loop)
        self._saving: anyio.Event | None = None  # set when the batch being saved is done
        self._renew_sql = f"UPDATE {s}.leases SET until = greatest(until, $3) WHERE thread_id = $1 AND run_id = $2"
        self._interrupt_sql = f"SELECT thread_id FROM {s}.interrupts WHERE interrupt_id = $1"
        self._audit_sql = f"SELECT entry FROM {s}.audit WHERE thread_id = $1 ORDER BY seq"
        self._owner_sql = f"SELECT owner FROM {s}.threads WHERE thread_id = $1"
        self._purge_sql = f"SELECT swept, threads, trails FROM {s}.purge_threads($1, $2, $3, $4)"
        self._waiting_sql = (
            f"SELECT thread_id, record->'open' FROM {s}.threads WHERE owner = $1 AND state = 'INTERRUPTED'"
            " ORDER BY record->'open'->0->>'raisedAt' DESC NULLS LAST, thread_id DESC LIMIT $2"
        )
        self._audit_since_sql = (
            f"SELECT thread_id, entry FROM {s}.audit WHERE answered_at >= $1 ORDER BY answered_at, thread_id, seq"
        )
        self._all_waiting_sql = (
            f"SELECT thread_id, owner, record->'open' FROM {s}.threads WHERE state = 'INTERRUPTED'"
            " ORDER BY record->'open'->0->>'raisedAt' DESC NULLS LAST, thread_id DESC LIMIT $1"
        )
        self._ledger_made = False
        self._claim_sql = (
            f"INSERT INTO {s}.deliveries AS d (key, holder, until, attempts) VALUES ($1, $2, $3, 1)"
            " ON CONFLICT (key) DO UPDATE SET holder = $2, until = $3, attempts = d.attempts + 1"
            " WHERE NOT d.delivered AND d.until <= $4 RETURNING attempts"
        )
        self._delivered_sql = (
            f"UPDATE {s}.deliveries SET holder = NULL, delivered = true WHERE key = $1 AND holder = $2"
        )
        self._retry_sql = (
            f"UPDATE {s}.deliveries SET holder = NULL, until = coalesce($3, '-infinity'::timestamptz)"
            " WHERE key = $1 AND holder = $2"
        )

    @property
    def schema(self) -> str:
        return self._schema

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the pool and the schema ------------------------------------------------------------

    async def _connected(self) -> Any:
        """The pool, opened (and the schema migrated) on first use."""
        if self._closed:
            raise StoreError("the thread store is closed")
        if self._pool is not None:
            return self._pool
        async with self._opening:
            if self._pool is None:
                try:
                    pool = await asyncpg.create_pool(
                        self._dsn,
                        min_size=self._min_size,
                        max_size=self._max_size,
                        timeout=self._timeout,
                        command_timeout=self._timeout,
                        reset=_keep_session,
                        server_settings={
                            "application_name": self._application_name,
                            "synchronous_commit": self._synchronous_commit,
                        },
                    )
                except _OPEN_FAILURES as exc:
                    raise StoreError(f"cannot connect to the thread store: {exc}") from exc
                try:
                    async with pool.acquire(timeout=self._timeout) as connection:
                        await self._migrate(connection)
                except BaseException:
                    pool.terminate()
                    raise
                if self._closed:  # closed while opening
                    pool.terminate()
                    raise StoreError("the thread store is closed")
                self._pool = pool
        return self._pool

    async def _schema_version(self, connection: Any) -> int:
        table = await connection.fetchval("SELECT to_regclass($1)::text", f"{self._schema}.schema_version")
        if table is None:
            return 0
        found: int = await connection.fetchval(f"SELECT coalesce(max(version), 0) FROM {self._schema}.schema_version")
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"the thread store's schema {self._schema!r} has version {found}; "
                f"this agui-core reads up to {SCHEMA_VERSION}"
            )
        return found

    async def _migrate(self, connection: Any) -> None:
        """Bring the schema to :data:`SCHEMA_VERSION`; one host at a time, each step whole."""
        try:
            if await self._schema_version(connection) == SCHEMA_VERSION:
                return  # the usual case: no lock, no DDL, no privileges needed beyond the tables
            async with connection.transaction():
                await connection.execute("SELECT pg_advisory_xact_lock($1)", _lock_key(self._schema))
                s = self._schema
                await connection.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
                await connection.execute(
                    f"CREATE TABLE IF NOT EXISTS {s}.schema_version ("
                    " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
                )
                current = await self._schema_version(connection)
                for version in range(current + 1, SCHEMA_VERSION + 1):
                    await connection.execute(_MIGRATIONS[version - 1].format(s=s))
                    await connection.execute(f"INSERT INTO {s}.schema_version (version) VALUES ($1)", version)
        except _FAILURES as exc:
            raise StoreError(f"cannot create or migrate the thread store's schema {self._schema!r}: {exc}") from exc

    async def _read(self, what: str, method: str, query: str, *args: Any) -> Any:
        """Run a read-only query; once more on a fresh connection if the first one was lost."""
        pool = await self._connected()
        for attempt in (1, 2):
            try:
                async with pool.acquire(timeout=self._timeout) as connection:
                    return await getattr(connection, method)(query, *args)
            except _CONNECTION_LOST as exc:
                if attempt == 2 or self._closed:
                    raise StoreError(f"cannot {what}: {exc}") from exc
            except _FAILURES as exc:
                raise StoreError(f"cannot {what}: {exc}") from exc
        raise AssertionError("unreachable")

    # -- the ThreadStore interface ----------------------------------------------------------

    async def load(self, thread_id: str) -> ThreadRecord | None:
        """The last record saved for ``thread_id``, or ``None`` for a thread never saved."""
        row = await self._read(f"load thread {thread_id!r}", "fetchrow", self._load_sql, thread_id)
        if row is None:
            return None
        version, text, lease_run, lease_until = row
        try:
            record = record_from_dict(orjson.loads(text))
        # A row that is not a record fails in many ways (orjson's ValueError, a missing key,
        # cattrs' validation error groups); every one of them means a corrupt row.
        except Exception as exc:
            raise StoreError(f"the stored record of thread {thread_id!r} is corrupt: {exc!r}") from exc
        if record.thread_id != thread_id or record.version != version:
            raise StoreError(
                f"the stored record of thread {thread_id!r} is corrupt: it says thread "
                f"{record.thread_id!r} version {record.version}, its row says version {version}"
            )
        run = record.active_run
        if run is None or lease_run != run.run_id or lease_until is None:
            return record
        return extend_lease(record, lease_until.isoformat())

    async def save(self, record: ThreadRecord) -> None:
        """Save ``record`` if the stored version is ``record.version - 1``; else ``VersionConflict``.

        ``StoreError`` when the outcome is unknown (the connection failed): the record may or
        may not have been saved, and the caller must read the store to know.
        """
        thread_id = record.thread_id
        if record.version < 1:
            raise ValueError(f"thread {thread_id!r}: a saved record has version 1 or more, not {record.version}")
        saved_at = saved_instant(record)
        try:
            text = orjson.dumps(record_to_dict(record)).decode()
        except Exception as exc:
            raise StoreError(f"thread {thread_id!r}: the record cannot be written as JSON: {exc}") from exc
        ids = [o.interrupt.id for o in record.open_interrupts]
        run = record.active_run
        if run is not None:
            ids += [a.interrupt.id for a in run.answers]
        lease_until = None if run is None else run.lease_until
        try:
            lease = None if lease_until is None else datetime.fromisoformat(lease_until)
        except ValueError as exc:
            raise StoreError(f"thread {thread_id!r}: the lease {lease_until!r} is not an instant") from exc
        save = _Save(
            (
                thread_id,
                record.version,
                record.state.value,
                record.owner,
                text,
                ids,
                len(record.resolved),
                None if run is None else run.run_id,
                lease,
                saved_at,
            )
        )
        await self._batched(save)
        if save.error is not None:
            raise save.error
        saved, stored = save.outcome
        if not saved:
            raise VersionConflict(thread_id, record.version - 1, stored)

    async def _batched(self, save: _Save) -> None:
        """Wait for ``save``'s batch: the saves that arrive while a batch is saved form the next one.

        A save that finds no batch being saved takes every save waiting (itself among them)
        to the server as one batch, which gives each its outcome; the saves waiting wake when
        the batch is done, and the first without an outcome takes the next. Once a batch is
        sent it is seen through (a cancelled call still waits for it): each of its saves gets
        the outcome the server gave, never a guess.
        """
        pool = await self._connected()
        self._saves.append(save)
        try:
            while not save.done:
                if self._saving is not None:
                    await self._saving.wait()
                    continue
                self._saving = saving = anyio.Event()
                batch = self._saves[:]
                self._saves.clear()
                try:
                    with anyio.CancelScope(shield=True):
                        await self._save_batch(pool, batch)
                finally:
                    self._saving = None
                    saving.set()
        except BaseException:
            if not save.done and save in self._saves:
                self._saves.remove(save)  # cancelled before a batch took it: never sent
            raise

    async def _save_batch(self, pool: Any, batch: list[_Save]) -> None:
        """Save every save of ``batch`` in one statement and one commit; give each its outcome.

        A batch the server refuses as a whole (one save among them broke a rule of the
        schema, or two hosts' batches deadlocked) is saved again one save at a time, so the
        save at fault fails alone. A connection lost makes every outcome unknown.
        """
        try:
            if len(batch) > 1:
                batch.sort(key=lambda item: (item.args[0], item.args[1]))
                try:
                    async with pool.acquire(timeout=self._timeout) as connection:
                        rows = await connection.fetch(
                            self._save_many_sql,
                            *([item.args[i] for item in batch] for i in range(4)),
                            [item.args[4] for item in batch],
                            [orjson.dumps(item.args[5]).decode() for item in batch],
                            *([item.args[i] for item in batch] for i in range(6, 10)),
                        )
                except _CONNECTION_LOST:
                    raise
                except asyncpg.PostgresError as exc:
                    log.info("a batch of %d saves was refused (%s); saving them one at a time", len(batch), exc)
                else:
                    log.debug("saved a batch of %d saves in one statement", len(batch))
                    for item, (saved, stored) in zip(batch, rows, strict=True):
                        item.outcome, item.done = (saved, stored), True
                    return
            for item in batch:
                try:
                    async with pool.acquire(timeout=self._timeout) as connection:
                        saved, stored = await connection.fetchrow(self._save_sql, *item.args)
                except asyncpg.PostgresError as exc:
                    if isinstance(exc, _CONNECTION_LOST):
                        raise
                    item.error = _unknown(item, exc)
                else:
                    item.outcome = (saved, stored)
                item.done = True
        except _FAILURES as exc:
            for item in batch:
                if not item.done:
                    item.error, item.done = _unknown(item, exc), True
        finally:
            for item in batch:
                if not item.done:  # stopped by something else (an interrupt): say so, never hang
                    item.error, item.done = StoreError("the save's batch stopped before it was saved"), True

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        """Extend the lease of run ``run_id`` to ``until`` if it is the thread's run in progress.

        ``StoreError`` when the connection fails: the lease may or may not have been renewed.
        """
        if until.tzinfo is None:
            raise ValueError("a lease ends at an aware datetime")
        pool = await self._connected()
        try:
            async with pool.acquire(timeout=self._timeout) as connection:
                status = await connection.execute(self._renew_sql, thread_id, run_id, until)
        except _FAILURES as exc:
            raise StoreError(f"cannot renew the lease of run {run_id!r} on thread {thread_id!r}: {exc}") from exc
        return bool(status == "UPDATE 1")

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        """The thread that raised ``interrupt_id``, open or closed, or ``None``."""
        found = await self._read(f"look up interrupt {interrupt_id!r}", "fetchval", self._interrupt_sql, interrupt_id)
        return None if found is None else str(found)

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        """Every interrupt closed on ``thread_id`` and how, in the order they were closed."""
        rows = await self._read(f"read the audit trail of thread {thread_id!r}", "fetch", self._audit_sql, thread_id)
        try:
            return resolved_from_dicts([orjson.loads(entry) for (entry,) in rows])
        except Exception as exc:
            raise StoreError(f"the audit trail of thread {thread_id!r} is corrupt: {exc!r}") from exc

    async def waiting(self, owner: str, *, limit: int = 100) -> Sequence[WaitingThread]:
        """The threads of ``owner`` with open interrupts, newest first: one query on the partial
        index ``threads_waiting`` (the interrupted rows, by owner)."""
        rows = await self._read(f"list the waiting threads of {owner!r}", "fetch", self._waiting_sql, owner, limit)
        found = []
        for thread_id, text in rows:
            try:
                waiting = waiting_from_json(thread_id, orjson.loads(text))
            except Exception as exc:
                raise StoreError(f"the stored record of thread {thread_id!r} is corrupt: {exc!r}") from exc
            if waiting.interrupts:
                found.append(waiting)
        return found

    async def all_waiting(self, *, limit: int = 1000) -> Sequence[WaitingThread]:
        """Every principal's threads with open interrupts, newest first: one query over the
        interrupted rows (the operator's view, and the gauges of open interrupts of every host
        on this database)."""
        rows = await self._read("list the waiting threads", "fetch", self._all_waiting_sql, limit)
        found = []
        for thread_id, owner, text in rows:
            try:
                waiting = waiting_from_json(thread_id, orjson.loads(text), ANONYMOUS if owner is None else str(owner))
            except Exception as exc:
                raise StoreError(f"the stored record of thread {thread_id!r} is corrupt: {exc!r}") from exc
            if waiting.interrupts:
                found.append(waiting)
        return found

    async def audit_since(self, since: datetime, *, limit: int = 10_000) -> Sequence[tuple[str, ResolvedInterrupt]]:
        """Every thread's audit lines closed at ``since`` or later, oldest first (one query on
        the audit table, then the exact cut: see :data:`~agui_core.store.base.AUDIT_MARGIN`)."""
        after = (since - AUDIT_MARGIN).astimezone(UTC).isoformat()
        rows = await self._read("read the audit trails", "fetch", self._audit_since_sql, after)
        try:
            lines = [(thread_id, resolved_from_dicts([orjson.loads(entry)])[0]) for thread_id, entry in rows]
        except Exception as exc:
            raise StoreError(f"an audit trail is corrupt: {exc!r}") from exc
        return audit_lines_since(lines, since, limit)

    async def owner_of(self, thread_id: str) -> str | None:
        """The principal ``thread_id`` belongs to, or ``None`` for a thread never saved (the
        ``owner`` column: one primary-key lookup, the record is not read)."""
        row = await self._read(f"look up the owner of thread {thread_id!r}", "fetchrow", self._owner_sql, thread_id)
        if row is None:
            return None
        owner = row[0]
        return ANONYMOUS if owner is None else str(owner)

    async def purge(self, *, idle_before: datetime, audit_before: datetime | None = None, limit: int = 500) -> Purged:
        """Remove up to ``limit`` threads at rest last saved before ``idle_before`` (see
        :meth:`ThreadStore.purge <agui_core.store.base.ThreadStore.purge>`): one call of
        ``purge_threads``, which returns at once (``swept=False``) while another host purges.

        ``StoreError`` when the connection fails: the purge may or may not have happened (the
        next one does what is left).
        """
        check_purge(idle_before, audit_before, limit)
        pool = await self._connected()
        try:
            async with pool.acquire(timeout=self._timeout) as connection:
                swept, threads, trails = await connection.fetchrow(
                    self._purge_sql, _lock_key(self._schema, "sweep"), idle_before, audit_before, limit
                )
        except _FAILURES as exc:
            raise StoreError(f"cannot purge the thread store's schema {self._schema!r}: {exc}") from exc
        return Purged(threads=threads, audit_trails=trails, swept=swept)

    async def claim_delivery(self, key: str, *, holder: str, now: datetime, until: datetime) -> int | None:
        """Take delivery ``key`` (see :class:`~agui_core.store.base.DeliveryLedger`): one
        statement, so of two hosts claiming one key at once, one gets it."""
        check_claim(now, until)
        found = await self._ledger_write(
            f"claim delivery {key!r}", "fetchval", self._claim_sql, key, holder, until, now
        )
        return None if found is None else int(found)

    async def finish_delivery(
        self, key: str, *, holder: str, delivered: bool, retry_at: datetime | None = None
    ) -> None:
        """How ``holder``'s attempt at ``key`` ended (see :class:`~agui_core.store.base.DeliveryLedger`)."""
        what = f"record the delivery of {key!r}"
        if delivered:
            await self._ledger_write(what, "execute", self._delivered_sql, key, holder)
        else:
            await self._ledger_write(what, "execute", self._retry_sql, key, holder, retry_at)

    async def _ledger_write(self, what: str, method: str, query: str, *args: Any) -> Any:
        """Run ``query`` on the deliveries table, which the first call makes (under a lock, so
        that two hosts making it at once do not collide): a schema that never sends a notice
        has no such table, and its version stays what older code reads."""
        pool = await self._connected()
        try:
            async with pool.acquire(timeout=self._timeout) as connection:
                if not self._ledger_made:
                    async with connection.transaction():
                        await connection.execute(
                            "SELECT pg_advisory_xact_lock($1)", _lock_key(self._schema, "deliveries")
                        )
                        await connection.execute(
                            f"CREATE TABLE IF NOT EXISTS {self._schema}.deliveries ("
                            " key text PRIMARY KEY, holder text, until timestamptz NOT NULL,"
                            " attempts integer NOT NULL, delivered boolean NOT NULL DEFAULT false)"
                        )
                    self._ledger_made = True
                return await getattr(connection, method)(query, *args)
        except _FAILURES as exc:
            raise StoreError(f"cannot {what}: {exc}") from exc

    async def open(self) -> None:
        """Connect now, creating or migrating the schema, rather than on first use:
        ``StoreError`` if the database cannot be reached (what ``agui serve`` checks at start-up)."""
        await self._connected()

    async def aclose(self) -> None:
        """Close the pool; any later call raises ``StoreError``. Closing twice is fine.

        Calls in flight get ``timeout`` seconds to finish; then their connections are cut.
        """
        if self._closed:
            return
        self._closed = True
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # Shielded: a cancelled close must still close, or the connections would leak.
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(self._timeout):
                await pool.close()
                return
            pool.terminate()
