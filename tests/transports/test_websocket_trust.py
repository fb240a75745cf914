"""Who may connect to the WebSocket transport, and as whom (SPEC section 9), with real clients.

Each test serves in process on 127.0.0.1 (a free port) with a host that authenticates, and
attacks it as a hostile client or a hostile web page would.
"""

from __future__ import annotations

import logging
import ssl
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jwt
import orjson
import pytest
from agui_transports.client import connect_websocket
from agui_transports.plugin import MAX_INPUT_DEPTH
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from agui_core.machine.client import approve
from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host
from agui_core.runtime.auth import Authenticator, JwtAuthenticator, TokenAuthenticator
from agui_core.store import MemoryThreadStore
from tests.transports import agents
from tests.transports.agents import SENT, TOOLS

pytestmark = pytest.mark.anyio

LIMIT = 10.0  # seconds any one test may take: a hang fails instead of blocking the suite

ALICE_TOKEN = "alice-token-0123456789abcdef"
BOB_TOKEN = "bob-token-0123456789abcdef"
JWT_KEY = "a-shared-secret-of-at-least-32-bytes"


@pytest.fixture
def tokens(tmp_path: Path) -> TokenAuthenticator:
    path = tmp_path / "tokens"
    path.write_text(f"# principal token\nalice {ALICE_TOKEN}\n\nbob {BOB_TOKEN}\n")
    return TokenAuthenticator.from_file(path)


@asynccontextmanager
async def serving(
    authenticator: Authenticator | None, agent: Callable[..., Any] = agents.approval_agent, **options: Any
) -> AsyncIterator[tuple[Host, WebSocketServer]]:
    async with Host(agent, store=MemoryThreadStore(), tools=TOOLS, authenticator=authenticator) as host:
        async with WebSocketServer(host, port=0, **options) as server:
            yield host, server


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def frames_until_end(ws: ClientConnection) -> list[dict[str, Any]]:
    """Frames up to and including the run's RUN_FINISHED or RUN_ERROR."""
    out = []
    while True:
        frame = orjson.loads(await ws.recv())
        out.append(frame)
        if frame["type"] in ("RUN_FINISHED", "RUN_ERROR"):
            return out


async def refused_handshake(url: str, **connect_options: Any) -> tuple[int, bytes]:
    """The HTTP status and body of a handshake the server must refuse."""
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, **connect_options):
            pass
    response = refused.value.response
    return response.status_code, response.body or b""


# -- identity -------------------------------------------------------------------------------


async def test_each_principal_of_the_token_file_works_with_its_own_token(tokens: TokenAuthenticator) -> None:
    SENT.clear()
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (host, server):
            for name, token in (("alice", ALICE_TOKEN), ("bob", BOB_TOKEN)):
                async with connect_websocket(server.url, token=token) as client:
                    thread = f"{name}-thread"
                    await client.collect(client.new_input(thread, "Send the report"))
                    answers = {i.id: approve() for i in client.machine(thread).open_interrupts}
                    await client.collect(client.resume(thread, answers))
                    assert client.machine(thread).result == {"email": "executed"}
                record = await host.store.load(thread)
                assert record is not None and record.owner == name
    assert len(SENT) == 2


@pytest.mark.parametrize(
    "headers",
    [None, bearer("not-a-token-anyone-was-given"), {"Authorization": f"Basic {ALICE_TOKEN}"}],
    ids=["no token", "unknown token", "another scheme"],
)
async def test_a_handshake_without_a_valid_token_gets_401_and_no_upgrade(
    tokens: TokenAuthenticator, headers: dict[str, str] | None
) -> None:
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (_, server):
            status, body = await refused_handshake(server.url, additional_headers=headers)
            assert status == 401
            assert b"bearer token" in body and ALICE_TOKEN.encode() not in body
            assert server.connections == 0


async def test_a_browser_token_in_the_subprotocol_works_and_the_server_selects_agui(
    tokens: TokenAuthenticator,
) -> None:
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (host, server):
            async with connect(server.url, subprotocols=["agui", f"agui.bearer.{BOB_TOKEN}"]) as ws:  # type: ignore[list-item]
                assert ws.subprotocol == "agui"
                assert ws.response is not None
                assert ws.response.headers.get_all("Sec-WebSocket-Protocol") == ["agui"]
                await ws.send(encode_input(RunAgentInput(thread_id="from-a-browser", run_id="run-1")).decode())
                assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"
            record = await host.store.load("from-a-browser")
            assert record is not None and record.owner == "bob"
            # A wrong token in the subprotocol is refused like a wrong header.
            status, _ = await refused_handshake(server.url, subprotocols=["agui", "agui.bearer.wrong-token-123456"])
            assert status == 401


async def test_a_subprotocol_token_without_agui_and_two_tokens_are_refused(tokens: TokenAuthenticator) -> None:
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (_, server):
            # A browser would fail a connection whose offer the server did not answer: say so at once.
            status, _ = await refused_handshake(server.url, subprotocols=[f"agui.bearer.{BOB_TOKEN}"])
            assert status == 400
            # Two tokens (header and subprotocol): no guessing which one counts.
            status, _ = await refused_handshake(
                server.url, additional_headers=bearer(ALICE_TOKEN), subprotocols=["agui", f"agui.bearer.{BOB_TOKEN}"]
            )
            assert status == 401


async def test_signed_tokens_work_end_to_end_and_bad_ones_get_401() -> None:
    def signed(key: str = JWT_KEY, expires_in: float = 60, **claims: Any) -> str:
        return jwt.encode({"sub": "carol", "aud": "agui", "exp": int(time.time() + expires_in), **claims}, key)

    authenticator = JwtAuthenticator(JWT_KEY, audience="agui")
    with anyio.fail_after(LIMIT):
        async with serving(authenticator) as (host, server):
            async with connect_websocket(server.url, token=signed()) as client:
                await client.collect(client.new_input("signed", "Send the report"))
                assert client.machine("signed").awaiting_input
            record = await host.store.load("signed")
            assert record is not None and record.owner == "carol"
            for bad in (signed(expires_in=-60), signed(key="another-secret-of-at-least-32-bytes"), signed(aud="x")):
                status, _ = await refused_handshake(server.url, additional_headers=bearer(bad))
                assert status == 401


# -- ownership ------------------------------------------------------------------------------


async def test_another_principal_cannot_approve_retry_or_plant_on_a_thread(tokens: TokenAuthenticator) -> None:
    SENT.clear()
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (host, server), connect_websocket(server.url, token=ALICE_TOKEN) as alice:
            first = alice.new_input("alice-thread", "Send the report")
            await alice.collect(first)
            machine = alice.machine("alice-thread")
            (interrupt,) = machine.open_interrupts
            approval = alice.resume("alice-thread", {interrupt.id: approve()})
            before = await host.store.load("alice-thread")

            attacks = {
                "approve her interrupt": approval,
                "retry her run": first,
                "plant an input": RunAgentInput(
                    thread_id="alice-thread", run_id="planted", messages=first.messages, state={"admin": True}
                ),
            }
            async with connect(server.url, additional_headers=bearer(BOB_TOKEN)) as bob:
                for attack, run_input in attacks.items():
                    await bob.send(encode_input(run_input).decode())
                    frames = await frames_until_end(bob)
                    assert [f["type"] for f in frames] == ["RUN_ERROR"], attack
                    assert frames[0]["code"] == "FORBIDDEN", attack
                    message = frames[0]["message"]
                    for secret in ("alice-thread", first.run_id, approval.run_id, interrupt.id, "alice"):
                        assert secret not in message, (attack, secret)

            assert await host.store.load("alice-thread") == before
            assert SENT == []
            # Her interrupt is still hers to answer.
            await alice.collect(approval)
            assert machine.result == {"email": "executed"}
    assert SENT == [{"to": "ann@example.com", "subject": "Q3 report", "body": ""}]


# -- browsers -------------------------------------------------------------------------------


async def test_a_page_of_an_origin_not_on_the_list_gets_403() -> None:
    with anyio.fail_after(LIMIT):
        async with serving(None, allow_origins=["https://app.example"]) as (_, server):
            status, _ = await refused_handshake(server.url, origin="https://evil.example")
            assert status == 403
            async with connect_websocket(server.url, origin="https://app.example") as client:
                assert (await client.collect(client.new_input("allowed", "hi")))[-1].type == "RUN_FINISHED"
            async with connect_websocket(server.url) as client:  # no Origin: not a browser page
                assert (await client.collect(client.new_input("no-origin", "hi")))[-1].type == "RUN_FINISHED"


async def test_by_default_no_page_may_connect_whatever_its_token(tokens: TokenAuthenticator) -> None:
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (_, server):
            status, _ = await refused_handshake(
                server.url, origin="http://127.0.0.1:3000", additional_headers=bearer(ALICE_TOKEN)
            )
            assert status == 403


# -- TLS ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made by the openssl command."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


async def test_wss_serves_over_tls(certificate: tuple[Path, Path], tokens: TokenAuthenticator) -> None:
    cert, key = certificate
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    client_tls = ssl.create_default_context(cafile=str(cert))
    with anyio.fail_after(LIMIT):
        async with serving(tokens, ssl=server_tls) as (_, server):
            assert server.url.startswith("wss://")
            async with connect_websocket(server.url, token=ALICE_TOKEN, ssl=client_tls) as client:
                await client.collect(client.new_input("over-tls", "Send the report"))
                assert client.machine("over-tls").awaiting_input
            # A client that does not trust the certificate does not get through.
            with pytest.raises(ssl.SSLCertVerificationError):
                async with connect_websocket(server.url, token=ALICE_TOKEN):
                    pass


# -- hostile frames -------------------------------------------------------------------------


def nested(depth: int) -> str:
    """An input whose ``state`` makes the whole document ``depth`` levels deep."""
    fields = '"threadId":"deep","runId":"run-1","messages":[],"tools":[],"context":[],"forwardedProps":{"seconds":0}'
    return "{" + fields + ',"state":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.mark.parametrize("depth", [5_000, 200, MAX_INPUT_DEPTH + 1])
async def test_a_deeply_nested_frame_gets_invalid_input_and_no_traceback(
    depth: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with anyio.fail_after(LIMIT):
        async with serving(None, agents.slow_agent) as (host, server), connect(server.url) as ws:
            caplog.clear()
            await ws.send(nested(depth))
            (error,) = await frames_until_end(ws)
            assert (error["type"], error["code"]) == ("RUN_ERROR", "INVALID_INPUT")
            assert "deep" in error["message"] or "depth" in error["message"]
            assert await host.store.load("deep") is None
            # Not too strict: the same thread at the limit is served.
            await ws.send(nested(MAX_INPUT_DEPTH))
            assert (await frames_until_end(ws))[-1]["type"] == "RUN_FINISHED"
    assert [r for r in caplog.records if r.exc_info] == []
    ours = [r for r in caplog.records if r.name.startswith("agui") and "refused a frame" in r.getMessage()]
    assert len(ours) == 1
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_fault_inside_resume_gets_invalid_resume_on_the_wire() -> None:
    frame = {
        "threadId": "t",
        "runId": "run-1",
        "messages": [],
        "tools": [],
        "context": [],
        "resume": [{"interruptId": "int-1", "status": "approved-ish"}],
    }
    with anyio.fail_after(LIMIT):
        async with serving(None) as (_, server), connect(server.url) as ws:
            await ws.send(orjson.dumps(frame).decode())
            (error,) = await frames_until_end(ws)
            assert (error["type"], error["code"]) == ("RUN_ERROR", "INVALID_RESUME")
            assert "$.resume[0].status" in error["message"]
            # And a fault outside resume is still INVALID_INPUT.
            await ws.send(orjson.dumps({**frame, "resume": [], "threadId": 7}).decode())
            assert (await frames_until_end(ws))[0]["code"] == "INVALID_INPUT"
