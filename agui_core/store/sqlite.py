"""SqliteThreadStore: threads in one SQLite file, shared safely by several processes.

The file holds four tables:

``threads(thread_id, version, state, record, saved_at, owner)``
    one row per thread: its last record as JSON text (:func:`record_to_dict` without the
    messages and the audit trail, which have rows of their own, and with how many of each in
    ``messageCount`` and ``resolvedCount``), the record's version (the compare-and-set key),
    its state (so an operator can query it), when it was last saved (the record's
    ``saved_at`` in UTC, as ``leases`` keeps instants; ``NULL``: its saver did not say) and
    its owner (as the record says), so that neither a purge nor an owner lookup reads a record.
``messages(thread_id, seq, digest, message)``
    the thread's messages in order, each as JSON text with a digest of that text. A save
    appends the new ones and rewrites only from the first message that differs from what is
    stored (after a failed run's rollback, or an agent's ``MESSAGES_SNAPSHOT``), so its cost
    follows what changed, not the length of the conversation: against the record this store
    last saved or loaded, the messages the new record shares with it (the same objects, as a
    thread machine hands them on) are neither encoded nor digested again.
``interrupts(interrupt_id, thread_id)``
    every interrupt ever raised, open or closed, and its thread (``THREAD_MISMATCH``).
``audit(thread_id, seq, interrupt_id, reason, raised_in, raised_at, status, answered_in, answered_at, outcome, entry)``
    the audit trail, one row per closed interrupt in the order it was closed, with the whole
    entry as JSON in ``entry``. Rows are only ever added: a later save cannot rewrite history.
    A record's ``resolved`` entries are read back from here (the first ``resolvedCount``).
``leases(thread_id, run_id, until)``
    one row per thread with a run in progress: the run, and until when its host holds the
    thread (UTC, RFC 3339 to the microsecond, so that text order is time order). Each save
    writes it in its transaction; a renewal updates this small row alone, never the record.

``purged_audit(thread_id, owner, last_saved_at, entries)``
    the audit trails of purged threads that are kept longer than the threads (see
    :meth:`SqliteThreadStore.purge`): one row per trail, its entries as a JSON array, until
    ``last_saved_at`` (the thread's last save) passes the audit cutoff. For the operator: no
    host serves them.

The index ``threads_at_rest`` (the last save of the threads in state ``IDLE``) finds the
threads a purge removes; ``interrupts_by_thread`` their interrupt index rows.

The index ``threads_waiting`` (the owner and first interrupt's time of interrupted threads, read
from their records) serves :meth:`SqliteThreadStore.waiting`, the approval console's inbox. It
is built by the first such query on a file, so a file nobody asks that of never pays for it.

Durability. The file is in WAL mode. ``synchronous`` is ``FULL`` by default: every commit is
on disk before :meth:`SqliteThreadStore.save` returns, so an interrupt that a host announced
after saving it survives a crash of the process *and* of the machine (power loss). ``NORMAL``
is allowed for speed; it still survives a killed process (the commit is in the operating
system's cache) but may lose the last commits on power loss. An agent run lasts seconds and
saves two or three times, so the fsync of ``FULL`` costs little; the benchmarks report both.

Concurrency. Every save is a compare-and-set (``UPDATE ... WHERE version = ?`` or an ``INSERT``
for version 1) inside a ``BEGIN IMMEDIATE`` transaction, so two processes on one file
serialise and exactly one moves a thread on from a given version; the other gets
:class:`~agui_core.store.base.VersionConflict`. A writer that finds the file locked waits up to
``busy_timeout`` seconds. In a process, the store keeps one connection, used by one worker
thread of its own (one call at a time, in order): the event loop never blocks on the file.
Reads (loads, interrupt lookups, audit trails) go through a second connection with a worker
of its own, so they never wait for a commit's fsync: in WAL mode a
reader sees the last committed transaction and does not block the writer. (A ``:memory:``
database has one connection for both.) A connection per call measured six to ten times slower
(closing a file's last connection checkpoints its write-ahead log).

Group commit. The saves that arrive while the worker is busy wait together and go into the
next transaction as one batch: one commit, so one fsync under ``FULL``, for all of them. Each
save in a batch is still its own compare-and-set, in a savepoint of its own (a save alone in
its batch has the transaction to itself, and needs none): a save whose
version lost gets its ``VersionConflict`` (or a save that fails, its ``StoreError``) and is
rolled back to its savepoint alone; the others commit. If the commit itself fails, none of the
batch is saved and every save in it raises ``StoreError``; what the file held is unchanged,
as after a crash in the middle of a batch (SQLite's commit is atomic). A save returns once its
batch is committed. A save cancelled while it waits for its batch is taken out of it.

Memory. The records the store remembers (to load and save without reading) are the last used,
at most 64 threads and 32 MiB of messages (as JSON; several times that as objects), but always
the last one. A save holds the text of the messages it writes only (from the first it does not
share with the record remembered), each as a string of its own length; with no record
remembered, it digests every message one at a time and encodes again only those from the first
row that differs. A load reads its rows one at a time. (This
matters beyond the bytes: the worker threads' transient buffers are freed to glibc's per-thread
arenas, which keep what they once held; a save that held an encoding of every message left its
peak in the process for good.)

Nothing stored is deleted but messages a save replaces and what :meth:`SqliteThreadStore.purge`
removes, and a row changes only through a successful compare-and-set. A purge is one write
transaction (``BEGIN IMMEDIATE``): SQLite lets one writer at a time in, so the hosts of one
file purge one after another, never at once, and no save comes between a purge's check of a
thread and its removal. A file of version 1 or 2 (messages inside the records) is
migrated in place when a store first opens it, in one transaction; so is a file of version 3
(no ``saved_at``: its threads count as last saved when it is migrated). A row
that cannot be read back (not JSON, not a record, a version that disagrees) raises
:class:`~agui_core.store.base.StoreError` naming the thread, and is left as it is.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import queue
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Generic, Literal, Self, TypeVar

import anyio
import attrs
import orjson

from agui_core.machine.record import (
    ANONYMOUS,
    ResolvedInterrupt,
    ThreadRecord,
    record_from_dict,
    record_to_dict,
    resolved_from_dicts,
)
from agui_core.protocol.codec import structure_message, unstructure_message
from agui_core.protocol.types import Message
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

__all__ = ["SCHEMA_VERSION", "SqliteThreadStore"]

SCHEMA_VERSION = 4
"""The layout of the file, kept in SQLite's ``user_version``; a newer file is refused.

1: the first. 2: a leases table (created when a version-1 file is opened). 3: messages and
audit entries out of each thread's record, in rows of their own (1 and 2 are migrated).
4: each thread's last save (``saved_at``) and owner, the indexes a purge reads and
``purged_audit`` (1 to 3 are migrated)."""

_THREADS_REMEMBERED = 64
"""How many threads' last records a store remembers, to load and save them without reading them."""

_BYTES_REMEMBERED = 32 * 1024 * 1024
"""How many bytes of messages (as JSON) the remembered records may hold, but for the last one used."""

_T = TypeVar("_T")
_B = TypeVar("_B", "_Save", "_Load")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    thread_id TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    digest BLOB NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE IF NOT EXISTS interrupts (
    interrupt_id TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS audit (
    thread_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    interrupt_id TEXT NOT NULL,
    reason TEXT NOT NULL,
    raised_in TEXT NOT NULL,
    raised_at TEXT,
    status TEXT NOT NULL,
    answered_in TEXT,
    answered_at TEXT,
    outcome TEXT,
    entry TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
CREATE TABLE IF NOT EXISTS leases (
    thread_id TEXT PRIMARY KEY NOT NULL,
    run_id TEXT NOT NULL,
    until TEXT
);
"""
_AUDIT_ENTRIES = "SELECT entry FROM audit WHERE thread_id = ? ORDER BY seq"
_KEEP_TRAIL = "INSERT INTO purged_audit (thread_id, owner, last_saved_at, entries) VALUES (?, ?, ?, ?)"
# The inbox of the approval console (waiting): built on first use, see the module docstring.
# The query must repeat these expressions exactly for SQLite to use the index.
_WAITING_INDEX = (
    "CREATE INDEX IF NOT EXISTS threads_waiting ON threads"
    " (json_extract(record, '$.owner'), json_extract(record, '$.open[0].raisedAt'))"
    " WHERE state = 'INTERRUPTED'"
)
_WAITING = (
    "SELECT thread_id, json_extract(record, '$.open') FROM threads"
    " WHERE state = 'INTERRUPTED' AND json_extract(record, '$.owner') = ?"
    " ORDER BY json_extract(record, '$.open[0].raisedAt') DESC, thread_id DESC LIMIT ?"
)
_ALL_WAITING = (
    "SELECT thread_id, json_extract(record, '$.owner'), json_extract(record, '$.open') FROM threads"
    " WHERE state = 'INTERRUPTED' ORDER BY json_extract(record, '$.open[0].raisedAt') DESC, thread_id DESC LIMIT ?"
)

# The ledger of webhook deliveries (DeliveryLedger): made on first use, so a file that never
# sends a notice has no such table and older versions of this code read the file as before.
# ``until`` is UTC text (see _utc), so text order is time order; '' is the distant past.
_DELIVERIES = (
    "CREATE TABLE IF NOT EXISTS deliveries ("
    " key TEXT PRIMARY KEY NOT NULL, holder TEXT, until TEXT NOT NULL,"
    " attempts INTEGER NOT NULL, delivered INTEGER NOT NULL DEFAULT 0)"
)
_CLAIM = (
    "INSERT INTO deliveries (key, holder, until, attempts) VALUES (?1, ?2, ?3, 1)"
    " ON CONFLICT (key) DO UPDATE SET holder = ?2, until = ?3, attempts = attempts + 1"
    " WHERE delivered = 0 AND until <= ?4"
    " RETURNING attempts"
)

# Version 2 added the leases table: opening a version 1 file creates it. Version 3 moved
# messages out of the records (see _move_messages_out). Version 4 added what retention
# needs (see _add_retention).
_RETENTION_SCHEMA = """
CREATE INDEX IF NOT EXISTS threads_at_rest ON threads (saved_at) WHERE state = 'IDLE';
CREATE INDEX IF NOT EXISTS interrupts_by_thread ON interrupts (thread_id);
CREATE TABLE IF NOT EXISTS purged_audit (
    thread_id TEXT NOT NULL,
    owner TEXT,
    last_saved_at TEXT NOT NULL,
    entries TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS purged_audit_by_age ON purged_audit (last_saved_at);
"""


def _resolved_to_dicts(thread_id: str, entries: Sequence[ResolvedInterrupt]) -> list[Any]:
    # record_to_dict is the one writer of a resolved entry's JSON (as above, for the reader).
    resolved: list[Any] = record_to_dict(ThreadRecord(thread_id=thread_id, resolved=tuple(entries)))["resolved"]
    return resolved


def _digest(text: bytes) -> bytes:
    return hashlib.blake2b(text, digest_size=16).digest()


def _message_json(message: Message) -> bytes:
    return orjson.dumps(unstructure_message(message))


def _message_row(message: Message) -> tuple[bytes, str]:
    """The digest and the JSON text of ``message``, as its row keeps them.

    The text is a copy of orjson's output as ``str``: orjson hands back every ``bytes`` in a
    buffer of 4 KiB or more, whatever its length, so a list of its outputs costs 4 KiB a message.
    """
    data = _message_json(message)
    return _digest(data), data.decode()


def _utc(instant: str | datetime) -> str:
    """``instant`` as the leases table keeps it: UTC, to the microsecond (text order is time order)."""
    moment = datetime.fromisoformat(instant) if isinstance(instant, str) else instant
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _saved_at(record: ThreadRecord) -> str | None:
    """The record's ``saved_at`` as the threads table keeps it (see :func:`_utc`), or ``None``."""
    instant = saved_instant(record)
    return None if instant is None else _utc(instant)


def _create_private(path: str) -> None:
    """Create an empty file at ``path``, mode 0600, unless there is one (or it names no file)."""
    if path in ("", ":memory:"):
        return
    try:
        # O_EXCL: never open (or re-mode) a file someone else created in the meantime.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


class _Save:
    """A save waiting for its batch, then its outcome: done, and the error it raises if any."""

    __slots__ = ("done", "error", "record")

    def __init__(self, record: ThreadRecord) -> None:
        self.record = record
        self.done = False
        self.error: BaseException | None = None


class _Load:
    """A load waiting for its batch, then its outcome: the record, or the error it raises."""

    __slots__ = ("done", "error", "record", "thread_id")

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self.done = False
        self.error: BaseException | None = None
        self.record: ThreadRecord | None = None


_Job = tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[..., Any], tuple[Any, ...]]
"""A call handed to a :class:`_Worker`: the caller's loop, the future it waits on, the function and its arguments."""


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return  # nobody waits for it any more (its caller's event loop is going away)
    if error is None:
        future.set_result(result)
    elif isinstance(error, StopIteration):
        # A future refuses StopIteration (it would end the coroutine awaiting it): the caller gets
        # it wrapped, as from anyio's workers, rather than a future never settled.
        wrapped = RuntimeError("a worker call raised StopIteration")
        wrapped.__cause__ = error
        future.set_exception(wrapped)
    else:
        future.set_exception(error)


class _Worker:
    """A thread of its own that runs a connection's blocking calls, one at a time, in order.

    What ``anyio.to_thread.run_sync`` with a capacity limiter of one did, without its thread
    pool, limiter and bookkeeping: on this project's 2-core VMs a hand-off took 267 us of wall
    time through anyio and 165 us this way, and a resume makes three. As with anyio's default,
    a caller cancelled before it hands its call over never hands it over, and one cancelled
    after waits for the call to end (however it is cancelled: by anyio, or by asyncio's
    ``task.cancel()``), so a batch the worker took ends with every call in it told its
    outcome. The thread starts with the first call and ends with :meth:`stop` (the store's
    ``aclose``, or the store being collected unclosed); it is a daemon, so it never holds the
    process at exit.
    """

    __slots__ = ("_jobs", "_name", "_thread")

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def run(self, function: Callable[..., _T], *args: Any) -> _T:
        await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller hands nothing over
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        if self._thread is None:
            thread = threading.Thread(target=_serve, args=(self._jobs,), name=self._name, daemon=True)
            thread.start()  # should it fail, the next call tries again: no job waits for a thread never started
            self._thread = thread
        self._jobs.put((loop, future, function, args))
        interrupted: BaseException | None = None
        while True:
            try:
                with anyio.CancelScope(shield=True):
                    # asyncio.shield: a task.cancel() from outside anyio (asyncio.wait_for) would
                    # cancel the future itself, and the caller would leave its call running.
                    result = await asyncio.shield(future)
            except asyncio.CancelledError as cancelled:
                if future.done():
                    raise
                interrupted = cancelled
                continue
            break
        if interrupted is not None:
            raise interrupted
        return result

    def stop(self) -> None:
        """End the thread once the calls handed over before are done."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None

    @staticmethod
    def stop_all(*workers: _Worker) -> None:
        for worker in workers:
            worker.stop()


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    """A worker's thread: each call handed over, in order, until told to stop (``None``)."""
    while (job := jobs.get()) is not None:
        loop, future, function, args = job
        job = None  # the call's objects go with the call, not with the idle thread
        result: Any = None
        error: BaseException | None = None
        try:
            result = function(*args)
        except BaseException as exc:  # handed to the caller, whatever it is
            error = exc
        # Dropped before the caller can go on: the call's function is the store's bound method,
        # and a store its caller lets go of must not be kept by this thread (see stop_all).
        function = args = None  # type: ignore[assignment]
        try:
            loop.call_soon_threadsafe(_settle, future, result, error)
        except RuntimeError:
            pass  # the caller's event loop is closed: nobody waits for this outcome
        loop = future = result = error = None  # type: ignore[assignment]


class _Queue(Generic[_B]):
    """The calls of one kind waiting for their batch, and the batch running (see ``_batched``)."""

    __slots__ = ("running", "waiting", "work", "worker")

    def __init__(self, work: Callable[[list[_B]], None], worker: _Worker) -> None:
        self.work: Callable[[list[_B]], None] = work
        self.worker = worker
        self.waiting: list[_B] = []
        self.running: anyio.Event | None = None  # set when the batch running ends


@attrs.frozen
class _Encoded:
    """What a save writes, encoded before its transaction."""

    text: str
    digests: tuple[bytes, ...]  # of every message of the record
    fresh: int | None  # None: the messages stored are the record's own, nothing to write
    """Where ``texts`` start: the messages from here on are encoded, the ones before only digested."""
    texts: list[str]
    stored: tuple[bytes, ...] | None  # the digests stored, when this store knows them
    size: int  # the bytes of the record's messages, as JSON


@attrs.frozen
class _Remembered:
    """A record this store saved or loaded last, and what it knows of its messages."""

    record: ThreadRecord
    digests: tuple[bytes, ...]
    size: int  # the bytes of its messages, as JSON


_NOTHING_STORED = _Remembered(ThreadRecord(thread_id=""), (), 0)
"""What a thread never saved holds: no messages."""


class SqliteThreadStore:
    """A :class:`~agui_core.store.base.ThreadStore` in the SQLite file at ``path``.

    The file and its tables are created on first use; a file it creates is readable and
    writable by its owner only (mode 0600, and so are the ``-wal`` and ``-shm`` files, which
    SQLite gives the database file's mode): threads hold conversations. A file that already
    exists keeps its mode. ``synchronous`` is SQLite's setting
    (``"FULL"``: a save survives power loss; ``"NORMAL"``: it survives a killed process).
    ``busy_timeout`` is how long, in seconds, a call waits for another writer to finish
    before it fails with ``StoreError``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["FULL", "NORMAL"] = "FULL",
        busy_timeout: float = 5.0,
    ) -> None:
        if synchronous not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be 'FULL' or 'NORMAL', not {synchronous!r}")
        self._path = os.fspath(path)
        self._synchronous = synchronous
        self._busy_timeout = busy_timeout
        self._connection: sqlite3.Connection | None = None
        self._reader: sqlite3.Connection | None = None
        self._closed = False
        self._writing = _Worker("agui-sqlite-writer")
        # Reads have a connection and a worker of their own, but for a database in memory (a
        # second connection to ":memory:" would be another database).
        self._apart = self._path not in ("", ":memory:")
        self._reading = _Worker("agui-sqlite-reader") if self._apart else self._writing
        # A store dropped without aclose() still ends its threads (they hold no reference to it).
        weakref.finalize(self, _Worker.stop_all, self._writing, self._reading)
        # Opening the connections (from either worker) and what this store remembers (read
        # by both) are each guarded by a lock.
        self._opening = threading.Lock()
        self._remembering = threading.Lock()
        # thread id -> the record last saved or loaded here, with its messages' digests. A version
        # is saved once (compare-and-set), so while the file holds that version it holds that
        # record: a load reads the version only, and a save compares messages without reading.
        self._stored: OrderedDict[str, _Remembered] = OrderedDict()
        self._stored_bytes = 0
        self._waiting_indexed = False
        self._ledger_made = False
        # The saves and the loads waiting for their next batch (used only from the event loop).
        self._saves = _Queue(self._save_batch, self._writing)
        self._loads = _Queue(self._load_batch, self._reading)

    @property
    def path(self) -> str:
        return self._path

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- the async interface: each call is one hop to a worker thread ---------------------

    async def _call(self, function: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise StoreError("the thread store is closed")
        return await self._writing.run(function, *args)

    async def _read(self, function: Callable[..., _T], *args: Any) -> _T:
        if self._closed:
            raise StoreError("the thread store is closed")
        return await self._reading.run(function, *args)

    async def _batched(self, queue: _Queue[_B], item: _B) -> None:
        """Wait for ``item``'s batch: the calls that arrive while a batch runs form the next one.

        A call that finds no batch running takes every call waiting (itself among them) to the
        worker as one batch, whose function sets each one's outcome; the calls waiting wake when
        a batch ends, and the first whose outcome is not in takes the next batch.
        """
        if self._closed:
            raise StoreError("the thread store is closed")
        queue.waiting.append(item)
        try:
            while not item.done:
                if queue.running is not None:
                    await queue.running.wait()
                    continue
                queue.running = running = anyio.Event()
                batch = queue.waiting[:]
                queue.waiting.clear()
                try:
                    if self._closed:
                        for call in batch:
                            call.error, call.done = StoreError("the thread store is closed"), True
                    else:
                        await queue.worker.run(queue.work, batch)
                finally:
                    # A batch the worker never took (this call was cancelled on its way there)
                    # goes back to the queue, but for this call's own item: the next batch has it.
                    # Once the worker took it, every call in it has its outcome.
                    queue.waiting[:0] = [call for call in batch if not call.done and call is not item]
                    queue.running = None
                    running.set()
        except BaseException:
            if not item.done and item in queue.waiting:
                queue.waiting.remove(item)  # cancelled before a batch took it: never run
            raise
        if item.error is not None:
            raise item.error

    async def load(self, thread_id: str) -> ThreadRecord | None:
        """The last record saved for ``thread_id``, or ``None`` for a thread never saved."""
        load = _Load(thread_id)
        await self._batched(self._loads, load)
        return load.record

    async def save(self, record: ThreadRecord) -> None:
        """Save ``record`` if the stored version is ``record.version - 1``; else ``VersionConflict``."""
        if record.version < 1:
            raise ValueError(f"thread {record.thread_id!r}: a saved record has version 1 or more, not {record.version}")
        saved_instant(record)  # a saved_at that cannot be kept fails this save alone, before its batch
        await self._batched(self._saves, _Save(record))

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        """Extend the lease of run ``run_id`` to ``until`` if it is the thread's run in progress."""
        if until.tzinfo is None:
            raise ValueError("a lease ends at an aware datetime")
        return await self._call(self._renew_lease, thread_id, run_id, _utc(until))

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        """The thread that raised ``interrupt_id``, open or closed, or ``None``."""
        return await self._read(self._thread_of_interrupt, interrupt_id)

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        """Every interrupt closed on ``thread_id`` and how, in the order they were closed."""
        return await self._read(self._audit, thread_id)

    async def waiting(self, owner: str, *, limit: int = 100) -> Sequence[WaitingThread]:
        """The threads of ``owner`` with open interrupts, newest first (one indexed query)."""
        return await self._call(self._waiting, owner, limit)

    async def all_waiting(self, *, limit: int = 1000) -> Sequence[WaitingThread]:
        """Every principal's threads with open interrupts, newest first (one query over the
        interrupted rows: the operator's view, see :meth:`ThreadStore.all_waiting
        <agui_core.store.base.ThreadStore.all_waiting>`)."""
        return await self._call(self._all_waiting, limit)

    async def audit_since(self, since: datetime, *, limit: int = 10_000) -> Sequence[tuple[str, ResolvedInterrupt]]:
        """Every thread's audit lines closed at ``since`` or later, oldest first (one query on
        the audit table, then the exact cut: see :data:`~agui_core.store.base.AUDIT_MARGIN`)."""
        lines = await self._read(self._audit_since, _utc(since - AUDIT_MARGIN))
        return audit_lines_since(lines, since, limit)

    async def owner_of(self, thread_id: str) -> str | None:
        """The principal ``thread_id`` belongs to, or ``None`` for a thread never saved (one
        indexed read of the thread's row; its messages are not read)."""
        return await self._read(self._owner_of, thread_id)

    async def purge(self, *, idle_before: datetime, audit_before: datetime | None = None, limit: int = 500) -> Purged:
        """Remove up to ``limit`` threads at rest last saved before ``idle_before`` (see
        :meth:`ThreadStore.purge <agui_core.store.base.ThreadStore.purge>`), in one write
        transaction: another host's purge of the same file waits for it, then finds what is
        left (so two never remove the same thread, and running both is harmless)."""
        check_purge(idle_before, audit_before, limit)
        cutoff = None if audit_before is None else _utc(audit_before)
        return await self._call(self._purge, _utc(idle_before), cutoff, limit)

    async def claim_delivery(self, key: str, *, holder: str, now: datetime, until: datetime) -> int | None:
        """Take delivery ``key`` (see :class:`~agui_core.store.base.DeliveryLedger`): one statement,
        which another process's claim of the same key waits for."""
        check_claim(now, until)
        return await self._call(self._claim_delivery, key, holder, _utc(now), _utc(until))

    async def finish_delivery(
        self, key: str, *, holder: str, delivered: bool, retry_at: datetime | None = None
    ) -> None:
        """How ``holder``'s attempt at ``key`` ended (see :class:`~agui_core.store.base.DeliveryLedger`)."""
        wait = _utc(retry_at) if retry_at is not None else ""
        await self._call(self._finish_delivery, key, holder, delivered, wait)

    async def open(self) -> None:
        """Open the file now, creating or migrating it, rather than on first use:
        ``StoreError`` if it cannot be (what ``agui serve`` checks at start-up)."""
        await self._call(self._connect)
        if self._apart:
            await self._read(self._connect_reader)

    async def aclose(self) -> None:
        """Close the connection; any later call raises ``StoreError``. Closing twice is fine."""
        if self._closed:
            return
        self._closed = True
        # Shielded: a cancelled close must still close, or the connection would leak.
        with anyio.CancelScope(shield=True):
            try:
                await self._writing.run(self._close)
                if self._apart:
                    await self._reading.run(self._close_reader)
            finally:
                self._writing.stop()
                self._reading.stop()

    # -- the blocking side, run in a worker thread, one at a time ---------------------------

    def _connect(self) -> sqlite3.Connection:
        """The writing connection, opened (and the file made ready) on first use."""
        if self._connection is not None:
            return self._connection
        with self._opening:
            return self._open_writer()

    def _connect_reader(self) -> sqlite3.Connection:
        """The reading connection, opened on first use, once the file is ready."""
        if self._reader is not None:
            return self._reader
        with self._opening:
            writer = self._open_writer()
            if not self._apart:
                return writer
            if self._reader is None:
                try:
                    reader = sqlite3.connect(
                        self._path, timeout=self._busy_timeout, isolation_level=None, check_same_thread=False
                    )
                except sqlite3.Error as exc:
                    raise StoreError(f"cannot open the thread store {self._path!r}: {exc}") from exc
                self._reader = reader
            return self._reader

    def _open_writer(self) -> sqlite3.Connection:
        if self._closed:  # a call that was waiting while the store closed
            raise StoreError("the thread store is closed")
        if self._connection is not None:
            return self._connection
        try:
            _create_private(self._path)
        except OSError as exc:
            raise StoreError(f"cannot create the thread store {self._path!r}: {exc}") from exc
        try:
            connection = sqlite3.connect(
                self._path,
                timeout=self._busy_timeout,
                isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE ... COMMIT
                check_same_thread=False,  # used by one worker thread at a time, never two
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the thread store {self._path!r}: {exc}") from exc
        try:
            mode = connection.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() not in ("wal", "memory"):
                raise StoreError(f"the thread store {self._path!r} cannot use WAL mode (got {mode!r})")
            connection.execute(f"PRAGMA synchronous={self._synchronous}")
            if self._schema_version(connection) < SCHEMA_VERSION:
                # Only a file without the tables takes the write lock, so opening a store
                # never waits for another process's writes.
                connection.execute("BEGIN IMMEDIATE")
                try:
                    found = self._schema_version(connection)
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            connection.execute(statement)
                    if found in (1, 2):
                        self._move_messages_out(connection)
                    self._add_retention(connection)
                    connection.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
        except sqlite3.Error as exc:
            connection.close()
            raise StoreError(f"cannot open the thread store {self._path!r}: {exc}") from exc
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    @staticmethod
    def _move_messages_out(connection: sqlite3.Connection) -> None:
        """Schema 1 or 2 to 3: each thread's messages move from its record to rows of their own.

        The audit entries stay in the record until its next save (a record holding them is read
        as it is); the audit table has had every one of them since version 1.
        """
        thread_ids = [thread_id for (thread_id,) in connection.execute("SELECT thread_id FROM threads")]
        for thread_id in thread_ids:
            (text,) = connection.execute("SELECT record FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
            try:
                document = orjson.loads(text)
                messages = document.pop("messages")
                # As str: a list of orjson's bytes would cost 4 KiB a message (see _message_row).
                texts = [orjson.dumps(m).decode() for m in messages]
            except (ValueError, TypeError, KeyError, AttributeError):
                continue  # a corrupt row is left as it is: loading it says so, naming the thread
            connection.executemany(
                "INSERT INTO messages (thread_id, seq, digest, message) VALUES (?, ?, ?, ?)",
                ((thread_id, seq, _digest(t.encode()), t) for seq, t in enumerate(texts)),
            )
            document["messageCount"] = len(texts)
            connection.execute(
                "UPDATE threads SET record = ? WHERE thread_id = ?", (orjson.dumps(document).decode(), thread_id)
            )

    @staticmethod
    def _add_retention(connection: sqlite3.Connection) -> None:
        """Schema 3 (or a new file) to 4: each thread's last save and owner, and what a purge reads.

        The threads already there count as last saved now: retention starts from the
        migration, and removes nothing that was in the file before its time has passed.
        """
        columns = {name for (_, name, *_) in connection.execute("PRAGMA table_info(threads)")}
        if "saved_at" not in columns:
            connection.execute("ALTER TABLE threads ADD COLUMN saved_at TEXT")
            connection.execute("UPDATE threads SET saved_at = ?", (_utc(datetime.now(UTC)),))
        if "owner" not in columns:
            connection.execute("ALTER TABLE threads ADD COLUMN owner TEXT")
            connection.execute("UPDATE threads SET owner = json_extract(record, '$.owner') WHERE json_valid(record)")
        for statement in _RETENTION_SCHEMA.split(";"):
            if statement.strip():
                connection.execute(statement)

    def _schema_version(self, connection: sqlite3.Connection) -> int:
        found: int = connection.execute("PRAGMA user_version").fetchone()[0]
        if found > SCHEMA_VERSION:
            raise StoreError(
                f"the thread store {self._path!r} has schema version {found}; "
                f"this agui-core reads up to {SCHEMA_VERSION}"
            )
        return found

    def _close(self) -> None:
        with self._opening:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
            if not self._apart:
                self._reader = None

    def _close_reader(self) -> None:
        with self._opening:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def _load_batch(self, batch: list[_Load]) -> None:
        """Load every thread of ``batch``, each in its own read transaction; set each outcome."""
        try:
            for load in batch:
                try:
                    load.record = self._load(load.thread_id)
                except StoreError as exc:
                    load.error = exc
                load.done = True
        finally:
            for load in batch:
                if not load.done:
                    load.error, load.done = StoreError(f"thread {load.thread_id!r} was not loaded"), True

    def _load(self, thread_id: str) -> ThreadRecord | None:
        connection = self._connect_reader()
        known = self._stored.get(thread_id)
        digests: list[bytes] = []
        messages: list[Message] = []
        size = 0
        corrupt: Exception | None = None
        try:
            connection.execute("BEGIN")  # one snapshot of the file for the record and its messages
            try:
                row = connection.execute(
                    "SELECT version, saved_at FROM threads WHERE thread_id = ?", (thread_id,)
                ).fetchone()
                if row is None:
                    return None
                # The same version saved at the same instant: the same record (a thread purged
                # and begun again since, by another process, has its versions over again).
                if known is not None and known.record.version == row[0] and _saved_at(known.record) == row[1]:
                    self._remember(known)
                    # Records are immutable: the one saved or loaded here is the one stored.
                    return self._with_lease(connection, known.record)
                row = connection.execute(
                    "SELECT version, record FROM threads WHERE thread_id = ?", (thread_id,)
                ).fetchone()
                # One message at a time: its text goes as soon as it is read (see the docstring).
                structure = structure_message
                for digest, message in connection.execute(
                    "SELECT digest, message FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,)
                ):
                    digests.append(bytes(digest))
                    size += len(message)
                    if corrupt is None:
                        try:
                            messages.append(structure(orjson.loads(message), Message))
                        except Exception as exc:  # as for the record, below
                            corrupt = exc
                audit = connection.execute(
                    "SELECT entry FROM audit WHERE thread_id = ? ORDER BY seq", (thread_id,)
                ).fetchall()
            finally:
                connection.execute("COMMIT")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot load thread {thread_id!r}: {exc}") from exc
        version, text = row
        try:
            document = orjson.loads(text)
            if "messages" in document:  # a row the migration could not read: it says why below
                record = record_from_dict(document)
            else:
                if corrupt is not None:
                    raise corrupt
                if document["messageCount"] != len(digests):
                    raise ValueError(f"it counts {document['messageCount']} messages, the file has {len(digests)}")
                if "resolved" not in document:
                    document["resolved"] = [orjson.loads(entry) for (entry,) in audit[: document["resolvedCount"]]]
                record = record_from_dict(document, messages=tuple(messages))
        # A row that is not a record fails in many ways (orjson's ValueError, a missing key,
        # cattrs' validation error groups); every one of them means a corrupt row.
        except Exception as exc:
            raise StoreError(f"the stored record of thread {thread_id!r} is corrupt: {exc!r}") from exc
        if record.thread_id != thread_id or record.version != version:
            raise StoreError(
                f"the stored record of thread {thread_id!r} is corrupt: it says thread "
                f"{record.thread_id!r} version {record.version}, its row says version {version}"
            )
        if "messages" not in document:
            self._remember(_Remembered(record, tuple(digests), size))
        return self._with_lease(connection, record)

    @staticmethod
    def _with_lease(connection: sqlite3.Connection, record: ThreadRecord) -> ThreadRecord:
        """``record`` with the latest lease of its run in progress (renewals live in ``leases``)."""
        run = record.active_run
        if run is None:
            return record
        try:
            row = connection.execute(
                "SELECT until FROM leases WHERE thread_id = ? AND run_id = ?", (record.thread_id, run.run_id)
            ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot load the lease of thread {record.thread_id!r}: {exc}") from exc
        return record if row is None else extend_lease(record, row[0])

    def _renew_lease(self, thread_id: str, run_id: str, until: str) -> bool:
        connection = self._connect()
        try:
            # Only the run the last save left in progress has a row to renew; a later lease stays.
            changed = connection.execute(
                "UPDATE leases SET until = CASE WHEN until IS NULL OR until < ?1 THEN ?1 ELSE until END"
                " WHERE thread_id = ?2 AND run_id = ?3",
                (until, thread_id, run_id),
            ).rowcount
        except sqlite3.Error as exc:
            raise StoreError(f"cannot renew the lease of run {run_id!r} on thread {thread_id!r}: {exc}") from exc
        return changed == 1

    def _remember(self, remembered: _Remembered) -> None:
        # From either worker: a record of any version saved once is what the file held then,
        # so remembering one a little older than the newest only costs a read later.
        thread_id = remembered.record.thread_id
        stored = self._stored
        with self._remembering:
            old = stored.pop(thread_id, None)
            if old is not None:
                self._stored_bytes -= old.size
            stored[thread_id] = remembered
            self._stored_bytes += remembered.size
            while len(stored) > 1 and (len(stored) > _THREADS_REMEMBERED or self._stored_bytes > _BYTES_REMEMBERED):
                (_, dropped) = stored.popitem(last=False)
                self._stored_bytes -= dropped.size

    def _encode(self, record: ThreadRecord) -> _Encoded:
        """What saving ``record`` writes; ``StoreError`` if it cannot be written as JSON.

        Against the record this store remembers at the version before, only the messages that
        are not its own (by identity, from the first that differs) are encoded; otherwise every
        message is digested, one at a time, and the rows say which to write (see ``_write``).
        """
        thread_id = record.thread_id
        known = self._stored.get(thread_id)
        if known is not None and known.record.version != record.version - 1:
            known = None
        if known is None and record.version == 1:
            known = _NOTHING_STORED  # a new thread: no rows to compare with
        messages = record.messages
        try:
            document = record_to_dict(attrs.evolve(record, resolved=()), messages=False)
            del document["resolved"]
            document["messageCount"] = len(messages)
            document["resolvedCount"] = len(record.resolved)
            text = orjson.dumps(document).decode()
            if known is None:
                digests: list[bytes] = []
                size = 0
                for message in messages:
                    data = _message_json(message)
                    digests.append(_digest(data))
                    size += len(data)
                return _Encoded(text, tuple(digests), len(messages), [], None, size)
            old = known.record.messages
            if messages is old:
                # The very messages stored (a save in the middle of a run): nothing to write.
                return _Encoded(text, known.digests, None, [], known.digests, known.size)
            fresh = 0
            for new_message, old_message in zip(messages, old, strict=False):
                if new_message is not old_message:
                    break
                fresh += 1
            rows = [_message_row(m) for m in messages[fresh:]]
            texts = [message_text for _, message_text in rows]
            size = known.size + sum(len(t.encode()) for t in texts)
            if fresh < len(old):  # messages taken back (a failed run, a shorter snapshot)
                size -= sum(len(_message_json(m)) for m in old[fresh:])
            digests = [*known.digests[:fresh], *(digest for digest, _ in rows)]
            return _Encoded(text, tuple(digests), fresh, texts, known.digests, size)
        except Exception as exc:
            raise StoreError(f"thread {thread_id!r}: the record cannot be written as JSON: {exc}") from exc

    def _save_batch(self, batch: list[_Save]) -> None:
        """Write every save of ``batch`` in one transaction, each in a savepoint (a save alone:
        the transaction is its own); set each outcome."""
        written: list[tuple[_Save, _Encoded]] = []
        try:
            encoded: list[tuple[_Save, _Encoded]] = []
            for save in batch:
                try:
                    encoded.append((save, self._encode(save.record)))
                except StoreError as exc:
                    save.error, save.done = exc, True
            if not encoded:
                return
            try:
                connection = self._connect()
            except StoreError as exc:
                for save, _ in encoded:
                    save.error, save.done = exc, True
                return
            try:
                connection.execute("BEGIN IMMEDIATE")
                # A save alone in its batch has nothing to be kept apart from: the transaction
                # is its savepoint (two statements fewer, and a resume makes two saves).
                alone = len(encoded) == 1
                try:
                    for save, what in encoded:
                        if not alone:
                            connection.execute("SAVEPOINT save")
                        try:
                            self._write(connection, save.record, what)
                        except (VersionConflict, sqlite3.Error) as exc:
                            if alone:
                                if connection.in_transaction:  # some errors end it themselves
                                    connection.execute("ROLLBACK")
                            else:
                                connection.execute("ROLLBACK TO save")
                                connection.execute("RELEASE save")
                            save.error = exc if isinstance(exc, VersionConflict) else self._failed(save, exc)
                            save.done = True
                        else:
                            if not alone:
                                connection.execute("RELEASE save")
                            written.append((save, what))
                    if connection.in_transaction:  # not a save alone that failed
                        connection.execute("COMMIT")
                except BaseException:
                    if connection.in_transaction:
                        connection.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                # Nothing of the batch is in the file: every save not refused already fails.
                for save in batch:
                    if not save.done:
                        save.error, save.done = self._failed(save, exc), True
                return
            for save, what in written:
                self._remember(_Remembered(save.record, what.digests, what.size))
                save.done = True
        finally:
            # Whatever stopped this batch (a StoreError opening the file, an interrupt), no
            # save of it is left waiting for an outcome; the ones not written say so.
            for save in batch:
                if not save.done:
                    save.error, save.done = (
                        StoreError(
                            f"thread {save.record.thread_id!r} version {save.record.version} was not saved:"
                            " its batch stopped before its commit"
                        ),
                        True,
                    )

    @staticmethod
    def _failed(save: _Save, exc: sqlite3.Error) -> StoreError:
        error = StoreError(f"cannot save thread {save.record.thread_id!r} version {save.record.version}: {exc}")
        error.__cause__ = exc
        return error

    def _write(self, connection: sqlite3.Connection, record: ThreadRecord, what: _Encoded) -> None:
        """The statements of one save, in the transaction (and savepoint) the caller holds."""
        self._compare_and_set(connection, record, record.version - 1, what.text)
        if what.fresh is not None:
            # Not what this store last saw here: the rows say what is stored.
            stored = what.stored if what.stored is not None else self._stored_digests(connection, record.thread_id)
            self._write_messages(connection, record, stored, what)
        self._index(connection, record)
        self._hold_lease(connection, record)

    @staticmethod
    def _stored_digests(connection: sqlite3.Connection, thread_id: str) -> tuple[bytes, ...]:
        rows = connection.execute("SELECT digest FROM messages WHERE thread_id = ? ORDER BY seq", (thread_id,))
        return tuple(bytes(digest) for (digest,) in rows)

    @staticmethod
    def _write_messages(
        connection: sqlite3.Connection, record: ThreadRecord, stored: tuple[bytes, ...], what: _Encoded
    ) -> None:
        """Make the thread's message rows ``record``'s messages, writing only from the first that differs."""
        thread_id, digests, fresh = record.thread_id, what.digests, what.fresh
        assert fresh is not None
        same = 0
        for old, new in zip(stored, digests, strict=False):
            if old != new:
                break
            same += 1
        if same < len(stored):
            connection.execute("DELETE FROM messages WHERE thread_id = ? AND seq >= ?", (thread_id, same))
        messages, texts = record.messages, what.texts

        def text(seq: int) -> str:
            # Encoded already from ``fresh`` on; before it, only digested (one at a time, again).
            return texts[seq - fresh] if seq >= fresh else _message_row(messages[seq])[1]

        if same < len(messages):
            connection.executemany(
                "INSERT INTO messages (thread_id, seq, digest, message) VALUES (?, ?, ?, ?)",
                ((thread_id, seq, digests[seq], text(seq)) for seq in range(same, len(messages))),
            )

    @staticmethod
    def _compare_and_set(connection: sqlite3.Connection, record: ThreadRecord, expected: int, text: str) -> None:
        """Write the thread's row if its version is ``expected`` (0: no row yet); else ``VersionConflict``.

        Beside the record go when it was saved and whose the thread is, where a purge and an
        owner lookup read them without reading the record.
        """
        thread_id = record.thread_id
        if expected == 0:
            changed = connection.execute(
                "INSERT OR IGNORE INTO threads (thread_id, version, state, record, saved_at, owner)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (thread_id, record.version, record.state.value, text, _saved_at(record), record.owner),
            ).rowcount
        else:
            changed = connection.execute(
                "UPDATE threads SET version = ?, state = ?, record = ?, saved_at = ?, owner = ?"
                " WHERE thread_id = ? AND version = ?",
                (record.version, record.state.value, text, _saved_at(record), record.owner, thread_id, expected),
            ).rowcount
        if changed != 1:
            row = connection.execute("SELECT version FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
            raise VersionConflict(thread_id, expected, None if row is None else row[0])

    @staticmethod
    def _hold_lease(connection: sqlite3.Connection, record: ThreadRecord) -> None:
        """Keep the thread's ``leases`` row in step with its run in progress.

        A save by the run that holds the row keeps the later lease: the record a host saves
        brings the lease its run started with, and must not undo the renewals since.
        """
        run = record.active_run
        if run is None:
            connection.execute("DELETE FROM leases WHERE thread_id = ?", (record.thread_id,))
            return
        connection.execute(
            "INSERT INTO leases (thread_id, run_id, until) VALUES (?1, ?2, ?3) ON CONFLICT (thread_id) DO UPDATE SET"
            " until = CASE WHEN run_id = ?2 AND (?3 IS NULL OR until > ?3) THEN until ELSE ?3 END, run_id = ?2",
            (record.thread_id, run.run_id, None if run.lease_until is None else _utc(run.lease_until)),
        )

    @staticmethod
    def _index(connection: sqlite3.Connection, record: ThreadRecord) -> None:
        """Record the thread's interrupts and append the newly closed ones to the audit table."""
        thread_id = record.thread_id
        resolved = record.resolved
        known = 0
        if resolved:
            (known,) = connection.execute(
                "SELECT coalesce(max(seq) + 1, 0) FROM audit WHERE thread_id = ?", (thread_id,)
            ).fetchone()
        # The audit table only grows: entries the table already has are not written again.
        fresh = range(known, len(resolved))
        ids = [(o.interrupt.id, thread_id) for o in record.open_interrupts]
        if record.active_run is not None:
            ids += [(a.interrupt.id, thread_id) for a in record.active_run.answers]
        ids += [(resolved[i].interrupt.id, thread_id) for i in fresh]
        if ids:
            # OR IGNORE: an id already known keeps the thread that raised it first (interrupt
            # ids are unique per thread, not across threads).
            connection.executemany("INSERT OR IGNORE INTO interrupts (interrupt_id, thread_id) VALUES (?, ?)", ids)
        if fresh:
            entries = dict(zip(fresh, _resolved_to_dicts(thread_id, [resolved[i] for i in fresh]), strict=True))
            connection.executemany(
                "INSERT INTO audit (thread_id, seq, interrupt_id, reason, raised_in, raised_at, status,"
                " answered_in, answered_at, outcome, entry) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        thread_id,
                        i,
                        item.interrupt.id,
                        item.interrupt.reason,
                        item.run_id,
                        item.raised_at,
                        item.status,
                        item.answered_in,
                        item.answered_at,
                        item.outcome,
                        orjson.dumps(entries[i]).decode(),
                    )
                    for i, item in ((i, resolved[i]) for i in fresh)
                ],
            )

    def _thread_of_interrupt(self, interrupt_id: str) -> str | None:
        connection = self._connect_reader()
        try:
            row = connection.execute(
                "SELECT thread_id FROM interrupts WHERE interrupt_id = ?", (interrupt_id,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot look up interrupt {interrupt_id!r}: {exc}") from exc
        return None if row is None else str(row[0])

    def _audit(self, thread_id: str) -> tuple[ResolvedInterrupt, ...]:
        connection = self._connect_reader()
        try:
            rows = connection.execute(
                "SELECT entry FROM audit WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the audit trail of thread {thread_id!r}: {exc}") from exc
        try:
            return resolved_from_dicts([orjson.loads(entry) for (entry,) in rows])
        except Exception as exc:
            raise StoreError(f"the audit trail of thread {thread_id!r} is corrupt: {exc!r}") from exc

    def _audit_since(self, after: str) -> list[tuple[str, ResolvedInterrupt]]:
        connection = self._connect_reader()
        try:
            rows = connection.execute(
                "SELECT thread_id, entry FROM audit WHERE answered_at >= ? ORDER BY answered_at, thread_id, seq",
                (after,),
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read the audit trails: {exc}") from exc
        try:
            return [(thread_id, resolved_from_dicts([orjson.loads(entry)])[0]) for thread_id, entry in rows]
        except Exception as exc:
            raise StoreError(f"an audit trail is corrupt: {exc!r}") from exc

    def _ledger(self) -> sqlite3.Connection:
        """The writer, with the deliveries table: made on first use, as the inbox's index is."""
        connection = self._connect()
        if not self._ledger_made:
            connection.execute(_DELIVERIES)
            self._ledger_made = True
        return connection

    def _claim_delivery(self, key: str, holder: str, now: str, until: str) -> int | None:
        try:
            row = self._ledger().execute(_CLAIM, (key, holder, until, now)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot claim delivery {key!r}: {exc}") from exc
        return None if row is None else int(row[0])

    def _finish_delivery(self, key: str, holder: str, delivered: bool, wait: str) -> None:
        try:
            if delivered:
                self._ledger().execute(
                    "UPDATE deliveries SET holder = NULL, delivered = 1 WHERE key = ? AND holder = ?", (key, holder)
                )
            else:
                self._ledger().execute(
                    "UPDATE deliveries SET holder = NULL, until = ? WHERE key = ? AND holder = ?", (wait, key, holder)
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot record the delivery of {key!r}: {exc}") from exc

    def _index_waiting(self, connection: sqlite3.Connection) -> None:
        if not self._waiting_indexed:
            exists = connection.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = 'threads_waiting'"
            ).fetchone()
            if exists is None:  # only the first query on a file writes: the index
                connection.execute(_WAITING_INDEX)
            self._waiting_indexed = True

    def _waiting(self, owner: str, limit: int) -> list[WaitingThread]:
        connection = self._connect()
        try:
            self._index_waiting(connection)
            rows = connection.execute(_WAITING, (owner, limit)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot list the waiting threads of {owner!r}: {exc}") from exc
        found = []
        for thread_id, text in rows:
            try:
                waiting = waiting_from_json(thread_id, orjson.loads(text))
            except Exception as exc:
                raise StoreError(f"the stored record of thread {thread_id!r} is corrupt: {exc!r}") from exc
            if waiting.interrupts:
                found.append(waiting)
        return found

    def _all_waiting(self, limit: int) -> list[WaitingThread]:
        connection = self._connect()
        try:
            self._index_waiting(connection)  # its rows are the interrupted ones: a scan of them only
            rows = connection.execute(_ALL_WAITING, (limit,)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot list the waiting threads: {exc}") from exc
        found = []
        for thread_id, owner, text in rows:
            try:
                waiting = waiting_from_json(thread_id, orjson.loads(text), ANONYMOUS if owner is None else str(owner))
            except Exception as exc:
                raise StoreError(f"the stored record of thread {thread_id!r} is corrupt: {exc!r}") from exc
            if waiting.interrupts:
                found.append(waiting)
        return found

    def _owner_of(self, thread_id: str) -> str | None:
        connection = self._connect_reader()
        try:
            row = connection.execute("SELECT owner FROM threads WHERE thread_id = ?", (thread_id,)).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot look up the owner of thread {thread_id!r}: {exc}") from exc
        if row is None:
            return None
        return ANONYMOUS if row[0] is None else str(row[0])

    def _purge(self, idle_before: str, audit_before: str | None, limit: int) -> Purged:
        connection = self._connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                due = connection.execute(
                    "SELECT thread_id, owner, saved_at FROM threads"
                    " WHERE state = 'IDLE' AND saved_at < ? ORDER BY saved_at LIMIT ?",
                    (idle_before, limit),
                ).fetchall()
                for thread_id, owner, saved_at in due:
                    if audit_before is not None:
                        entries = [e for (e,) in connection.execute(_AUDIT_ENTRIES, (thread_id,))]
                        if entries:
                            trail = "[" + ",".join(entries) + "]"
                            connection.execute(_KEEP_TRAIL, (thread_id, owner, saved_at, trail))
                    for table in ("messages", "interrupts", "audit", "leases", "threads"):
                        connection.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
                trails = 0
                if audit_before is not None:
                    trails = connection.execute(
                        "DELETE FROM purged_audit WHERE rowid IN"
                        " (SELECT rowid FROM purged_audit WHERE last_saved_at < ? ORDER BY last_saved_at LIMIT ?)",
                        (audit_before, limit),
                    ).rowcount
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"cannot purge the thread store {self._path!r}: {exc}") from exc
        with self._remembering:
            for thread_id, _, _ in due:
                forgotten = self._stored.pop(thread_id, None)
                if forgotten is not None:
                    self._stored_bytes -= forgotten.size
        return Purged(threads=len(due), audit_trails=trails)
