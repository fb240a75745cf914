"""Waiting in tests for something that happens in another task or thread, without timing asserts."""

from __future__ import annotations

from collections.abc import Callable

import anyio

__all__ = ["settled"]


async def settled(read: Callable[[], int], *, polls: int = 5, every: float = 0.05) -> int:
    """``read()`` once it stopped changing: the same value ``polls`` times in a row.

    Used to see where a producer stalls. A stall read too early only makes the value lower,
    so a test asserting an upper bound on it cannot pass by accident.
    """
    last, same = -1, 0
    while same < polls:
        await anyio.sleep(every)
        now = read()
        same = same + 1 if now == last else 0
        last = now
    return last
