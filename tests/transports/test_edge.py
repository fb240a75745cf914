"""The network edge against hostile clients, through real ``agui serve`` processes: Nagle's
delay on kept-alive connections, connections that never finish a request, one client holding
many connections, clients without a token crowding out those with one, idle WebSocket
connections, and requests that name another host (DNS rebinding).

Every client here is written by hand on raw sockets, as an attacker's would be; every wait
is bounded, and every server is stopped by its PID.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import anyio
import anyio.abc
import orjson
import pytest
from agui_transports.connections import ConnectionGate, client_key, loopback_name
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from agui_core.protocol.codec import encode_input
from agui_core.protocol.types import RunAgentInput
from tests.transports.served import Served, agui_serve, read_response, receive_until_closed, request
from tests.transports.test_websocket_trust import ALICE_TOKEN

pytestmark = pytest.mark.anyio

LIMIT = 30.0  # seconds any one test may take: a hang fails instead of blocking the suite
MARGIN = 5.0  # seconds past a deadline the server is given to act on it
AGENT = "tests.transports.agents:approval_agent"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def connect_raw(port: int, source: str = "127.0.0.1") -> anyio.abc.SocketStream:
    return await anyio.connect_tcp("127.0.0.1", port, local_host=source)


def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens"
    path.write_text(f"alice {ALICE_TOKEN}\n")
    path.chmod(0o600)
    return path


def run_frame(thread: str, run: str = "run-1") -> str:
    return encode_input(RunAgentInput(thread_id=thread, run_id=run)).decode()


async def one_run(ws: object, thread: str, run: str) -> list[dict[str, object]]:
    await ws.send(run_frame(thread, run))  # type: ignore[attr-defined]
    frames = [orjson.loads(await ws.recv())]  # type: ignore[attr-defined]
    while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        frames.append(orjson.loads(await ws.recv()))  # type: ignore[attr-defined]
    return frames


# -- Nagle's algorithm -------------------------------------------------------------------------


async def test_the_third_request_on_a_kept_alive_http_connection_is_as_quick_as_the_first(tmp_path: Path) -> None:
    # Without TCP_NODELAY, a response written in two pieces waits for the client's delayed
    # ACK: 40 ms on every request after the first on a kept-alive connection (curl URL URL).
    firsts, thirds = [], []
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, "--http", "127.0.0.1:0", "--store", "memory", tmp=tmp_path) as served:
            for _ in range(7):
                async with await connect_raw(served.port) as stream:
                    took = []
                    for _ in range(3):
                        started = time.perf_counter()
                        status, _, _ = await request(stream, "/capabilities")
                        took.append(time.perf_counter() - started)
                        assert status == 200
                firsts.append(took[0])
                thirds.append(took[2])
    # A ratio, not a time: on this connection the third must not cost many times the first.
    assert statistics.median(thirds) < 4 * statistics.median(firsts), (firsts, thirds)


async def test_the_third_run_on_a_websocket_connection_is_as_quick_as_the_first(tmp_path: Path) -> None:
    firsts, thirds = [], []
    with anyio.fail_after(LIMIT):
        async with agui_serve(
            "tests.transports.agents:slow_agent", "--ws", "127.0.0.1:0", "--store", "memory", tmp=tmp_path
        ) as served:
            for n in range(5):
                async with connect(served.url) as ws:
                    took = []
                    for run in range(3):
                        thread = f"nagle-{n}-{run}"
                        frame = encode_input(
                            RunAgentInput(thread_id=thread, run_id="r", forwarded_props={"seconds": 0})
                        ).decode()
                        started = time.perf_counter()
                        await ws.send(frame)
                        while orjson.loads(await ws.recv())["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
                            pass
                        took.append(time.perf_counter() - started)
                firsts.append(took[0])
                thirds.append(took[2])
    assert statistics.median(thirds) < 4 * statistics.median(firsts), (firsts, thirds)


# -- requests that never finish -----------------------------------------------------------------


async def test_http_connections_that_never_finish_a_request_are_closed(tmp_path: Path) -> None:
    options = ("--http", "127.0.0.1:0", "--store", "memory", "--header-timeout", "1", "--keepalive-timeout", "1")
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, *options, tmp=tmp_path) as served:
            async with anyio.create_task_group() as group:

                async def silent() -> None:
                    async with await connect_raw(served.port) as stream:
                        with anyio.fail_after(1 + MARGIN):
                            assert await receive_until_closed(stream) == b""

                async def half_a_request_line() -> None:
                    async with await connect_raw(served.port) as stream:
                        await stream.send(b"GET /capabilities HT")
                        with anyio.fail_after(1 + MARGIN):
                            answer = await receive_until_closed(stream)
                        assert answer.startswith(b"HTTP/1.1 408 ")
                        assert b"request head did not arrive within 1 s" in answer

                async def one_header_byte_at_a_time() -> None:
                    # Bytes keep coming, but the head is never whole: the deadline is for the head.
                    head = b"GET /capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200
                    async with await connect_raw(served.port) as stream:
                        started = time.monotonic()
                        with anyio.fail_after(1 + MARGIN):
                            try:
                                for byte in head:
                                    await stream.send(bytes([byte]))
                                    await anyio.sleep(0.1)
                            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                                pass
                            await receive_until_closed(stream)
                        assert time.monotonic() - started < 1 + MARGIN

                async def idle_after_a_request() -> None:
                    async with await connect_raw(served.port) as stream:
                        status, _, _ = await request(stream, "/capabilities")
                        assert status == 200
                        with anyio.fail_after(1 + MARGIN):
                            assert await receive_until_closed(stream) == b""

                for case in (silent, half_a_request_line, one_header_byte_at_a_time, idle_after_a_request):
                    group.start_soon(case)


async def test_a_slow_but_whole_request_head_and_a_busy_kept_alive_connection_are_served(tmp_path: Path) -> None:
    options = ("--http", "127.0.0.1:0", "--store", "memory", "--header-timeout", "2", "--keepalive-timeout", "1")
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, *options, tmp=tmp_path) as served:
            async with await connect_raw(served.port) as stream:
                for _ in range(4):  # each request within the idle time: the connection lives on past it
                    await anyio.sleep(0.5)
                    assert (await request(stream, "/capabilities"))[0] == 200
                # A head sent in pieces over a second, under the header deadline.
                for piece in (b"GET /capabilities HTTP/1.1\r\n", b"Host: 127.0.0.1\r\n", b"\r\n"):
                    await stream.send(piece)
                    await anyio.sleep(0.4)
                assert (await read_response(stream))[0] == 200


async def test_websocket_handshakes_that_never_finish_and_connections_that_send_no_input_are_closed(
    tmp_path: Path,
) -> None:
    options = ("--ws", "127.0.0.1:0", "--store", "memory", "--header-timeout", "1", "--keepalive-timeout", "1")
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, *options, tmp=tmp_path) as served:
            async with await connect_raw(served.port) as stream:  # a handshake, a byte at a time
                handshake = (
                    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                )
                started = time.monotonic()
                with anyio.fail_after(1 + MARGIN):
                    try:
                        for byte in handshake:
                            await stream.send(bytes([byte]))
                            await anyio.sleep(0.1)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        pass
                    await receive_until_closed(stream)
                assert time.monotonic() - started < 1 + MARGIN
            # Upgraded, answering pings, never sending a run: closed (1008) once idle for 1 s.
            async with connect(served.url) as idle:
                with anyio.fail_after(1 + MARGIN), pytest.raises(ConnectionClosed) as closed:
                    await idle.recv()
                assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
            # One that sent an input may wait for its person as long as it likes.
            async with connect(served.url) as busy:
                assert (await one_run(busy, "waiting", "run-1"))[-1]["type"] == "RUN_FINISHED"
                await anyio.sleep(2)
                assert (await one_run(busy, "waiting", "run-2"))[-1]["type"] == "RUN_ERROR"  # pending: refused
                assert busy.state.name == "OPEN"


# -- many connections from one client; clients without a token ---------------------------------


async def test_one_client_address_cannot_take_more_than_its_share(tmp_path: Path) -> None:
    options = ("--http", "127.0.0.1:0", "--store", "memory", "--max-connections-per-client", "4")
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, *options, tmp=tmp_path) as served:
            held = [await connect_raw(served.port) for _ in range(4)]
            try:
                async with await connect_raw(served.port) as fifth:
                    status, _, body = await request(fifth, "/capabilities")
                assert status == 503
                assert orjson.loads(body)["error"] == "unavailable"
                # Another client address (127.0.0.2 is loopback too) is served meanwhile.
                async with await connect_raw(served.port, source="127.0.0.2") as other:
                    assert (await request(other, "/capabilities", host="127.0.0.1"))[0] == 200
                await held.pop().aclose()
                while True:  # the place is free once the server has seen that connection go
                    async with await connect_raw(served.port) as again:
                        if (await request(again, "/capabilities"))[0] == 200:
                            break
                    await anyio.sleep(0.05)
            finally:
                for stream in held:
                    await stream.aclose()


async def test_clients_without_a_token_cannot_lock_out_those_with_one_over_http(tmp_path: Path) -> None:
    options = (
        "--http", "127.0.0.1:0", "--store", "memory", "--auth-tokens", str(tokens_file(tmp_path)),
        "--max-connections", "20", "--max-connections-per-client", "0", "--header-timeout", "60",
    )  # fmt: skip
    bearer = {"Authorization": f"Bearer {ALICE_TOKEN}"}
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, *options, tmp=tmp_path) as served:
            # Alice's inbox feed: a long request, authenticated.
            feed = await connect_raw(served.port)
            feed_head = f"GET /inbox/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ALICE_TOKEN}\r\n\r\n"
            await feed.send(feed_head.encode())
            assert (await feed.receive()).startswith(b"HTTP/1.1 200 ")
            # Strangers fill every place: some send nothing, some ask without a token (401).
            strangers = []
            try:
                for n in range(60):
                    stream = await connect_raw(served.port)
                    strangers.append(stream)
                    if n % 2:
                        try:
                            assert (await request(stream, "/inbox"))[0] == 401
                        except (anyio.EndOfStream, anyio.BrokenResourceError):
                            pass  # already given away to a newer stranger
                # Alice is still served, on her feed and on a new connection.
                async with await connect_raw(served.port) as alice:
                    status, _, body = await request(alice, "/inbox", headers=bearer)
                    assert status == 200, body
                with anyio.move_on_after(0.2):  # nothing to read, but not closed either
                    await feed.receive()
                # Strangers' connections were given to newer ones: at most the cap is open.
                closed = 0
                for stream in strangers:
                    with anyio.move_on_after(0.01):
                        try:
                            await stream.receive()
                        except (anyio.EndOfStream, anyio.BrokenResourceError):
                            closed += 1
                assert closed >= 60 - 20
            finally:
                for stream in strangers:
                    await stream.aclose()
                await feed.aclose()


async def test_when_every_place_carries_an_authenticated_request_a_new_connection_gets_503(tmp_path: Path) -> None:
    options = (
        "--http", "127.0.0.1:0", "--store", "memory", "--auth-tokens", str(tokens_file(tmp_path)),
        "--max-connections", "3", "--max-connections-per-client", "0",
    )  # fmt: skip
    head = f"GET /inbox/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ALICE_TOKEN}\r\n\r\n".encode()
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, *options, tmp=tmp_path) as served:
            feeds = [await connect_raw(served.port) for _ in range(3)]
            try:
                for feed in feeds:
                    await feed.send(head)
                    assert (await feed.receive()).startswith(b"HTTP/1.1 200 ")
                async with await connect_raw(served.port) as late:
                    status, _, body = await request(late, "/inbox", headers={"Authorization": f"Bearer {ALICE_TOKEN}"})
                assert status == 503 and orjson.loads(body)["error"] == "unavailable"
            finally:
                for feed in feeds:
                    await feed.aclose()


async def test_idle_websocket_connections_cannot_lock_out_a_client_that_sends_a_run(tmp_path: Path) -> None:
    options = (
        "--ws", "127.0.0.1:0", "--store", "memory", "--max-connections", "10",
        "--max-connections-per-client", "0", "--keepalive-timeout", "60",
    )  # fmt: skip
    with anyio.fail_after(LIMIT):
        async with agui_serve(AGENT, *options, tmp=tmp_path) as served:
            idle = []
            try:
                for _ in range(25):  # upgraded, answering pings, never sending a run
                    idle.append(await connect(served.url).__aenter__())
                async with connect(served.url) as worker:
                    frames = await one_run(worker, "after-the-crowd", "run-1")
                    assert frames[-1]["type"] == "RUN_FINISHED"
                    # Busy places are not given away: more idle connections come and go.
                    for _ in range(15):
                        try:
                            idle.append(await connect(served.url).__aenter__())
                        except InvalidStatus:
                            pass
                    assert (await one_run(worker, "after-the-crowd", "run-2"))[-1]["type"] == "RUN_ERROR"
            finally:
                for ws in idle:
                    await ws.close()


# -- requests naming another host ---------------------------------------------------------------


@pytest.fixture(params=["http", "ws"])
async def loopback_host(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    """A host without an authenticator (so, loopback only), on either transport, with a thread
    that has an open interrupt: something worth stealing."""
    transport = request.param
    async with agui_serve(AGENT, f"--{transport}", "127.0.0.1:0", "--store", "memory", tmp=tmp_path) as served:
        ws_url = served.url if transport == "ws" else None
        if ws_url is not None:
            async with connect(ws_url) as ws:
                await one_run(ws, "secret-thread", "run-1")
        else:
            async with await connect_raw(served.port) as stream:
                body = run_frame("secret-thread")
                head = (
                    f"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}"
                )
                await stream.send(head.encode())
                assert b"RUN_FINISHED" in await receive_until_closed(stream)
        yield served


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}", ""])
@pytest.mark.parametrize("path", ["/threads/secret-thread", "/capabilities"])
async def test_a_request_naming_another_host_is_refused_on_both_transports(
    loopback_host: Served, host: str, path: str
) -> None:
    named = host.format(port=loopback_host.port)
    with anyio.fail_after(LIMIT):
        async with await connect_raw(loopback_host.port) as stream:
            lines = [f"GET {path} HTTP/1.1", *([f"Host: {named}"] if named else []), "Connection: close"]
            await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode())
            answer = await receive_until_closed(stream)
    status = int(answer.split(b" ", 2)[1])
    assert status in (400, 403), answer  # a request without Host is not HTTP/1.1 (h11 says 400 first)
    assert b"secret-thread" not in answer and b"interrupts" not in answer
    if named:
        assert status == 403 and b'"host_not_allowed"' in answer


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "127.8.9.10", "[::1]:{port}"])
async def test_a_request_naming_a_loopback_host_is_answered_on_both_transports(
    loopback_host: Served, host: str
) -> None:
    with anyio.fail_after(LIMIT):
        async with await connect_raw(loopback_host.port) as stream:
            status, _, body = await request(stream, "/threads/secret-thread", host=host.format(port=loopback_host.port))
    assert status == 200 and orjson.loads(body)["threadId"] == "secret-thread"


# -- the gate's bookkeeping ---------------------------------------------------------------------


def test_the_gate_gives_the_oldest_unproven_place_away_and_never_a_proven_one() -> None:
    closed: list[str] = []
    gate = ConnectionGate(max_connections=3, max_per_client=2)
    a = gate.admit("10.0.0.1", lambda: closed.append("a"))
    b = gate.admit("10.0.0.2", lambda: closed.append("b"))
    c = gate.admit("10.0.0.3", lambda: closed.append("c"))
    assert a and b and c and gate.count == 3 and gate.unproven == 3
    a.prove()
    d = gate.admit("10.0.0.4", lambda: closed.append("d"))  # full: b, the oldest unproven, gives way
    assert d is not None and closed == ["b"] and gate.count == 3
    b.release()  # its connection closes later: nothing more happens
    assert gate.count == 3
    c.prove()
    d.prove()
    assert gate.admit("10.0.0.5", lambda: None) is None  # every place proven: refused
    assert gate.admit("10.0.0.1", lambda: None) is None
    a.release()
    assert gate.connections_of("10.0.0.1") == 0 and gate.count == 2
    e = gate.admit("10.0.0.1", lambda: closed.append("e"))
    assert e is not None and gate.admit("10.0.0.6", lambda: None) is not None and closed == ["b", "e"]


def test_the_gate_caps_each_client_whatever_room_is_left() -> None:
    gate = ConnectionGate(max_connections=None, max_per_client=2)
    first, second = gate.admit("10.0.0.1", lambda: None), gate.admit("10.0.0.1", lambda: None)
    assert first and second and gate.admit("10.0.0.1", lambda: None) is None
    assert gate.admit("10.0.0.2", lambda: None) is not None
    first.release()
    first.release()  # twice: once only
    assert gate.connections_of("10.0.0.1") == 1 and gate.admit("10.0.0.1", lambda: None) is not None
    assert gate.admit(None, lambda: None) is not None  # no address (a Unix socket): no client cap


def test_a_client_is_its_address_or_its_ipv6_64() -> None:
    assert client_key("203.0.113.7") == "203.0.113.7"
    assert client_key("::ffff:203.0.113.7") == "203.0.113.7"
    assert client_key("2001:db8:1:2:3:4:5:6") == client_key("2001:db8:1:2:ffff::1") == "2001:db8:1:2::/64"
    assert client_key("2001:db8:1:3::1") != client_key("2001:db8:1:2::1")
    assert client_key(None) is None and client_key("") is None


@pytest.mark.parametrize(
    ("header", "loopback"),
    [
        ("127.0.0.1", True), ("127.0.0.1:8000", True), ("localhost:1", True), ("[::1]:80", True), ("[::1]", True),
        ("evil.example", False), ("evil.example:8000", False), ("127.0.0.1.evil.example", False), ("", False),
        ("[::1", False), ("[::1]x", False), ("127.0.0.1:x", False), ("0.0.0.0:80", False),
        ("[2001:db8::1]:80", False),
    ],
)  # fmt: skip
def test_one_check_of_the_host_header(header: str, loopback: bool) -> None:
    assert loopback_name(header) is loopback


def test_the_edge_flags_out_of_range_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from agui_core.app.cli import main

    for flags in (
        ["--header-timeout", "0"], ["--keepalive-timeout", "-1"], ["--max-connections-per-client", "-3"],
    ):  # fmt: skip
        assert main(["serve", AGENT, "--store", "memory", *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"agui serve: {flags[0]}") and "Traceback" not in err
