"""A client of the HTTP transport: each run a ``POST``, its events read from Server-Sent Events.

:func:`connect_http` gives an :class:`HttpClient`, the :class:`~agui_transports.client.Client`
of the other transports (every event checked by the thread's ``ClientMachine``) over an
:class:`HttpConnection`, plus what only HTTP serves: the host's capabilities and a thread's
open interrupts (to answer them after a restart)::

    async with connect_http("http://127.0.0.1:8000/", token="...") as client:
        await client.collect(client.new_input("thread-1", "Send the report to Ann"))
        view = await client.thread("thread-1")      # later, or from another process

A request that is not a run (401, 413, ...) raises :class:`HttpError` with the host's
``error`` and ``message``. Needs ``httpx`` (``pip install 'agui-core[http]'``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from ssl import SSLContext
from typing import Any
from urllib.parse import quote

import anyio
import httpx
import orjson
from agui_transports.client import Client

from agui_core.protocol import types as t
from agui_core.protocol.codec import converter
from agui_core.protocol.framing import SSE_CONTENT_TYPE, SSEReader
from agui_core.runtime.views import ThreadView

__all__ = ["HttpClient", "HttpConnection", "HttpError", "connect_http"]


class HttpError(Exception):
    """The host answered a request with an HTTP error (not a run: a refused run is a ``RUN_ERROR``)."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(f"HTTP {status} {error}: {message}")
        self.status = status
        self.error = error
        self.message = message

    @classmethod
    def of(cls, response: httpx.Response) -> HttpError:
        """The error ``response`` carries (its JSON body, or its text when it has none)."""
        try:
            document = orjson.loads(response.content)
            return cls(response.status_code, str(document["error"]), str(document["message"]))
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return cls(response.status_code, "http_error", response.text[:200] or response.reason_phrase)


class HttpConnection:
    """A :class:`~agui_transports.client.FrameConnection` over HTTP: :meth:`send` posts an
    input, :meth:`receive` reads the events of its response, ``anyio.EndOfStream`` at its end.

    ``http`` is an ``httpx.AsyncClient`` (its ``base_url``, headers and timeouts apply);
    runs are posted to ``path``.
    """

    delimits_streams = True
    """A response ends where its run's stream does: the client reads every run it carries."""

    def __init__(self, http: httpx.AsyncClient, path: str = "", *, max_line: int = 64 * 1024 * 1024) -> None:
        self.http = http
        self.path = path
        self._max_line = max_line
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._reader = SSEReader(max_line=max_line)
        self._ready: list[bytes] = []

    async def send(self, frame: bytes) -> None:
        await self._end_response()
        headers = {"content-type": "application/json", "accept": SSE_CONTENT_TYPE}
        request = self.http.build_request("POST", self.path, content=frame, headers=headers)
        try:
            response = await self.http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc
        if response.status_code != 200:
            await response.aread()
            await response.aclose()
            raise HttpError.of(response)
        self._response = response
        self._chunks = response.aiter_bytes()
        self._reader = SSEReader(max_line=self._max_line)

    async def receive(self) -> bytes:
        while not self._ready:
            if self._chunks is None:
                raise anyio.EndOfStream
            try:
                chunk = await anext(self._chunks)
            except (StopAsyncIteration, httpx.TransportError):
                self._ready.extend(self._reader.close())
                await self._end_response()
                continue
            self._ready.extend(self._reader.feed(chunk))
        return self._ready.pop(0)

    async def get(self, path: str) -> Any:
        """The JSON document at ``path``; :class:`HttpError` for an error response."""
        response = await self.http.get(path)
        if response.status_code != 200:
            raise HttpError.of(response)
        return orjson.loads(response.content)

    async def aclose(self) -> None:
        await self._end_response()

    async def _end_response(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        self._ready.clear()
        if response is not None:
            await response.aclose()


class HttpClient(Client):
    """A :class:`~agui_transports.client.Client` on an HTTP host, with what only HTTP serves."""

    connection: HttpConnection

    def __init__(self, connection: HttpConnection, **client_options: Any) -> None:
        super().__init__(connection, **client_options)

    async def capabilities(self) -> t.AgentCapabilities:
        """The host's ``AgentCapabilities`` document (``GET /capabilities``)."""
        document = await self.connection.get("capabilities")
        capabilities: t.AgentCapabilities = converter.structure(document, t.AgentCapabilities)
        return capabilities

    async def thread(self, thread_id: str) -> ThreadView | None:
        """The open interrupts of ``thread_id`` and its snapshots (``GET /threads/{id}``);
        ``None`` for a thread the host never saved and for another principal's, which the
        host answers alike."""
        try:
            document = await self.connection.get(f"threads/{quote(thread_id, safe='')}")
        except HttpError as exc:
            if exc.status == 404:
                return None
            raise
        return ThreadView(
            thread_id=document["threadId"],
            state=document["state"],
            interrupts=tuple(converter.structure(i, t.Interrupt) for i in document["interrupts"]),
            messages=tuple(converter.structure(m, t.Message) for m in document["messages"]),  # type: ignore[arg-type]
            agent_state=document["agentState"],
            run_id=document.get("runId"),
        )


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
    connect_timeout: float = 10.0,
    ssl: SSLContext | None = None,
    **client_options: Any,
) -> AsyncIterator[HttpClient]:
    """An :class:`HttpClient` on the host at ``url`` (where its application is mounted).

    ``token`` is sent as ``Authorization: Bearer``; ``headers`` go with every request. A
    stream may stay quiet as long as its run does: reads have no timeout, connecting has
    ``connect_timeout``. ``ssl`` is the TLS context for ``https://`` (default: the system's
    trusted certificates). ``client_options`` go to the :class:`HttpClient`.
    """
    sent = dict(headers or {})
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    base = url if url.endswith("/") else url + "/"
    timeout = httpx.Timeout(connect_timeout, read=None)
    verify: SSLContext | bool = ssl if ssl is not None else True
    async with httpx.AsyncClient(base_url=base, headers=sent, timeout=timeout, verify=verify) as http:
        client = HttpClient(HttpConnection(http), **client_options)
        try:
            yield client
        finally:
            await client.aclose()
