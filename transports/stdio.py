"""The stdio transport: a host on standard input and output, in JSON lines.

Each line in is one ``RunAgentInput``; each line out is one event (compact JSON and ``\\n``).
Inputs are carried out one after another, in the order they arrive, each run's events
written as the host emits them. A line that is not JSON, not a valid input (see
:func:`~agui_transports.plugin.read_input`), longer than ``max_line`` bytes, or carrying more
than ``max_input_messages`` messages (2,000; as many tools, context entries, and content parts
and tool calls in all its messages together; decided before anything in it is validated) gets
one ``RUN_ERROR`` line with the error's own code (``INVALID_INPUT``, or ``INVALID_RESUME`` for
a fault inside ``resume``; its message says what was wrong), no traceback in the log, and
serving goes on. At end of input the transport returns once the run in flight is done.
Logs go to standard error; served by ``agui serve``, whatever else the process writes to
standard output (a stray ``print``) goes to standard error too, so the output holds events
only.

:func:`serve_json_lines` does the same over any pair of anyio byte streams (a pipe, a TCP
connection); :func:`serve_stdio` over two binary files; :class:`StdioTransport` is the
``stdio`` plugin of ``agui serve``.

Speed: every event ready goes out in one write (a run streams in bursts), its streamed text
encoded straight from the deltas' strings
(:meth:`~agui_core.runtime.streams.RunEvents.next_burst`), through a writer thread that takes
whole batches. A pipe or a socket is read by the event loop itself, non-blocking (put back as
it was when serving ends), with no thread to hand each input to; a regular file or a
terminal, by a thread.

Every input runs as the principal :data:`~agui_core.runtime.auth.ANONYMOUS`: a pipe carries
no credentials, and whoever holds its ends already runs as the host process's user (it
started the process, or was handed the pipe by whoever did). Do not connect these streams to
a network: a transport that serves remote clients authenticates them (see
:mod:`agui_transports.plugin`).
"""

from __future__ import annotations

import logging
import os
import stat
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import BinaryIO, Final

import anyio
import anyio.abc
from agui_transports.plugin import (
    DEFAULT_MAX_INPUT_MESSAGES,
    ServeOptions,
    next_batch,
    progress_of,
    read_input,
    setting,
)
from anyio.from_thread import BlockingPortal
from anyio.streams.memory import MemoryObjectSendStream

from agui_core.errors import AguiError, EncodeError, InvalidInputError
from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_event
from agui_core.protocol.framing import jsonl_frame
from agui_core.runtime.auth import ANONYMOUS
from agui_core.runtime.host import Host, refusal
from agui_core.runtime.streams import RunEvents, Streamed, TextBurst

__all__ = [
    "DEFAULT_MAX_LINE",
    "StdioTransport",
    "serve_json_lines",
    "serve_stdio",
]

log = logging.getLogger("agui_transports.stdio")

DEFAULT_MAX_LINE: Final = 16 * 1024 * 1024
"""The longest input line read, in bytes (without its line end)."""

_CHUNK = 64 * 1024


class _Oversized:
    """Stands for a line that went past ``max_line`` (its bytes are dropped, not kept)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit


def _error(error: AguiError) -> bytes:
    return jsonl_frame(encode_event(refusal(error)))


async def serve_json_lines(
    host: Host,
    receive: anyio.abc.AnyByteReceiveStream,
    send: anyio.abc.AnyByteSendStream,
    *,
    stop: anyio.Event | None = None,
    grace: float = 10.0,
    max_line: int = DEFAULT_MAX_LINE,
    max_input_messages: int | None = DEFAULT_MAX_INPUT_MESSAGES,
) -> None:
    """Serve ``host`` in JSON lines: inputs from ``receive``, events to ``send``.

    Both streams are the caller's to close (byte streams, or object streams of ``bytes``).
    ``max_input_messages`` bounds what one input may carry (see
    :func:`~agui_transports.plugin.read_input`; ``None``: no limit).

    Returns at end of input once the run in flight is done, when ``send`` breaks, or once
    ``stop`` is set: then no more input is read and the run in flight gets ``grace`` seconds
    to finish (past that, the transport stops listening to it; the run goes on in the host).
    """
    lines_in, lines_out = anyio.create_memory_object_stream[bytes | _Oversized](0)
    reading = anyio.CancelScope()
    serving = anyio.CancelScope()
    async with anyio.create_task_group() as group:
        group.start_soon(_read_lines, receive, lines_in, max_line, reading)
        if stop is not None:
            group.start_soon(_stop_after, stop, reading, serving, grace)
        with serving:
            async with lines_out:
                async for line in lines_out:
                    if not await _answer(host, line, send, max_input_messages):
                        reading.cancel()  # before its lines stream closes under it
                        break
        group.cancel_scope.cancel()


async def _stop_after(stop: anyio.Event, reading: anyio.CancelScope, serving: anyio.CancelScope, grace: float) -> None:
    await stop.wait()
    log.info("stopping: no more input is read; the run in flight has %g s to finish", grace)
    reading.cancel()
    await anyio.sleep(grace)
    log.warning("the run in flight did not finish within %g s; it goes on unheard", grace)
    serving.cancel()


async def _read_lines(
    receive: anyio.abc.AnyByteReceiveStream,
    out: MemoryObjectSendStream[bytes | _Oversized],
    max_line: int,
    scope: anyio.CancelScope,
) -> None:
    """Split ``receive`` into lines; a line past ``max_line`` becomes one ``_Oversized``."""
    with scope:
        async with out:
            pending = bytearray()
            skipping = False  # in the rest of an oversized line, up to its newline
            while True:
                try:
                    chunk = await receive.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    break
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    piece = chunk[start:] if end < 0 else chunk[start:end]
                    if not skipping:
                        pending += piece
                        if len(pending) > max_line:
                            pending.clear()
                            skipping = True
                            # Reported at once, so its reply keeps its place among the others.
                            await out.send(_Oversized(max_line))
                    if end < 0:
                        break
                    if skipping:
                        skipping = False
                    else:
                        line = bytes(pending).strip()
                        pending.clear()
                        if line:
                            await out.send(line)
                    start = end + 1
            line = bytes(pending).strip()
            if line and not skipping:
                await out.send(line)


async def _answer(
    host: Host, line: bytes | _Oversized, send: anyio.abc.AnyByteSendStream, max_messages: int | None
) -> bool:
    """Carry out one input line; ``False`` when the output is gone."""
    try:
        if isinstance(line, _Oversized):
            await send.send(_error(InvalidInputError(f"a line of at most {line.limit} bytes")))
            return True
        try:
            run_input = read_input(line, max_messages=max_messages)
        except InvalidInputError as exc:
            log.debug("refused a line: %s %s", exc.code.value, exc.message[:200])
            await send.send(_error(exc))
            return True
        async with aclosing(host.run(run_input, principal=ANONYMOUS)) as events:
            progress = progress_of(events)
            # Every event ready goes out in one write: a run streams in bursts. Streamed text
            # comes as bursts of deltas, encoded straight from their strings.
            while batch := await _next_burst(events):
                pieces: list[bytes] = []  # JSON lines: each event, then its line end
                for item in batch:
                    if isinstance(item, TextBurst):
                        pieces.append(item.framed(b"\n"))
                        continue
                    try:
                        pieces += (encode_event(item), b"\n")
                    except EncodeError as exc:
                        log.error("run %r: %s; its stream is cut here", run_input.run_id, exc.message)
                        cut = EncodeError(f"the host could not encode an event: {exc.message}")
                        pieces += (encode_event(refusal(cut)), b"\n")
                        await _write(send, pieces, progress)
                        return True
                await _write(send, pieces, progress)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        log.warning("the output is closed; no more input is read")
        return False
    return True


async def _next_burst(events: AsyncIterator[ev.Event]) -> Sequence[Streamed]:
    """What is ready of a run: from the host's own stream, with its text in bursts
    (:meth:`~agui_core.runtime.streams.RunEvents.next_burst`); from any other, as :func:`next_batch`."""
    if isinstance(events, RunEvents):
        return await events.next_burst()
    return await next_batch(events)


async def _write(send: anyio.abc.AnyByteSendStream, pieces: list[bytes], progress: Callable[[], None]) -> None:
    """Send ``pieces`` joined, in sends of at most ``_CHUNK`` bytes (one if it fits), telling
    the host after each that the output still moves."""
    data = b"".join(pieces)
    if len(data) <= _CHUNK:
        await send.send(data)
        return
    for start in range(0, len(data), _CHUNK):
        await send.send(data[start : start + _CHUNK])
        progress()


def _fileno(file: BinaryIO) -> int | None:
    try:
        return file.fileno()
    except (AttributeError, OSError, ValueError):
        return None  # an in-memory file


def _raw_reader(file: BinaryIO) -> Callable[[int], bytes]:
    """Reads straight from the file descriptor when there is one.

    A daemon thread blocked in a buffered file's read holds the file's lock, and Python
    aborts at exit when it cannot take that lock to close standard input; ``os.read``
    takes no lock.
    """
    fd = _fileno(file)
    if fd is None:
        return getattr(file, "read1", file.read)
    return lambda size: os.read(fd, size)


def _raw_writer(file: BinaryIO) -> Callable[[bytes], None]:
    """Writes all of ``data`` straight to the file descriptor when there is one (see
    :func:`_raw_reader`), else writes and flushes the file."""
    file.flush()
    fd = _fileno(file)
    if fd is None:

        def write_file(data: bytes) -> None:
            file.write(data)
            file.flush()

        return write_file

    def write_fd(data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    return write_fd


class _FileReceiveStream(anyio.abc.ByteReceiveStream):
    """The bytes of a binary file, read by a daemon thread.

    A daemon thread, not a worker thread, because a read of standard input can block for
    ever: a worker thread would keep the process from exiting, a daemon thread does not.
    """

    def __init__(self, file: BinaryIO, portal: BlockingPortal) -> None:
        self._file = file
        self._portal = portal
        self._send, self._receive = anyio.create_memory_object_stream[bytes](2)
        threading.Thread(target=self._pump, name="agui stdin reader", daemon=True).start()

    def _pump(self) -> None:
        read = _raw_reader(self._file)
        try:
            while data := read(_CHUNK):
                self._portal.call(self._send.send, data)
        except (OSError, ValueError) as exc:
            log.warning("reading the input failed: %s", exc)
        except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # nobody reads any more (the portal stopped or the stream was closed)
        try:
            self._portal.call(self._send.aclose)
        except RuntimeError:
            pass

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        return await self._receive.receive()

    async def aclose(self) -> None:
        self._receive.close()


class _FileSendStream(anyio.abc.ByteSendStream):
    """Bytes written to a binary file by a daemon thread, each write flushed at once.

    ``send`` adds to a pending batch and wakes the thread; the thread takes the whole batch
    and writes it in one call, so under load one write carries many events and the two
    threads meet once per batch, not once per event. When ``limit`` bytes are pending,
    ``send`` waits for the thread to take them: a slow reader of the file slows the sender
    down instead of growing memory (at most ``limit`` pending, plus the batch being written).

    Writing a pipe from the event loop instead (non-blocking, waiting for room) was measured
    and dropped: every write syscall releases the GIL on the loop's critical path, and a
    client in the same process (the benchmark's) then takes it at each write; the replayed
    run went from 0.95 ms to 2.9 ms an operation once that pattern settled in.
    """

    def __init__(self, file: BinaryIO, portal: BlockingPortal, *, limit: int = 1024 * 1024) -> None:
        self._portal = portal
        self._limit = limit
        self._write = _raw_writer(file)
        self._wake = threading.Condition()
        # Guarded by _wake: the pending batch, whether the sender waits for room, and closing.
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._room: anyio.Event | None = None
        self._closed = False
        self._failed: BaseException | None = None
        self._done = anyio.Event()
        threading.Thread(target=self._pump, name="agui stdout writer", daemon=True).start()

    def _pump(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._closed:
                    self._wake.wait()
                batch, self._pending, self._pending_size = self._pending, [], 0
                room, self._room = self._room, None
                finished = self._closed and not batch
            try:
                if room is not None:
                    self._portal.call(room.set)
                if finished:
                    self._portal.call(self._done.set)
                    return
            except RuntimeError:
                return  # the event loop is gone
            if self._failed is None:
                try:
                    self._write(b"".join(batch))
                except (OSError, ValueError) as exc:
                    self._failed = exc  # later batches are dropped, and senders told

    async def send(self, item: bytes) -> None:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._failed is not None:
                raise anyio.BrokenResourceError from self._failed
            with self._wake:
                if self._pending_size < self._limit:
                    self._pending.append(item)
                    self._pending_size += len(item)
                    if len(self._pending) == 1:  # the writer waits only on an empty batch
                        self._wake.notify()
                    return
                room = self._room = self._room or anyio.Event()
            await room.wait()

    async def aclose(self) -> None:
        """Wait until what was sent is written (cancel the wait to give up on it)."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        await self._done.wait()


class _PipeReceiveStream(anyio.abc.ByteReceiveStream):
    """The bytes of a pipe or a socket, read from the event loop, without a thread.

    The descriptor is made non-blocking while the stream is open, and put back as it was
    when it is closed (whoever shares it, a shell or the process's parent, finds it as it
    left it). An input no longer goes through a thread and a portal call to reach the loop.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._was_blocking = os.get_blocking(fd)
        os.set_blocking(fd, False)
        self._closed = False

    async def receive(self, max_bytes: int = _CHUNK) -> bytes:
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                log.warning("reading the input failed: %s", exc)
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            _put_back(self._fd, self._was_blocking)


def _put_back(fd: int, blocking: bool) -> None:
    try:
        os.set_blocking(fd, blocking)
    except OSError:
        pass  # closed under us: nothing to put back


def _pollable(fd: int | None) -> bool:
    """Whether the event loop can wait for ``fd`` to take more: a pipe or a socket (not a file, not a terminal)."""
    if fd is None or sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def serve_stdio(
    host: Host,
    *,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    stop: anyio.Event | None = None,
    grace: float = 10.0,
    max_line: int = DEFAULT_MAX_LINE,
    max_input_messages: int | None = DEFAULT_MAX_INPUT_MESSAGES,
) -> None:
    """:func:`serve_json_lines` over two binary files (the process's stdin and stdout by default)."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout.buffer
    async with BlockingPortal() as portal:
        # A pipe or a socket is read by the event loop itself; anything else (a file, a
        # terminal, an in-memory file) by a thread. Output goes through a writer thread,
        # whole batches at a time (see _FileSendStream for why not from the loop).
        receive: anyio.abc.ByteReceiveStream
        in_fd = _fileno(stdin)
        if _pollable(in_fd):
            assert in_fd is not None
            receive = _PipeReceiveStream(in_fd)
        else:
            receive = _FileReceiveStream(stdin, portal)
        send = _FileSendStream(stdout, portal)
        try:
            await serve_json_lines(
                host,
                receive,
                send,
                stop=stop,
                grace=grace,
                max_line=max_line,
                max_input_messages=max_input_messages,
            )
        finally:
            await receive.aclose()
            with anyio.move_on_after(grace, shield=True):
                await send.aclose()
            await portal.stop(cancel_remaining=True)


class StdioTransport:
    """The ``stdio`` plugin of ``agui serve``: JSON lines on the process's stdin and stdout.

    Settings: ``max_line`` (bytes, default 16 MiB). The address is not used; of the limits in
    :class:`~agui_transports.plugin.ServeOptions`, only ``max_input_messages`` applies to a
    pipe. While it serves, file descriptor 1 is standard error, so only events reach standard
    output.
    """

    name = "stdio"

    async def serve(self, host: Host, options: ServeOptions) -> None:
        unknown = set(options.settings) - {"max_line"}
        if unknown:
            raise ValueError(f"the stdio transport has no option {', '.join(sorted(unknown))}")
        max_line = setting(options.settings, "max_line", int, DEFAULT_MAX_LINE)
        sys.stdout.flush()
        events_fd = os.dup(1)
        os.dup2(2, 1)  # from here on, whatever writes to fd 1 writes to stderr
        events = open(events_fd, "wb", buffering=0)
        try:
            if options.ready is not None:
                options.ready("stdio")
            await serve_stdio(
                host,
                stdout=events,
                stop=options.stop,
                grace=options.grace,
                max_line=max_line,
                max_input_messages=options.max_input_messages,
            )
        finally:
            os.dup2(events_fd, 1)
            try:
                events.close()
            except OSError:
                pass  # a broken pipe: what was left unwritten is lost either way
