"""Reading ``expiresAt``: one rule for both machines, so they agree with each other and with
the reference client's ``isInterruptExpired``."""

from __future__ import annotations

import re
from datetime import datetime

from agui_core.protocol.types import Interrupt

__all__ = ["is_interrupt_expired", "read_expires_at"]

_RFC3339 = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})",
    re.ASCII,
)


def read_expires_at(value: str) -> datetime:
    """The instant an ``expiresAt`` names, to the millisecond; ``ValueError`` if unreadable.

    The value must be an RFC 3339 date-time with a time zone (the forms a JavaScript ``Date``
    reads alike). Digits past the millisecond are dropped, as ``Date`` drops them, which never
    makes an instant later.
    """
    unreadable = ValueError(f"expiresAt {value!r} is not an RFC 3339 date-time with a time zone")
    if not isinstance(value, str) or _RFC3339.fullmatch(value) is None:
        raise unreadable
    try:
        # Python's ISO reader takes a lowercase "t" but not a lowercase "z".
        instant = datetime.fromisoformat(value[:-1] + "Z" if value[-1] == "z" else value)
    except ValueError:
        raise unreadable from None  # shaped right, but no such instant (hour 24, February 30)
    return instant.replace(microsecond=instant.microsecond // 1000 * 1000)


def is_interrupt_expired(interrupt: Interrupt, now: datetime) -> bool:
    """Whether ``interrupt`` can no longer be answered at ``now`` (the instant itself counts).

    No ``expiresAt`` never expires. Raises ``ValueError`` for an unreadable ``expiresAt``
    (an interrupt the machine accepted always has a readable one).
    """
    if interrupt.expires_at is None:
        return False
    return read_expires_at(interrupt.expires_at) <= now
