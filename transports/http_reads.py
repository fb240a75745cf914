"""What a principal may read of its threads over HTTP: one thread, its audit trail, the inbox
of everything waiting for it, and a feed of changes.

The read routes of :class:`~agui_transports.http_app.HttpApp` (``GET /threads/{threadId}``,
``GET /audit/{threadId}``, ``GET /inbox``, ``GET /inbox/events``): a page reloaded while
interrupts are pending finds them here, and the approval console is built on them. A thread
never saved and another principal's thread are answered alike (404 ``not_found``, "no such
thread"): a stranger learns nothing of which thread ids exist.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Final

import anyio
import orjson
from agui_transports.http_asgi import SSE_HEADERS, Authenticate, Cors, Receive, Refused, Send, send_json

from agui_core.runtime.console import audit_document, inbox_document
from agui_core.runtime.host import Host

__all__ = ["DEFAULT_FEED_HEARTBEAT", "ReadRoutes"]

DEFAULT_FEED_HEARTBEAT: Final = 15.0  # seconds between comment lines on an idle feed: proxies and browsers see it alive
NO_SUCH_THREAD: Final = ("not_found", "no such thread")  # never saved, or another principal's: alike


class ReadRoutes:
    """The read routes of one application.

    ``send_timeout`` is how many seconds one write may take before the client counts as not
    reading; ``feed_heartbeat`` how many seconds an idle feed waits between comment lines (its
    credentials are checked again at each); ``max_feeds_per_principal`` how many feeds one
    principal holds open at once (``None``: no cap). ``authenticate`` gives the principal a
    request's headers stand for.
    """

    def __init__(
        self,
        host: Host,
        authenticate: Authenticate,
        *,
        send_timeout: float,
        feed_heartbeat: float,
        max_feeds_per_principal: int | None,
    ) -> None:
        if max_feeds_per_principal is not None and max_feeds_per_principal < 1:
            raise ValueError(f"max_feeds_per_principal is 1 or more (None: no cap), not {max_feeds_per_principal}")
        self.host = host
        self._authenticate = authenticate
        self.send_timeout = send_timeout
        self.feed_heartbeat = feed_heartbeat
        self.max_feeds_per_principal = max_feeds_per_principal
        self._closing = anyio.Event()

    def close_feeds(self) -> None:
        """End the feeds (the server is stopping): they would never end by themselves."""
        self._closing.set()

    async def thread(self, thread_id: str, headers: Mapping[str, str], send: Send, cors: Cors) -> None:
        principal = await self._authenticate(headers)
        view = await self.host.view(thread_id, principal)
        if view is None:
            raise Refused(404, *NO_SUCH_THREAD)
        await send_json(send, 200, orjson.dumps(view.to_wire()), [(b"cache-control", b"no-store"), *cors])

    async def inbox(self, headers: Mapping[str, str], send: Send, cors: Cors) -> None:
        principal = await self._authenticate(headers)
        document = inbox_document(principal, await self.host.inbox(principal))
        await send_json(send, 200, orjson.dumps(document), [(b"cache-control", b"no-store"), *cors])

    async def audit(self, thread_id: str, headers: Mapping[str, str], send: Send, cors: Cors) -> None:
        principal = await self._authenticate(headers)
        found = await self.host.audit(thread_id, principal)
        if found is None:
            raise Refused(404, *NO_SUCH_THREAD)
        document = audit_document(*found, host_tools=self.host.tools.keys())
        await send_json(send, 200, orjson.dumps(document), [(b"cache-control", b"no-store"), *cors])

    async def feed(self, headers: Mapping[str, str], receive: Receive, send: Send, cors: Cors) -> None:
        """The principal's changes as Server-Sent Events, until the client leaves or the server stops.

        A feed that falls behind is ended (the host drops its watcher): the page reads its
        inbox again when it reconnects, so nothing is missed, only read once more. The
        credentials are checked again at each heartbeat: once the authenticator refuses them
        (a token revoked, a JWT past its ``exp``) or names someone else, the feed ends, and the
        page's next request gets the 401. A feed opened while the principal holds
        ``max_feeds_per_principal`` ends the oldest of them, the same way.
        """
        principal = await self._authenticate(headers)
        await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *cors]})
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
            roles = self.host.deciding_roles(principal)
            with self.host.changes.watch(principal, limit=self.max_feeds_per_principal, roles=roles) as changes:
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

    async def _still(self, principal: str, headers: Mapping[str, str]) -> bool:
        """Whether the credentials in ``headers`` still stand for ``principal``."""
        try:
            return await self._authenticate(headers) == principal
        except Refused:
            return False
