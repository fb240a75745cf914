"""What the thread machine asks the world to do, in the order it must be done.

Every input of :class:`~agui_core.machine.thread.ThreadMachine` returns a list of these. The
host carries them out one by one: a :class:`Persist` that comes before an :class:`Emit` must be
durable before that event leaves, which is how an interrupt is never announced before it is
saved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import attrs

from agui_core.protocol.events import Event
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput

if TYPE_CHECKING:
    from agui_core.machine.record import ThreadRecord

__all__ = ["Answer", "Effect", "Emit", "Persist", "StartAgent"]


@attrs.frozen(kw_only=True)
class Answer:
    """One resume entry bound to the interrupt it answers."""

    interrupt: Interrupt
    entry: ResumeEntry

    @property
    def approved(self) -> bool | None:
        """For an approval payload (``{"approved": bool}``), the decision; otherwise ``None``."""
        payload = self.entry.payload
        if self.entry.status != "resolved" or not isinstance(payload, dict):
            return None
        approved = payload.get("approved")
        return approved if isinstance(approved, bool) else None


@attrs.frozen(kw_only=True)
class Emit:
    """Send ``event`` to the client."""

    event: Event


@attrs.frozen(kw_only=True)
class Persist:
    """Save ``record``; its ``version`` is one more than the version last saved."""

    record: ThreadRecord


@attrs.frozen(kw_only=True)
class StartAgent:
    """Run the agent for ``run_input``; ``answers`` holds the resume, bound to its interrupts."""

    run_input: RunAgentInput
    answers: tuple[Answer, ...] = ()


Effect: TypeAlias = Emit | Persist | StartAgent
