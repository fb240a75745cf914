"""What the host knows and the thread machine cannot: facts handed in with an input.

The machine decides every contract rule, but some rules depend on things outside one thread's
record: which thread raised an interrupt id the thread does not know (rule 1,
``THREAD_MISMATCH``), and who owns that thread (so a stranger's thread stays unnamed). The
host looks these up in its store and hands them to
:meth:`~agui_core.machine.thread.ThreadMachine.receive_input`; the machine decides.
"""

from __future__ import annotations

import attrs

__all__ = ["InterruptHome"]


@attrs.frozen(kw_only=True)
class InterruptHome:
    """The thread that raised an interrupt, and the principal that thread belongs to."""

    thread_id: str
    owner: str | None = None
    """The thread's owner (``None``: a thread no principal has claimed yet)."""
