"""The host's one clock: the instants it records and reckons with, and the waits it times.

Everything in the runtime that asks what time it is, or waits for time to pass on a run's
behalf, asks one :class:`Clock`: the instant a run's input arrived and its interrupts were
raised, expiry, lease instants, when to renew a lease, and a run's deadline. So a test that
hands the host a :class:`ManualClock` moves all of them at once, by hand, and need not sleep.
(Transport-level waits, such as how long a slow reader may stall, are about real sockets
and stay on anyio's clock.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol, TypeAlias, runtime_checkable

import anyio
import anyio.lowlevel
import attrs

__all__ = ["Clock", "ManualClock", "SystemClock", "as_clock", "timer_of"]


@runtime_checkable
class Clock(Protocol):
    """What the host reads the time from and waits on."""

    def now(self) -> datetime:
        """The current instant, time-zone aware."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on this clock."""
        ...


class SystemClock:
    """The real time: UTC wall-clock instants; waits are anyio sleeps."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


@attrs.define(eq=False)
class _Sleeper:
    wake_at: datetime
    woken: anyio.Event = attrs.field(factory=anyio.Event)


class ManualClock:
    """A clock that moves only when told (:meth:`advance`, :meth:`set`); for tests.

    A :meth:`sleep` on it returns once the clock has been moved past its end, however little
    real time went by.
    """

    def __init__(self, start: datetime | None = None) -> None:
        start = start if start is not None else datetime(2026, 1, 1, tzinfo=UTC)
        if start.tzinfo is None:
            raise ValueError("a ManualClock needs an aware start instant")
        self._now = start
        self._sleepers: list[_Sleeper] = []

    def now(self) -> datetime:
        return self._now

    def __call__(self) -> datetime:
        return self._now

    def advance(self, seconds: float = 0.0, **delta: float) -> None:
        """Move the clock on by ``seconds`` (and/or ``timedelta`` keywords) and wake who is due."""
        step = timedelta(seconds=seconds, **delta)
        if step < timedelta(0):
            raise ValueError("a clock does not go back")
        self.set(self._now + step)

    def set(self, instant: datetime) -> None:
        """Move the clock to ``instant`` (not earlier than now) and wake who is due."""
        if instant < self._now:
            raise ValueError("a clock does not go back")
        self._now = instant
        due = [s for s in self._sleepers if s.wake_at <= instant]
        self._sleepers = [s for s in self._sleepers if s.wake_at > instant]
        for sleeper in due:
            sleeper.woken.set()

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        sleeper = _Sleeper(wake_at=self._now + timedelta(seconds=seconds))
        self._sleepers.append(sleeper)
        try:
            await sleeper.woken.wait()
        finally:
            if sleeper in self._sleepers:
                self._sleepers.remove(sleeper)


class _FunctionClock:
    """A bare function of the time, as a :class:`Clock`: its waits are real time."""

    def __init__(self, read: Callable[[], datetime]) -> None:
        self._read = read

    def now(self) -> datetime:
        return self._read()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


_OWN_CLOCKS: Final = frozenset({SystemClock, ManualClock, _FunctionClock})


def as_clock(clock: Clock | Callable[[], datetime]) -> Clock:
    """``clock`` as a :class:`Clock`; a plain function of the time waits in real time."""
    if type(clock) in _OWN_CLOCKS:  # without the protocol's isinstance, which walks its members
        return clock  # type: ignore[return-value]
    if isinstance(clock, Clock):
        return clock
    return _FunctionClock(clock)


Timer: TypeAlias = Callable[[float, Callable[[], None]], Callable[[], None]]
"""``timer(seconds, callback)`` calls ``callback`` once ``seconds`` have passed, from the event
loop, not from a task; what it returns cancels the call (a no-op once it was made)."""


def timer_of(clock: Clock) -> Timer | None:
    """A :data:`Timer` on ``clock``'s waits, where they are the event loop's own real time
    (:class:`SystemClock`, a plain function of the time) and the loop is asyncio's; ``None``
    otherwise (any other clock, another backend): wait in a task, with ``clock.sleep``.

    A timer costs the host a handle per wait, where a task that sleeps costs a task, a cancel
    scope and a cancellation (anyio's names the cancelling task: formatting it cost more than
    the rest of a short run's bookkeeping).
    """
    if type(clock) is not SystemClock and type(clock) is not _FunctionClock:
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None  # not on asyncio

    def after(seconds: float, callback: Callable[[], None]) -> Callable[[], None]:
        return loop.call_later(seconds, callback).cancel

    return after
