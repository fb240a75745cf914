"""``agui serve``'s store at start-up, as real processes: secrets kept off the command line, a
store that cannot be opened stopping the server at once, and retention sweeping a real file.

PostgreSQL's password. The tests' server trusts every loopback connection (``pg_hba.conf``:
``trust``), so a real role with a password proves only that a connection made with one works;
it cannot show that the password was sent. What does: a loopback listener that speaks just
enough of PostgreSQL's protocol to ask for the password in clear (``AuthenticationCleartextPassword``),
writes down what the client answers, and refuses it. ``agui serve`` pointed at it must have sent
the password from ``PGPASSWORD``, ``PGPASSFILE`` or ``--store-dsn-file``, and must stop with one
line that does not show it.
"""

from __future__ import annotations

import os
import sqlite3
import struct
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import httpx
import pytest
from agui_transports.client import connect_websocket
from anyio.streams.buffered import BufferedByteReceiveStream

from agui_core.machine.client import approve
from tests.postgres import admin_connection, drop_schema, server_dsn, with_schema
from tests.transports.served import ROOT, agui_serve

pytestmark = pytest.mark.anyio

LIMIT = 20.0
TARGET = "tests.transports.agents:approval_agent"
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104


@asynccontextmanager
async def password_taker() -> AsyncIterator[tuple[int, list[str]]]:
    """A loopback 'PostgreSQL server' that asks each client for its password and refuses it:
    its port, and the passwords it was sent."""
    sent: list[str] = []

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            reader = BufferedByteReceiveStream(stream)
            while True:  # an SSL or GSS encryption request first, perhaps: "not here"
                (length,) = struct.unpack("!i", await reader.receive_exactly(4))
                body = await reader.receive_exactly(length - 4)
                (code,) = struct.unpack("!i", body[:4])
                if code not in (SSL_REQUEST, GSSENC_REQUEST):
                    break
                await stream.send(b"N")
            await stream.send(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
            kind = await reader.receive_exactly(1)
            (length,) = struct.unpack("!i", await reader.receive_exactly(4))
            message = await reader.receive_exactly(length - 4)
            assert kind == b"p"
            sent.append(message.rstrip(b"\0").decode())
            fields = b"SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed\0\0"
            await stream.send(b"E" + struct.pack("!i", len(fields) + 4) + fields)

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, serve)
        yield listener.extra(anyio.abc.SocketAttribute.local_port), sent
        group.cancel_scope.cancel()


def refused_at_start(*options: str, env: dict[str, str] | None = None) -> str:
    """The one line ``agui serve`` says when it refuses to start (exit status 2), within ``LIMIT``."""
    command = [sys.executable, "-m", "agui_core.app.cli", "serve", TARGET, "--ws", "127.0.0.1:0", *options]
    done = subprocess.run(command, capture_output=True, cwd=ROOT, timeout=LIMIT, env=env or clean_env())
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, done.stderr.decode()
    assert len(lines) == 1 and lines[0].startswith("agui serve: ") and "Traceback" not in lines[0]
    return lines[0]


async def refused_at_start_async(*options: str, env: dict[str, str] | None = None) -> str:
    """:func:`refused_at_start` in a worker thread, so the event loop serves the fake server meanwhile."""
    return await anyio.to_thread.run_sync(lambda: refused_at_start(*options, env=env))


def clean_env(**variables: str) -> dict[str, str]:
    """This process's environment without libpq's variables, plus ``variables``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(variables)
    return env


def private(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o600)
    return path


# -- PostgreSQL's password, never on the command line -----------------------------------------


async def test_the_postgres_password_comes_from_pgpassword() -> None:
    with anyio.fail_after(LIMIT):
        async with password_taker() as (port, sent):
            store = f"postgresql://agui@127.0.0.1:{port}/threads"
            line = await refused_at_start_async("--store", store, env=clean_env(PGPASSWORD="from-the-environment"))
    assert sent == ["from-the-environment"]
    assert f"the thread store {store} cannot be opened" in line and "password authentication failed" in line
    assert "from-the-environment" not in line


async def test_the_postgres_password_comes_from_a_pgpassfile(tmp_path: Path) -> None:
    with anyio.fail_after(LIMIT):
        async with password_taker() as (port, sent):
            passfile = private(tmp_path / "pgpass", f"127.0.0.1:{port}:threads:agui:from-the-passfile\n")
            store = f"postgresql://agui@127.0.0.1:{port}/threads"
            await refused_at_start_async("--store", store, env=clean_env(PGPASSFILE=str(passfile)))
    assert sent == ["from-the-passfile"]


async def test_the_whole_store_url_comes_from_a_file_and_is_never_shown(tmp_path: Path) -> None:
    with anyio.fail_after(LIMIT):
        async with password_taker() as (port, sent):
            dsn = private(tmp_path / "dsn", f"postgresql://agui:from-the-file@127.0.0.1:{port}/threads\n")
            line = await refused_at_start_async("--store-dsn-file", str(dsn))
    assert sent == ["from-the-file"]
    assert f"postgresql://agui:***@127.0.0.1:{port}/threads" in line and "from-the-file" not in line


def test_the_store_url_comes_from_one_place_only(tmp_path: Path) -> None:
    dsn = private(tmp_path / "dsn", "memory\n")
    assert "not both" in refused_at_start("--store", "memory", "--store-dsn-file", str(dsn))
    assert "one line" in refused_at_start("--store-dsn-file", str(private(tmp_path / "two", "memory\nmemory\n")))


async def test_a_role_with_a_password_serves_with_its_url_from_a_file(tmp_path: Path) -> None:
    # Against the real server: it trusts loopback, so this shows the path works end to end
    # with a password-bearing role; the listener above shows the password is what is sent.
    role, schema = f"agui_{uuid.uuid4().hex[:12]}", f"t_{uuid.uuid4().hex[:16]}"
    admin = await admin_connection()
    database = await admin.fetchval("SELECT current_database()")
    try:
        await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'a-password-of-its-own'")
        await admin.execute(f'GRANT CREATE ON DATABASE "{database}" TO {role}')  # the store makes its schema
        server = httpx.URL(server_dsn())
        where = f"{server.host}:{server.port or 5432}{server.path}"
        dsn = private(tmp_path / "dsn", with_schema(f"postgresql://{role}:a-password-of-its-own@{where}", schema))
        options = ("--ws", "127.0.0.1:0", "--store-dsn-file", str(dsn))
        with anyio.fail_after(LIMIT):
            async with agui_serve(TARGET, *options, tmp=tmp_path, env=clean_env()) as served:
                async with connect_websocket(served.url) as client:
                    await client.collect(client.new_input("pg-thread", "Send the report"))
                    assert client.machine("pg-thread").awaiting_input
        assert await admin.fetchval(f"SELECT count(*) FROM {schema}.threads") == 1
    finally:
        await drop_schema(schema)
        await admin.execute(f'REVOKE CREATE ON DATABASE "{database}" FROM {role}')
        await admin.execute(f"DROP ROLE IF EXISTS {role}")
        await admin.close()


# -- a store that cannot be opened stops the server at start-up --------------------------------


async def test_an_unreachable_database_stops_agui_serve_with_one_line() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    await listener.aclose()  # a port where nothing listens
    store = f"postgresql://agui:never-shown@127.0.0.1:{port}/threads"
    line = await refused_at_start_async("--store", store)
    assert f"postgresql://agui:***@127.0.0.1:{port}/threads cannot be opened" in line and "never-shown" not in line


@pytest.mark.parametrize("where", ["no-such-folder/threads.sqlite3", "a-file/threads.sqlite3", "."])
def test_a_sqlite_file_that_cannot_be_opened_stops_agui_serve_with_one_line(tmp_path: Path, where: str) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    line = refused_at_start("--store", f"sqlite:{tmp_path / where}")
    assert f"the thread store sqlite:{tmp_path / where} cannot be opened" in line


# -- retention, in a real file -----------------------------------------------------------------


async def test_a_served_host_purges_threads_at_rest_past_retain_and_keeps_the_interrupted(tmp_path: Path) -> None:
    file = tmp_path / "threads.sqlite3"
    options = ("--ws", "127.0.0.1:0", "--store", f"sqlite:{file}", "--retain", "1s")

    def threads() -> set[str]:
        with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as db:
            return {thread_id for (thread_id,) in db.execute("SELECT thread_id FROM threads")}

    with anyio.fail_after(LIMIT):
        async with agui_serve(TARGET, *options, tmp=tmp_path) as served:
            async with connect_websocket(served.url) as client:
                for thread in ("finished", "waiting"):
                    await client.collect(client.new_input(thread, "Send the report"))
                answers = {i.id: approve() for i in client.machine("finished").open_interrupts}
                await client.collect(client.resume("finished", answers))
            assert threads() == {"finished", "waiting"}
            while "finished" in threads():  # the sweep runs every second
                await anyio.sleep(0.1)
            async with httpx.AsyncClient() as http:
                gone = await http.get(f"{served.http_url}/threads/finished")
                kept = await http.get(f"{served.http_url}/threads/waiting")
    assert threads() == {"waiting"}  # an open interrupt is never purged, however old
    assert (gone.status_code, kept.status_code) == (404, 200)
    with sqlite3.connect(file) as db:
        assert db.execute("SELECT count(*) FROM audit WHERE thread_id = 'finished'").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM messages WHERE thread_id = 'finished'").fetchone() == (0,)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--retain", "30"], "not a duration"),
        (["--retain", "0d"], "not a duration"),
        (["--retain", "soon"], "not a duration"),
        (["--retain-audit", "30d"], "needs --retain"),
        (["--retain", "30d", "--retain-audit", "7d"], "no less"),
    ],
)
def test_a_retention_that_cannot_be_is_refused(options: list[str], says: str) -> None:
    assert says in refused_at_start("--store", "memory", *options)
