"""Where the tests find PostgreSQL, and a schema of their own in it.

The server is ``$AGUI_TEST_POSTGRES`` when set, otherwise the project machines' server,
``postgresql://postgres@127.0.0.1:5432/test``; ``scripts/test`` starts a throwaway one (and
sets the variable) when nothing answers there. Tests never skip for lack of a database: they
fail, saying what to run.

Each test works in a schema of its own (``t_<random>``), dropped afterwards, so runs and tests
never see each other's threads.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlencode, urlsplit, urlunsplit

import asyncpg
import pytest

__all__ = [
    "DEFAULT_DSN",
    "DSN_VARIABLE",
    "admin_connection",
    "drop_schema",
    "new_schema",
    "require_server",
    "server_dsn",
    "with_schema",
]

DSN_VARIABLE = "AGUI_TEST_POSTGRES"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def server_dsn() -> str:
    """The URL of the tests' PostgreSQL server."""
    return os.environ.get(DSN_VARIABLE) or DEFAULT_DSN


def with_schema(dsn: str, schema: str) -> str:
    """``dsn`` naming ``schema`` (its ``schema`` query parameter, which the store reads)."""
    parts = urlsplit(dsn)
    query = f"{parts.query}&" if parts.query else ""
    return urlunsplit(parts._replace(query=query + urlencode({"schema": schema})))


def new_schema() -> str:
    return f"t_{uuid.uuid4().hex[:16]}"


async def admin_connection(dsn: str | None = None) -> asyncpg.Connection:
    """A plain connection to the tests' server, or a test failure that says what to run."""
    dsn = dsn or server_dsn()
    try:
        return await asyncpg.connect(dsn, timeout=10)
    except (OSError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        pytest.fail(
            f"no PostgreSQL answers at {dsn} ({type(exc).__name__}: {exc}). Run the tests with "
            f"`bash scripts/test` (it starts a throwaway server when none answers), or start one and "
            f"set {DSN_VARIABLE}=postgresql://USER@HOST:PORT/DATABASE",
            pytrace=False,
        )


async def require_server() -> str:
    """The server's URL, once it has answered."""
    connection = await admin_connection()
    await connection.close()
    return server_dsn()


async def drop_schema(schema: str) -> None:
    connection = await admin_connection()
    try:
        await connection.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        await connection.close()
