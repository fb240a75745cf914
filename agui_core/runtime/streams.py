"""A run's events on their way to its caller: the host's side (:class:`Outlet`) and the caller's
(:class:`RunEvents`), with backpressure within limits.

Handing an event to a caller waits while the caller's stream is full, so a slow reader slows
its run down instead of memory growing; but it waits ``send_timeout`` seconds at most. A caller
that takes no event for that long (and says nothing of writing out what it took,
:meth:`RunEvents.sent`) is dropped as if it had left: its stream ends where it stands, and the
run goes on and is saved (see :class:`~agui_core.runtime.host.Host`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from agui_core.protocol import events as ev
from agui_core.protocol.types import RunAgentInput

__all__ = ["Outlet", "Pace", "RunEvents"]

log = logging.getLogger("agui_core.host")


class RunEvents:
    """The events of one run for its caller, in order (what :meth:`Host.run` returns).

    ``async for event in events`` takes them one by one; :meth:`next_batch` takes every event
    that is ready at once, for a transport that encodes and writes a burst in one go (and says
    :meth:`sent` as it writes it). Close it (``aclosing``, or :meth:`aclose`) to stop listening
    before the run ends; the run goes on.
    """

    __slots__ = ("__weakref__", "_args", "_pace", "_receive", "_start", "_thread", "_waiting")

    def __init__(
        self,
        start: Callable[[RunAgentInput, str, Pace], Awaitable[MemoryObjectReceiveStream[ev.Event]]],
        run_input: RunAgentInput,
        principal: str,
    ) -> None:
        self._start: Callable[[RunAgentInput, str, Pace], Awaitable[MemoryObjectReceiveStream[ev.Event]]] | None = start
        self._args = (run_input, principal)
        self._receive: MemoryObjectReceiveStream[ev.Event] | None = None
        self._pace = Pace()
        self._waiting = False
        self._thread = threading.get_ident()  # the event loop's

    def __aiter__(self) -> RunEvents:
        return self

    async def _stream(self) -> MemoryObjectReceiveStream[ev.Event] | None:
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

    async def next_batch(self) -> list[ev.Event]:
        """Every event ready now, in order: waits for the first; ``[]`` once the stream has ended."""
        try:
            batch = [await self.__anext__()]
        except StopAsyncIteration:
            return []
        receive = self._receive
        assert receive is not None
        take = receive.receive_nowait
        try:
            while True:
                batch.append(take())
        except anyio.WouldBlock:
            pass
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._close()  # the end: the next call returns []
        return batch

    def _close(self) -> None:
        self._start = None
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
        self, send: MemoryObjectSendStream[ev.Event], timeout: float, run_id: str, pace: Pace | None = None
    ) -> None:
        self._send = send
        self._timeout = timeout
        self._run_id = run_id
        self._pace = pace if pace is not None else Pace()
        self.listening = True
        self.ended = False
        """Whether the run's last event (``RUN_FINISHED`` or ``RUN_ERROR``) has gone out."""

    def offer(self, event: ev.Event) -> bool:
        """Put ``event`` in the caller's stream if there is room; ``False``: await the outlet instead
        (for the rest: a full stream, a caller gone, a run's last event)."""
        if not self.listening or event.__class__ in ev.RUN_END_CLASSES:
            return False
        try:
            self._send.send_nowait(event)
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    async def __call__(self, event: ev.Event) -> None:
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
