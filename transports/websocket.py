"""The WebSocket transport: a host on WebSocket connections, one frame per object.

One text frame in is one ``RunAgentInput``; one text frame out is one event (compact JSON).
A connection carries one run at a time and any number of runs one after another (the
natural way to answer an interrupt).

The handshake decides who may connect, before any frame (SPEC section 9):

- a handshake with an ``Origin`` header not in ``allow_origins`` is refused with HTTP 403.
  Browsers send ``Origin``; other clients need not, and a handshake without one passes. The
  list is empty by default, so no web page can connect unless its origin is listed;
- the client's bearer token is the one of ``Authorization: Bearer TOKEN``, or, from a browser
  (which cannot set headers on a WebSocket), the subprotocol ``agui.bearer.TOKEN`` offered
  together with ``agui``: ``new WebSocket(url, ["agui", "agui.bearer." + token])``. The server
  then selects ``agui`` and never echoes the token. A token subprotocol offered without
  ``agui`` is refused with HTTP 400, since a browser fails a connection whose offered
  subprotocols the server did not answer. When the host has an authenticator, credentials it
  refuses get HTTP 401 and a one-line reason; the connection is never upgraded;
- the principal the host's authenticator named is kept for the connection, and every input
  on it runs as that principal (without an authenticator, every client is
  :data:`~agui_core.runtime.auth.ANONYMOUS`). The thread machine refuses a thread of another
  principal with ``FORBIDDEN``.

Besides the upgrade, the same port answers two plain ``GET`` requests with JSON, as the HTTP
transport does (the origin and credential rules above apply to them too):

- ``GET /capabilities``: the host's AG-UI ``AgentCapabilities`` document, for clients the
  host's authenticator accepts (it lists the tools and their parameter schemas;
  ``public_capabilities=True`` serves it to anyone);
- ``GET /threads/{threadId}``: for the thread's owner only, its open interrupts and the
  snapshots needed to answer them (a client that reloaded finds them here), as
  :meth:`~agui_core.runtime.host.ThreadView.to_wire` writes them; 404 for a thread never
  saved and for another principal's alike, with the same body (a stranger learns nothing of
  which thread ids exist).

With ``ssl`` (an :class:`ssl.SSLContext`) the server speaks TLS: ``wss://``. What each frame
in gets:

- a valid input while the connection is idle: the run's events, as the host emits them;
- a valid input while a run is in flight on this connection: a lone ``RUN_ERROR`` with code
  ``THREAD_BUSY`` (the run in flight goes on). It is sent at once, so it comes between the
  frames of the run in flight: a client that sends before a run has ended must expect it;
- a frame that is not JSON or not a valid input (see
  :func:`~agui_transports.plugin.read_input`), or a binary frame: a lone ``RUN_ERROR`` with
  the error's own code (``INVALID_INPUT``, or ``INVALID_RESUME`` for a fault inside
  ``resume``), logged in one line at most, never with a traceback; the connection stays open;
- a frame larger than ``max_size`` bytes: the library closes the connection with code 1009
  (message too big), as RFC 6455 provides; other connections are not affected.

A client that disconnects mid-run loses the rest of the stream, not the run: it goes on in
the host, which saves its outcome, so the next input on the thread (on any connection) finds
it, an interrupt raised while nobody listened included. A slow reader slows its run down:
``send`` waits while the connection's write buffer is over ``write_limit`` bytes, and the
host's event stream is bounded, so the agent waits too instead of memory growing.
Compression is off by default (events are small frames); pings keep idle connections honest.

Limits, so that no client can wear the server down (numbers are the defaults):

- a write waits ``send_timeout`` seconds (10) at most (a run's events go out a burst at a
  time, up to :data:`BURST_WRITE` bytes of frames a write, and each write has its own
  ``send_timeout``): a client that reads
  nothing for that long has its connection closed (1008, policy violation; without waiting
  for the closing handshake longer than ``close_timeout``), and its run goes on and is saved.
  The host drops a caller that stuck on its own (:class:`~agui_core.runtime.host.Host`'s
  ``send_timeout``), so a thread is never held by a client that stopped reading;
- ``max_connections`` (1,024) connections at once: a handshake past it is refused with HTTP
  503 and a one-line body, before any other check;
- ``rate_limit`` frames a second (20) per connection on average, in bursts of up to
  ``rate_burst`` (40): a frame over the limit is not read but answered with a lone
  ``RUN_ERROR`` ``RATE_LIMITED``, and a connection that sends a whole burst's worth of frames
  over the limit in a row is closed (1008);
- ``input_budget`` bytes a second (4 MiB) per principal, over all of its connections (the
  server keeps one :class:`~agui_transports.connections.InputBudget`; one can be shared with
  another transport), in bursts of one second's worth, a frame larger than that passing on
  a full budget: each text frame is charged before it is read, and one over the budget is
  not read but answered with a lone ``RUN_ERROR`` ``RATE_LIMITED``. Without an authenticator
  each client address (the connection's peer) has its own budget, so clients that come
  through one proxy share one;
- after refusing a frame for the rate limit or the input budget, the server reads nothing more
  from that connection until the limit would take it (a second at most): a client that sends
  on regardless fills its own buffers instead of costing the server a refusal per frame;
- ``max_input_messages`` (2,000) messages per input, and as many tools, context entries, and
  content parts and tool calls in all its messages together; a resume of at most 100
  entries: a frame over a limit gets ``INVALID_INPUT`` (``INVALID_RESUME``) naming the limit,
  decided as soon as it is parsed, before anything in it is validated (see
  :func:`~agui_transports.plugin.read_input`);
- what clients can repeat at will is logged in one line, never with a traceback: a refused
  frame at DEBUG, a refused handshake or a closed connection at INFO; accept failures (out of
  file descriptors) and refusals at the cap once per burst (see
  :func:`~agui_transports.plugin.fold_server_noise`).

Stopping (:meth:`WebSocketServer.aclose`): no new connections are accepted, idle connections
are closed with code 1001 (going away), each connection with a run in flight is closed with
1001 once its run has ended, and runs still going after ``grace`` seconds are no longer
listened to (they go on in the host) and their connections are closed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import aclosing
from http import HTTPStatus
from ssl import SSLContext
from types import TracebackType
from typing import Any, Final, Literal, Self
from urllib.parse import unquote

import anyio
import anyio.abc
import orjson
from agui_transports.connections import (
    HOST_NOT_ALLOWED,
    ConnectionGate,
    InputBudget,
    Ticket,
    loopback_name,
    no_delay,
    peer_of,
    refuse,
    service_unavailable,
)
from agui_transports.plugin import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_INPUT_BUDGET,
    DEFAULT_KEEPALIVE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
    DEFAULT_MAX_INPUT_MESSAGES,
    DEFAULT_RATE_LIMIT,
    MAX_OVER_LIMIT_PAUSE,
    ServeOptions,
    TokenBucket,
    bearer_token,
    fold_server_noise,
    next_batch,
    origin_allowed,
    progress_of,
    read_input,
    require_loopback,
    setting,
)
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, InvalidHandshake, NegotiationError
from websockets.http11 import Request, Response
from websockets.server import ServerProtocol
from websockets.typing import Subprotocol

from agui_core.errors import AguiError, EncodeError, InvalidInputError, RemoteProtocolError, RunErrorCode
from agui_core.machine.occupancy import check_free
from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_event
from agui_core.protocol.types import RunAgentInput, TransportCapabilities
from agui_core.runtime.auth import AuthenticationError, Credentials
from agui_core.runtime.capabilities import capabilities_json
from agui_core.runtime.host import Host, refusal

__all__ = [
    "BEARER_SUBPROTOCOL_PREFIX",
    "BURST_WRITE",
    "DEFAULT_MAX_SIZE",
    "DEFAULT_PORT",
    "DEFAULT_SEND_TIMEOUT",
    "SUBPROTOCOL",
    "WebSocketServer",
    "WebSocketTransport",
    "parse_address",
]

log = logging.getLogger("agui_transports.websocket")

DEFAULT_MAX_SIZE: Final = 1024 * 1024
"""The largest frame a client may send, in bytes."""

DEFAULT_PORT: Final = 8765

DEFAULT_SEND_TIMEOUT: Final = 10.0
"""Seconds one write (a frame, or a burst's frames of :data:`BURST_WRITE` bytes at most) may
wait to be written before its client counts as not reading."""

BURST_WRITE: Final = 64 * 1024
"""The most bytes of a run's frames written to a client at once (a single frame may be more)."""

SUBPROTOCOL: Final = Subprotocol("agui")
"""The subprotocol the server selects when the client offers it."""

BEARER_SUBPROTOCOL_PREFIX: Final = "agui.bearer."
"""A subprotocol ``agui.bearer.TOKEN`` carries a browser's bearer token (see the module docstring)."""

_PING: float | None = 20.0  # seconds between pings, and to wait for their pong
_GOING_AWAY: Final = 1001
_POLICY_VIOLATION: Final = 1008
_INTERNAL_ERROR: Final = 1011


_THREADS: Final = "/threads/"
_NO_SUCH_THREAD: Final = b'{"error":"not_found","message":"no such thread"}'


def _json(connection: ServerConnection, status: HTTPStatus, body: bytes) -> Response:
    """A plain HTTP answer with a JSON body (the upgrade does not happen)."""
    response = connection.respond(status, "")
    for name in ("Content-Type", "Content-Length"):
        del response.headers[name]
    response.headers["Content-Type"] = "application/json"
    response.headers["Content-Length"] = str(len(body))
    response.headers["Cache-Control"] = "no-store"
    response.body = body
    return response


def _credentials(headers: Headers) -> Credentials:
    """The bearer token of the handshake and its headers; ``AuthenticationError`` for more
    than one token, so that no two parts of the stack can disagree on which one counts."""
    tokens = [t for value in headers.get_all("Authorization") if (t := bearer_token(value)) is not None]
    tokens += [offer.removeprefix(BEARER_SUBPROTOCOL_PREFIX) for offer in _offers(headers) if _is_token(offer)]
    if len(tokens) > 1:
        raise AuthenticationError("send one bearer token, not several")
    lowered = {name.lower(): value for name, value in headers.raw_items()}
    return Credentials(bearer=tokens[0] if tokens else None, headers=lowered)


def _offers(headers: Headers) -> list[str]:
    return [offer.strip() for value in headers.get_all("Sec-WebSocket-Protocol") for offer in value.split(",")]


def _is_token(offer: str) -> bool:
    return offer.startswith(BEARER_SUBPROTOCOL_PREFIX)


def _select_subprotocol(connection: ServerConnection, offered: Sequence[Subprotocol]) -> Subprotocol | None:
    """``agui`` when offered; never a token. A token offered alone is refused (HTTP 400)."""
    if SUBPROTOCOL in offered:
        return SUBPROTOCOL
    if any(_is_token(offer) for offer in offered):
        raise NegotiationError(f"offer the subprotocol {SUBPROTOCOL!r} with the bearer token")
    return None


def parse_address(address: str | None, *, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6; ``HOST`` alone takes ``default_port``)."""
    if not address:
        return "127.0.0.1", default_port
    if address.startswith("["):
        host, _, rest = address[1:].partition("]")
        port = rest.removeprefix(":") or str(default_port)
    elif address.count(":") == 1:
        host, _, port = address.partition(":")
    else:
        host, port = address, str(default_port)
    if not host:
        raise ValueError(f"address {address!r} names no host (use 0.0.0.0 to listen on every interface)")
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"address {address!r} has port {port!r}, not a number") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"address {address!r} has port {number}, outside 0-65535")
    return host, number


class _GuardedConnection(ServerConnection):
    """A connection admitted by the server's :class:`ConnectionGate` as it is accepted, with
    ``TCP_NODELAY``; one the gate refuses is answered ``503`` before websockets sees it."""

    def __init__(self, gate: ConnectionGate, protocol: ServerProtocol, server: Server, **options: Any) -> None:
        super().__init__(protocol, server, **options)
        self.gate = gate
        self.ticket: Ticket | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        no_delay(transport)
        self.ticket = self.gate.admit(peer_of(transport), transport.abort)
        if self.ticket is None:
            refuse(transport, service_unavailable("too many connections; try again later"))
            return
        super().connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.ticket is not None:
            self.ticket.release()
        super().connection_lost(exc)

    async def handshake(self, *args: Any, **kwargs: Any) -> None:
        """The opening handshake; one that fails (a client that closes before its request, sends
        no HTTP, or no upgrade: websockets has answered it already where it could) is one line at
        INFO, where websockets would log a traceback at ERROR for every such stranger."""
        try:
            await super().handshake(*args, **kwargs)
        except InvalidHandshake as exc:
            # The connection is not open, so websockets' handler aborts it and returns.
            log.info("a handshake failed: %s", str(exc.__cause__ or exc).replace("\n", " ")[:200])


class _Session:
    """One connection, as the server tracks it."""

    __slots__ = ("address", "bucket", "connection", "listening", "over_limit", "principal", "running", "ticket")

    def __init__(
        self, connection: ServerConnection, principal: str, bucket: TokenBucket | None, ticket: Ticket | None
    ) -> None:
        self.connection = connection
        self.ticket = ticket
        """The connection's place at the server's gate: proven by its first input."""
        self.principal = principal
        remote = connection.remote_address
        self.address: str | None = str(remote[0]) if remote else None
        """The client's IP address, which an anonymous client's input budget is kept for."""
        self.bucket = bucket
        self.over_limit = 0
        """Frames refused in a row for the rate limit."""
        self.running: str | None = None
        """The id of the run in flight on this connection, if one is."""
        self.listening: anyio.CancelScope | None = None


class WebSocketServer:
    """Serves ``host`` on ``ws://address:port`` (port 0: any free port; see :attr:`port`).

    ``async with WebSocketServer(host, port=0) as server:`` starts it and stops it
    gracefully (see :meth:`aclose`). ``max_size`` bounds one incoming frame, in bytes;
    ``compression`` is ``None`` or ``"deflate"``; ``ping_interval`` and ``ping_timeout``
    (seconds, ``None`` for no pings) close connections whose peer stopped answering;
    ``write_limit`` is the write buffer, in bytes, over which sending an event waits;
    ``close_timeout`` bounds the closing handshake. ``allow_origins`` lists the browser
    origins whose pages may connect; ``ssl`` makes it a ``wss://`` server. Who may connect
    and as whom: see the module docstring. ``send_timeout``, ``max_connections``,
    ``rate_limit``, ``rate_burst``, ``input_budget`` and ``max_input_messages`` are the limits
    the module docstring describes (``None``: no cap, no limit; ``rate_burst=None``: twice the
    rate); ``input_budget`` is in bytes a second, or an
    :class:`~agui_transports.connections.InputBudget` to share with another transport of the host.
    ``public_capabilities`` serves ``GET /capabilities`` without credentials, ``public_metrics``
    ``GET /metrics`` (when the host's observer has metrics: ``agui serve --metrics``).
    """

    def __init__(
        self,
        host: Host,
        *,
        address: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        max_size: int | None = DEFAULT_MAX_SIZE,
        compression: Literal["deflate"] | None = None,
        ping_interval: float | None = 20.0,
        ping_timeout: float | None = 20.0,
        write_limit: int = 32 * 1024,
        close_timeout: float = 5.0,
        grace: float = 10.0,
        allow_origins: Iterable[str] = (),
        ssl: SSLContext | None = None,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        max_connections: int | None = DEFAULT_MAX_CONNECTIONS,
        max_connections_per_client: int | None = DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
        rate_limit: float | None = DEFAULT_RATE_LIMIT,
        rate_burst: int | None = None,
        header_timeout: float = DEFAULT_HEADER_TIMEOUT,
        keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT,
        loopback_names_only: bool = False,
        input_budget: float | InputBudget | None = DEFAULT_INPUT_BUDGET,
        max_input_messages: int | None = DEFAULT_MAX_INPUT_MESSAGES,
        public_capabilities: bool = False,
        public_metrics: bool = False,
    ) -> None:
        for name, seconds in (("header_timeout", header_timeout), ("keepalive_timeout", keepalive_timeout)):
            if not 0 < seconds < math.inf:
                raise ValueError(f"{name} must be a positive number of seconds, not {seconds!r}")
        if rate_limit is not None:
            TokenBucket(rate_limit, _burst(rate_limit, rate_burst))  # a bad limit fails here, not per connection
        self.host = host
        self.address = address
        self.grace = grace
        self.allow_origins = tuple(allow_origins)
        self.ssl = ssl
        self.send_timeout = send_timeout
        self.max_connections = max_connections
        self.max_connections_per_client = max_connections_per_client
        self.gate = ConnectionGate(max_connections=max_connections, max_per_client=max_connections_per_client)
        """Which accepted connections may stay (see :class:`~agui_transports.connections.ConnectionGate`)."""
        self.keepalive_timeout = keepalive_timeout
        self.loopback_names_only = loopback_names_only
        self.rate_limit = rate_limit
        self.rate_burst = None if rate_limit is None else _burst(rate_limit, rate_burst)
        self.input_budget = InputBudget.of(input_budget)
        """Every principal's budget of input bytes a second (``None``: none), shared by its connections."""
        self.max_input_messages = max_input_messages
        self.public_capabilities = public_capabilities
        self.public_metrics = public_metrics
        self._port = port
        self._options = {
            "max_size": max_size,
            "compression": compression,
            "ping_interval": ping_interval,
            "ping_timeout": ping_timeout,
            "write_limit": write_limit,
            "close_timeout": close_timeout,
            "open_timeout": header_timeout,  # the whole handshake, from the connection on
            "ssl": ssl,
            "process_request": self._admit,
            "select_subprotocol": _select_subprotocol,
            "create_connection": functools.partial(_GuardedConnection, self.gate),
        }
        self._close_timeout = close_timeout
        self._server: Server | None = None
        self._sessions: set[_Session] = set()
        # Set by the handshake, taken by the handler; a handshake that fails after admission leaves no entry behind.
        self._principals: weakref.WeakKeyDictionary[ServerConnection, str] = weakref.WeakKeyDictionary()
        self._capabilities: bytes | None = None
        self._stopping = False

    @property
    def port(self) -> int:
        """The port the server listens on (the one the system chose, for port 0)."""
        return self._port

    @property
    def url(self) -> str:
        """``ws://address:port`` (``wss://`` with TLS)."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"{'ws' if self.ssl is None else 'wss'}://{host}:{self.port}"

    @property
    def connections(self) -> int:
        """How many connections are open."""
        return len(self._sessions)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start listening."""
        if self._server is not None:
            raise RuntimeError("the server is already started")
        fold_server_noise()
        self._server = await serve(self._handle, self.address, self._port, **self._options)  # type: ignore[arg-type]
        self._port = int(next(iter(self._server.sockets)).getsockname()[1])
        log.info("serving on %s", self.url)

    async def aclose(self, grace: float | None = None) -> None:
        """Stop: accept nothing new, let runs in flight finish up to ``grace`` seconds, close."""
        server = self._server
        if server is None or self._stopping:
            return
        grace = self.grace if grace is None else grace
        self._stopping = True
        server.close(close_connections=False)
        in_flight = sum(s.running is not None for s in self._sessions)
        log.info(
            "stopping: %d connections, %d runs in flight (up to %g s to finish)", len(self._sessions), in_flight, grace
        )
        with anyio.move_on_after(grace):
            async with anyio.create_task_group() as group:
                for session in list(self._sessions):
                    if session.running is None:
                        group.start_soon(session.connection.close, _GOING_AWAY, "the server is stopping")
                await server.wait_closed()
            return
        late = [s for s in self._sessions if s.running is not None]
        log.warning(
            "%d runs still in flight after %g s: closing their connections (the runs go on unheard)", len(late), grace
        )
        async with anyio.create_task_group() as group:
            for session in list(self._sessions):
                if session.listening is not None:
                    session.listening.cancel()
                group.start_soon(session.connection.close, _GOING_AWAY, "the server is stopping")
        await server.wait_closed()

    async def _admit(self, connection: ServerConnection, request: Request) -> Response | None:
        """The handshake's checks (the gate admitted the connection already): a host named by
        another name than a loopback one 403 (when told ``loopback_names_only``), a foreign
        origin 403, refused credentials 401; the two JSON resources (capabilities, thread
        views) are answered here, never upgraded."""
        if self.loopback_names_only and not loopback_name(request.headers.get("Host", "")):
            body = orjson.dumps({"error": "host_not_allowed", "message": HOST_NOT_ALLOWED})
            return _json(connection, HTTPStatus.FORBIDDEN, body)
        origins = request.headers.get_all("Origin")
        if origins and (len(origins) > 1 or not origin_allowed(origins[0], self.allow_origins)):
            log.info("refused a handshake from origin %r", ", ".join(origins)[:200])
            return connection.respond(HTTPStatus.FORBIDDEN, "this origin may not connect\n")
        path = request.path.partition("?")[0]
        if path == "/capabilities" and self.public_capabilities:
            return self._capabilities_document(connection)
        if path == "/metrics" and self.public_metrics:
            return await self._metrics(connection)
        try:
            principal = await self.host.authenticate(_credentials(request.headers))
        except AuthenticationError as exc:
            log.info("refused a handshake: %s", exc.message)
            response = connection.respond(HTTPStatus.UNAUTHORIZED, f"{exc.message}\n")
            response.headers["WWW-Authenticate"] = 'Bearer realm="agui"'
            return response
        if path == "/capabilities":  # it names the tools: for those who may call them
            return self._capabilities_document(connection)
        if path == "/metrics":
            return await self._metrics(connection)
        if path.startswith(_THREADS):
            return await self._thread_view(connection, path.removeprefix(_THREADS), principal)
        self._principals[connection] = principal
        return None

    def _capabilities_document(self, connection: ServerConnection) -> Response:
        if self._capabilities is None:  # the host's agent and tools do not change: encode once
            flags = TransportCapabilities(
                streaming=True, websocket=True, http_binary=False, push_notifications=False, resumable=False
            )
            self._capabilities = capabilities_json(self.host, transport=flags)
        return _json(connection, HTTPStatus.OK, self._capabilities)

    async def _metrics(self, connection: ServerConnection) -> Response:
        served = await self.host.observer.exposition()
        if served is None:
            body = orjson.dumps({"error": "not_found", "message": "this host serves no metrics (agui serve --metrics)"})
            return _json(connection, HTTPStatus.NOT_FOUND, body)
        response = connection.respond(HTTPStatus.OK, "")
        for name in ("Content-Type", "Content-Length"):
            del response.headers[name]
        response.headers["Content-Type"] = served[1]
        response.headers["Content-Length"] = str(len(served[0]))
        response.body = served[0]
        return response

    async def _thread_view(self, connection: ServerConnection, thread_id: str, principal: str) -> Response:
        view = await self.host.view(unquote(thread_id), principal)
        if view is None:  # never saved, or another principal's: alike
            return _json(connection, HTTPStatus.NOT_FOUND, _NO_SUCH_THREAD)
        return _json(connection, HTTPStatus.OK, orjson.dumps(view.to_wire()))

    async def _handle(self, connection: ServerConnection) -> None:
        principal = self._principals.pop(connection, None)
        if principal is None:  # cannot happen: every upgraded handshake went through _admit
            await connection.close(_INTERNAL_ERROR, "no principal")
            return
        ticket = connection.ticket if isinstance(connection, _GuardedConnection) else None
        session = _Session(connection, principal, self._bucket(), ticket)
        self._sessions.add(session)
        self.host.observer.connection_opened("ws")
        try:
            async with anyio.create_task_group() as group:
                idle = anyio.CancelScope()
                group.start_soon(self._close_if_idle, session, idle)
                try:
                    async for message in connection:
                        if self._stopping and session.running is None:
                            break
                        if session.bucket is not None and not session.bucket.take():
                            if await self._over_rate(session, session.bucket):
                                continue
                            break
                        session.over_limit = 0
                        await self._receive(session, message, group)
                except ConnectionClosed:
                    pass
                idle.cancel()
                if session.listening is not None:
                    # The peer left mid-run: stop listening. The run goes on in the host.
                    session.listening.cancel()
                if self._stopping:
                    await connection.close(_GOING_AWAY, "the server is stopping")
        finally:
            self._sessions.discard(session)
            self.host.observer.connection_closed("ws")

    async def _receive(self, session: _Session, message: str | bytes, group: anyio.abc.TaskGroup) -> None:
        connection = session.connection
        if isinstance(message, bytes):
            await self._refuse(connection, InvalidInputError("a text frame, not a binary one"))
            return
        budget, principal, address = self.input_budget, session.principal, session.address
        if budget is not None and not budget.charge(principal, address, size := _utf8_size(message)):
            await self._refuse(connection, budget.exceeded())
            # Not read until the budget would take it: a client sending on fills its own buffers.
            await anyio.sleep(min(MAX_OVER_LIMIT_PAUSE, budget.refills_in(principal, address, size)))
            return
        try:
            run_input = read_input(message, max_messages=self.max_input_messages)
        except InvalidInputError as exc:
            await self._refuse(connection, exc)
            return
        if session.ticket is not None:
            session.ticket.prove()  # an input from a principal the handshake accepted
        try:
            check_free(run_input.thread_id, run_input.run_id, running=session.running, scope="connection")
        except RemoteProtocolError as exc:
            await self._refuse(connection, exc)
            return
        session.running = run_input.run_id
        group.start_soon(self._carry, session, run_input)

    async def _close_if_idle(self, session: _Session, idle: anyio.CancelScope) -> None:
        """Close the connection if it sent no input within ``keepalive_timeout`` of its upgrade."""
        with idle:
            await anyio.sleep(self.keepalive_timeout)
            if session.ticket is not None and not session.ticket.proven:
                log.info("closing a connection that sent no input within %g s", self.keepalive_timeout)
                await self._drop(session.connection, _POLICY_VIOLATION, "no input")

    def _bucket(self) -> TokenBucket | None:
        if self.rate_limit is None or self.rate_burst is None:
            return None
        return TokenBucket(self.rate_limit, self.rate_burst)

    async def _over_rate(self, session: _Session, bucket: TokenBucket) -> bool:
        """Refuse a frame over the rate limit, unread: whether the connection stays open. A
        client that sends more than a burst's worth of them in a row has it closed."""
        session.over_limit += 1
        if session.over_limit > bucket.burst:
            log.info("closing a connection that kept going over its rate limit of %g inputs a second", self.rate_limit)
            await self._drop(session.connection, _POLICY_VIOLATION, "too many inputs")
            return False
        limited = f"more than {bucket.rate:g} inputs a second; this one was not read"
        await self._refuse(session.connection, RemoteProtocolError(RunErrorCode.RATE_LIMITED, limited))
        await anyio.sleep(min(MAX_OVER_LIMIT_PAUSE, bucket.refills_in()))
        return True

    async def _refuse(self, connection: ServerConnection, error: AguiError) -> None:
        log.debug("refused a frame: %s %s", error.code.value, error.message[:200])
        self.host.observer.refused(error.code.value)
        await self._send(connection, encode_event(refusal(error)))

    async def _send(self, connection: ServerConnection, frame: bytes) -> bool:
        """Write ``frame`` within ``send_timeout``: whether it went out. Not when the client
        left, nor when it read nothing for that long: then its connection is closed."""
        with anyio.move_on_after(self.send_timeout):
            try:
                await connection.send(frame, text=True)
            except ConnectionClosed:
                return False
            return True
        await self._drop(connection, _POLICY_VIOLATION, "the client does not read")
        return False

    async def _send_events(
        self,
        connection: ServerConnection,
        events: Sequence[ev.Event],
        ended: bool,
        progress: Callable[[], None],
    ) -> tuple[bool, bool]:
        """Write ``events``, one frame each, in writes of up to :data:`BURST_WRITE` bytes, every
        write within ``send_timeout`` (as :meth:`_send`): whether they all went out, and whether
        the last that did ended the run (``ended`` if none did).

        A burst's frames go out together, one system call for many frames, where a ``send``
        each cost one call a frame. One timeout scope for them all, not one per write (a scope
        costs more than a frame): its deadline moves on whenever a write took a while, so each
        gets between 99% and 100% of ``send_timeout``. Then ``progress`` tells the host that
        this client still reads (:meth:`RunEvents.sent`): a long batch written slowly but
        steadily is not a client that stopped reading. An event that cannot be encoded still
        lets the frames before it go out, then raises.
        """
        timeout = self.send_timeout
        renew = timeout / 100
        frames: list[bytes] = []
        failed: EncodeError | None = None
        for event in events:
            try:
                frames.append(encode_event(event))
            except EncodeError as exc:
                failed = exc
                break
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as writing:
            stamp = time.monotonic()
            try:
                start = 0
                while start < len(frames):
                    end, size = start, 0
                    while end < len(frames) and (end == start or size + len(frames[end]) <= BURST_WRITE):
                        size += len(frames[end])
                        end += 1
                    await _write_frames(connection, frames[start:end])
                    ended = events[end - 1].__class__ in ev.RUN_END_CLASSES
                    start = end
                    now = time.monotonic()
                    if now - stamp > renew:
                        writing.deadline = anyio.current_time() + timeout
                        stamp = now
                        progress()
            except ConnectionClosed:
                return False, ended
            if failed is not None:
                raise failed
            return True, ended
        await self._drop(connection, _POLICY_VIOLATION, "the client does not read")
        return False, ended

    async def _drop(self, connection: ServerConnection, code: int, reason: str) -> None:
        """Close ``connection``; past ``close_timeout`` (a client that reads nothing never
        answers the close), abort it."""
        with anyio.move_on_after(self._close_timeout):
            await connection.close(code, reason)
            return
        connection.transport.abort()

    async def _carry(self, session: _Session, run_input: RunAgentInput) -> None:
        connection = session.connection
        ended = False
        try:
            with anyio.CancelScope() as listening:
                session.listening = listening
                async with aclosing(self.host.run(run_input, principal=session.principal)) as events:
                    progress = progress_of(events)
                    while batch := await next_batch(events):
                        went_out, ended = await self._send_events(connection, batch, ended, progress)
                        if not went_out:
                            break
                    else:
                        if not ended:  # the host stopped sending: this client took too long to read
                            await self._drop(connection, _POLICY_VIOLATION, "the client does not read")
            if not ended and not listening.cancel_called:
                log.info("the client of run %r left or stopped reading; the run goes on", run_input.run_id)
        except EncodeError as exc:
            log.error("run %r: %s; closing its connection", run_input.run_id, exc.message)
            await connection.close(_INTERNAL_ERROR, "the server could not encode an event")
        finally:
            session.listening = None
            session.running = None
        if self._stopping:
            await connection.close(_GOING_AWAY, "the server is stopping")

    async def serve(self, stop: anyio.Event) -> None:
        """Start (unless started), serve until ``stop`` is set, then :meth:`aclose`.

        Cancelled instead, it closes every connection at once (runs in flight go on unheard).
        """
        if self._server is None:
            await self.start()
        try:
            await stop.wait()
        except BaseException:
            # Cancelled from outside: stop now, closing every connection, without the grace period.
            with anyio.CancelScope(shield=True), anyio.move_on_after(self._close_timeout):
                self._stopping = True
                if self._server is not None:
                    self._server.close()
                    await self._server.wait_closed()
            raise
        await self.aclose()


async def _write_frames(connection: ServerConnection, frames: Sequence[bytes]) -> None:
    """Send ``frames`` as text frames in one write to the socket, then wait for the write buffer
    to drain below the connection's limit, as ``connection.send`` does for one frame.

    ``send_context`` is how websockets' own ``send`` writes (it checks that the connection is
    open, and drains); inside it, the protocol frames each message, and what it would hand the
    transport frame by frame goes in one piece.
    """
    while connection.send_in_progress is not None:  # a fragmented message of another task's
        await asyncio.shield(connection.send_in_progress)
    async with connection.send_context():
        protocol = connection.protocol
        for frame in frames:
            protocol.send_text(frame)
        data = protocol.data_to_send()
        if data:
            connection.transport.write(data[0] if len(data) == 1 else b"".join(data))


def _utf8_size(text: str) -> int:
    """How many bytes ``text`` took on the wire (a text frame is UTF-8)."""
    return len(text) if text.isascii() else len(text.encode())


def _burst(rate: float, burst: int | None) -> int:
    return burst if burst is not None else max(1, round(2 * rate))


def _seconds_or_none(raw: str) -> float | None:
    return None if raw.lower() in ("none", "off", "0") else float(raw)


def _compression(raw: str) -> Literal["deflate"] | None:
    if raw.lower() in ("none", "off"):
        return None
    if raw.lower() == "deflate":
        return "deflate"
    raise ValueError("use deflate or none")


class WebSocketTransport:
    """The ``ws`` plugin of ``agui serve``. The address is ``HOST:PORT`` (default
    ``127.0.0.1:8765``).

    Settings: ``max_size`` (bytes, default 1 MiB), ``compression`` (``none`` or
    ``deflate``), ``ping_interval`` and ``ping_timeout`` (seconds, or ``none``),
    ``write_limit`` (bytes), ``close_timeout`` and ``send_timeout`` (seconds). The allowed
    origins, the TLS context, the connection cap, the rate limit, the input budget, the most
    messages an input may carry and whether the capabilities are public come from
    :class:`~agui_transports.plugin.ServeOptions`.
    """

    name = "ws"

    async def serve(self, host: Host, options: ServeOptions) -> None:
        known = {
            "max_size",
            "compression",
            "ping_interval",
            "ping_timeout",
            "write_limit",
            "close_timeout",
            "send_timeout",
        }
        unknown = set(options.settings) - known
        if unknown:
            raise ValueError(f"the ws transport has no option {', '.join(sorted(unknown))}")
        address, port = parse_address(options.address)
        if options.loopback_only:
            require_loopback(address)
        s = options.settings
        server = WebSocketServer(
            host,
            address=address,
            port=port,
            max_size=setting(s, "max_size", int, DEFAULT_MAX_SIZE),
            compression=setting(s, "compression", _compression, None),
            ping_interval=setting(s, "ping_interval", _seconds_or_none, _PING),
            ping_timeout=setting(s, "ping_timeout", _seconds_or_none, _PING),
            write_limit=setting(s, "write_limit", int, 32 * 1024),
            close_timeout=setting(s, "close_timeout", float, 5.0),
            grace=options.grace,
            allow_origins=options.allow_origins,
            ssl=options.ssl,
            send_timeout=setting(s, "send_timeout", float, host.send_timeout),
            max_connections=options.max_connections,
            max_connections_per_client=options.max_connections_per_client,
            rate_limit=options.rate_limit,
            rate_burst=options.rate_burst,
            header_timeout=options.header_timeout,
            keepalive_timeout=options.keepalive_timeout,
            loopback_names_only=options.loopback_only,
            input_budget=options.input_budget,
            max_input_messages=options.max_input_messages,
            public_capabilities=options.public_capabilities,
            public_metrics=options.public_metrics,
        )
        await server.start()
        if options.ready is not None:
            options.ready(server.url)
        await server.serve(options.stop)
