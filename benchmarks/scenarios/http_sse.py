"""http_sse: events per second over HTTP + SSE under uvicorn, ours against a bare endpoint and the reference SDK.

One operation is one run of :data:`~benchmarks.scenarios.transports.EVENTS_PER_OP` text
deltas (plus ``RUN_STARTED``, the message's start and end, and ``RUN_FINISHED``): a client
on a kept-alive connection posts the input and reads the chunked ``text/event-stream``
response to its end. Every server is uvicorn (same version, same options) on 127.0.0.1, its
connections with ``TCP_NODELAY`` as ``agui serve --http`` gives them:

- ours: the agent streams the deltas through :class:`~agui_core.runtime.host.Host` (thread
  machine, ordering rules, state tracking) and :class:`~agui_transports.http.HttpApp`
  (input decoding and validation, encoding, SSE framing);
- bare Starlette: a Starlette route that answers every POST with a ``StreamingResponse`` of
  the same run's frames, encoded beforehand: the floor of any SSE endpoint on this server;
- reference: a FastAPI endpoint as the reference integrations write it: the body parsed into
  ``ag_ui.core.RunAgentInput``, the same agent's events built as ``ag_ui.core`` models and
  encoded by ``ag_ui.encoder.EventEncoder`` into a ``StreamingResponse``.

Targets (the issue's): ours within 1.3x of the bare endpoint, and faster than the reference.
The servers and the client share one event loop in a background thread; the client is a
few lines of asyncio (no HTTP library), so its cost is small and the same for everyone.
Each of our runs is on a new thread (a thread's history grows with every run, and so would
the cost of saving it). The check proves every contender delivers the same events. (No postponed annotations in this
module: FastAPI reads the endpoint's annotations to know how to parse the request body.)
"""

import asyncio
import contextlib
import itertools
import socket
import threading
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson

from benchmarks.harness import Case, Comparison, Contender, Scenario
from benchmarks.scenarios.transports import CAPTURED_RUN, EVENTS_PER_OP, THREAD, _capture, _host, _LoopThread

__all__ = ["SCENARIO"]

_END = b"\r\n0\r\n\r\n"  # the last chunk of a chunked body; SSE frames end in "\n\n", never in this


class _Connection:
    """A kept-alive HTTP/1.1 connection that posts a JSON body and reads a chunked response whole."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> "_Connection":
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def post(self, body: bytes) -> bytes:
        """The raw response (status line, headers, chunked body) to a POST of ``body`` to ``/``."""
        head = (
            b"POST / HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        self.writer.write(head + body)
        received = bytearray()
        while not received.endswith(_END):
            chunk = await self.reader.read(1 << 16)
            if not chunk:
                raise AssertionError("the server closed the connection mid-response")
            received += chunk
        return bytes(received)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


def _frames_of(response: bytes) -> list[bytes]:
    """The SSE frames' data in a raw chunked response (and a check that it is a 200 SSE response)."""
    head, _, chunked = response.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200") or b"text/event-stream" not in head.lower():
        raise AssertionError(f"not a 200 event stream: {head[:200]!r}")
    body = bytearray()
    while True:
        size_line, _, chunked = chunked.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        body += chunked[:size]
        chunked = chunked[size + 2 :]
    return [frame.removeprefix(b"data: ") for frame in bytes(body).split(b"\n\n") if frame]


def _bare_app(frames: Sequence[bytes]) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    from agui_core.protocol.framing import sse_frame

    encoded = [sse_frame(frame) for frame in frames]

    async def run(request: Request) -> StreamingResponse:
        await request.body()

        async def stream() -> AsyncIterator[bytes]:
            for frame in encoded:
                yield frame

        return StreamingResponse(stream(), media_type="text/event-stream")

    return Starlette(routes=[Route("/", run, methods=["POST"])])


def _reference_app(message_id: str) -> Any:
    from ag_ui.core import (
        RunAgentInput,
        RunFinishedEvent,
        RunStartedEvent,
        TextMessageContentEvent,
        TextMessageEndEvent,
        TextMessageStartEvent,
    )
    from ag_ui.encoder import EventEncoder
    from fastapi import FastAPI
    from fastapi.responses import StreamingResponse

    from benchmarks.scenarios.transports import DELTA

    app = FastAPI()

    @app.post("/")
    async def run(input_data: RunAgentInput) -> StreamingResponse:
        encoder = EventEncoder()

        async def agent() -> AsyncIterator[str]:
            yield encoder.encode(RunStartedEvent(thread_id=input_data.thread_id, run_id=input_data.run_id))
            yield encoder.encode(TextMessageStartEvent(message_id=message_id, role="assistant"))
            for _ in range(EVENTS_PER_OP):
                yield encoder.encode(TextMessageContentEvent(message_id=message_id, delta=DELTA))
            yield encoder.encode(TextMessageEndEvent(message_id=message_id))
            yield encoder.encode(RunFinishedEvent(thread_id=input_data.thread_id, run_id=input_data.run_id))

        return StreamingResponse(agent(), media_type=encoder.get_content_type())

    return app


@contextlib.asynccontextmanager
async def _uvicorn(app: Any) -> AsyncIterator[int]:
    """``app`` under uvicorn on a free port of 127.0.0.1; yields the port."""
    import uvicorn

    # As agui serve --http binds (agui_transports.http): a listener that says IPPROTO_TCP, so
    # asyncio sets TCP_NODELAY on every connection it accepts. socket.create_server says 0, and
    # then a response's last small write waits for the client's delayed ACK (40 ms) whenever it
    # follows a larger one not yet acknowledged: a stall of the benchmark, not of a server.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    config = uvicorn.Config(app, lifespan="off", log_config=None, access_log=False, timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)  # off the main thread: uvicorn leaves signals alone
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[listener]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield int(listener.getsockname()[1])
    finally:
        server.should_exit = True
        await task
        listener.close()


def _http_case() -> Case:
    from agui_transports.http import HttpApp

    from agui_core.protocol.codec import encode_input
    from agui_core.protocol.types import RunAgentInput

    loop = _LoopThread()
    frames, _ = _capture(loop)
    message_id = orjson.loads(frames[1])["messageId"]
    counter = itertools.count(1)
    fixed = encode_input(RunAgentInput(thread_id=THREAD, run_id=CAPTURED_RUN, state={}, forwarded_props={}))
    ports: dict[str, int] = {}

    async def servers(ready: asyncio.Event, stop: asyncio.Event) -> None:
        async with (
            _host() as host,
            _uvicorn(HttpApp(host)) as ours,
            _uvicorn(_bare_app(frames)) as bare,
            _uvicorn(_reference_app(message_id)) as reference,
        ):
            ports.update(ours=ours, bare=bare, reference=reference)
            ready.set()
            await stop.wait()

    loop.start(servers)

    async def open_all() -> dict[str, _Connection]:
        return {side: await _Connection.open(port) for side, port in ports.items()}

    connections = loop.call(open_all())

    def fresh() -> tuple[bytes, list[bytes]]:
        """A new run on a new thread (ids as long as the captured ones), and the frames it must get.

        A new thread each time: runs on one thread would each add a message to its history,
        and every save would cost more than the last, whatever the transport.
        """
        n = next(counter)
        thread_id, run_id = f"{n:05x}"[-len(THREAD) :], f"run-{n:08d}"
        run_input = RunAgentInput(thread_id=thread_id, run_id=run_id, state={}, forwarded_props={})
        renamed = [
            frame.replace(CAPTURED_RUN.encode(), run_id.encode()).replace(
                b'"threadId":"' + THREAD.encode() + b'"', b'"threadId":"' + thread_id.encode() + b'"'
            )
            for frame in frames
        ]
        return encode_input(run_input), renamed

    def ours() -> None:
        loop.call(connections["ours"].post(fresh()[0]))

    def bare() -> None:
        loop.call(connections["bare"].post(fixed))

    def reference() -> None:
        loop.call(connections["reference"].post(fixed))

    def check() -> None:
        body, expected_frames = fresh()
        if _frames_of(loop.call(connections["ours"].post(body))) != expected_frames:
            raise AssertionError("our endpoint did not deliver the captured run's frames")
        if _frames_of(loop.call(connections["bare"].post(fixed))) != list(frames):
            raise AssertionError("the bare endpoint did not deliver the captured run's frames")
        theirs = [orjson.loads(f) for f in _frames_of(loop.call(connections["reference"].post(fixed)))]
        expected = [orjson.loads(f) for f in frames]
        if [(e["type"], e.get("delta")) for e in theirs] != [(e["type"], e.get("delta")) for e in expected]:
            raise AssertionError("the reference endpoint did not deliver the same events")

    def release(loop: _LoopThread = loop, connections: dict[str, _Connection] = connections) -> None:
        async def close_all() -> None:
            for connection in connections.values():
                await connection.close()

        if threading.current_thread() is not loop.thread:
            loop.call(close_all())
        loop.close()

    weakref.finalize(ours, release)
    names = (
        "ours: agent -> Host -> HttpApp (uvicorn)",
        "bare Starlette SSE, pre-encoded frames (uvicorn)",
        "reference: FastAPI + ag_ui EventEncoder (uvicorn)",
    )
    return Case(
        name=f"HTTP + SSE, one kept-alive connection, {EVENTS_PER_OP:,} events per run",
        contenders=(Contender(names[0], ours), Contender(names[1], bare), Contender(names[2], reference)),
        comparisons=(
            Comparison(ours=names[0], theirs=names[1], target=1 / 1.3),
            Comparison(ours=names[0], theirs=names[2], target=1.0),
        ),
        check=check,
        notes="one op = POST the input, read the whole chunked event stream; servers and client share one event loop",
    )


def _build() -> Sequence[Case]:
    return [_http_case()]


SCENARIO = Scenario(
    name="http_sse",
    description="events per second over HTTP + SSE under uvicorn: ours vs a bare SSE endpoint and the reference SDK",
    build=_build,
)
