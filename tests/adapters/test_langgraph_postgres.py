"""Both halves of a LangGraph thread on PostgreSQL, and a host restarted between the two runs.

The graph is compiled with LangGraph's ``AsyncPostgresSaver`` and the host keeps its threads in
:class:`~agui_core.store.postgres.PostgresThreadStore`, both in a schema of this test's own on
the tests' server (``tests/postgres.py``). The first host serves the interrupting run over
WebSocket and stops; a second host, with a graph compiled anew on a new saver (what a restarted
process has), takes the resume: the interrupt is the same, the node behind it runs once, and
the graph does not start over.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.adapters.langgraph import langgraph_agent
from agui_core.runtime import Host
from agui_core.store.postgres import PostgresThreadStore
from tests.adapters import graphs
from tests.adapters.graphs import RAN
from tests.adapters.test_langgraph import USER, exchange, finished, frame, interrupts, of_type, resolve, texts
from tests.postgres import admin_connection, drop_schema, new_schema, require_server

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def postgres_host(dsn: str, schema: str) -> AsyncIterator[str]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    conninfo = f"{dsn}?options=-csearch_path%3D{schema}"
    async with (
        AsyncPostgresSaver.from_conn_string(conninfo) as saver,
        PostgresThreadStore(dsn, schema=schema) as store,
    ):
        await saver.setup()
        async with Host(langgraph_agent(graphs.approval_graph_on(saver)), store=store) as host:
            async with WebSocketServer(host, port=0) as server:
                yield server.url


async def test_a_restarted_host_resumes_the_same_interrupt_and_the_node_runs_once() -> None:
    dsn = await require_server()
    schema = new_schema()
    admin = await admin_connection()
    try:
        await admin.execute(f"CREATE SCHEMA {schema}")
    finally:
        await admin.close()
    try:
        with anyio.fail_after(60):
            async with postgres_host(dsn, schema) as url, connect(url) as ws:
                (approval,) = interrupts(await exchange(ws, frame("t", "r1", messages=[USER])))
            # A new host, a new saver, the same database: what a restarted process has.
            async with postgres_host(dsn, schema) as url, connect(url) as ws:
                answer: list[dict[str, Any]] = [resolve(approval["id"], {"approved": True})]
                plain = await exchange(ws, frame("t", "r2", messages=[USER]))
                assert [(f["type"], f.get("code")) for f in plain] == [("RUN_ERROR", "PENDING_INTERRUPTS")]
                done = await exchange(ws, frame("t", "r3", resume=answer))
                assert finished(done)["outcome"] == {"type": "success"}
                assert [f["content"] for f in of_type(done, "TOOL_CALL_RESULT")] == ["sent to bob@example.com: hi"]
                assert texts(done) == []  # the graph did not start over: no new proposal
                again = await exchange(ws, frame("t", "r4", resume=answer))
                assert finished(again)["outcome"] == {"type": "success"}
        assert RAN == [("send_email", {"to": "bob@example.com", "subject": "hi"})]
    finally:
        await drop_schema(schema)
