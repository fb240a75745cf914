"""The HTTP transport: a host as an ASGI application, each run answered with Server-Sent Events.

This is what every stock AG-UI client speaks (``@ag-ui/client``'s ``HttpAgent`` and the
frontends built on it). :class:`HttpApp` is a plain ASGI application, so it runs under any
ASGI server and mounts in Starlette or FastAPI under any path (``app.mount("/agent",
HttpApp(host))``); its routes are relative to where it is mounted:

- ``POST /`` with a ``RunAgentInput`` (``application/json``): ``200 text/event-stream``, one
  ``data: <event JSON>\\n\\n`` per event of the run. A refused run is a run: its refusal is a
  ``RUN_ERROR`` with its code in the stream (an input that is not a valid ``RunAgentInput``
  included, code ``INVALID_INPUT``), never an HTTP error;
- ``GET /capabilities``: the host's AG-UI ``AgentCapabilities`` document
  (:func:`~agui_core.runtime.capabilities.capabilities`), for clients the host's authenticator
  accepts, as every other route: it lists the tools and their parameter schemas
  (``public_capabilities=True`` serves it to anyone);
- ``GET /threads/{threadId}``: for the thread's owner only, its open interrupts and the
  snapshots needed to answer them (a page reloaded while interrupts were pending finds them
  here): ``{"threadId", "state", "interrupts", "messages", "agentState", "runId"}`` in wire
  camelCase, ``runId`` left out when there is none;
- ``GET /inbox``: the signed-in principal's threads with open interrupts, newest first, and
  ``GET /audit/{threadId}``: a thread's audit trail, for its owner
  (:mod:`agui_core.runtime.console` describes both documents);
- ``GET /inbox/events``: Server-Sent Events, one ``{"type": "changed", "threadId", "state"}``
  each time this host saves one of the principal's threads (after a first ``{"type":
  "ready"}``, and a comment line every 15 s while nothing happens). It carries this host's saves
  only; see :mod:`agui_core.runtime.watch`. One principal holds ``max_feeds_per_principal``
  feeds (4) at most: opening one more ends that principal's oldest, cleanly (its response
  completes; the console's page reconnects to it later), never anyone else's;
- ``GET /console/``: the approval console, a page (static files shipped in the package, no
  other origin contacted) where the principal answers its interrupts (``console=False``
  leaves it out). The page calls the routes above with the token its user signs in with.

HTTP errors are for what is not a run, each with a JSON body ``{"error", "message"}``: an
unknown path (404), a wrong method (405), a body that is not ``application/json`` (415) or
larger than ``max_body`` bytes (413, refused as soon as the ``Content-Length`` or the bytes
read so far say so, not after), a body not received within ``body_timeout`` seconds (408),
credentials the host's authenticator refuses (401; the ``Authorization: Bearer`` token is
read on every request), a request from a browser ``Origin`` not on the allow-list (403), a
thread never saved or another principal's, alike (404 ``{"error": "not_found", "message": "no
such thread"}``: a stranger learns nothing of which thread ids exist; see
:meth:`~agui_core.runtime.host.Host.view`).

Browsers: ``allow_origins`` (empty by default) lists the origins whose pages may call the
host. With the console on, the host's own origin (the request's scheme and ``Host``) is allowed
too, so that the console's page may call it, but only where that cannot be abused: when the
host has an authenticator (a page of another site that reached the host through a rebound
name has no token), or when the ``Host`` is a loopback address or ``localhost``. A request
carrying any other ``Origin`` is refused whatever it asks. A browser sends no ``Origin`` with a
``GET`` of its page's own origin, so when the plugin is told ``options.loopback_only`` (``agui
serve`` with no authenticator) every request must also name the host by a loopback address or
``localhost`` in its ``Host`` (``loopback_names_only``), or it is refused with 403
``host_not_allowed``: a page of another site rebound to 127.0.0.1 reads nothing; preflight
``OPTIONS`` requests are answered for allowed origins only, and only their responses carry
``Access-Control-Allow-Origin`` (the origin echoed, never ``*``). Clients that are not
browsers send no ``Origin`` and are not concerned.

A client that goes away mid-stream loses the rest of the stream, not the run: the
application stops sending at ``http.disconnect`` and returns, the run goes on in the host,
which saves its outcome; the same input sent again (same ``runId``) gets it. So does a client
that stops reading: a write waits ``send_timeout`` seconds (10 by default) at most, then the
application leaves the response unfinished (the server closes the connection) and the run
goes on unheard.

Limits: :class:`HttpTransport` admits each connection as it is accepted, before reading a
byte of it (a :class:`~agui_transports.connections.ConnectionGate`): 1,024 connections in all
and 64 per client address by default (``options.max_connections``,
``options.max_connections_per_client``); when full, a new connection takes the place of the
oldest one that has not yet carried an authenticated request (a client that never sends a
token cannot lock out those that do), and past that a connection is answered ``503`` and
closed. Every accepted socket gets ``TCP_NODELAY`` (without it, each response after the first
on a kept-alive connection waited 40 ms for the client's delayed ACK). A request head must
arrive whole within ``options.header_timeout`` seconds (10) of the connection, or of the first
byte of a later request on it, else the connection is closed (``408`` when part of a head
came); a connection idle between requests is closed after ``options.keepalive_timeout``
seconds (15). A run is one request, so there is no per-connection rate of inputs to limit;
what inputs cost the host is bounded per principal and per input:

- ``input_budget`` bytes a second (4 MiB) per principal, over all of its requests (the
  application keeps one :class:`~agui_transports.connections.InputBudget`; one can be shared with
  another transport), in bursts of one second's worth, a body larger than that passing on a
  full budget: each run's body is charged once read, before it is decoded, and one over the
  budget is not decoded but answered with a ``RUN_ERROR`` ``RATE_LIMITED``, once the budget
  would take it (a second at most), so that a client asking again at once is slowed down.
  Without an authenticator each client address has its own budget: under
  :class:`HttpTransport` the connection's peer, counted as the gate counts it (never an
  ``X-Forwarded-For`` header, which a client writes itself), so clients behind one proxy share
  one; under another ASGI server, the ``client`` of the request's scope;
- ``max_input_messages`` (2,000) messages per input, and as many tools, context entries, and
  content parts and tool calls in all its messages together; a resume of at most 100
  entries: an input over a limit gets ``INVALID_INPUT`` (``INVALID_RESUME``) naming the limit,
  decided as soon as it is parsed, before anything in it is validated (see
  :func:`~agui_transports.plugin.read_input`).

The inbox feeds, which stay open, are capped per principal too
(``options.max_feeds_per_principal``, 4 by default): one principal's feeds never fill the
connection cap for everyone. A client's mistake is logged in one line at most, never with a
traceback.

:class:`HttpTransport` is the ``http`` plugin of ``agui serve`` (``agui serve MODULE:AGENT
--http HOST:PORT``): the application under uvicorn (``pip install 'agui-core[http]'``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import math
import socket
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, MutableMapping
from contextlib import aclosing
from importlib import resources
from typing import Any, Final, cast

import anyio
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
    request_timeout,
    service_unavailable,
)
from agui_transports.plugin import (
    DEFAULT_INPUT_BUDGET,
    DEFAULT_MAX_FEEDS_PER_PRINCIPAL,
    DEFAULT_MAX_INPUT_MESSAGES,
    MAX_OVER_LIMIT_PAUSE,
    ServeOptions,
    bearer_token,
    fold_server_noise,
    next_batch,
    origin_allowed,
    read_input,
    require_loopback,
    setting,
)
from agui_transports.websocket import DEFAULT_SEND_TIMEOUT, parse_address

from agui_core.errors import AguiError, EncodeError, InvalidInputError
from agui_core.protocol import types as t
from agui_core.protocol.codec import encode_event
from agui_core.protocol.framing import SSE_CONTENT_TYPE, sse_frame
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime.auth import AuthenticationError, Credentials
from agui_core.runtime.capabilities import capabilities_json
from agui_core.runtime.console import audit_document, inbox_document
from agui_core.runtime.host import Host, refusal
from agui_core.runtime.observe import NO_OBSERVER, Observer, trace_carrier

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_FEED_HEARTBEAT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "HttpApp",
    "HttpTransport",
]

log = logging.getLogger("agui_transports.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

DEFAULT_MAX_BODY: Final = 1024 * 1024
"""The largest request body a client may send, in bytes."""

DEFAULT_BODY_TIMEOUT: Final = 30.0
"""Seconds a client has to send its whole request body."""

DEFAULT_PORT: Final = 8000

_THREADS: Final = "/threads/"
_AUDIT: Final = "/audit/"
_CONSOLE: Final = "/console/"
DEFAULT_FEED_HEARTBEAT: Final = 15.0  # seconds between comment lines on an idle feed: proxies and browsers see it alive
_CONSOLE_TYPES: Final = {
    ".html": b"text/html; charset=utf-8",
    ".mjs": b"text/javascript; charset=utf-8",
    ".css": b"text/css; charset=utf-8",
}
_CONSOLE_HEADERS: Final = [
    # The page loads its own files and calls its own host; nothing else, nothing inline.
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
        b" base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]
_CORS_METHODS: Final = b"GET, POST, OPTIONS"
_CORS_HEADERS: Final = b"authorization, content-type, accept, last-event-id"
_CORS_MAX_AGE: Final = b"600"
_SSE_HEADERS: Final = [
    (b"content-type", SSE_CONTENT_TYPE.encode()),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # proxies that buffer responses (nginx) must not hold events back
]
_JSON: Final = (b"content-type", b"application/json")
_TICKET: Final = "agui.connection"  # the scope extension naming the request's connection (HttpTransport)
_ticket: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar("agui_http_ticket", default=None)
_NO_SUCH_THREAD: Final = ("not_found", "no such thread")  # never saved, or another principal's: alike


class _Refused(Exception):
    """A request that is not a run, answered with an HTTP error and a JSON body."""

    def __init__(self, status: int, error: str, message: str, headers: Collection[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.headers = list(headers)


class _ClientLeft(Exception):
    """The client disconnected before its request was read."""


class _Frames:
    """Encoded events on their way from the task reading a run to the task sending them.

    :meth:`take` hands over everything that arrived since the last take, as one write.
    :meth:`put` waits once ``limit`` bytes are waiting, so a slow client slows the run down
    (the host's stream is bounded too) instead of memory growing.
    """

    __slots__ = ("_arrived", "_ended", "_frames", "_limit", "_size", "_taken")

    def __init__(self, limit: int = 64 * 1024) -> None:
        self._frames: list[bytes] = []
        self._size = 0
        self._limit = limit
        self._ended = False
        self._arrived = anyio.Event()
        self._taken = anyio.Event()

    async def put(self, frame: bytes) -> None:
        self._frames.append(frame)
        self._size += len(frame)
        self._arrived.set()
        while self._size >= self._limit:
            self._taken = anyio.Event()
            await self._taken.wait()

    def end(self) -> None:
        """No more frames: :meth:`take` returns ``None`` once it has handed over the rest."""
        self._ended = True
        self._arrived.set()

    async def take(self) -> bytes | None:
        while not self._frames:
            if self._ended:
                return None
            await self._arrived.wait()
            self._arrived = anyio.Event()
        frames = self._frames[0] if len(self._frames) == 1 else b"".join(self._frames)
        self._frames.clear()
        self._size = 0
        self._taken.set()
        return frames


class HttpApp:
    """An ASGI application serving ``host`` (see the module docstring for its routes).

    The host must be entered (``async with host:``) while the application serves, by whoever
    owns both (a FastAPI lifespan, say). ``max_body`` bounds a request body, in bytes;
    ``body_timeout`` is how many seconds a client has to send it; ``allow_origins`` lists the
    browser origins (``https://app.example.com``) allowed to call the host;
    ``send_timeout`` is how many seconds one write to a client may take before the client
    counts as not reading. ``input_budget`` (bytes a second, or an
    :class:`~agui_transports.connections.InputBudget` to share with another transport of the host)
    and ``max_input_messages`` are the limits the module docstring describes (``None``: none).
    """

    def __init__(
        self,
        host: Host,
        *,
        max_body: int = DEFAULT_MAX_BODY,
        body_timeout: float = DEFAULT_BODY_TIMEOUT,
        allow_origins: Collection[str] = (),
        websocket: bool = False,
        send_timeout: float = DEFAULT_SEND_TIMEOUT,
        console: bool = True,
        loopback_names_only: bool = False,
        feed_heartbeat: float = DEFAULT_FEED_HEARTBEAT,
        input_budget: float | InputBudget | None = DEFAULT_INPUT_BUDGET,
        max_input_messages: int | None = DEFAULT_MAX_INPUT_MESSAGES,
        max_feeds_per_principal: int | None = DEFAULT_MAX_FEEDS_PER_PRINCIPAL,
        public_capabilities: bool = False,
        public_metrics: bool = False,
    ) -> None:
        """``websocket`` says whether the same host is also served over WebSocket (for the
        capabilities document); ``console`` whether to serve the approval console;
        ``loopback_names_only`` refuses (403 ``host_not_allowed``) every request whose ``Host``
        is not a loopback address or ``localhost``: set it when the host listens on loopback
        for anyone who can reach it there (no authenticator), so that a web page whose own
        name was rebound to 127.0.0.1 cannot read what it serves; ``feed_heartbeat`` is how
        many seconds an idle inbox feed waits between comment lines (its credentials are
        checked again at each); ``max_feeds_per_principal`` how many inbox feeds one principal
        holds open at once (``None``: no cap); ``public_capabilities`` serves the capabilities
        document without credentials; ``public_metrics`` serves ``GET /metrics`` (when the host's
        observer has metrics) without credentials."""
        self.host = host
        self.loopback_names_only = loopback_names_only
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.allow_origins = tuple(allow_origins)
        self.send_timeout = send_timeout
        self._transport = t.TransportCapabilities(
            streaming=True, websocket=websocket, http_binary=False, push_notifications=False, resumable=False
        )
        self._capabilities: bytes | None = None
        self.console = console
        """Whether the approval console is served (at ``/console/``)."""
        self._console = _console_files() if console else None
        self._closing = anyio.Event()
        self.feed_heartbeat = feed_heartbeat
        self.input_budget = InputBudget.of(input_budget)
        """Every principal's budget of input bytes a second (``None``: none), shared by its requests."""
        self.max_input_messages = max_input_messages
        if max_feeds_per_principal is not None and max_feeds_per_principal < 1:
            raise ValueError(f"max_feeds_per_principal is 1 or more (None: no cap), not {max_feeds_per_principal}")
        self.max_feeds_per_principal = max_feeds_per_principal
        self.public_capabilities = public_capabilities
        self.public_metrics = public_metrics

    def close_feeds(self) -> None:
        """End the inbox feeds (the server is stopping): they would never end by themselves."""
        self._closing.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # refused: this application speaks HTTP

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Each request runs in a task (a context) of its own: the request's connection, for _principal.
        _ticket.set(scope.get("extensions", {}).get(_TICKET))
        headers = _headers(scope)
        method: str = scope["method"]
        path = _route(scope)
        origin = headers.get("origin")
        cors: list[tuple[bytes, bytes]] = []
        try:
            if self.loopback_names_only and not loopback_name(headers.get("host", "")):
                raise _Refused(403, "host_not_allowed", HOST_NOT_ALLOWED)
            if origin is not None and not self._own_origin(scope, headers, origin):
                if not origin_allowed(origin, self.allow_origins):
                    raise _Refused(403, "origin_not_allowed", f"requests from origin {origin!r} are not allowed")
                cors = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"origin")]
            if path in ("", "/"):
                allowed = "POST"
            elif path in ("/capabilities", "/inbox", "/inbox/events", "/metrics"):
                allowed = "GET"
            elif path.startswith((_THREADS, _AUDIT)) and len(path) > path.index("/", 1) + 1:
                allowed = "GET"
            elif self._console is not None and (path == "/console" or path.startswith(_CONSOLE)):
                allowed = "GET"
            else:
                raise _Refused(404, "not_found", f"no such path {path!r}: POST a run to /")
            if method == "OPTIONS":
                await self._options(headers, allowed, cors, send)
            elif method != allowed:
                allow = [(b"allow", f"{allowed}, OPTIONS".encode())]
                raise _Refused(405, "method_not_allowed", f"use {allowed} on {path or '/'}", allow)
            elif allowed == "POST":
                await self._run(scope, headers, receive, send, cors)
            elif path == "/capabilities":
                if not self.public_capabilities:
                    await self._principal(headers)  # it names the tools: for those who may call them
                await _send_json(send, 200, self._capabilities_document(), cors)
            elif path == "/metrics":
                await self._metrics(headers, send, cors)
            elif path == "/inbox":
                await self._inbox(headers, send, cors)
            elif path == "/inbox/events":
                await self._feed(headers, receive, send, cors)
            elif path.startswith(_AUDIT):
                await self._audit(path[len(_AUDIT) :], headers, send, cors)
            elif path.startswith(_THREADS):
                await self._thread(path[len(_THREADS) :], headers, send, cors)
            else:
                await self._console_file(scope, path, send)
        except _Refused as refused:
            body = orjson.dumps({"error": refused.error, "message": refused.message})
            await _send_json(send, refused.status, body, [*refused.headers, *cors])
        except _ClientLeft:
            log.debug("a client left before its request was read")

    async def _options(
        self, headers: Mapping[str, str], allowed: str, cors: list[tuple[bytes, bytes]], send: Send
    ) -> None:
        extra = [(b"allow", f"{allowed}, OPTIONS".encode())]
        if cors and "access-control-request-method" in headers:
            extra += [
                (b"access-control-allow-methods", _CORS_METHODS),
                (b"access-control-allow-headers", _CORS_HEADERS),
                (b"access-control-max-age", _CORS_MAX_AGE),
            ]
        await send({"type": "http.response.start", "status": 204, "headers": [*extra, *cors]})
        await send({"type": "http.response.body", "body": b""})

    async def _still(self, principal: str, headers: Mapping[str, str]) -> bool:
        """Whether the credentials in ``headers`` still stand for ``principal``."""
        try:
            return await self._principal(headers) == principal
        except _Refused:
            return False

    async def _principal(self, headers: Mapping[str, str]) -> str:
        credentials = Credentials(bearer=bearer_token(headers.get("authorization")), headers=headers)
        try:
            principal = await self.host.authenticate(credentials)
        except AuthenticationError as exc:
            raise _Refused(401, "unauthorized", exc.message, [(b"www-authenticate", b"Bearer")]) from None
        ticket = _ticket.get()
        if ticket is not None:  # served by HttpTransport: the connection keeps its place
            ticket.prove()
        return principal

    async def _run(
        self, scope: Scope, headers: Mapping[str, str], receive: Receive, send: Send, cors: list[tuple[bytes, bytes]]
    ) -> None:
        media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            raise _Refused(415, "unsupported_media_type", "send the RunAgentInput as application/json")
        principal = await self._principal(headers)
        body = await self._body(headers, receive)
        budget, address = self.input_budget, _client_address(scope)
        if budget is not None and not budget.charge(principal, address, len(body)):
            # Answered once the budget would take it: a client that asks again at once is slowed down.
            await anyio.sleep(min(MAX_OVER_LIMIT_PAUSE, budget.refills_in(principal, address, len(body))))
            exceeded = budget.exceeded()
            self.host.observer.refused(exceeded.code.value)
            await _refuse_run(send, cors, exceeded)
            return
        try:
            run_input = read_input(body, max_messages=self.max_input_messages)
        except InvalidInputError as exc:
            self.host.observer.refused(exc.code.value)
            await _refuse_run(send, cors, exc)
            return
        if "traceparent" in headers:  # the run's task inherits this request's context, and with it these
            trace_carrier.set({k: headers[k] for k in ("traceparent", "tracestate") if k in headers})
        await send({"type": "http.response.start", "status": 200, "headers": [*_SSE_HEADERS, *cors]})
        await self._stream(run_input, principal, receive, send)

    async def _body(self, headers: Mapping[str, str], receive: Receive) -> bytes:
        """The request body, refused as soon as it is known to be over ``max_body``."""
        too_large = _Refused(413, "payload_too_large", f"the request body is over the limit of {self.max_body} bytes")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.body_timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _ClientLeft
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    raise too_large
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        assert deadline.cancelled_caught
        raise _Refused(408, "request_timeout", f"the request body did not arrive within {self.body_timeout:g} s")

    async def _stream(self, run_input: RunAgentInput, principal: str, receive: Receive, send: Send) -> None:
        """Send the run's events until it ends or the client leaves (the run goes on then).

        One task reads the run, another sends: what arrives while a write is under way goes
        out in the next write, so a burst of events costs one write instead of one each,
        and an event that comes alone is sent at once.
        """
        pending = _Frames()
        left = finished = False
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                nonlocal left
                while (await receive())["type"] != "http.disconnect":
                    pass
                if not finished:  # servers also say http.disconnect once the response is complete
                    left = True
                    group.cancel_scope.cancel()

            async def read() -> None:
                try:
                    async with aclosing(self.host.run(run_input, principal=principal)) as events:
                        while batch := await next_batch(events):
                            frames: list[bytes] = []
                            for event in batch:
                                try:
                                    frames.append(sse_frame(encode_event(event)))
                                except EncodeError:
                                    if frames:  # the events before the one that fails still go out
                                        await pending.put(b"".join(frames))
                                    raise
                            await pending.put(b"".join(frames))
                except EncodeError as exc:
                    # Nothing honest can be sent now: end without completing the response.
                    log.error("run %r: %s; abandoning its response", run_input.run_id, exc.message)
                    group.cancel_scope.cancel()
                pending.end()

            group.start_soon(watch)
            group.start_soon(read)
            try:
                while (frames := await pending.take()) is not None:
                    with anyio.move_on_after(self.send_timeout) as late:
                        await send({"type": "http.response.body", "body": frames, "more_body": True})
                    if late.cancelled_caught:  # a client that reads nothing: leave the response unfinished
                        left = True
                        break
                else:
                    finished = True
                    await send({"type": "http.response.body", "body": b""})
            except OSError:  # ASGI servers may raise it from send once the client is gone
                left = True
            group.cancel_scope.cancel()
        if left:
            log.info("the client of run %r left or stopped reading; the run goes on", run_input.run_id)

    async def _thread(
        self, thread_id: str, headers: Mapping[str, str], send: Send, cors: list[tuple[bytes, bytes]]
    ) -> None:
        principal = await self._principal(headers)
        view = await self.host.view(thread_id, principal)
        if view is None:
            raise _Refused(404, *_NO_SUCH_THREAD)
        await _send_json(send, 200, orjson.dumps(view.to_wire()), [(b"cache-control", b"no-store"), *cors])

    def _own_origin(self, scope: Scope, headers: Mapping[str, str], origin: str) -> bool:
        """Whether ``origin`` is this host's own, and may call it (see the module docstring)."""
        if self._console is None or "host" not in headers:
            return False
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        if origin.strip().rstrip("/").lower() != f"{scheme}://{headers['host']}".lower():
            return False
        return self.host.authenticator is not None or loopback_name(headers["host"])

    async def _metrics(self, headers: Mapping[str, str], send: Send, cors: list[tuple[bytes, bytes]]) -> None:
        if not self.public_metrics:
            await self._principal(headers)
        served = await self.host.observer.exposition()
        if served is None:
            raise _Refused(404, "not_found", "this host serves no metrics (agui serve --metrics)")
        body, media_type = served
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", media_type.encode()), *cors]}
        )
        await send({"type": "http.response.body", "body": body})

    async def _inbox(self, headers: Mapping[str, str], send: Send, cors: list[tuple[bytes, bytes]]) -> None:
        principal = await self._principal(headers)
        document = inbox_document(principal, await self.host.inbox(principal))
        await _send_json(send, 200, orjson.dumps(document), [(b"cache-control", b"no-store"), *cors])

    async def _audit(
        self, thread_id: str, headers: Mapping[str, str], send: Send, cors: list[tuple[bytes, bytes]]
    ) -> None:
        principal = await self._principal(headers)
        found = await self.host.audit(thread_id, principal)
        if found is None:
            raise _Refused(404, *_NO_SUCH_THREAD)
        document = audit_document(*found, host_tools=self.host.tools.keys())
        await _send_json(send, 200, orjson.dumps(document), [(b"cache-control", b"no-store"), *cors])

    async def _feed(
        self, headers: Mapping[str, str], receive: Receive, send: Send, cors: list[tuple[bytes, bytes]]
    ) -> None:
        """The principal's changes as Server-Sent Events, until the client leaves or the server stops.

        A feed that falls behind is ended (the host drops its watcher): the page reads its
        inbox again when it reconnects, so nothing is missed, only read once more. The
        credentials are checked again at each heartbeat: once the authenticator refuses them
        (a token revoked, a JWT past its ``exp``) or names someone else, the feed ends, and the
        page's next request gets the 401. A feed opened while the principal holds
        ``max_feeds_per_principal`` ends the oldest of them, the same way.
        """
        principal = await self._principal(headers)
        await send({"type": "http.response.start", "status": 200, "headers": [*_SSE_HEADERS, *cors]})
        complete = True
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                nonlocal complete
                while (await receive())["type"] != "http.disconnect":
                    pass
                complete = False
                group.cancel_scope.cancel()

            async def closing() -> None:
                await self._closing.wait()
                group.cancel_scope.cancel()

            group.start_soon(watch)
            group.start_soon(closing)
            with self.host.changes.watch(principal, limit=self.max_feeds_per_principal) as changes:
                frame = b'data: {"type":"ready"}\n\n'
                while frame:
                    with anyio.move_on_after(self.send_timeout) as late:
                        try:
                            await send({"type": "http.response.body", "body": frame, "more_body": True})
                        except OSError:
                            late.cancel()
                    if late.cancel_called:
                        complete = False  # a client that reads nothing: leave the response unfinished
                        break
                    frame = b": still here\n\n"
                    with anyio.move_on_after(self.feed_heartbeat) as idle:
                        try:
                            change = await changes.receive()
                        except anyio.EndOfStream:
                            frame = b""
                        else:
                            event = {"type": "changed", "threadId": change.thread_id, "state": change.state}
                            frame = b"data: " + orjson.dumps(event) + b"\n\n"
                    if idle.cancel_called and not await self._still(principal, headers):
                        frame = b""
            group.cancel_scope.cancel()
        if complete:
            with contextlib.suppress(OSError):
                await send({"type": "http.response.body", "body": b""})

    async def _console_file(self, scope: Scope, path: str, send: Send) -> None:
        assert self._console is not None
        if path == "/console":  # the page's relative addresses need the trailing slash
            location = (scope.get("root_path", "") + _CONSOLE).encode("latin-1")
            await send({"type": "http.response.start", "status": 308, "headers": [(b"location", location)]})
            await send({"type": "http.response.body", "body": b""})
            return
        name = path[len(_CONSOLE) :] or "index.html"
        found = self._console.get(name)
        if found is None:
            raise _Refused(404, "not_found", f"the console has no file {name!r}")
        body, content_type = found
        start = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *_CONSOLE_HEADERS]
        await send({"type": "http.response.start", "status": 200, "headers": start})
        await send({"type": "http.response.body", "body": body})

    def _capabilities_document(self) -> bytes:
        if self._capabilities is None:  # the host's agent and tools do not change: encode once
            self._capabilities = capabilities_json(self.host, transport=self._transport)
        return self._capabilities


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; a repeated header's values joined with commas."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        found[name] = f"{found[name]}, {value}" if name in found else value
    return found


def _console_files() -> dict[str, tuple[bytes, bytes]]:
    """The console's files shipped in the package, by name, with their content types."""
    folder = resources.files("agui_transports") / "console"
    files: dict[str, tuple[bytes, bytes]] = {}
    for item in folder.iterdir():
        suffix = item.name[item.name.rfind(".") :]
        if item.is_file() and suffix in _CONSOLE_TYPES:
            files[item.name] = (item.read_bytes(), _CONSOLE_TYPES[suffix])
    return files


async def _refuse_run(send: Send, cors: list[tuple[bytes, bytes]], error: AguiError) -> None:
    """A run refused before it started: its ``RUN_ERROR``, alone in the stream."""
    await send({"type": "http.response.start", "status": 200, "headers": [*_SSE_HEADERS, *cors]})
    await send({"type": "http.response.body", "body": sse_frame(encode_event(refusal(error)))})


def _client_address(scope: Scope) -> str | None:
    """Who the request's client counts as for its input budget: its connection's place at the
    gate (served by :class:`HttpTransport`), else the address the ASGI server reports."""
    ticket = _ticket.get()
    if ticket is not None:
        return ticket.client
    client = scope.get("client")
    return str(client[0]) if client else None


def _route(scope: Scope) -> str:
    """The path below where the application is mounted (``root_path``), as routers see it."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path


async def _send_json(send: Send, status: int, body: bytes, headers: Collection[tuple[bytes, bytes]] = ()) -> None:
    start = [_JSON, (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    """Nothing to start or stop: the host is entered by whoever owns it."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


def _bind(address: str, port: int) -> socket.socket:
    """The listening socket, made as TCP explicitly: asyncio sets ``TCP_NODELAY`` on what it
    accepts only when the listener says ``IPPROTO_TCP`` (``socket.create_server`` says 0)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind((address, port))
        listener.listen(1024)
    except BaseException:
        listener.close()
        raise
    return listener


def _guarded_protocol(
    gate: ConnectionGate, header_timeout: float, observer: Observer = NO_OBSERVER
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol (h11) with this transport's edge (see the module docstring):
    each accepted connection admitted by ``gate``, ``TCP_NODELAY``, and a request head due
    within ``header_timeout`` seconds of the connection or of its first byte."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _ticket: Ticket | None = None
        _head_due: asyncio.TimerHandle | None = None
        _scoped: Scope | None = None  # the last request handed the ticket

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            no_delay(transport)
            ticket = gate.admit(peer_of(transport), transport.abort)
            if ticket is None:
                refuse(transport, service_unavailable("too many connections; try again later"))
                return
            self._ticket = ticket
            observer.connection_opened("http")
            super().connection_made(transport)
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_arrived()
            if self._ticket is not None:
                self._ticket.release()
                observer.connection_closed("http")
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._head_arrived()
            elif self._head_due is None and not self.transport.is_closing():
                self._await_head()  # the first bytes of the next request: its head is due
            self._hand_ticket()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._hand_ticket()  # a request sent before this response ended may have been read

        def _hand_ticket(self) -> None:
            """Put the connection's ticket in the scope of a request just read (its task has not
            started yet), so that the application can say the request was authenticated."""
            scope = cast(Scope | None, self.scope)
            if scope is not None and scope is not self._scoped:
                self._scoped = scope
                scope.setdefault("extensions", {})[_TICKET] = self._ticket

        def _await_head(self) -> None:
            self._head_due = self.loop.call_later(header_timeout, self._head_late)

        def _head_arrived(self) -> None:
            if self._head_due is not None:
                self._head_due.cancel()
                self._head_due = None

        def _head_late(self) -> None:
            self._head_due = None
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
                return
            late = f"the request head did not arrive within {header_timeout:g} s"
            if self.conn.trailing_data[0]:  # part of a request came: say why it is cut
                self.transport.write(request_timeout(late))
            log.debug("closed a connection: %s", late)
            self.transport.close()

    return GuardedH11Protocol


class HttpTransport:
    """The ``http`` plugin of ``agui serve``: :class:`HttpApp` under uvicorn. The address is
    ``HOST:PORT`` (default ``127.0.0.1:8000``; port 0: any free port).

    Settings: ``max_body`` (bytes, default 1 MiB), ``body_timeout`` (seconds, default 30),
    ``send_timeout`` (seconds, default the host's), ``feed_heartbeat`` (seconds between comment
    lines on an idle inbox feed, and between checks of its credentials; default 15). The trust
    options are the plugin contract's: ``options.allow_origins``, ``options.ssl`` (``https://``)
    and ``options.loopback_only`` (refuses to listen on anything but a loopback address, and
    requests naming another host). So are the edge's limits: each connection is admitted by a
    :class:`~agui_transports.connections.ConnectionGate` (``options.max_connections``,
    ``options.max_connections_per_client``) as it is accepted, gets ``TCP_NODELAY``, has
    ``options.header_timeout`` seconds for each request head and is closed after
    ``options.keepalive_timeout`` seconds idle between requests; ``options.input_budget`` and
    ``options.max_input_messages`` are the application's limits, and so is
    ``options.max_feeds_per_principal``; ``options.public_capabilities`` opens ``GET
    /capabilities`` to anyone.

    On ``options.stop`` the server accepts nothing new, closes idle connections and gives the
    streams in flight ``options.grace`` seconds; streams still open then are cut (their runs go
    on in the host, which saves their outcome).
    """

    name = "http"

    async def serve(self, host: Host, options: ServeOptions) -> None:
        import uvicorn  # an optional dependency: imported only by those who serve HTTP

        known = {"max_body", "body_timeout", "send_timeout", "console", "feed_heartbeat"}
        unknown = set(options.settings) - known
        if unknown:
            raise ValueError(f"the http transport has no option {', '.join(sorted(unknown))}")
        s = options.settings
        app = HttpApp(
            host,
            console=setting(s, "console", _yes, True),
            max_body=setting(s, "max_body", int, DEFAULT_MAX_BODY),
            body_timeout=setting(s, "body_timeout", float, DEFAULT_BODY_TIMEOUT),
            allow_origins=options.allow_origins,
            send_timeout=setting(s, "send_timeout", float, host.send_timeout),
            loopback_names_only=options.loopback_only,
            feed_heartbeat=setting(s, "feed_heartbeat", _seconds, DEFAULT_FEED_HEARTBEAT),
            input_budget=options.input_budget,
            max_input_messages=options.max_input_messages,
            max_feeds_per_principal=options.max_feeds_per_principal,
            public_capabilities=options.public_capabilities,
            public_metrics=options.public_metrics,
        )
        address, port = parse_address(options.address, default_port=DEFAULT_PORT)
        if options.loopback_only:
            require_loopback(address)
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_config=None,
            access_log=False,
            # uvicorn annotates these as int; it takes them as seconds (call_later), fractions too.
            timeout_keep_alive=options.keepalive_timeout,  # type: ignore[arg-type]
            timeout_graceful_shutdown=options.grace,  # type: ignore[arg-type]
            # The gate caps connections as they are accepted, before uvicorn reads a byte.
            http=_guarded_protocol(
                ConnectionGate(
                    max_connections=options.max_connections, max_per_client=options.max_connections_per_client
                ),
                options.header_timeout,
                host.observer,
            ),
        )
        config.load()
        fold_server_noise()
        config.ssl = options.ssl  # the context agui serve built; uvicorn would build its own from files
        server = _uvicorn_server(config)
        listener = _bind(address, port)
        async with anyio.create_task_group() as group:

            async def stop_on_request() -> None:
                await options.stop.wait()
                app.close_feeds()
                server.should_exit = True

            group.start_soon(stop_on_request)
            if options.ready is not None:
                shown = f"[{address}]" if ":" in address else address
                scheme = "http" if options.ssl is None else "https"
                url = f"{scheme}://{shown}:{listener.getsockname()[1]}"
                options.ready(url)
                if app.console:
                    log.info("the approval console: %s/console/", url)
            try:
                await server.serve(sockets=[listener])
            except BaseException:
                # Cancelled from outside: stop now; streams in flight are cut, their runs go on.
                server.should_exit = server.force_exit = True
                for task in list(server.server_state.tasks):
                    task.cancel()
                raise
            finally:
                listener.close()
            group.cancel_scope.cancel()


def _seconds(value: str) -> float:
    seconds = float(value)
    if not 0 < seconds < math.inf:
        raise ValueError(f"{value!r} is not a positive number of seconds")
    return seconds


def _yes(value: str) -> bool:
    if value.lower() in ("1", "yes", "true", "on"):
        return True
    if value.lower() in ("0", "no", "false", "off"):
        return False
    raise ValueError(f"{value!r} is not yes or no")


def _uvicorn_server(config: Any) -> Any:
    """A uvicorn server without its signal handlers: stopping is ``agui serve``'s business."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)
