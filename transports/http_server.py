"""``agui serve --http``: :class:`HttpTransport` serves an :class:`~agui_transports.http_app.HttpApp`
under uvicorn, with the transport's edge (see :mod:`agui_transports.http`): a listening socket
asyncio knows as TCP, every accepted connection admitted by a gate and given ``TCP_NODELAY``,
a deadline on each request head.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import socket
from collections.abc import Iterator
from typing import Any, Final, cast

import anyio
from agui_transports.connections import (
    ConnectionGate,
    Ticket,
    no_delay,
    peer_of,
    refuse,
    request_timeout,
    service_unavailable,
)
from agui_transports.http_app import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY, HttpApp
from agui_transports.http_asgi import TICKET, Scope
from agui_transports.http_reads import DEFAULT_FEED_HEARTBEAT
from agui_transports.plugin import ServeOptions, fold_server_noise, require_loopback, setting
from agui_transports.websocket import parse_address

from agui_core.runtime.host import Host
from agui_core.runtime.observe import NO_OBSERVER, Observer

__all__ = ["DEFAULT_PORT", "HttpTransport"]

log = logging.getLogger("agui_transports.http")

DEFAULT_PORT: Final = 8000


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
                scope.setdefault("extensions", {})[TICKET] = self._ticket

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
