"""``agui serve``'s trust options, as real processes: authenticators, origins, TLS, exposure."""

from __future__ import annotations

import re
import ssl
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import jwt
import orjson
import pytest
from agui_transports.client import connect_websocket
from agui_transports.plugin import ServeOptions, require_loopback
from agui_transports.websocket import WebSocketTransport
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from agui_core.app.cli import main
from agui_core.machine.client import approve
from agui_core.protocol.codec import encode_input
from agui_core.runtime import Host
from tests.transports import agents
from tests.transports.served import agui_serve
from tests.transports.test_websocket_trust import ALICE_TOKEN, BOB_TOKEN, JWT_KEY, certificate

__all__ = ["certificate"]  # a fixture this module uses

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 15.0  # seconds any one test may take: a hang fails instead of blocking the suite


def command(*options: str) -> list[str]:
    return [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:approval_agent",
        "--store", "memory", *options,
    ]  # fmt: skip


@asynccontextmanager
async def serve_process(*options: str) -> AsyncIterator[str]:
    """Start ``agui serve`` and yield the URL it serves on, reached through 127.0.0.1."""
    process = await anyio.open_process(
        command(*options), cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    async with process:
        assert process.stderr is not None
        log = b""
        while not (found := re.search(rb"(wss?)://[^ ]*:(\d+)\n", log)):
            chunk = await process.stderr.receive()
            log += chunk
        try:
            yield f"{found.group(1).decode()}://127.0.0.1:{int(found.group(2))}"
        finally:
            process.terminate()
            await process.wait()


async def status_of_refused(url: str, **options: object) -> int:
    with pytest.raises(InvalidStatus) as refused:
        async with connect(url, **options):  # type: ignore[arg-type]
            pass
    return refused.value.response.status_code


def test_without_an_authenticator_it_refuses_to_listen_beyond_loopback() -> None:
    done = subprocess.run(command("--ws", "0.0.0.0:0"), capture_output=True, cwd=ROOT, timeout=LIMIT)
    assert done.returncode == 2
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agui serve: ")
    assert "0.0.0.0" in lines[0] and "--insecure" in lines[0] and "--auth-tokens" in lines[0]


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.4.5", "::1", "localhost", "LOCALHOST"])
def test_loopback_addresses_need_no_authenticator(host: str) -> None:
    require_loopback(host)  # does not raise


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.2", "example.com", "localhost.evil.example"])
def test_other_addresses_need_an_authenticator(host: str) -> None:
    with pytest.raises(ValueError, match="--insecure"):
        require_loopback(host)


async def test_the_ws_transport_listens_nowhere_else_when_told_loopback_only() -> None:
    async with Host(agents.slow_agent) as host:
        options = ServeOptions(address="0.0.0.0:0", loopback_only=True)
        with pytest.raises(ValueError, match=r"listening on 0\.0\.0\.0"):
            await WebSocketTransport().serve(host, options)


async def test_with_insecure_it_serves_on_every_interface() -> None:
    with anyio.fail_after(LIMIT):
        async with serve_process("--ws", "0.0.0.0:0", "--insecure") as url:
            async with connect_websocket(url) as client:
                await client.collect(client.new_input("insecure", "Send the report"))
                assert client.machine("insecure").awaiting_input


async def test_tokens_tls_and_origins_from_the_command_line(tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE_TOKEN}\nbob {BOB_TOKEN}\n")
    tokens.chmod(0o600)
    client_tls = ssl.create_default_context(cafile=str(cert))
    options = [
        "--ws", "0.0.0.0:0", "--auth-tokens", str(tokens), "--tls-cert", str(cert), "--tls-key", str(key),
        "--allow-origin", "https://app.example",
    ]  # fmt: skip
    with anyio.fail_after(LIMIT):
        async with serve_process(*options) as url:
            assert url.startswith("wss://")
            async with connect_websocket(url, token=ALICE_TOKEN, origin="https://app.example", ssl=client_tls) as c:
                await c.collect(c.new_input("alice-thread", "Send the report"))
                assert c.machine("alice-thread").awaiting_input
            assert await status_of_refused(url, ssl=client_tls) == 401
            assert await status_of_refused(url, ssl=client_tls, origin="https://evil.example") == 403
            approval = c.resume("alice-thread", {i.id: approve() for i in c.machine("alice-thread").open_interrupts})
            async with connect(url, ssl=client_tls, additional_headers={"Authorization": f"Bearer {BOB_TOKEN}"}) as ws:
                await ws.send(encode_input(approval).decode())
                assert orjson.loads(await ws.recv())["code"] == "FORBIDDEN"


async def test_signed_tokens_from_the_command_line(tmp_path: Path) -> None:
    key = tmp_path / "jwt.key"
    key.write_text(JWT_KEY + "\n")
    key.chmod(0o600)

    def signed(audience: str) -> str:
        return jwt.encode({"sub": "carol", "aud": audience, "exp": int(time.time() + 60)}, JWT_KEY)

    with anyio.fail_after(LIMIT):
        async with serve_process("--auth-jwt-key", str(key), "--auth-jwt-audience", "agui") as url:
            async with connect_websocket(url, token=signed("agui")) as client:
                await client.collect(client.new_input("signed", "Send the report"))
                assert client.machine("signed").awaiting_input
            assert await status_of_refused(url, additional_headers={"Authorization": f"Bearer {signed('x')}"}) == 401


@pytest.mark.parametrize(
    "options",
    [
        ["--stdio", "--auth-tokens", "tokens"],
        ["--stdio", "--allow-origin", "https://app.example"],
        ["--tls-cert", "cert.pem"],
        ["--auth-jwt-audience", "agui"],
        ["--auth-tokens", "no-such-file"],
    ],
)
def test_trust_options_that_cannot_work_exit_2(options: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "tests.transports.agents:approval_agent", "--store", "memory", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agui serve: ") and "Traceback" not in err and err.count("\n") == 1


def refused_at_start(*options: str) -> str:
    """The one line ``agui serve`` says when it refuses to start (exit status 2), within ``LIMIT``."""
    done = subprocess.run(command("--ws", "127.0.0.1:0", *options), capture_output=True, cwd=ROOT, timeout=LIMIT)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2, done.stderr.decode()
    assert len(lines) == 1 and lines[0].startswith("agui serve: ") and "Traceback" not in lines[0]
    return lines[0]


@pytest.mark.parametrize("key", ["k" * 4, "k" * 31])
def test_a_jwt_hmac_key_shorter_than_32_bytes_stops_agui_serve(tmp_path: Path, key: str) -> None:
    path = tmp_path / "jwt.key"
    path.write_text(key + "\n")
    path.chmod(0o600)
    line = refused_at_start("--auth-jwt-key", str(path))
    assert f"HS256 key is {len(key)} bytes" in line and "at least 32" in line


@pytest.mark.parametrize("flag", ["--auth-tokens", "--auth-jwt-key", "--store-dsn-file", "--tls-key"])
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_secret_file_its_group_or_others_can_read_is_refused(
    tmp_path: Path, certificate: tuple[Path, Path], flag: str, mode: int
) -> None:
    cert, key = certificate
    secrets = {
        "--auth-tokens": f"alice {ALICE_TOKEN}\n",
        "--auth-jwt-key": JWT_KEY + "\n",
        "--store-dsn-file": "memory\n",
        "--tls-key": key.read_text(),
    }
    path = tmp_path / "secret"
    path.write_text(secrets[flag])
    path.chmod(mode)
    options = [flag, str(path)] + (["--tls-cert", str(cert)] if flag == "--tls-key" else [])
    if flag == "--store-dsn-file":
        options = ["--store-dsn-file", str(path)]
    line = refused_at_start(*options)
    assert str(path) in line and f"chmod 600 {path}" in line and f"mode {mode:04o}" in line and "--insecure" in line


async def test_with_insecure_a_secret_file_others_can_read_is_taken(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE_TOKEN}\n")
    tokens.chmod(0o644)
    assert "chmod 600" in refused_at_start("--auth-tokens", str(tokens))
    with anyio.fail_after(LIMIT):
        async with serve_process("--auth-tokens", str(tokens), "--insecure") as url:
            async with connect_websocket(url, token=ALICE_TOKEN) as client:
                await client.collect(client.new_input("taken", "Send the report"))
                assert client.machine("taken").awaiting_input


async def test_the_capabilities_and_feed_options_reach_the_http_transport(tmp_path: Path) -> None:
    import httpx

    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE_TOKEN}\n")
    tokens.chmod(0o600)
    alice = {"authorization": f"Bearer {ALICE_TOKEN}"}
    http = ("tests.transports.agents:approval_agent", "--store", "memory", "--http", "127.0.0.1:0")
    with anyio.fail_after(LIMIT):
        async with agui_serve(*http, "--auth-tokens", str(tokens), tmp=tmp_path) as served:
            async with httpx.AsyncClient(base_url=served.url) as client:
                closed = await client.get("/capabilities")
        options = ("--auth-tokens", str(tokens), "--public-capabilities", "--max-feeds-per-principal", "1")
        async with agui_serve(*http, *options, tmp=tmp_path) as served:
            async with httpx.AsyncClient(base_url=served.url) as client:
                public = await client.get("/capabilities")
                async with client.stream("GET", "/inbox/events", headers=alice) as first:
                    lines = first.aiter_lines()
                    assert await anext(lines) == 'data: {"type":"ready"}'
                    async with client.stream("GET", "/inbox/events", headers=alice) as second:
                        assert await anext(second.aiter_lines()) == 'data: {"type":"ready"}'
                        rest = [line async for line in lines]  # the first ends: one feed at a time
    assert closed.status_code == 401 and public.status_code == 200 and "sendEmail" in public.text
    assert all(not line.startswith("data:") for line in rest)
