"""What a host shows a thread's owner of it (a read model of its record)."""

from __future__ import annotations

from typing import Any

import attrs

from agui_core.protocol.codec import converter
from agui_core.protocol.types import JSON, Interrupt, Message

__all__ = ["ThreadView"]


@attrs.frozen(kw_only=True)
class ThreadView:
    """What a thread's owner needs to answer its open interrupts again (after a reload, say)."""

    thread_id: str
    state: str
    """The thread machine's state: ``idle``, ``running``, ``interrupted`` or ``resumed``."""
    interrupts: tuple[Interrupt, ...]
    """The interrupts waiting for an answer, as they were announced."""
    messages: tuple[Message, ...]
    agent_state: JSON
    run_id: str | None
    """The run that raised the open interrupts, or the run in progress."""
    waiting_on_others: tuple[Interrupt, ...] = ()
    """Under a decision policy: the thread's undecided interrupts that others are to answer
    (not the viewer), each with its quorum's tally where it has one."""

    def to_wire(self) -> dict[str, Any]:
        """The view as JSON, in wire camelCase (``runId`` left out when there is none)."""
        document: dict[str, Any] = {
            "threadId": self.thread_id,
            "state": self.state,
            "interrupts": [converter.unstructure(i, Interrupt) for i in self.interrupts],
            "messages": [converter.unstructure(m, Message) for m in self.messages],
            "agentState": self.agent_state,
        }
        if self.run_id is not None:
            document["runId"] = self.run_id
        if self.waiting_on_others:
            document["waitingOnOthers"] = [converter.unstructure(i, Interrupt) for i in self.waiting_on_others]
        return document
