"""Clients of the transports: send an input, get the run's events checked by a ClientMachine.

:class:`Client` works over any :class:`FrameConnection` (one encoded object per frame);
:func:`connect_websocket` opens one to a WebSocket host, :func:`open_stdio_client` starts a
host process (``agui serve ... --stdio``) and talks JSON lines to it. One input at a time::

    async with connect_websocket("ws://127.0.0.1:8765") as client:
        events = await client.collect(client.new_input("thread-1", "Send the report to Ann"))
        machine = client.machine("thread-1")
        if machine.awaiting_input:
            answers = {i.id: approve() for i in machine.open_interrupts}
            await client.collect(client.resume("thread-1", answers))

Each event goes through the thread's :class:`~agui_core.machine.client.ClientMachine` before
the caller sees it: an event that breaks the protocol raises
:class:`~agui_core.errors.OrderingError`, a frame that is not an event raises
:class:`~agui_core.errors.InvalidEventError` (an unrecognised outcome, patch operation or
snapshot content part is stripped first, with a warning in the machine's ``warnings``: see
:mod:`~agui_core.machine.client_strip`), a connection that ends mid-run raises
:class:`ConnectionLost` (and the machine treats the run as abandoned, so the same resume
can be sent again). A run's stream ends with its ``RUN_FINISHED`` or ``RUN_ERROR``.

Thread ids are the caller's, and a thread belongs to whoever saves it first: a stranger who
guesses an id before it is used takes it. Mint them with :func:`new_thread_id` (122 random
bits, a version 4 UUID), as the client mints its run and message ids.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from ssl import SSLContext
from typing import Any, Protocol

import anyio
import anyio.abc
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.typing import Origin

from agui_core.machine.client import ClientMachine, Reply
from agui_core.machine.client_strip import decode_client_event
from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_input
from agui_core.protocol.framing import JsonLinesReader, jsonl_frame
from agui_core.protocol.types import JSON, PROTOCOL_VERSION, Message, RunAgentInput, UserMessage

__all__ = [
    "Client",
    "ConnectionLost",
    "FrameConnection",
    "LinesConnection",
    "WebSocketConnection",
    "connect_websocket",
    "new_thread_id",
    "open_stdio_client",
]


class ConnectionLost(ConnectionError):
    """The connection ended before the run's stream did."""


class FrameConnection(Protocol):
    """Carries whole encoded objects both ways."""

    async def send(self, frame: bytes) -> None:
        """Send one encoded object."""

    async def receive(self) -> bytes:
        """The next encoded object; ``anyio.EndOfStream`` once the peer is gone."""

    async def aclose(self) -> None:
        """Close the connection."""


class WebSocketConnection:
    """A :class:`FrameConnection` over a ``websockets`` client connection (text frames)."""

    def __init__(self, websocket: ClientConnection) -> None:
        self.websocket = websocket

    async def send(self, frame: bytes) -> None:
        try:
            await self.websocket.send(frame, text=True)
        except ConnectionClosed as exc:
            raise anyio.BrokenResourceError(str(exc)) from exc

    async def receive(self) -> bytes:
        try:
            data = await self.websocket.recv(decode=False)
        except ConnectionClosed:
            raise anyio.EndOfStream from None
        return data if isinstance(data, bytes) else data.encode()

    async def aclose(self) -> None:
        await self.websocket.close()


class LinesConnection:
    """A :class:`FrameConnection` in JSON lines over two byte streams.

    ``process`` is the host process at the other end, when :func:`open_stdio_client` started one.
    """

    process: anyio.abc.Process | None = None

    def __init__(
        self, send: anyio.abc.ByteSendStream, receive: anyio.abc.ByteReceiveStream, *, max_line: int = 64 * 1024 * 1024
    ) -> None:
        self._send = send
        self._receive = receive
        self._reader = JsonLinesReader(max_line=max_line)
        self._ready: list[bytes] = []
        self._ended = False

    async def send(self, frame: bytes) -> None:
        await self._send.send(jsonl_frame(frame))

    async def receive(self) -> bytes:
        while not self._ready:
            if self._ended:
                raise anyio.EndOfStream
            try:
                chunk = await self._receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._ended = True
                self._ready.extend(self._reader.close())
                continue
            self._ready.extend(self._reader.feed(chunk))
        return self._ready.pop(0)

    async def aclose(self) -> None:
        """Close the sending side (the peer sees end of input)."""
        await self._send.aclose()


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return uuid.uuid4().hex  # 122 random bits: nobody guesses it


def new_thread_id() -> str:
    """A fresh thread id nobody can guess: ``thread-`` and a random version 4 UUID (122 random bits)."""
    return f"thread-{uuid.uuid4().hex}"


class Client:
    """Runs inputs over ``connection``, one at a time, checking every event it receives."""

    def __init__(
        self,
        connection: FrameConnection,
        *,
        clock: Callable[[], datetime] = _utcnow,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self.connection = connection
        self.clock = clock
        self.new_id = new_id
        self._machines: dict[str, ClientMachine] = {}
        self._desynchronized = False

    def machine(self, thread_id: str) -> ClientMachine:
        """The client machine following ``thread_id`` (made on first use)."""
        machine = self._machines.get(thread_id)
        if machine is None:
            machine = self._machines[thread_id] = ClientMachine(thread_id)
        return machine

    def new_input(
        self,
        thread_id: str,
        text: str | None = None,
        *,
        run_id: str | None = None,
        messages: Sequence[Message] | None = None,
        state: JSON = None,
        forwarded_props: JSON = None,
    ) -> RunAgentInput:
        """An input that starts a run on ``thread_id``, with ``text`` as a new user message.

        ``messages`` defaults to the history the thread's latest ``MESSAGES_SNAPSHOT``
        carried; the user message is added after it.
        """
        history = tuple(messages) if messages is not None else self.machine(thread_id).messages
        if text is not None:
            history = (*history, UserMessage(id=f"user-{self.new_id()}", content=text))
        return RunAgentInput(
            thread_id=thread_id,
            run_id=run_id or f"run-{self.new_id()}",
            messages=history,
            protocol_version=PROTOCOL_VERSION,
            state=state,
            forwarded_props=forwarded_props,
        )

    def resume(
        self,
        thread_id: str,
        answers: Mapping[str, Reply | Mapping[str, Any]],
        *,
        run_id: str | None = None,
        **fields: Any,
    ) -> RunAgentInput:
        """The input answering every open interrupt of ``thread_id`` with ``answers``.

        See :meth:`ClientMachine.resume`, which checks the answers (it raises
        ``LocalProtocolError`` for one the agent would refuse); ``fields`` go to it.
        """
        return self.machine(thread_id).resume(
            answers, now=self.clock(), run_id=run_id or f"run-{self.new_id()}", **fields
        )

    async def run(self, run_input: RunAgentInput) -> AsyncIterator[ev.Event | ev.UnknownEvent]:
        """Send ``run_input`` and yield the checked events of its stream, up to its end.

        A stream may carry several runs (a replayed history before the run asked for): every
        run's events are checked and yielded. Over a connection that marks where a response
        ends (HTTP: ``delimits_streams``), the stream is read to that end; over WebSocket and
        stdio it ends with the ``RUN_FINISHED`` or ``RUN_ERROR`` of the run asked for (its
        ``runId``), or with a ``RUN_ERROR`` that refused the input before any run started.
        Events of an unknown type are dropped (``ClientMachine.warnings`` says so): they
        never reach the caller.

        Iterate to the end: a stream left half-read leaves the rest of its frames on the
        connection, so the client refuses further runs (open a new connection).
        """
        if self._desynchronized:
            raise RuntimeError("a run's stream was left half-read on this connection; open a new connection")
        machine = self.machine(run_input.thread_id)
        delimited = bool(getattr(self.connection, "delimits_streams", False))
        self._desynchronized = True
        frame = encode_input(run_input)
        machine.sending(run_input)
        await self.connection.send(frame)
        in_run = False
        while True:
            try:
                frame = await self.connection.receive()
            except anyio.EndOfStream:
                if delimited and machine.end_of_stream() is None:
                    self._desynchronized = False
                    return
                machine.abandon_run()
                raise ConnectionLost(
                    f"the connection ended before the stream of run {run_input.run_id!r} did"
                ) from None
            event, stripped = decode_client_event(frame)
            delivered = machine.receive_event(event, now=self.clock(), stripped=stripped)
            if isinstance(event, ev.RunStartedEvent):
                in_run = True
            ended = False
            if event.type == "RUN_FINISHED" or event.type == "RUN_ERROR":
                asked_for = machine.run_id == run_input.run_id
                ended = not delimited and (asked_for or not in_run)
                in_run = False
            if ended:
                self._desynchronized = False
            if delivered is not None:
                yield delivered
            if ended:
                return

    async def collect(self, run_input: RunAgentInput) -> list[ev.Event | ev.UnknownEvent]:
        """:meth:`run` ``run_input`` and return all its events."""
        return [event async for event in self.run(run_input)]

    async def aclose(self) -> None:
        await self.connection.aclose()


@asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    token: str | None = None,
    origin: str | None = None,
    ssl: SSLContext | None = None,
    max_size: int | None = 64 * 1024 * 1024,
    compression: str | None = None,
    open_timeout: float = 10.0,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """A :class:`Client` on a WebSocket connection to ``url``; ``client_options`` go to the
    :class:`Client`. ``max_size`` bounds one incoming event (a messages snapshot can be large).

    ``token`` is sent as ``Authorization: Bearer TOKEN``; ``origin`` as the ``Origin`` header
    (what a browser page would send); ``ssl`` is the TLS context for a ``wss://`` URL (the
    system's default trust when ``None``). A refused handshake raises
    ``websockets.exceptions.InvalidStatus`` (its ``response.status_code`` is 401 or 403).
    """
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    # websockets makes the default TLS context for wss:// itself, unless told ssl=None.
    tls: dict[str, Any] = {"ssl": ssl} if ssl is not None else {}
    async with connect(
        url,
        additional_headers=headers,
        origin=Origin(origin) if origin is not None else None,
        max_size=max_size,
        compression=compression,
        open_timeout=open_timeout,
        **tls,
    ) as websocket:
        yield Client(WebSocketConnection(websocket), **client_options)


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: int | None = None,
    exit_timeout: float = 30.0,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """A :class:`Client` on a host process started with ``command`` (for example
    ``["agui", "serve", "my_agents:agent", "--stdio"]``), talking JSON lines on its stdin
    and stdout. On exit its stdin is closed and the process is given ``exit_timeout``
    seconds to end (it is killed after that). ``stderr`` is passed to the process as is
    (``None``: this process's standard error). The process is ``client.connection.process``.
    """
    process = await anyio.open_process(
        list(command),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stderr=stderr,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert process.stdin is not None and process.stdout is not None
    connection = LinesConnection(process.stdin, process.stdout)
    connection.process = process
    client = Client(connection, **client_options)
    try:
        yield client
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await process.stdin.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            with anyio.move_on_after(exit_timeout):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            await process.aclose()
