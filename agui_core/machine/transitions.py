"""The thread machine's states, inputs and transition table: the only place a state is decided.

A thread is ``IDLE`` (no run, nothing open), ``RUNNING`` (a run without answers),
``INTERRUPTED`` (open interrupts, no run) or ``RESUMED`` (a run that carries answers). The
table below maps ``(state, input)`` to the next state; a pair missing from it is a bug of the
caller and raises :class:`~agui_core.errors.LocalProtocolError` naming both. The rules that do
not fit a table (coverage of open interrupts, expiry, replay) live in
:mod:`agui_core.machine.thread`, which asks this module for every state change.

The state diagram in ``docs/thread-machine.md`` is generated from :data:`TRANSITIONS` by
:func:`mermaid_diagram`; a test fails when the file is stale.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from agui_core.errors import LocalProtocolError

__all__ = ["TRANSITIONS", "MachineInput", "ThreadState", "mermaid_diagram", "next_state"]


class ThreadState(enum.Enum):
    """Where a thread stands between and during runs."""

    IDLE = "IDLE"
    RUNNING = "RUNNING"
    INTERRUPTED = "INTERRUPTED"
    RESUMED = "RESUMED"

    # Members are singletons compared by identity; hashing them the same way keeps the table
    # lookup on every event off Enum's Python-level __hash__.
    __hash__ = object.__hash__


class MachineInput(enum.Enum):
    """What can happen to a thread: an accepted client input, or an act of the agent's run."""

    START_RUN = "start_run"
    """An input without ``resume`` is accepted: a new run starts."""
    RESUME = "resume"
    """An input whose ``resume`` answers every open interrupt is accepted."""
    REPLAY = "replay"
    """An input repeats a resume already carried out: its recorded outcome is sent again."""
    VOTE = "vote"
    """An input answers interrupts that wait for several deciders (a quorum), and some of the
    thread's interrupts are still undecided: the votes are kept, and no run starts."""
    EXPIRE = "expire"
    """Every open interrupt has passed its ``expiresAt``; they are closed as expired."""
    EMIT = "emit"
    """The agent streams an event."""
    INTERRUPT = "interrupt"
    """The agent ends the run with interrupts."""
    FINISH = "finish"
    """The agent ends the run with success."""
    FAIL = "fail"
    """The run fails (``RUN_ERROR``); the thread goes back to where it stood before the run."""
    CANCEL = "cancel"
    """The host stops the run; it ends with the ``cancelled`` outcome and nothing pending."""

    __hash__ = object.__hash__


_S, _I = ThreadState, MachineInput

TRANSITIONS: Mapping[tuple[ThreadState, MachineInput], ThreadState] = {
    (_S.IDLE, _I.START_RUN): _S.RUNNING,
    (_S.IDLE, _I.REPLAY): _S.IDLE,
    (_S.INTERRUPTED, _I.RESUME): _S.RESUMED,
    (_S.INTERRUPTED, _I.REPLAY): _S.INTERRUPTED,
    (_S.INTERRUPTED, _I.VOTE): _S.INTERRUPTED,
    (_S.INTERRUPTED, _I.EXPIRE): _S.IDLE,
    (_S.RUNNING, _I.EMIT): _S.RUNNING,
    (_S.RUNNING, _I.INTERRUPT): _S.INTERRUPTED,
    (_S.RUNNING, _I.FINISH): _S.IDLE,
    (_S.RUNNING, _I.FAIL): _S.IDLE,
    (_S.RUNNING, _I.CANCEL): _S.IDLE,
    (_S.RESUMED, _I.EMIT): _S.RESUMED,
    (_S.RESUMED, _I.INTERRUPT): _S.INTERRUPTED,
    (_S.RESUMED, _I.FINISH): _S.IDLE,
    (_S.RESUMED, _I.FAIL): _S.INTERRUPTED,
    (_S.RESUMED, _I.CANCEL): _S.IDLE,
}
"""``(state, input) -> next state``. Rejected client inputs change nothing and are not listed."""

del _S, _I


def next_state(state: ThreadState, event: MachineInput) -> ThreadState:
    """The state after ``event`` in ``state``; a pair not in the table is an error naming both."""
    try:
        return TRANSITIONS[state, event]
    except KeyError:
        raise LocalProtocolError(
            f"{event.name} is not allowed in state {state.name}", state=state, event=event
        ) from None


def mermaid_diagram() -> str:
    """The table as a Mermaid state diagram, in table order."""
    lines = ["stateDiagram-v2", "    [*] --> IDLE"]
    for (state, event), target in TRANSITIONS.items():
        lines.append(f"    {state.name} --> {target.name}: {event.value}")
    return "\n".join(lines) + "\n"
