"""The sans-IO state machines of the interrupt lifecycle, and the stream ordering rules."""

# effects (so attrs) first: attrs brings in threading and time, the third-party chain the
# sans-IO test knows; the client machine's datetime import would otherwise be first to load time.
from agui_core.machine.effects import Answer, Effect, Emit, Persist, Reject, StartAgent  # noqa: I001
from agui_core.machine.client import ClientMachine, Reply
from agui_core.machine.facts import InterruptHome
from agui_core.machine.interrupts import BoundAnswer
from agui_core.machine.ordering import StreamVerifier
from agui_core.machine.record import ThreadRecord, record_from_dict, record_to_dict
from agui_core.machine.thread import ThreadLimits, ThreadMachine
from agui_core.machine.transitions import MachineInput, ThreadState

__all__ = [
    "Answer",
    "BoundAnswer",
    "ClientMachine",
    "Effect",
    "Emit",
    "InterruptHome",
    "MachineInput",
    "Persist",
    "Reject",
    "Reply",
    "StartAgent",
    "StreamVerifier",
    "ThreadLimits",
    "ThreadMachine",
    "ThreadRecord",
    "ThreadState",
    "record_from_dict",
    "record_to_dict",
]
