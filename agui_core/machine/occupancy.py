"""Whether a run may start now: the one home of ``THREAD_BUSY`` (SPEC section 3), sans-IO.

A thread carries one run at a time, and so does a WebSocket connection. Whoever is asked to
start a run hands :func:`check_free` what it knows of the runs in the way, and gets the same
answer for the same facts:

- the thread machine (:class:`~agui_core.machine.thread.ThreadMachine`): the run it started and
  has not closed, and whether something it cannot see holds the thread (``held``: a run of
  this host, another host's lease in the store, or a save that won the race for the thread);
- the client machine (:class:`~agui_core.machine.client.ClientMachine`): the run its stream is
  still in, before it builds a resume the agent would refuse;
- the WebSocket transport: the run in flight on the connection (``scope="connection"``), which
  may be of another thread; the first run goes on.

A stranger's input is refused ``FORBIDDEN`` before this is asked (see
:mod:`agui_core.machine.ownership`): being told a thread is busy tells of the thread.
"""

from __future__ import annotations

from typing import Literal

from agui_core.errors import RemoteProtocolError, RunErrorCode

__all__ = ["Scope", "check_free"]

Scope = Literal["thread", "connection"]
"""What carries one run at a time: the thread, or the connection the input came on."""


def check_free(
    thread_id: str, run_id: str, *, running: str | None = None, held: bool = False, scope: Scope = "thread"
) -> None:
    """Raise ``THREAD_BUSY`` if a run is in the way of input ``run_id`` on ``thread_id``.

    ``running`` is the id of the run the caller knows to be in flight (on the thread, or on the
    connection for ``scope="connection"``), ``held`` whether something else holds the thread.
    The refusal names the input it refuses and says what to do: send it again once the run in
    the way has ended. Nothing is refused for the run in the way itself: it goes on.
    """
    if running is None and not held:
        return
    where = "on this connection" if scope == "connection" else f"on thread {thread_id!r}"
    holder = "another run" if running is None else f"run {running!r}"
    raise RemoteProtocolError(
        RunErrorCode.THREAD_BUSY,
        f"input {run_id!r} cannot start while {holder} is in progress {where}; send it again once that run has ended",
    )
