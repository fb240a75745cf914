"""LeaseKeeper: renews a run's lease on its thread in the store for as long as the run goes on.

A run holds its thread until its lease runs out; a host that finds the lease of another host's
run run out takes that host for gone and closes the run (``ThreadMachine.close_abandoned_run``).
So the host carrying a run renews the lease every ``renew_every`` seconds, each time to
``lease`` seconds past its clock's now: a host that dies, or hangs, stops renewing, and its
threads are free again within ``lease`` seconds.

The lease's instants and the pause between renewals come from the host's clock (injectable,
so tests move time by hand; a plain function of the time pauses in real time). Renewals stop at the run's deadline (the
host's ``run_timeout``): a run that overstays it, on a host stuck in a step it cannot leave,
loses its thread ``lease`` seconds later all the same. A renewal the store refuses while the
run still goes on here (``running``) means another host closed it. The keeper then calls
``on_lost`` (the host stops the run: whatever it would still do, a save of it would conflict).

Most runs end before their first renewal. On a clock whose waits are the event loop's real
time, the keeper waits on a timer of the loop and a renewal gets a task only when it is due,
so such a run costs a timer handle, not a task and its cancellation; on any other clock the
keeper is a task that sleeps on the clock (:meth:`LeaseKeeper.keep`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Final

import anyio
import anyio.abc

from agui_core.runtime.clock import Clock, as_clock, timer_of
from agui_core.store.base import ThreadStore

__all__ = ["LeaseKeeper"]

log = logging.getLogger("agui_core.host")


class LeaseKeeper:
    """Renews the lease of run ``run_id`` on ``thread_id`` until :meth:`stop` (or the run's deadline)."""

    def __init__(
        self,
        store: ThreadStore,
        thread_id: str,
        run_id: str,
        *,
        clock: Clock | Callable[[], datetime],
        lease: float,
        renew_every: float,
        deadline: datetime | None,
        running: Callable[[], bool],
        on_lost: Callable[[], None],
    ) -> None:
        self._store = store
        self._thread_id = thread_id
        self._run_id = run_id
        self._clock = as_clock(clock)
        self._lease = timedelta(seconds=lease)
        self._renew_every = renew_every
        self._deadline = deadline
        self._running = running
        self._on_lost = on_lost
        self._scope = anyio.CancelScope()
        self._stopped = False
        self._cancel_wait: Callable[[], None] | None = None  # the timer's, when renewals run on one
        self.lost = False
        """Whether the store refused a renewal: another host closed the run."""

    def stop(self) -> None:
        """Stop renewing (at once, or before the first renewal if :meth:`keep` has not started)."""
        self._stopped = True
        if self._cancel_wait is not None:
            self._cancel_wait()
        else:
            self._scope.cancel()

    def start(self, group: anyio.abc.TaskGroup) -> None:
        """Keep the lease from now on, in ``group``: on a timer where the clock has one
        (:func:`~agui_core.runtime.clock.timer_of`), each renewal a task of its own when it is
        due; else as :meth:`keep`, in a task of its own."""
        timer = timer_of(self._clock)
        if timer is None:
            group.start_soon(self.keep)
            return

        async def renew() -> None:
            if not self._stopped and await self.renew() and not self._stopped:
                self._cancel_wait = timer(self._renew_every, due)

        def due() -> None:
            self._cancel_wait = _NOTHING_TO_CANCEL
            if not self._stopped:
                group.start_soon(renew)

        self._cancel_wait = timer(self._renew_every, due)

    async def keep(self) -> None:
        """Renew the lease every ``renew_every`` seconds until stopped, lost or past the deadline."""
        with self._scope:
            while True:
                await self._clock.sleep(self._renew_every)
                if not await self.renew():
                    return

    async def renew(self) -> bool:
        """Renew the lease now; ``False`` once renewals are over (the run is past its deadline,
        has ended, or was closed by another host)."""
        now = self._clock.now()
        if self._deadline is not None and now >= self._deadline:
            return False  # the run is overdue: its lease runs out, whatever its host does
        try:
            held = await self._store.renew_lease(self._thread_id, self._run_id, now + self._lease)
        except Exception as exc:
            # A store that fails now may answer next time; the lease has time to spare.
            log.warning("could not renew the lease of run %r on thread %r: %s", self._run_id, self._thread_id, exc)
            return True
        if not held:
            if not self._running():
                return False  # the run ended here, its last save just before this renewal
            log.warning("run %r lost its lease on thread %r: another host closed it", self._run_id, self._thread_id)
            self.lost = True
            self._on_lost()
            return False
        return True


def _nothing_to_cancel() -> None:
    pass


_NOTHING_TO_CANCEL: Final = _nothing_to_cancel
