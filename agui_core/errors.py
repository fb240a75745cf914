"""Every exception agui-core raises, and the ``RUN_ERROR`` codes it puts on the wire.

The hierarchy says whose fault an error is, because that decides what happens next::

    AguiError
    ├── WireError                  bytes that are not a valid AG-UI object (code INVALID_INPUT)
    │   ├── InvalidInputError      ... while decoding a RunAgentInput (the client's fault)
    │   └── InvalidEventError      ... while decoding an event (the producer's fault)
    ├── EncodeError                an object that cannot be written as AG-UI JSON (our caller's fault)
    ├── PayloadError               a resume payload fails its interrupt's responseSchema
    │                              (code INVALID_PAYLOAD, the client's fault)
    ├── ResponseSchemaError        an interrupt's responseSchema cannot be compiled (the agent's fault)
    ├── OrderingError              an event out of order (SPEC section 7, the reference client's
    │                              verifyEvents rules); names the rule, the event and its index
    ├── RemoteProtocolError        the client broke a contract rule; carries the RUN_ERROR to send
    └── LocalProtocolError         the agent code broke a rule; raised at once, names state and event

Every error carries a ``code`` from :class:`RunErrorCode` and a message written for a person:
it names the JSON path (``$.resume[0].payload.year``), the ids involved and what was expected.
No error message ever contains a Python traceback; the traceback stays in the log.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = [
    "AguiError",
    "EncodeError",
    "InvalidEventError",
    "InvalidInputError",
    "LocalProtocolError",
    "OrderingError",
    "PayloadError",
    "RemoteProtocolError",
    "ResponseSchemaError",
    "RunErrorCode",
    "WireError",
]


class RunErrorCode(enum.StrEnum):
    """The ``code`` of a ``RUN_ERROR`` event, as SPEC section 8 lists them."""

    PENDING_INTERRUPTS = "PENDING_INTERRUPTS"
    PARTIAL_RESUME = "PARTIAL_RESUME"
    UNKNOWN_INTERRUPT_ID = "UNKNOWN_INTERRUPT_ID"
    THREAD_MISMATCH = "THREAD_MISMATCH"
    DUPLICATE_RESUME_ENTRY = "DUPLICATE_RESUME_ENTRY"
    INVALID_RESUME = "INVALID_RESUME"
    INVALID_PAYLOAD = "INVALID_PAYLOAD"
    INTERRUPT_EXPIRED = "INTERRUPT_EXPIRED"
    INTERRUPT_ALREADY_RESOLVED = "INTERRUPT_ALREADY_RESOLVED"
    THREAD_BUSY = "THREAD_BUSY"
    FORBIDDEN = "FORBIDDEN"
    INVALID_SIGNATURE = "INVALID_SIGNATURE"  # a decision a policy wants signed has no valid signature
    HISTORY_CONFLICT = "HISTORY_CONFLICT"
    INVALID_INPUT = "INVALID_INPUT"
    AMBIGUOUS_LEGACY_RESUME = "AMBIGUOUS_LEGACY_RESUME"  # a legacy resume the host cannot translate
    RATE_LIMITED = "RATE_LIMITED"  # a transport's refusal: the host never sees the input
    THREAD_TOO_LARGE = "THREAD_TOO_LARGE"  # the input would take the thread past its limits
    AGENT_ERROR = "AGENT_ERROR"


class AguiError(Exception):
    """Base class of every error agui-core raises on purpose."""

    code: RunErrorCode = RunErrorCode.AGENT_ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def format_path(path: tuple[str | int, ...]) -> str:
    """Render a JSON location as ``$.messages[2].content``."""
    out = ["$"]
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier():
            out.append(f".{part}")
        else:
            out.append(f"[{part!r}]")
    return "".join(out)


class WireError(AguiError):
    """Bytes that are not a valid AG-UI object.

    ``path`` is the JSON location of the first fault (a tuple of keys and indexes; ``()`` for
    the document itself) and ``expected`` says what should have been there.
    """

    code = RunErrorCode.INVALID_INPUT
    what = "AG-UI object"

    def __init__(self, expected: str, path: tuple[str | int, ...] = ()) -> None:
        self.path = path
        self.expected = expected
        super().__init__(f"invalid {self.what} at {format_path(path)}: {expected}")


class InvalidInputError(WireError):
    """A ``RunAgentInput`` that is not valid JSON or fails the wire schema."""

    what = "RunAgentInput"


class InvalidEventError(WireError):
    """An event that is not valid JSON or fails the wire schema of its type."""

    what = "event"


class EncodeError(AguiError):
    """An object that cannot be written as AG-UI JSON (for example, a value JSON cannot hold)."""

    code = RunErrorCode.AGENT_ERROR


class PayloadError(AguiError):
    """A resume payload that fails its interrupt's ``responseSchema``."""

    code = RunErrorCode.INVALID_PAYLOAD

    def __init__(self, interrupt_id: str, expected: str, path: tuple[str | int, ...] = ()) -> None:
        self.interrupt_id = interrupt_id
        self.path = path
        self.expected = expected
        where = format_path(path).replace("$", "payload", 1)
        super().__init__(f"resume payload for interrupt {interrupt_id!r} is invalid at {where}: {expected}")


class ResponseSchemaError(AguiError):
    """An interrupt declared a ``responseSchema`` that cannot be compiled: the agent's bug."""

    code = RunErrorCode.AGENT_ERROR

    def __init__(self, interrupt_id: str | None, reason: str) -> None:
        self.interrupt_id = interrupt_id
        self.reason = reason
        who = f"interrupt {interrupt_id!r}" if interrupt_id is not None else "an interrupt"
        super().__init__(f"the responseSchema of {who} cannot be compiled: {reason}")


class OrderingError(AguiError):
    """An event that breaks the stream's ordering rules.

    ``rule`` is a short stable name of the rule (``"run-not-started"``, ``"tool-call-open"``, ...),
    ``event`` the offending event object and ``index`` its position in the stream (0-based),
    when the checker knows it.
    """

    code = RunErrorCode.AGENT_ERROR

    def __init__(self, rule: str, message: str, *, event: object = None, index: int | None = None) -> None:
        where = f"event {index}: " if index is not None else ""
        super().__init__(f"{where}{message} [{rule}]")
        self.rule = rule
        self.event = event
        self.index = index


class RemoteProtocolError(AguiError):
    """The peer (the client) broke a contract rule.

    ``code`` is the ``RUN_ERROR`` code to send; the thread is left exactly as it was.
    """

    def __init__(self, code: RunErrorCode, message: str, **details: Any) -> None:
        super().__init__(message)
        self.code = code
        self.details = details


class LocalProtocolError(AguiError):
    """Our own side (the agent code driving the machine) broke a rule.

    Raised at once, so the bug shows where it is. ``state`` is the machine's state and
    ``event`` what the agent tried, when there is one.
    """

    code = RunErrorCode.AGENT_ERROR

    def __init__(self, message: str, *, state: object = None, event: object = None) -> None:
        super().__init__(message)
        self.state = state
        self.event = event
