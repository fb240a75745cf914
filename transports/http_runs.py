"""The AG-UI endpoint: ``POST /`` takes a ``RunAgentInput`` and streams its run's events.

The route of :class:`~agui_transports.http_app.HttpApp` that runs agents (see
:mod:`agui_transports.http` for what a client sees): it reads the body within its limits
(size, time, the principal's input budget), hands the input to the host and sends the events
as Server-Sent Events until the run ends or the client leaves; the run goes on without it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import aclosing

import anyio
from agui_transports.connections import InputBudget
from agui_transports.http_asgi import (
    SSE_HEADERS,
    Authenticate,
    ClientLeft,
    Cors,
    Receive,
    Refused,
    Scope,
    Send,
    client_address,
    refuse_run,
)
from agui_transports.plugin import MAX_OVER_LIMIT_PAUSE, next_batch, read_input

from agui_core.errors import EncodeError, InvalidInputError
from agui_core.protocol.codec import encode_event
from agui_core.protocol.framing import sse_frame
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime.host import Host
from agui_core.runtime.observe import trace_carrier

__all__ = ["RunRoute"]

log = logging.getLogger("agui_transports.http")


class _Frames:
    """Encoded events on their way from the task reading a run to the task sending them.

    :meth:`take` hands over everything that arrived since the last take, as one write.
    :meth:`put` waits once ``limit`` bytes are waiting, so a slow client slows the run down
    (the host's stream is bounded too) instead of memory growing.
    """

    __slots__ = ("_arrived", "_ended", "_frames", "_limit", "_size", "_taken")

    def __init__(self, limit: int = 64 * 1024) -> None:
        self._frames: list[bytes] = []
        self._size = 0
        self._limit = limit
        self._ended = False
        self._arrived = anyio.Event()
        self._taken = anyio.Event()

    async def put(self, frame: bytes) -> None:
        self._frames.append(frame)
        self._size += len(frame)
        self._arrived.set()
        while self._size >= self._limit:
            self._taken = anyio.Event()
            await self._taken.wait()

    def end(self) -> None:
        """No more frames: :meth:`take` returns ``None`` once it has handed over the rest."""
        self._ended = True
        self._arrived.set()

    async def take(self) -> bytes | None:
        while not self._frames:
            if self._ended:
                return None
            await self._arrived.wait()
            self._arrived = anyio.Event()
        frames = self._frames[0] if len(self._frames) == 1 else b"".join(self._frames)
        self._frames.clear()
        self._size = 0
        self._taken.set()
        return frames


class RunRoute:
    """``POST /`` of one application: its limits, and the host it runs inputs on.

    ``max_body`` bounds a request body, in bytes; ``body_timeout`` is how many seconds a client
    has to send it; ``send_timeout`` how many seconds one write may take before the client
    counts as not reading; ``input_budget`` and ``max_input_messages`` are the limits the
    :mod:`agui_transports.http` docstring describes (``None``: none). ``authenticate`` gives
    the principal a request's headers stand for.
    """

    def __init__(
        self,
        host: Host,
        authenticate: Authenticate,
        *,
        max_body: int,
        body_timeout: float,
        send_timeout: float,
        input_budget: InputBudget | None,
        max_input_messages: int | None,
    ) -> None:
        self.host = host
        self._authenticate = authenticate
        self.max_body = max_body
        self.body_timeout = body_timeout
        self.send_timeout = send_timeout
        self.input_budget = input_budget
        self.max_input_messages = max_input_messages

    async def __call__(
        self, scope: Scope, headers: Mapping[str, str], receive: Receive, send: Send, cors: Cors
    ) -> None:
        """Answer one ``POST``: refused (an HTTP error, or a ``RUN_ERROR`` alone in the stream),
        or the run's events as Server-Sent Events."""
        media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            raise Refused(415, "unsupported_media_type", "send the RunAgentInput as application/json")
        principal = await self._authenticate(headers)
        body = await self._body(headers, receive)
        budget, address = self.input_budget, client_address(scope)
        if budget is not None and not budget.charge(principal, address, len(body)):
            # Answered once the budget would take it: a client that asks again at once is slowed down.
            await anyio.sleep(min(MAX_OVER_LIMIT_PAUSE, budget.refills_in(principal, address, len(body))))
            exceeded = budget.exceeded()
            self.host.observer.refused(exceeded.code.value)
            await refuse_run(send, cors, exceeded)
            return
        try:
            run_input = read_input(body, max_messages=self.max_input_messages)
        except InvalidInputError as exc:
            self.host.observer.refused(exc.code.value)
            await refuse_run(send, cors, exc)
            return
        if "traceparent" in headers:  # the run's task inherits this request's context, and with it these
            trace_carrier.set({k: headers[k] for k in ("traceparent", "tracestate") if k in headers})
        await send({"type": "http.response.start", "status": 200, "headers": [*SSE_HEADERS, *cors]})
        await self._stream(run_input, principal, receive, send)

    async def _body(self, headers: Mapping[str, str], receive: Receive) -> bytes:
        return await self.read_body(headers, receive, limit=self.max_body)

    async def read_body(self, headers: Mapping[str, str], receive: Receive, *, limit: int) -> bytes:
        """A request body, refused as soon as it is known to be over ``limit`` bytes, or once
        ``body_timeout`` passes before its end."""
        too_large = Refused(413, "payload_too_large", f"the request body is over the limit of {limit} bytes")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.body_timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientLeft
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise too_large
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
        assert deadline.cancelled_caught
        raise Refused(408, "request_timeout", f"the request body did not arrive within {self.body_timeout:g} s")

    async def _stream(self, run_input: RunAgentInput, principal: str, receive: Receive, send: Send) -> None:
        """Send the run's events until it ends or the client leaves (the run goes on then).

        One task reads the run, another sends: what arrives while a write is under way goes
        out in the next write, so a burst of events costs one write instead of one each,
        and an event that comes alone is sent at once.
        """
        pending = _Frames()
        left = finished = False
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                nonlocal left
                while (await receive())["type"] != "http.disconnect":
                    pass
                if not finished:  # servers also say http.disconnect once the response is complete
                    left = True
                    group.cancel_scope.cancel()

            async def read() -> None:
                try:
                    async with aclosing(self.host.run(run_input, principal=principal)) as events:
                        while batch := await next_batch(events):
                            frames: list[bytes] = []
                            for event in batch:
                                try:
                                    frames.append(sse_frame(encode_event(event)))
                                except EncodeError:
                                    if frames:  # the events before the one that fails still go out
                                        await pending.put(b"".join(frames))
                                    raise
                            await pending.put(b"".join(frames))
                except EncodeError as exc:
                    # Nothing honest can be sent now: end without completing the response.
                    log.error("run %r: %s; abandoning its response", run_input.run_id, exc.message)
                    group.cancel_scope.cancel()
                pending.end()

            group.start_soon(watch)
            group.start_soon(read)
            try:
                while (frames := await pending.take()) is not None:
                    with anyio.move_on_after(self.send_timeout) as late:
                        await send({"type": "http.response.body", "body": frames, "more_body": True})
                    if late.cancelled_caught:  # a client that reads nothing: leave the response unfinished
                        left = True
                        break
                else:
                    finished = True
                    await send({"type": "http.response.body", "body": b""})
            except OSError:  # ASGI servers may raise it from send once the client is gone
                left = True
            group.cancel_scope.cancel()
        if left:
            log.info("the client of run %r left or stopped reading; the run goes on", run_input.run_id)
