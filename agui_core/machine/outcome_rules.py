"""What a client checks of an interrupt outcome, beyond the ordering rules. No I/O.

:func:`interrupt_outcome_fault` judges the interrupts a ``RUN_FINISHED`` announces as a client
can see them (SPEC sections 1, 3, 4 and 5): at least one, each an interrupt, ids unique in the
outcome and on the thread, a well-formed interrupt (:func:`~agui_core.machine.interrupts.check_interrupt`),
and a ``toolCallId`` naming a tool call the run closed or snapshotted. It returns the first
fault as ``(rule, message)``; :class:`~agui_core.machine.client.ClientMachine` turns it into the
:class:`~agui_core.errors.OrderingError` it raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from collections.abc import Set as AbstractSet

from agui_core.machine.interrupts import check_interrupt
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import Interrupt

__all__ = ["interrupt_outcome_fault"]


def interrupt_outcome_fault(
    interrupts: Sequence[Interrupt],
    *,
    thread_id: str,
    run_id: str | None,
    announced: AbstractSet[str],
    tool_calls: AbstractSet[str],
    validators: PayloadValidators,
) -> tuple[str, str] | None:
    """The first fault of an interrupt outcome, as ``(rule, message)``, or ``None``.

    ``announced`` holds the interrupt ids the thread announced before; ``tool_calls`` the tool
    calls the run closed or carried in its ``MESSAGES_SNAPSHOT``.
    """
    label = "RUN_FINISHED"
    if not interrupts:
        return "interrupt-empty", f"{label} with an interrupt outcome but no interrupts"
    seen: set[str] = set()
    for position, interrupt in enumerate(interrupts):
        if not isinstance(interrupt, Interrupt):
            return "outcome-invalid", f"{label} with interrupts[{position}] that is not an interrupt: {interrupt!r}"
        iid = interrupt.id
        where = f"{label} interrupt {iid!r}"
        if iid and iid in seen:
            return "interrupt-duplicate-id", f"{where} appears twice in the outcome"
        if iid and iid in announced:
            return (
                "interrupt-duplicate-id",
                f"{where} was already announced on thread {thread_id!r}; interrupt ids are unique per thread",
            )
        seen.add(iid)
        fault = check_interrupt(interrupt, validators)
        if fault is not None:
            if fault.rule == "interrupt-id-empty":
                where = f"{label} interrupts[{position}]"
            return fault.rule, f"{where}: {fault.why}"
        call_id = interrupt.tool_call_id
        if call_id is not None and call_id not in tool_calls:
            return (
                "interrupt-tool-call-unknown",
                f"{where} names tool call {call_id!r}, which run {run_id!r} neither "
                "closed with TOOL_CALL_END nor carried in its MESSAGES_SNAPSHOT",
            )
    return None
