"""The HTTP transport's ASGI application: who may ask, and which route answers.

:class:`HttpApp` checks what every request must pass (the ``Host`` name on a loopback-only host,
the browser ``Origin``, the method) and hands it to its route: the run endpoint
(:mod:`agui_transports.http_runs`), the read routes (:mod:`agui_transports.http_reads`), the
console's files (:mod:`agui_transports.http_console`), or the two documents it answers itself
(``/capabilities`` and ``/metrics``). :mod:`agui_transports.http` describes what clients see.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Final

import orjson
from agui_transports.connections import HOST_NOT_ALLOWED, InputBudget, loopback_name
from agui_transports.http_asgi import (
    TICKET,
    ClientLeft,
    Cors,
    Receive,
    Refused,
    Scope,
    Send,
    current_ticket,
    lifespan,
    request_headers,
    route_of,
    send_json,
)
from agui_transports.http_console import ConsoleFiles
from agui_transports.http_keys import KeyRoutes
from agui_transports.http_reads import DEFAULT_FEED_HEARTBEAT, ReadRoutes
from agui_transports.http_runs import RunRoute
from agui_transports.plugin import (
    DEFAULT_INPUT_BUDGET,
    DEFAULT_MAX_FEEDS_PER_PRINCIPAL,
    DEFAULT_MAX_INPUT_MESSAGES,
    bearer_token,
    origin_allowed,
)
from agui_transports.websocket import DEFAULT_SEND_TIMEOUT

from agui_core.protocol import types as t
from agui_core.runtime.auth import AuthenticationError, Credentials
from agui_core.runtime.capabilities import capabilities_json
from agui_core.runtime.host import Host

__all__ = ["DEFAULT_BODY_TIMEOUT", "DEFAULT_FEED_HEARTBEAT", "DEFAULT_MAX_BODY", "HttpApp"]

log = logging.getLogger("agui_transports.http")

DEFAULT_MAX_BODY: Final = 1024 * 1024
"""The largest request body a client may send, in bytes."""

DEFAULT_BODY_TIMEOUT: Final = 30.0
"""Seconds a client has to send its whole request body."""

_THREADS: Final = "/threads/"
_AUDIT: Final = "/audit/"
_CORS_METHODS: Final = b"GET, POST, OPTIONS"
_CORS_HEADERS: Final = b"authorization, content-type, accept, last-event-id"
_CORS_MAX_AGE: Final = b"600"


class HttpApp:
    """An ASGI application serving ``host`` (see :mod:`agui_transports.http` for its routes).

    The host must be entered (``async with host:``) while the application serves, by whoever
    owns both (a FastAPI lifespan, say). ``max_body`` bounds a request body, in bytes;
    ``body_timeout`` is how many seconds a client has to send it; ``allow_origins`` lists the
    browser origins (``https://app.example.com``) allowed to call the host;
    ``send_timeout`` is how many seconds one write to a client may take before the client
    counts as not reading. ``input_budget`` (bytes a second, or an
    :class:`~agui_transports.connections.InputBudget` to share with another transport of the host)
    and ``max_input_messages`` are the limits :mod:`agui_transports.http` describes (``None``: none).
    The run endpoint keeps its limits in :attr:`runs`, the read routes theirs in :attr:`reads`.
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
        self.allow_origins = tuple(allow_origins)
        self.runs = RunRoute(
            host,
            self._principal,
            max_body=max_body,
            body_timeout=body_timeout,
            send_timeout=send_timeout,
            input_budget=InputBudget.of(input_budget),
            max_input_messages=max_input_messages,
        )
        """``POST /``: the run endpoint, with its limits."""
        self.reads = ReadRoutes(
            host,
            self._principal,
            send_timeout=send_timeout,
            feed_heartbeat=feed_heartbeat,
            max_feeds_per_principal=max_feeds_per_principal,
        )
        """The read routes: a thread, its audit trail, the inbox and its feed."""
        self.keys = KeyRoutes(host, self._principal, self.runs)
        """``GET /keys`` and ``POST /keys``: the caller's signing keys, and registering its first."""
        self._transport = t.TransportCapabilities(
            streaming=True, websocket=websocket, http_binary=False, push_notifications=False, resumable=False
        )
        self._capabilities: bytes | None = None
        self.console = console
        """Whether the approval console is served (at ``/console/``)."""
        self._console = ConsoleFiles() if console else None
        self.public_capabilities = public_capabilities
        self.public_metrics = public_metrics

    def close_feeds(self) -> None:
        """End the inbox feeds (the server is stopping): they would never end by themselves."""
        self.reads.close_feeds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # refused: this application speaks HTTP

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Each request runs in a task (a context) of its own: the request's connection, for _principal.
        current_ticket.set(scope.get("extensions", {}).get(TICKET))
        headers = request_headers(scope)
        method: str = scope["method"]
        path = route_of(scope)
        origin = headers.get("origin")
        cors: Cors = []
        try:
            if self.loopback_names_only and not loopback_name(headers.get("host", "")):
                raise Refused(403, "host_not_allowed", HOST_NOT_ALLOWED)
            if origin is not None and not self._own_origin(scope, headers, origin):
                if not origin_allowed(origin, self.allow_origins):
                    raise Refused(403, "origin_not_allowed", f"requests from origin {origin!r} are not allowed")
                cors = [(b"access-control-allow-origin", origin.encode("latin-1")), (b"vary", b"origin")]
            if path in ("", "/"):
                allowed = "POST"
            elif path in ("/capabilities", "/inbox", "/inbox/events", "/metrics"):
                allowed = "GET"
            elif path == "/keys":
                allowed = "GET, POST"
            elif path.startswith((_THREADS, _AUDIT)) and len(path) > path.index("/", 1) + 1:
                allowed = "GET"
            elif self._console is not None and self._console.serves(path):
                allowed = "GET"
            else:
                raise Refused(404, "not_found", f"no such path {path!r}: POST a run to /")
            if method == "OPTIONS":
                await self._options(headers, allowed, cors, send)
            elif method not in allowed.split(", "):
                allow = [(b"allow", f"{allowed}, OPTIONS".encode())]
                raise Refused(405, "method_not_allowed", f"use {allowed.replace(', ', ' or ')} on {path or '/'}", allow)
            elif path == "/keys":
                if method == "POST":
                    await self.keys.post(headers, receive, send, cors)
                else:
                    await self.keys.get(headers, send, cors)
            elif allowed == "POST":
                await self.runs(scope, headers, receive, send, cors)
            elif path == "/capabilities":
                if not self.public_capabilities:
                    await self._principal(headers)  # it names the tools: for those who may call them
                await send_json(send, 200, self._capabilities_document(), cors)
            elif path == "/metrics":
                await self._metrics(headers, send, cors)
            elif path == "/inbox":
                await self.reads.inbox(headers, send, cors)
            elif path == "/inbox/events":
                await self.reads.feed(headers, receive, send, cors)
            elif path.startswith(_AUDIT):
                await self.reads.audit(path[len(_AUDIT) :], headers, send, cors)
            elif path.startswith(_THREADS):
                await self.reads.thread(path[len(_THREADS) :], headers, send, cors)
            else:
                assert self._console is not None
                await self._console(scope, path, send)
        except Refused as refused:
            body = orjson.dumps({"error": refused.error, "message": refused.message})
            await send_json(send, refused.status, body, [*refused.headers, *cors])
        except ClientLeft:
            log.debug("a client left before its request was read")

    async def _options(self, headers: Mapping[str, str], allowed: str, cors: Cors, send: Send) -> None:
        extra = [(b"allow", f"{allowed}, OPTIONS".encode())]
        if cors and "access-control-request-method" in headers:
            extra += [
                (b"access-control-allow-methods", _CORS_METHODS),
                (b"access-control-allow-headers", _CORS_HEADERS),
                (b"access-control-max-age", _CORS_MAX_AGE),
            ]
        await send({"type": "http.response.start", "status": 204, "headers": [*extra, *cors]})
        await send({"type": "http.response.body", "body": b""})

    async def _principal(self, headers: Mapping[str, str]) -> str:
        credentials = Credentials(bearer=bearer_token(headers.get("authorization")), headers=headers)
        try:
            principal = await self.host.authenticate(credentials)
        except AuthenticationError as exc:
            raise Refused(401, "unauthorized", exc.message, [(b"www-authenticate", b"Bearer")]) from None
        ticket = current_ticket.get()
        if ticket is not None:  # served by HttpTransport: the connection keeps its place
            ticket.prove()
        return principal

    def _own_origin(self, scope: Scope, headers: Mapping[str, str], origin: str) -> bool:
        """Whether ``origin`` is this host's own, and may call it (see :mod:`agui_transports.http`)."""
        if self._console is None or "host" not in headers:
            return False
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        if origin.strip().rstrip("/").lower() != f"{scheme}://{headers['host']}".lower():
            return False
        return self.host.authenticator is not None or loopback_name(headers["host"])

    async def _metrics(self, headers: Mapping[str, str], send: Send, cors: Cors) -> None:
        if not self.public_metrics:
            await self._principal(headers)
        served = await self.host.observer.exposition()
        if served is None:
            raise Refused(404, "not_found", "this host serves no metrics (agui serve --metrics)")
        body, media_type = served
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-type", media_type.encode()), *cors]}
        )
        await send({"type": "http.response.body", "body": body})

    def _capabilities_document(self) -> bytes:
        if self._capabilities is None:  # the host's agent and tools do not change: encode once
            self._capabilities = capabilities_json(self.host, transport=self._transport)
        return self._capabilities
