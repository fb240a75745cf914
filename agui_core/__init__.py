"""agui-core: AG-UI's human-in-the-loop run lifecycle, enforced.

The sans-IO layers are :mod:`agui_core.protocol` (the wire) and :mod:`agui_core.machine` (the
rules); this package re-exports the names most programs need from them.
"""

from agui_core.errors import (
    AguiError,
    InvalidEventError,
    InvalidInputError,
    LocalProtocolError,
    PayloadError,
    RemoteProtocolError,
    RunErrorCode,
)
from agui_core.machine import ThreadMachine, ThreadState
from agui_core.protocol import decode_event, decode_input, encode_event, encode_input

__all__ = [
    "AguiError",
    "InvalidEventError",
    "InvalidInputError",
    "LocalProtocolError",
    "PayloadError",
    "RemoteProtocolError",
    "RunErrorCode",
    "ThreadMachine",
    "ThreadState",
    "decode_event",
    "decode_input",
    "encode_event",
    "encode_input",
]
