"""Who may do what with a thread: the one home of ownership (SPEC section 9), sans-IO.

A thread belongs to the principal whose input created it. Every place that decides by owner,
the thread machine's admission of inputs, the host's reads, and the facts the host looks up
for another thread, asks these two functions, so that a stranger is treated the same way
everywhere: refused ``FORBIDDEN`` on a run (naming nothing of the thread), and shown nothing
on a read (the same as a thread that does not exist).
"""

from __future__ import annotations

from agui_core.errors import RemoteProtocolError, RunErrorCode

__all__ = ["FORBIDDEN_MESSAGE", "forbidden", "may_read", "may_write"]

FORBIDDEN_MESSAGE = "this thread belongs to another principal"
"""What a stranger's input is told: nothing of the thread."""


def may_write(owner: str | None, principal: str) -> bool:
    """Whether ``principal``'s input may touch a thread owned by ``owner`` (``None``: nobody yet,
    so the input that creates it claims it)."""
    return owner is None or owner == principal


def may_read(owner: str | None, principal: str) -> bool:
    """Whether ``principal`` may read a thread owned by ``owner`` (``None``: no such thread)."""
    return owner is not None and owner == principal


def forbidden() -> RemoteProtocolError:
    """The refusal of a stranger's input (``FORBIDDEN``), naming nothing of the thread."""
    return RemoteProtocolError(RunErrorCode.FORBIDDEN, FORBIDDEN_MESSAGE)
