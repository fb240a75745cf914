"""The sans-IO state machines of the interrupt lifecycle, and the stream ordering rules."""

from agui_core.machine.effects import Answer, Effect, Emit, Persist, Reject, StartAgent
from agui_core.machine.facts import InterruptHome
from agui_core.machine.ordering import StreamVerifier
from agui_core.machine.record import ThreadRecord, record_from_dict, record_to_dict
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transitions import MachineInput, ThreadState

__all__ = [
    "Answer",
    "Effect",
    "Emit",
    "InterruptHome",
    "MachineInput",
    "Persist",
    "Reject",
    "StartAgent",
    "StreamVerifier",
    "ThreadMachine",
    "ThreadRecord",
    "ThreadState",
    "record_from_dict",
    "record_to_dict",
]
