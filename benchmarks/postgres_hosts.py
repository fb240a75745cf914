"""PostgreSQL figures of ``store_scale``: resumes per second with several host processes, bytes per thread.

The server is the tests' (``$AGUI_TEST_POSTGRES``, else ``postgresql://postgres@127.0.0.1:5432/test``);
every measurement works in a schema of its own, dropped afterwards.

Each host process runs this module (``python -m benchmarks.postgres_hosts URL FIRST COUNT
SECONDS SYNC``): a :class:`PostgresThreadStore` (``synchronous_commit=SYNC``) with ``TASKS`` connections, and ``TASKS``
tasks each resuming its own share of threads ``FIRST .. FIRST + COUNT`` over and over (load,
save ``RESUMED``, save ``IDLE``: the store's share of a resumed run, as for SQLite). It prints
``ready`` once connected, starts on a line on standard input, and prints how many resumes it
completed in ``SECONDS``. All processes start together; the figure is their sum over the time.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from typing import Any, Literal

import attrs
import orjson

__all__ = ["DEFAULT_DSN", "DSN_VARIABLE", "bytes_per_thread", "fill", "reachable", "resumes_per_second", "server_dsn"]

DSN_VARIABLE = "AGUI_TEST_POSTGRES"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"
TASKS = 8
"""Resumes in flight per host process (and connections in its pool)."""


def server_dsn() -> str:
    """The server the tests use, found the same way."""
    return os.environ.get(DSN_VARIABLE) or DEFAULT_DSN


def _thread_id(n: int) -> str:
    return f"thread-{n:07d}"


def reachable(dsn: str) -> str | None:
    """``None`` if a server answers at ``dsn``, else why not."""
    import asyncpg

    async def check() -> None:
        connection = await asyncpg.connect(dsn, timeout=5)
        await connection.close()

    try:
        asyncio.run(check())
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def fill(dsn: str, text: str, count: int, template_id: str) -> str:
    """A fresh schema holding ``count`` interrupted threads made from ``text``; its URL."""
    import asyncpg

    from agui_core.store.postgres import PostgresThreadStore

    schema = f"bench_{uuid.uuid4().hex[:12]}"
    url = f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"

    async def run() -> None:
        async with PostgresThreadStore(url) as store:
            await store.load("nobody")  # creates the schema
        connection = await asyncpg.connect(dsn)
        try:
            rows = [
                (_thread_id(n), 2, "INTERRUPTED", "anonymous", text.replace(template_id, _thread_id(n)))
                for n in range(count)
            ]
            columns = ["thread_id", "version", "state", "owner", "record"]
            await connection.copy_records_to_table("threads", schema_name=schema, records=rows, columns=columns)
            await connection.copy_records_to_table(
                "interrupts", schema_name=schema, records=[(f"{t}-int-1", t) for t, *_ in rows]
            )
            await connection.execute(f"VACUUM ANALYZE {schema}.threads")
            await connection.execute(f"VACUUM ANALYZE {schema}.interrupts")
        finally:
            await connection.close()

    asyncio.run(run())
    return url


def drop(dsn: str, url: str) -> None:
    import asyncpg

    schema = url.rpartition("schema=")[2]

    async def run() -> None:
        connection = await asyncpg.connect(dsn)
        try:
            await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        finally:
            await connection.close()

    asyncio.run(run())


def bytes_per_thread(dsn: str, url: str, count: int) -> float:
    """What the schema's tables and indexes take on disk, per thread."""
    import asyncpg

    schema = url.rpartition("schema=")[2]

    async def run() -> int:
        connection = await asyncpg.connect(dsn)
        try:
            total: int = await connection.fetchval(
                "SELECT sum(pg_total_relation_size(c.oid))::bigint FROM pg_class AS c"
                " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'",
                schema,
            )
            return total
        finally:
            await connection.close()

    return asyncio.run(run()) / count


def resumes_per_second(url: str, hosts: int, threads: int, seconds: float, sync: str = "on") -> float:
    """Resumes per second of ``hosts`` processes together, each on its own share of the threads."""
    share = threads // hosts
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "benchmarks.postgres_hosts", url, str(h * share), str(share), str(seconds), sync],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for h in range(hosts)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            line = process.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"a host process did not start: {line!r}")
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        done = 0
        for process in processes:
            out, _ = process.communicate(timeout=seconds + 60)
            if process.returncode != 0:
                raise RuntimeError(f"a host process failed with status {process.returncode}")
            done += int(out.split()[-1])
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    return done / seconds


async def _host(url: str, first: int, count: int, seconds: float, sync: Literal["on", "off"]) -> None:
    from agui_core.store.postgres import PostgresThreadStore
    from benchmarks.scenarios.store_scale import templates

    _, resumed, idle = templates()
    async with PostgresThreadStore(url, min_size=TASKS, max_size=TASKS, synchronous_commit=sync) as store:
        await store.load(_thread_id(first))
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        deadline = time.perf_counter() + seconds
        done = 0

        async def task(mine: list[str]) -> None:
            nonlocal done
            while True:
                for thread_id in mine:
                    if time.perf_counter() >= deadline:
                        return
                    record: Any = await store.load(thread_id)
                    await store.save(attrs.evolve(resumed, thread_id=thread_id, version=record.version + 1))
                    await store.save(attrs.evolve(idle, thread_id=thread_id, version=record.version + 2))
                    done += 1

        ids = [_thread_id(n) for n in range(first, first + count)]
        await asyncio.gather(*(task(ids[t::TASKS]) for t in range(TASKS)))
        print(orjson.dumps(done).decode(), flush=True)


if __name__ == "__main__":
    dsn, first, count, seconds, sync = sys.argv[1:]
    if sync not in ("on", "off"):
        raise SystemExit(f"synchronous_commit {sync!r}: on or off")
    asyncio.run(_host(dsn, int(first), int(count), float(seconds), sync))
