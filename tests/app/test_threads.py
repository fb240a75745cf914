"""``agui threads`` (agui_core/app/threads.py), run as its own process against a SQLite file and a
PostgreSQL schema that a host in this process serves over WebSocket, its client still connected."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from agui_transports.client import connect_websocket
from agui_transports.websocket import WebSocketServer

from agui_core.machine.client import deny
from agui_core.protocol import events as ev
from agui_core.runtime import Host
from agui_core.store import SqliteThreadStore, ThreadStore
from agui_core.store.postgres import PostgresThreadStore
from tests.transports import agents
from tests.transports.served import ROOT

pytestmark = pytest.mark.anyio

LIMIT = 240.0  # a guard against a hang: each command is a process of its own, seconds apiece on a busy machine
AGENT = "tests.transports.agents:approval_agent"


@pytest.fixture(params=["sqlite", "postgres"])
async def spec(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A store URL for ``--store``."""
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'threads.sqlite3'}"
    else:
        yield request.getfixturevalue("postgres_url")


def open_store(spec: str) -> ThreadStore:
    return SqliteThreadStore(spec.removeprefix("sqlite:")) if spec.startswith("sqlite:") else PostgresThreadStore(spec)


async def agui_threads(spec: str, *arguments: str) -> tuple[int, str, str]:
    """``agui threads --store SPEC ARGUMENTS`` in a process of its own: exit status, stdout, stderr."""
    command = [sys.executable, "-m", "agui_core.app.cli", "threads", "--store", spec, *arguments]
    done = await anyio.run_process(command, cwd=ROOT, check=False, stdin=subprocess.DEVNULL)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def json_of(spec: str, *arguments: str) -> Any:
    status, out, err = await agui_threads(spec, *arguments, "--json")
    assert status == 0, err
    return orjson.loads(out)


def texts(events: list[Any]) -> str:
    return "".join(e.delta for e in events if isinstance(e, ev.TextMessageContentEvent))


async def test_an_operator_lists_shows_cancels_and_exports_while_the_owners_client_is_connected(spec: str) -> None:
    store = open_store(spec)
    with anyio.fail_after(LIMIT):
        async with store, Host(agents.approval_agent, store=store, tools=agents.TOOLS) as host:
            async with WebSocketServer(host, port=0) as server, connect_websocket(server.url) as client:
                for thread in ("waiting-1", "waiting-2"):
                    events = await client.collect(client.new_input(thread, "Send the report"))
                    assert isinstance(events[-1], ev.RunFinishedEvent)
                    assert events[-1].outcome is not None and events[-1].outcome.type == "interrupt"

                listed = await json_of(spec, "list")
                assert [(line["threadId"], line["reason"], line["owner"]) for line in listed] == [
                    ("waiting-2", "tool_call", "anonymous"),
                    ("waiting-1", "tool_call", "anonymous"),
                ]
                assert all(line["ageSeconds"] >= 0 and line["expiresAt"] is None for line in listed)
                assert await json_of(spec, "list", "--reason", "input_required") == []
                assert await json_of(spec, "list", "--older-than", "1h") == []
                assert len(await json_of(spec, "list", "--owner", "anonymous")) == 2
                (interrupt_id,) = [line["interruptId"] for line in listed if line["threadId"] == "waiting-1"]

                shown = await json_of(spec, "show", "waiting-1")
                assert shown["state"] == "interrupted" and shown["audit"] == []
                assert [o["interruptId"] for o in shown["open"]] == [interrupt_id]
                assert shown["messages"][0]["content"] == "Send the report"

                status, _, err = await agui_threads(spec, "cancel", "waiting-1", "not-open", "--agent", AGENT)
                assert status == 2 and "names all of them or none" in err

                cancelled = await json_of(
                    spec, "cancel", "waiting-1", interrupt_id, "--agent", AGENT, "--operator", "carol"
                )
                assert cancelled["cancelled"] == [interrupt_id] and cancelled["outcome"] == "success"

                # The owner's client, connected all along, finds the thread free for its next input.
                # (the agent asks again: a new approval, not the cancelled one).
                again = await client.collect(client.new_input("waiting-1", "Anything else?"))
                assert isinstance(again[-1], ev.RunFinishedEvent) and again[-1].outcome is not None
                (asked_again,) = again[-1].outcome.interrupts or ()
                assert asked_again.id != interrupt_id

            shown = await json_of(spec, "show", "waiting-1")
            (line,) = [a for a in shown["audit"] if a["interrupt"]["id"] == interrupt_id]
            assert line["status"] == "cancelled"
            assert line["metadata"] == {"cancelledBy": "carol", "via": "agui threads cancel"}
            assert line["answeredIn"] == cancelled["runId"]
            heard = [m.get("content") for m in shown["messages"] if m["role"] == "assistant"]
            assert "sendEmail: cancelled" in heard  # the agent ran on the cancel and heard it

            status, out, err = await agui_threads(spec, "export-audit", "--since", "1d")
            assert status == 0, err
            exported = [orjson.loads(row) for row in out.splitlines()]
            assert [(row["threadId"], row["status"]) for row in exported] == [("waiting-1", "cancelled")]
            status, out, _ = await agui_threads(spec, "export-audit", "--since", "2999-01-01")
            assert (status, out) == (0, "")

            status, out, _ = await agui_threads(spec, "list")
            assert status == 0 and out.splitlines()[0].split() == [
                "THREAD",
                "OWNER",
                "REASON",
                "INTERRUPT",
                "AGE",
                "EXPIRES",
            ]
            assert asked_again.id in out and interrupt_id not in out


async def test_purge_removes_threads_at_rest_older_than_asked_and_never_a_waiting_one(spec: str) -> None:
    store = open_store(spec)
    long_ago = datetime.now(UTC) - timedelta(days=40)
    with anyio.fail_after(LIMIT):
        async with store, Host(agents.approval_agent, store=store, tools=agents.TOOLS, clock=lambda: long_ago) as host:
            async with WebSocketServer(host, port=0) as server, connect_websocket(server.url) as client:
                for thread in ("done", "waiting"):
                    await client.collect(client.new_input(thread, "Send the report"))
                (interrupt,) = client.machine("done").open_interrupts
                await client.collect(client.resume("done", {interrupt.id: deny()}))

        assert await json_of(spec, "purge", "--older-than", "90d") == {"threads": 0, "auditTrails": 0}
        assert await json_of(spec, "purge", "--older-than", "30d") == {"threads": 1, "auditTrails": 0}
        async with open_store(spec) as again:
            assert await again.load("done") is None
            assert await again.load("waiting") is not None


async def test_a_thread_that_is_not_there_is_a_clear_error(spec: str) -> None:
    status, _, err = await agui_threads(spec, "show", "nowhere")
    assert status == 2 and "no thread 'nowhere'" in err
