"""transports: events per second through our hosts, against the bare transport sending the same bytes.

One operation is one run of :data:`EVENTS_PER_OP` ``TEXT_MESSAGE_CONTENT`` deltas (plus
``RUN_STARTED``, the message's start and end, and ``RUN_FINISHED``) delivered to a client
on one connection: the client sends the input and reads frames until it has them all. The
frames are captured once from a real host run; every contender sends exactly those bytes
(our host's carry each operation's fresh thread and run ids, of the same lengths: a new thread each run).

WebSocket (one event loop, in a background thread, holds the servers and the clients):

- ours, host: an agent streams the deltas through :class:`~agui_core.runtime.host.Host`
  (thread machine, ordering rules, state tracking) and :class:`WebSocketServer`;
- ours, transport: :class:`WebSocketServer` over a stand-in host that replays the run's
  events, already built: the transport's own share (input decoding, event encoding, one
  frame per event);
- raw websockets: a bare ``websockets`` server that answers each frame with the pre-encoded
  frames, same library, same options (no compression, same write limit).

stdio (JSON lines over two OS pipes; the client is the calling thread):

- ours, host and ours, transport: :func:`serve_stdio` (the transport ``agui serve --stdio``
  runs: over a pipe, the event loop reads the input itself; a writer thread writes each
  burst) on the same two hosts;
- raw pipe: a thread that reads each input line and hands the pre-encoded lines, one by one,
  to a writer thread that batches them as :func:`serve_stdio`'s writer does (every line
  pending in one ``os.write``): the same hand-off, so the baseline is a fair one.

The agent streams its message as an author writes it, ``await message.delta(text)``
(:meth:`~agui_core.runtime.context.TextStream.delta`): that call takes the machine's fast
path for deltas (:meth:`~agui_core.machine.thread.ThreadMachine.take_text_delta`), which
checks the same rules and builds no event per delta; the bytes out are the same, which the
check asserts.

The targets are issue 28's: the WebSocket host at least 0.9x the raw library's events per
second, the stdio host at least 0.3x the (batching) raw pipe's; the transports alone, 0.8x.
The checks prove every contender delivers the same bytes.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

from benchmarks.harness import Case, Comparison, Contender, Scenario

__all__ = ["EVENTS_PER_OP", "SCENARIO"]

EVENTS_PER_OP = 1_000
"""Text deltas per run, so per operation (each run has four more events around them)."""

THREAD = "bench"
CAPTURED_RUN = "run-00000000"
DELTA = "word "
WRITE_LIMIT = 32 * 1024
_HOST_BUFFER = 256  # events: the stream between a Host's run and its caller, by default
_TIMEOUT = 120.0  # seconds one operation may take before the benchmark gives up

_T = TypeVar("_T")


class _LoopThread:
    """An asyncio event loop running in a daemon thread (a daemon: it never holds up exit)."""

    def __init__(self) -> None:
        self._tasks: list[tuple[asyncio.Task[None], asyncio.Event]] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="transports bench loop", daemon=True)
        self.thread.start()

    def call(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(_TIMEOUT)

    def start(self, serve: Callable[[asyncio.Event, asyncio.Event], Awaitable[None]]) -> None:
        """Run ``serve(ready, stop)`` as a task of the loop; wait for ``ready``. :meth:`close` sets ``stop``."""

        async def launch() -> None:
            ready, stop = asyncio.Event(), asyncio.Event()
            task = asyncio.get_running_loop().create_task(serve(ready, stop))
            waiting = asyncio.get_running_loop().create_task(ready.wait())
            await asyncio.wait([task, waiting], return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                waiting.cancel()
                task.result()  # raises what stopped it
                raise RuntimeError("the benchmark server stopped before it was ready")
            self._tasks.append((task, stop))

        self.call(launch())

    def close(self) -> None:
        """Stop what :meth:`start` started, then the loop."""
        if threading.current_thread() is self.thread:
            self.loop.stop()
            return

        async def stop_all() -> None:
            for _, stop in self._tasks:
                stop.set()
            if self._tasks:
                await asyncio.wait([task for task, _ in self._tasks], timeout=10)

        try:
            self.call(stop_all())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)
            if not self.thread.is_alive():
                self.loop.close()


async def _agent(ctx: Any) -> None:
    async with ctx.message(message_id="msg-0000") as message:  # the same id every run, as the frames compared
        for _ in range(EVENTS_PER_OP):
            await message.delta(DELTA)


def _host() -> Any:
    from agui_core.runtime import Host
    from agui_core.store import MemoryThreadStore

    # Fixed ids (the message's, and the host's): every run sends the same bytes but for its run id.
    return Host(_agent, store=MemoryThreadStore(), new_id=lambda: "0000")


class _Replay:
    """Stands in for a host: every input gets the same events, built beforehand.

    It hands them over as :meth:`Host.run <agui_core.runtime.host.Host.run>` does: a
    :class:`~agui_core.runtime.host.RunEvents` fed by a task of its own through a stream of
    the host's default size, so a transport takes them by the same path, in bursts of the
    same size, as from a host.
    """

    def __init__(self, events: Sequence[Any]) -> None:
        from agui_core.runtime.observe import NO_OBSERVER

        self.events = events
        self.observer = NO_OBSERVER  # as a host that reports to nobody (no --metrics, no --traces)
        self._feeding: set[asyncio.Task[None]] = set()

    async def authenticate(self, credentials: Any) -> str:
        return "anonymous"  # as a host without an authenticator

    def run(self, run_input: Any, *, principal: str = "anonymous") -> Any:
        import anyio

        from agui_core.runtime.streams import RunEvents

        async def feed(send: Any) -> None:
            with send:
                for event in self.events:
                    try:
                        send.send_nowait(event)
                    except anyio.WouldBlock:
                        await send.send(event)

        async def start(run_input: Any, principal: str, pace: Any) -> Any:
            send, receive = anyio.create_memory_object_stream[Any](_HOST_BUFFER)
            task = asyncio.get_running_loop().create_task(feed(send))
            self._feeding.add(task)
            task.add_done_callback(self._feeding.discard)
            return receive

        return RunEvents(start, run_input, principal)


class _Entered:
    """An async context manager around an object that needs none (the stand-in host)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    async def __aenter__(self) -> Any:
        return self.value

    async def __aexit__(self, *exc: object) -> None:
        return None


def _capture(loop: _LoopThread) -> tuple[list[bytes], list[Any]]:
    """One run of the agent through a real host: its frames and its events."""
    from agui_core.protocol.codec import decode_event, encode_event
    from agui_core.protocol.types import RunAgentInput

    async def capture() -> list[bytes]:
        async with _host() as host:
            return [encode_event(e) async for e in host.run(RunAgentInput(thread_id=THREAD, run_id=CAPTURED_RUN))]

    frames = loop.call(capture())
    if len(frames) != EVENTS_PER_OP + 4 or any(CAPTURED_RUN.encode() in f for f in frames[1:-1]):
        raise AssertionError(f"the captured run has {len(frames)} frames, not {EVENTS_PER_OP + 4}")
    return frames, [decode_event(f) for f in frames]


def _inputs() -> tuple[Callable[[], tuple[bytes, tuple[bytes, bytes]]], bytes]:
    """Fresh inputs for the host (its encoded input; its thread and run ids) and the fixed input of the others.

    A new thread each run, as in the http_sse scenario: runs on one thread would each add a
    message to its history, and every run would cost more than the last (the machine's load
    and saves grow with the history), so the figure would depend on how many runs the
    calibration and the repeats happened to make. The ids are as long as the captured ones.
    """
    from agui_core.protocol.codec import encode_input
    from agui_core.protocol.types import RunAgentInput

    counter = itertools.count(1)

    def fresh() -> tuple[bytes, tuple[bytes, bytes]]:
        n = next(counter)
        thread_id, run_id = f"{n:05x}"[-len(THREAD) :], f"run-{n:08d}"
        return encode_input(RunAgentInput(thread_id=thread_id, run_id=run_id)), (thread_id.encode(), run_id.encode())

    return fresh, encode_input(RunAgentInput(thread_id=THREAD, run_id=CAPTURED_RUN))


def _renamed(frame: bytes, ids: tuple[bytes, bytes]) -> bytes:
    """``frame`` of the captured run as the run with ``ids`` (thread, run) sends it."""
    thread_id, run_id = ids
    return frame.replace(CAPTURED_RUN.encode(), run_id).replace(
        b'"threadId":"' + THREAD.encode() + b'"', b'"threadId":"' + thread_id + b'"'
    )


def _same(side: str, got: Sequence[bytes], expected: Sequence[bytes], ids: tuple[bytes, bytes] | None = None) -> None:
    if ids is not None:
        expected = [_renamed(f, ids) for f in expected]
    if list(got) != list(expected):
        first = next((n for n, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)
        raise AssertionError(
            f"{side} delivered {len(got)} frames, not the {len(expected)} expected (first difference: {first})"
        )


# -- WebSocket -------------------------------------------------------------------------------


def _websocket_case() -> Case:
    from agui_transports.websocket import WebSocketServer
    from websockets.asyncio.client import ClientConnection, connect
    from websockets.asyncio.server import ServerConnection, serve

    loop = _LoopThread()
    frames, events = _capture(loop)
    fresh, fixed = _inputs()
    urls: dict[str, str] = {}

    async def raw_handler(connection: ServerConnection) -> None:
        async for _ in connection:
            for frame in frames:
                await connection.send(frame, text=True)

    async def servers(ready: asyncio.Event, stop: asyncio.Event) -> None:
        options: dict[str, Any] = {"compression": None, "write_limit": WRITE_LIMIT}
        async with (
            _host() as host,
            # No rate limit: its default (20 inputs a second per connection) refuses an input
            # once a batch of runs goes faster than that, and the client would wait for ever.
            WebSocketServer(host, port=0, rate_limit=None, **options) as ours_host,
            WebSocketServer(_Replay(events), port=0, rate_limit=None, **options) as ours_transport,
            serve(raw_handler, "127.0.0.1", 0, **options) as raw,
        ):
            urls.update(host=ours_host.url, transport=ours_transport.url)
            urls["raw"] = f"ws://127.0.0.1:{next(iter(raw.sockets)).getsockname()[1]}"
            ready.set()
            await stop.wait()

    loop.start(servers)

    async def open_clients() -> dict[str, ClientConnection]:
        return {
            side: await connect(url, compression=None, max_size=None, ping_interval=None) for side, url in urls.items()
        }

    clients = loop.call(open_clients())

    async def one_run(side: str, frame: bytes) -> list[bytes]:
        client = clients[side]
        await client.send(frame, text=True)
        return [await client.recv(decode=False) for _ in range(len(frames))]

    def host_op() -> tuple[list[bytes], tuple[bytes, bytes]]:
        frame, ids = fresh()
        return loop.call(one_run("host", frame)), ids

    def ours_host() -> None:
        host_op()

    def ours_transport() -> None:
        loop.call(one_run("transport", fixed))

    def raw() -> None:
        loop.call(one_run("raw", fixed))

    def check() -> None:
        got, ids = host_op()
        _same("the WebSocket host", got, frames, ids)
        _same("the WebSocket transport", loop.call(one_run("transport", fixed)), frames)
        _same("raw websockets", loop.call(one_run("raw", fixed)), frames)

    def release(loop: _LoopThread = loop, clients: dict[str, ClientConnection] = clients) -> None:
        async def close_clients() -> None:
            for client in clients.values():
                await client.close()

        if threading.current_thread() is not loop.thread:
            loop.call(close_clients())
        loop.close()

    weakref.finalize(ours_host, release)
    host, transport, bare = (
        "ours: agent -> Host -> WebSocketServer",
        "ours: WebSocketServer replaying the events",
        "raw websockets, pre-encoded frames",
    )
    return Case(
        name=f"WebSocket, one connection, {EVENTS_PER_OP:,} events per run",
        contenders=(Contender(host, ours_host), Contender(transport, ours_transport), Contender(bare, raw)),
        comparisons=(
            Comparison(ours=host, theirs=bare, target=0.9),
            Comparison(ours=transport, theirs=bare, target=0.8),
        ),
        check=check,
        notes="one op = send the input, receive every frame of the run; servers and client share one event loop",
    )


# -- stdio -----------------------------------------------------------------------------------


class _Pipes:
    """The two pipes between a client (this thread) and a JSON-lines server."""

    def __init__(self) -> None:
        self.server_in, self.client_out = os.pipe()
        self.client_in, self.server_out = os.pipe()

    def exchange(self, line: bytes, lines: int) -> bytes:
        """Send ``line``; return the output up to its ``lines``-th newline."""
        os.write(self.client_out, line)
        chunks: list[bytes] = []
        seen = 0
        while seen < lines:
            chunk = os.read(self.client_in, 1 << 16)
            if not chunk:
                raise AssertionError("the server closed its output mid-run")
            chunks.append(chunk)
            seen += chunk.count(b"\n")
        return b"".join(chunks)

    def close_input(self) -> None:
        os.close(self.client_out)

    def close_rest(self) -> None:
        for fd in (self.client_in, self.server_in, self.server_out):
            try:
                os.close(fd)
            except OSError:
                pass


def _raw_pipe_server(pipes: _Pipes, lines: Sequence[bytes]) -> None:
    """For every input line, hand the pre-encoded lines one by one to a writer thread.

    The writer batches as :func:`serve_stdio`'s does: it takes every line pending and writes
    them with one ``os.write`` (as many as the pipe takes), so under load one write carries
    many lines and the two threads meet once per batch. Without the event loop, the host and
    the encoding, what is left is the cost of the pipe itself and of that hand-off.
    """
    wake = threading.Condition()
    pending: list[bytes] = []
    closed = False

    def write() -> None:
        nonlocal pending
        while True:
            with wake:
                while not pending and not closed:
                    wake.wait()
                batch, pending = pending, []
                if not batch:
                    return
            view = memoryview(b"".join(batch))
            while view:
                view = view[os.write(pipes.server_out, view) :]

    writer = threading.Thread(target=write, name="raw pipe writer", daemon=True)
    writer.start()
    buffered = b""
    try:
        while chunk := os.read(pipes.server_in, 1 << 16):
            buffered += chunk
            while b"\n" in buffered:
                _, _, buffered = buffered.partition(b"\n")
                for line in lines:
                    with wake:
                        pending.append(line)
                        if len(pending) == 1:  # the writer waits only on an empty batch
                            wake.notify()
    finally:
        with wake:
            closed = True
            wake.notify()


def _stdio_case() -> Case:
    from agui_transports.stdio import serve_stdio

    from agui_core.protocol.framing import jsonl_frame

    loop = _LoopThread()
    frames, events = _capture(loop)
    lines = [jsonl_frame(f) for f in frames]
    expected = b"".join(lines)
    fresh, fixed = _inputs()
    pipes = {side: _Pipes() for side in ("host", "transport", "raw")}

    def stdio_server(side: str, host_factory: Callable[[], Any]) -> Callable[[asyncio.Event, asyncio.Event], Any]:
        async def serve(ready: asyncio.Event, stop: asyncio.Event) -> None:
            p = pipes[side]
            # closefd=False: the pipes are closed by release(), whatever happens here.
            with open(p.server_in, "rb", buffering=0, closefd=False) as stdin:
                with open(p.server_out, "wb", buffering=0, closefd=False) as stdout:
                    async with host_factory() as host:
                        ready.set()
                        await serve_stdio(host, stdin=stdin, stdout=stdout)

        return serve

    loop.start(stdio_server("host", _host))
    loop.start(stdio_server("transport", lambda: _Entered(_Replay(events))))
    threading.Thread(target=_raw_pipe_server, args=(pipes["raw"], lines), name="raw pipe server", daemon=True).start()

    def host_op() -> tuple[bytes, tuple[bytes, bytes]]:
        frame, ids = fresh()
        return pipes["host"].exchange(jsonl_frame(frame), len(lines)), ids

    def ours_host() -> None:
        host_op()

    def ours_transport() -> None:
        pipes["transport"].exchange(jsonl_frame(fixed), len(lines))

    def raw() -> None:
        pipes["raw"].exchange(jsonl_frame(fixed), len(lines))

    def check() -> None:
        got, ids = host_op()
        _same("the stdio host", got.splitlines(keepends=True), lines, ids)
        for side in ("transport", "raw"):
            got = pipes[side].exchange(jsonl_frame(fixed), len(lines))
            if got != expected:
                raise AssertionError(f"{side} delivered {len(got)} bytes, not the {len(expected)} expected")

    def release(loop: _LoopThread = loop, pipes: dict[str, _Pipes] = pipes) -> None:
        for p in pipes.values():
            p.close_input()  # end of input: each server returns once its run is done
        loop.close()
        for p in pipes.values():
            p.close_rest()

    weakref.finalize(ours_host, release)
    host, transport, bare = (
        "ours: agent -> Host -> serve_stdio",
        "ours: serve_stdio replaying the events",
        "raw pipe, pre-encoded lines, batched writes",
    )
    return Case(
        name=f"stdio (JSON lines over OS pipes), {EVENTS_PER_OP:,} events per run",
        contenders=(Contender(host, ours_host), Contender(transport, ours_transport), Contender(bare, raw)),
        comparisons=(
            Comparison(ours=host, theirs=bare, target=0.3),
            Comparison(ours=transport, theirs=bare, target=0.8),
        ),
        check=check,
        notes="one op = write the input line, read every line of the run; the client is the calling thread",
    )


def _build() -> Sequence[Case]:
    return [_websocket_case(), _stdio_case()]


SCENARIO = Scenario(
    name="transports",
    description="events per second through our WebSocket and stdio hosts vs the bare transport, same bytes",
    build=_build,
)
