"""Raw exchanges with a live server: send one input, record every frame that comes back.

The kit must see what a server really sends, including what a well-behaved client would
refuse to read, so it does not use the checking clients of ``agui_transports``: a
:class:`ProbeTransport` sends the bytes it is given and hands back the frames as they came.
:class:`HttpProbeTransport` posts each input (``http(s)://``, the response read as
Server-Sent Events); :class:`WebSocketProbeTransport` opens one connection per input
(``ws(s)://``, one text frame per object), so no exchange can disturb another.

:func:`exchange` drives one input to its end and gives an :class:`Exchange`: the frames, each
decoded as an AG-UI event where it is one, how the response ended (``terminal``, ``closed``
before its terminal event, ``timeout``, ``http-error``, ``connect-error``), the frames that came
after the terminal event, and when the run's ``RUN_STARTED`` and terminal event arrived.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from ssl import SSLContext
from typing import Any, Literal, Protocol, TypeAlias

import anyio
import attrs
import orjson

from agui_core.errors import InvalidEventError
from agui_core.protocol import events as ev
from agui_core.protocol.codec import event_from_dict
from agui_core.protocol.framing import SSE_CONTENT_TYPE, SSEReader

__all__ = [
    "Connection",
    "Ending",
    "Exchange",
    "Frame",
    "HttpProbeTransport",
    "ProbeError",
    "ProbeTransport",
    "WebSocketProbeTransport",
    "exchange",
    "transport_for",
]

Ending: TypeAlias = Literal["terminal", "closed", "timeout", "http-error", "connect-error"]

_TERMINAL = ("RUN_FINISHED", "RUN_ERROR")
_MAX_FRAME = 64 * 1024 * 1024


class ProbeError(Exception):
    """The server could not be reached, or answered what is not a run (``status``: its HTTP status)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


class Connection(Protocol):
    """One exchange's channel: :meth:`send` the input once, then :meth:`receive` frames."""

    async def send(self, body: bytes) -> None:
        """Send the input; :class:`ProbeError` if the server refuses it outside a run."""

    async def receive(self) -> bytes:
        """The next frame; ``anyio.EndOfStream`` once the response or connection has ended."""

    async def aclose(self) -> None:
        """Release the channel."""


class ProbeTransport(Protocol):
    """Opens channels to one server."""

    name: str
    url: str

    async def connect(self) -> Connection:
        """A channel for one exchange; :class:`ProbeError` if the server cannot be reached."""

    async def get_json(self, path: str) -> Any:
        """The JSON document at ``path`` beside the endpoint (``capabilities``), or ``None``."""

    async def aclose(self) -> None:
        """Release what the transport holds."""


@attrs.frozen(kw_only=True)
class Frame:
    """One frame as received: ``text`` (as sent, decoded as UTF-8), ``data`` (the parsed JSON
    object, if it is one), ``event`` (the decoded event, if it is a valid one) or ``error``."""

    text: str
    data: Mapping[str, Any] | None
    event: ev.Event | ev.UnknownEvent | None
    error: str | None
    at: float
    """When it arrived (``time.monotonic``)."""

    @property
    def type(self) -> str | None:
        kind = self.data.get("type") if self.data is not None else None
        return kind if isinstance(kind, str) else None

    def shown(self) -> Any:
        """The frame for a report: its JSON object, or its text when it is not one."""
        return dict(self.data) if self.data is not None else self.text


def read_frame(body: bytes, at: float) -> Frame:
    """``body`` as a :class:`Frame`."""
    text = body.decode("utf-8", "replace")
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        return Frame(text=text, data=None, event=None, error=f"not JSON ({exc.msg})", at=at)
    if not isinstance(data, dict):
        return Frame(text=text, data=None, event=None, error="not a JSON object", at=at)
    try:
        event = event_from_dict(data)
    except InvalidEventError as exc:
        return Frame(text=text, data=data, event=None, error=exc.message, at=at)
    return Frame(text=text, data=data, event=event, error=None, at=at)


@attrs.frozen(kw_only=True)
class Exchange:
    """One input and everything its response held. ``probe`` names the step of the kit."""

    probe: str
    sent: Mapping[str, Any]
    frames: tuple[Frame, ...]
    after_terminal: tuple[Frame, ...]
    ending: Ending
    detail: str | None
    sent_at: float
    ended_at: float
    status: int | None = None
    """The HTTP status, when the server answered with an HTTP error instead of a stream."""

    @property
    def types(self) -> list[str | None]:
        return [f.type for f in self.frames]

    @property
    def terminal(self) -> Mapping[str, Any] | None:
        """The terminal event (``RUN_FINISHED`` or ``RUN_ERROR``) the response ended with."""
        if self.ending != "terminal" or not self.frames:
            return None
        return self.frames[-1].data

    @property
    def refused(self) -> bool:
        """Whether the response ended with ``RUN_ERROR``."""
        terminal = self.terminal
        return terminal is not None and terminal.get("type") == "RUN_ERROR"

    @property
    def finished(self) -> bool:
        """Whether the response ended with ``RUN_FINISHED``."""
        terminal = self.terminal
        return terminal is not None and terminal.get("type") == "RUN_FINISHED"

    @property
    def started(self) -> bool:
        """Whether a run started (``RUN_STARTED`` came)."""
        return "RUN_STARTED" in self.types

    @property
    def started_at(self) -> float | None:
        return next((f.at for f in self.frames if f.type == "RUN_STARTED"), None)

    @property
    def outcome(self) -> Mapping[str, Any] | None:
        """The ``RUN_FINISHED`` outcome (``{"type": "success"}`` when absent), or ``None``."""
        terminal = self.terminal
        if terminal is None or terminal.get("type") != "RUN_FINISHED":
            return None
        outcome = terminal.get("outcome")
        return outcome if isinstance(outcome, Mapping) else {"type": "success"}

    @property
    def interrupts(self) -> list[Mapping[str, Any]]:
        """The interrupts of an interrupt outcome (empty otherwise)."""
        outcome = self.outcome
        if outcome is None or outcome.get("type") != "interrupt":
            return []
        found = outcome.get("interrupts")
        return [i for i in found if isinstance(i, Mapping)] if isinstance(found, list) else []

    def of_type(self, kind: str) -> list[Mapping[str, Any]]:
        """The frames of one event type, as JSON objects."""
        return [f.data for f in self.frames if f.data is not None and f.type == kind]

    def last(self, kind: str) -> Mapping[str, Any] | None:
        found = self.of_type(kind)
        return found[-1] if found else None

    def summary(self) -> str:
        """The events in a line: ``RUN_STARTED, ..., RUN_ERROR(CODE)``."""
        parts = []
        for frame in self.frames:
            kind = frame.type or "<not an event>"
            if kind == "RUN_ERROR" and frame.data is not None:
                kind += f"({frame.data.get('code', 'no code')})"
            elif kind == "RUN_FINISHED" and frame.data is not None:
                outcome = frame.data.get("outcome")
                kind += f"({outcome.get('type') if isinstance(outcome, Mapping) else 'no outcome'})"
            parts.append(kind)
        text = ", ".join(parts) or "no events"
        if self.ending != "terminal":
            text += f" [{self.ending}{': ' + self.detail if self.detail else ''}]"
        return text

    def evidence(self) -> dict[str, Any]:
        """The exchange for a report: what was sent, the events exactly as they came, the end."""
        out: dict[str, Any] = {
            "probe": self.probe,
            "sent": dict(self.sent),
            "events": [f.shown() for f in self.frames],
            "end": self.ending,
        }
        if self.after_terminal:
            out["afterTerminal"] = [f.shown() for f in self.after_terminal]
        if self.detail:
            out["detail"] = self.detail
        if self.status is not None:
            out["httpStatus"] = self.status
        return out


async def exchange(
    connection: Connection,
    probe: str,
    sent: Mapping[str, Any],
    *,
    timeout: float,
    drain: float,
    opened: bool = False,
) -> Exchange:
    """Send ``sent`` on ``connection`` and read its response to the end.

    The response ends at its terminal event (then what follows it within ``drain`` seconds is
    recorded as :attr:`Exchange.after_terminal`), when the channel ends, or after ``timeout``
    seconds. The connection is closed afterwards. ``opened`` means :meth:`Connection.send`
    was already called (two exchanges released at one instant).
    """
    body = orjson.dumps(sent)
    frames: list[Frame] = []
    after: list[Frame] = []
    ending: Ending = "timeout"
    detail: str | None = None
    status: int | None = None
    sent_at = time.monotonic()
    try:
        with anyio.move_on_after(timeout if math.isfinite(timeout) else None):
            try:
                if not opened:
                    await connection.send(body)
                while True:
                    try:
                        raw = await connection.receive()
                    except anyio.EndOfStream:
                        ending = "closed"
                        detail = "the response ended before RUN_FINISHED or RUN_ERROR"
                        break
                    frame = read_frame(raw, time.monotonic())
                    frames.append(frame)
                    if frame.type in _TERMINAL:
                        ending = "terminal"
                        break
            except ProbeError as exc:
                ending = "http-error" if exc.status is not None else "connect-error"
                detail, status = exc.message, exc.status
        if ending == "timeout":
            detail = f"no terminal event within {timeout:g} s"
        if ending == "terminal":
            with anyio.move_on_after(drain):
                while True:
                    try:
                        raw = await connection.receive()
                    except anyio.EndOfStream:
                        break
                    after.append(read_frame(raw, time.monotonic()))
    finally:
        with anyio.CancelScope(shield=True):
            await connection.aclose()
    return Exchange(
        probe=probe,
        sent=sent,
        frames=tuple(frames),
        after_terminal=tuple(after),
        ending=ending,
        detail=detail,
        sent_at=sent_at,
        ended_at=time.monotonic(),
        status=status,
    )


# -- HTTP + SSE -----------------------------------------------------------------------------------


class _HttpConnection:
    def __init__(self, http: Any, path: str) -> None:
        self._http = http
        self._path = path
        self._response: Any = None
        self._chunks: Any = None
        self._reader = SSEReader(max_line=_MAX_FRAME)
        self._ready: list[bytes] = []

    async def send(self, body: bytes) -> None:
        import httpx

        headers = {"content-type": "application/json", "accept": SSE_CONTENT_TYPE}
        request = self._http.build_request("POST", self._path, content=body, headers=headers)
        try:
            response = await self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise ProbeError(f"{type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            text = (await response.aread())[:300].decode("utf-8", "replace")
            await response.aclose()
            raise ProbeError(f"HTTP {response.status_code}: {text}", status=response.status_code)
        self._response = response
        self._chunks = response.aiter_bytes()

    async def receive(self) -> bytes:
        import httpx

        while not self._ready:
            if self._chunks is None:
                raise anyio.EndOfStream
            try:
                chunk = await anext(self._chunks)
            except (StopAsyncIteration, httpx.HTTPError):
                self._ready.extend(self._reader.close())
                self._chunks = None
                continue
            self._ready.extend(self._reader.feed(chunk))
        return self._ready.pop(0)

    async def aclose(self) -> None:
        response, self._response, self._chunks = self._response, None, None
        if response is not None:
            await response.aclose()


class HttpProbeTransport:
    """Posts each input to ``url`` and reads the response as Server-Sent Events.

    ``headers`` go with every request (credentials); ``ssl`` is the TLS context for
    ``https://`` (default: the system's trust). Needs ``httpx``.
    """

    name = "http"

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        ssl: SSLContext | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        try:
            import httpx
        except ImportError:
            raise ProbeError("testing an http(s):// server needs httpx: pip install 'agui-core[http]'") from None
        self.url = url
        base = url if url.endswith("/") else url + "/"
        self._http = httpx.AsyncClient(
            base_url=base,
            headers=dict(headers or {}),
            timeout=httpx.Timeout(connect_timeout, read=None),
            verify=ssl if ssl is not None else True,
            limits=httpx.Limits(max_connections=16, max_keepalive_connections=0),
        )

    async def connect(self) -> Connection:
        return _HttpConnection(self._http, "")

    async def get_json(self, path: str) -> Any:
        import httpx

        try:
            response = await self._http.get(path)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return None

    async def aclose(self) -> None:
        await self._http.aclose()


# -- WebSocket ------------------------------------------------------------------------------------


class _WebSocketConnection:
    def __init__(self, websocket: Any) -> None:
        self._websocket = websocket

    async def send(self, body: bytes) -> None:
        from websockets.exceptions import ConnectionClosed

        try:
            await self._websocket.send(body.decode(), text=True)
        except ConnectionClosed as exc:
            raise ProbeError(f"the connection closed: {exc}") from None

    async def receive(self) -> bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            data = await self._websocket.recv(decode=False)
        except ConnectionClosed:
            raise anyio.EndOfStream from None
        return data if isinstance(data, bytes) else str(data).encode()

    async def aclose(self) -> None:
        await self._websocket.close()


class WebSocketProbeTransport:
    """Opens one WebSocket connection to ``url`` per exchange; ``headers`` go with each
    handshake (credentials), ``ssl`` is the TLS context for ``wss://``."""

    name = "websocket"

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        ssl: SSLContext | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self._headers = dict(headers or {})
        self._ssl = ssl
        self._connect_timeout = connect_timeout

    async def connect(self) -> Connection:
        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidHandshake, InvalidStatus

        tls: dict[str, Any] = {"ssl": self._ssl} if self._ssl is not None else {}
        try:
            websocket = await connect(
                self.url,
                additional_headers=self._headers or None,
                max_size=_MAX_FRAME,
                open_timeout=self._connect_timeout,
                **tls,
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise ProbeError(f"the handshake was refused with HTTP {status}", status=status) from None
        except (InvalidHandshake, OSError, TimeoutError) as exc:
            raise ProbeError(f"cannot connect to {self.url}: {type(exc).__name__}: {exc}") from None
        return _WebSocketConnection(websocket)

    async def get_json(self, path: str) -> Any:
        """The document at ``path`` over plain HTTP on the same port (agui-core's WebSocket
        port serves ``GET /capabilities``); ``None`` when unavailable."""
        try:
            import httpx
        except ImportError:
            return None
        url = self.url.replace("ws://", "http://", 1).replace("wss://", "https://", 1).rstrip("/") + "/" + path
        try:
            async with httpx.AsyncClient(
                headers=self._headers, verify=self._ssl if self._ssl is not None else True
            ) as http:
                response = await http.get(url, timeout=self._connect_timeout)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return None

    async def aclose(self) -> None:
        return None


def transport_for(
    url: str, *, headers: Mapping[str, str] | None = None, ssl: SSLContext | None = None
) -> ProbeTransport:
    """The probe transport ``url``'s scheme calls for; ``ValueError`` for another scheme."""
    scheme = url.partition("://")[0].lower()
    if scheme in ("http", "https"):
        return HttpProbeTransport(url, headers=headers, ssl=ssl)
    if scheme in ("ws", "wss"):
        return WebSocketProbeTransport(url, headers=headers, ssl=ssl)
    raise ValueError(f"{url!r}: the kit speaks http(s):// (HTTP + SSE) and ws(s):// (WebSocket)")
