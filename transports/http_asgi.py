"""The ASGI plumbing the HTTP transport's routes share: reading a request, answering it.

Each route of :class:`~agui_transports.http_app.HttpApp` (the run endpoint, the read models,
the console's files) answers through these: a request that is not a run and is refused raises
:class:`Refused` (answered with its HTTP status and a JSON body ``{"error", "message"}``); a
run refused before it starts is its ``RUN_ERROR`` alone in an event stream
(:func:`refuse_run`). Nothing here knows a route.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Collection, Mapping, MutableMapping
from typing import Any, Final

from agui_transports.connections import Ticket

from agui_core.errors import AguiError
from agui_core.protocol.codec import encode_event
from agui_core.protocol.framing import SSE_CONTENT_TYPE, sse_frame
from agui_core.runtime.host import refusal

__all__ = [
    "JSON_CONTENT",
    "SSE_HEADERS",
    "TICKET",
    "Authenticate",
    "ClientLeft",
    "Cors",
    "Message",
    "Receive",
    "Refused",
    "Scope",
    "Send",
    "client_address",
    "current_ticket",
    "lifespan",
    "refuse_run",
    "request_headers",
    "route_of",
    "send_json",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Cors = list[tuple[bytes, bytes]]
"""The CORS headers a response to this request carries (none for a request without ``Origin``)."""
Authenticate = Callable[[Mapping[str, str]], Awaitable[str]]
"""The principal a request's headers stand for, or :class:`Refused` (401)."""

SSE_HEADERS: Final = [
    (b"content-type", SSE_CONTENT_TYPE.encode()),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),  # proxies that buffer responses (nginx) must not hold events back
]
JSON_CONTENT: Final = (b"content-type", b"application/json")
TICKET: Final = "agui.connection"  # the scope extension naming the request's connection (HttpTransport)
current_ticket: contextvars.ContextVar[Ticket | None] = contextvars.ContextVar("agui_http_ticket", default=None)
"""The place at the gate of the connection the request in this task came on (``None``: the
application is served by another ASGI server)."""


class Refused(Exception):
    """A request that is not a run, answered with an HTTP error and a JSON body."""

    def __init__(self, status: int, error: str, message: str, headers: Collection[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message
        self.headers = list(headers)


class ClientLeft(Exception):
    """The client disconnected before its request was read."""


def request_headers(scope: Scope) -> dict[str, str]:
    """The request's headers by lower-case name; a repeated header's values joined with commas."""
    found: dict[str, str] = {}
    for raw_name, raw_value in scope["headers"]:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        found[name] = f"{found[name]}, {value}" if name in found else value
    return found


def route_of(scope: Scope) -> str:
    """The path below where the application is mounted (``root_path``), as routers see it."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path


def client_address(scope: Scope) -> str | None:
    """Who the request's client counts as for its input budget: its connection's place at the
    gate (served by :class:`~agui_transports.http.HttpTransport`), else the address the ASGI
    server reports."""
    ticket = current_ticket.get()
    if ticket is not None:
        return ticket.client
    client = scope.get("client")
    return str(client[0]) if client else None


async def send_json(send: Send, status: int, body: bytes, headers: Collection[tuple[bytes, bytes]] = ()) -> None:
    start = [JSON_CONTENT, (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": start})
    await send({"type": "http.response.body", "body": body})


async def refuse_run(send: Send, cors: Cors, error: AguiError) -> None:
    """A run refused before it started: its ``RUN_ERROR``, alone in the stream."""
    await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *cors]})
    await send({"type": "http.response.body", "body": sse_frame(encode_event(refusal(error)))})


async def lifespan(receive: Receive, send: Send) -> None:
    """Nothing to start or stop: the host is entered by whoever owns it."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
