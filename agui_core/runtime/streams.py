"""A run's events on their way to its caller: the host's side (:class:`Outlet`) and the caller's
(:class:`RunEvents`), with backpressure within limits.

Handing an event to a caller waits while the caller's stream is full, so a slow reader slows
its run down instead of memory growing; but it waits ``send_timeout`` seconds at most. A caller
that takes no event for that long (and says nothing of writing out what it took,
:meth:`RunEvents.sent`) is dropped as if it had left: its stream ends where it stands, and the
run goes on and is saved (see :class:`~agui_core.runtime.host.Host`).

Streamed text travels lighter: the ``TEXT_MESSAGE_CONTENT`` deltas a run streams into one
message, one after another, go into the stream as one :class:`TextBurst` (up to
:data:`BURST_DELTAS` of them), built as events only for a caller that takes events, and
encoded straight from their strings by a transport that takes bursts
(:meth:`RunEvents.next_burst`). A burst takes one place in the caller's stream, so a full
stream holds up to ``buffer`` bursts of deltas rather than ``buffer`` deltas.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Final, TypeAlias

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_text_deltas, encode_text_deltas_framed
from agui_core.protocol.types import RunAgentInput

__all__ = ["BURST_DELTAS", "Outlet", "Pace", "RunEvents", "Streamed", "TextBurst"]

BURST_DELTAS: Final = 32
"""The most deltas one :class:`TextBurst` carries (one place in a caller's stream)."""


class TextBurst:
    """``TEXT_MESSAGE_CONTENT`` deltas of one message of the parent agent, in the order its run
    streamed them: each is the event ``TextMessageContentEvent(message_id=..., delta=...)``,
    with nothing else set, and none is built until someone asks for the events.

    The run appends to the burst it last put in the stream until the caller takes it
    (``taken``) or it holds :data:`BURST_DELTAS` deltas; a caller that took it sees no more
    deltas added to it.
    """

    __slots__ = ("deltas", "message_id", "taken")

    def __init__(self, message_id: str, delta: str) -> None:
        self.message_id = message_id
        self.deltas = [delta]
        self.taken = False

    def events(self) -> list[ev.Event]:
        """The deltas as the events they stand for."""
        content, message_id = ev.TextMessageContentEvent, self.message_id
        return [content(message_id=message_id, delta=delta) for delta in self.deltas]

    def encoded(self) -> list[bytes]:
        """Each event's compact JSON bytes, as :func:`~agui_core.protocol.codec.encode_event` writes it."""
        return encode_text_deltas(self.message_id, self.deltas)

    def framed(self, after: bytes) -> bytes:
        """The events' compact JSON bytes, each followed by ``after`` (``b"\\n"``: JSON lines), in one piece."""
        return encode_text_deltas_framed(self.message_id, self.deltas, after)


Streamed: TypeAlias = ev.Event | TextBurst
"""What a run's stream carries: events, and streamed text not built as events yet."""


def _take(batch: list[Streamed]) -> list[Streamed]:
    """``batch`` as taken by the caller: no delta is added to a burst of it from now on.

    The run adds deltas only to the last thing it put in the stream, so only the batch's
    last item can be a burst still filling.
    """
    if batch:
        last = batch[-1]
        if isinstance(last, TextBurst):
            last.taken = True
    return batch


log = logging.getLogger("agui_core.host")


class RunEvents:
    """The events of one run for its caller, in order (what :meth:`Host.run` returns).

    ``async for event in events`` takes them one by one; :meth:`next_batch` takes every event
    that is ready at once, for a transport that encodes and writes a burst in one go (and says
    :meth:`sent` as it writes it); :meth:`next_burst` does the same with streamed text left as
    :class:`TextBurst`. Close it (``aclosing``, or :meth:`aclose`) to stop listening before the
    run ends; the run goes on.
    """

    __slots__ = ("__weakref__", "_args", "_expanded", "_pace", "_receive", "_start", "_thread", "_waiting")

    def __init__(
        self,
        start: Callable[[RunAgentInput, str, Pace], Awaitable[MemoryObjectReceiveStream[Streamed]]],
        run_input: RunAgentInput,
        principal: str,
    ) -> None:
        self._start: Callable[[RunAgentInput, str, Pace], Awaitable[MemoryObjectReceiveStream[Streamed]]] | None = start
        self._args = (run_input, principal)
        self._receive: MemoryObjectReceiveStream[Streamed] | None = None
        self._pace = Pace()
        self._waiting = False
        self._expanded: deque[ev.Event] = deque()  # the rest of a burst taken one event at a time
        self._thread = threading.get_ident()  # the event loop's

    def __aiter__(self) -> RunEvents:
        return self

    async def _stream(self) -> MemoryObjectReceiveStream[Streamed] | None:
        """The run's stream, started on the first call; ``None`` once closed."""
        if self._start is not None:
            start, self._start = self._start, None
            self._receive = await start(*self._args, self._pace)
        return self._receive

    def sent(self) -> None:
        """Say that the caller is still writing out the events it took (a frame of a batch went out).

        The host drops a caller that takes nothing for its ``send_timeout`` while the run waits
        on it; a transport writing a long batch frame by frame takes nothing meanwhile, and
        this is how it shows it still reads. Cheap, but a call a frame is not needed: once in
        a while during a slow write is enough.
        """
        self._pace.count += 1

    async def __anext__(self) -> ev.Event:
        expanded = self._expanded
        if expanded:
            return expanded.popleft()
        item = await self._next()
        if isinstance(item, TextBurst):
            item.taken = True
            expanded.extend(item.events())
            return expanded.popleft()
        return item

    async def _next(self) -> Streamed:
        """The next item of the stream (waiting for it), or ``StopAsyncIteration`` at its end."""
        if self._waiting:
            # As an async generator says it: two tasks taking one stream would each miss events.
            raise RuntimeError("another task is already waiting for this run's next event")
        if self._start is None:
            receive = self._receive
        else:
            self._waiting = True
            try:
                receive = await self._stream()
            finally:
                self._waiting = False
        if receive is None:
            raise StopAsyncIteration
        # Take what is already buffered without a trip through the event loop: a run streams
        # in bursts, and a loop turn per event cost more than the event.
        try:
            return receive.receive_nowait()
        except anyio.WouldBlock:
            pass
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._close()
            raise StopAsyncIteration from None
        self._waiting = True
        try:
            return await receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._close()
            raise StopAsyncIteration from None
        finally:
            self._waiting = False

    async def next_burst(self) -> list[Streamed]:
        """Every item ready now, in order: events, and the text deltas streamed into one
        message as a :class:`TextBurst` each (not built as events). Waits for the first;
        ``[]`` once the stream has ended."""
        batch: list[Streamed]
        if self._expanded:  # the rest of a burst taken by __anext__ comes first
            batch = [*self._expanded]
            self._expanded.clear()
        else:
            try:
                batch = [await self._next()]
            except StopAsyncIteration:
                return []
        receive = self._receive
        if receive is None:
            return _take(batch)
        take = receive.receive_nowait
        try:
            while True:
                batch.append(take())
        except anyio.WouldBlock:
            pass
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._close()  # the end: the next call returns []
        return _take(batch)

    async def next_batch(self) -> list[ev.Event]:
        """Every event ready now, in order: waits for the first; ``[]`` once the stream has ended."""
        batch = await self.next_burst()
        events: list[ev.Event] = []
        for item in batch:
            if isinstance(item, TextBurst):
                events += item.events()
            else:
                events.append(item)
        return events

    def _close(self) -> None:
        self._start = None
        self._expanded.clear()
        receive, self._receive = self._receive, None
        if receive is not None:
            receive.close()  # a run still sending finds nobody listening, and goes on

    async def aclose(self) -> None:
        """Stop listening (the run goes on); what was not taken is dropped."""
        self._close()

    def __del__(self) -> None:
        # A caller that dropped the stream unclosed is a caller that left, as for a generator.
        # Only in the event loop's thread: closing wakes the run, which is no business of
        # another thread's garbage collection (the run then waits send_timeout at most).
        if threading.get_ident() != self._thread:
            return
        try:
            self._close()
        except RuntimeError:
            pass  # the event loop is gone, and the run with it


class Pace:
    """How often the caller of a run said it was writing out what it took (:meth:`RunEvents.sent`)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


class Outlet:
    """Where a run's events go: its caller's stream, for as long as the caller listens.

    A caller that has taken no event for ``timeout`` seconds while its stream was full, and
    said nothing of writing out events it took before (:meth:`RunEvents.sent`), is dropped: its
    stream is closed, so it sees the end after what it already has. (Said at any time during a
    wait, the caller gets another ``timeout`` from the wait's end: twice that at most in all.)
    """

    def __init__(
        self, send: MemoryObjectSendStream[Streamed], timeout: float, run_id: str, pace: Pace | None = None
    ) -> None:
        self._send = send
        self._timeout = timeout
        self._run_id = run_id
        self._pace = pace if pace is not None else Pace()
        self._burst: TextBurst | None = None  # the last thing put in the stream, if a burst
        self.listening = True
        self.ended = False
        """Whether the run's last event (``RUN_FINISHED`` or ``RUN_ERROR``) has gone out."""

    def offer(self, event: ev.Event) -> bool:
        """Put ``event`` in the caller's stream if there is room; ``False``: await the outlet instead
        (for the rest: a full stream, a caller gone, a run's last event)."""
        self._burst = None  # deltas after this event go after it
        if not self.listening or event.__class__ in ev.RUN_END_CLASSES:
            return False
        try:
            self._send.send_nowait(event)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    def text_delta(self, message_id: str, delta: str) -> bool:
        """Hand over ``TEXT_MESSAGE_CONTENT`` ``delta`` of ``message_id`` (of the parent agent)
        without building its event, if that takes no waiting: added to the burst last put in
        the stream if the caller has not taken it yet, else put in the stream as a new one.
        ``False``: nothing was handed over; await the outlet with the event instead (a full
        stream, a caller gone)."""
        burst = self._burst
        if burst is not None and not burst.taken and burst.message_id == message_id:
            deltas = burst.deltas
            if len(deltas) < BURST_DELTAS:
                deltas.append(delta)
                return True
        if not self.listening:
            return False
        burst = TextBurst(message_id, delta)
        try:
            self._send.send_nowait(burst)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._burst = None
            return False
        self._burst = burst
        return True

    async def __call__(self, event: ev.Event) -> None:
        self._burst = None
        if event.__class__ in ev.RUN_END_CLASSES:
            self.ended = True
        if not self.listening:
            return
        try:
            try:
                self._send.send_nowait(event)
                return
            except anyio.WouldBlock:  # a full buffer: wait for the caller (backpressure), within limits
                pass
            while True:
                said = self._pace.count
                with anyio.move_on_after(self._timeout):
                    await self._send.send(event)
                    return
                if self._pace.count == said:
                    break  # nothing taken, nothing written: stuck
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            self.listening = False  # the caller left; the run goes on and is saved
            return
        # The caller is stuck: drop it as if it had left, or this may be the shielded last step of a run.
        log.warning("run %r: its caller took no event for %g s; no longer sending to it", self._run_id, self._timeout)
        self.listening = False
        self._send.close()
