"""What makes an interrupt well formed and an answer acceptable: checked once, for both machines.

:class:`~agui_core.machine.thread.ThreadMachine` (the agent side) and
:class:`~agui_core.machine.client.ClientMachine` (the client side) check the same interrupts
and the same answers; these rules live here so that the two cannot drift apart. Each machine
turns a fault into its own kind of error: the thread machine into a ``LocalProtocolError``
(the agent's bug) or a ``RUN_ERROR`` (the client's), the client machine into the rule a
producer broke or the code the agent would refuse an answer with.

Only the rules of one interrupt or one answer on its own are here; what depends on a run or a
thread (duplicate ids, which tool calls were closed, which interrupts are open) stays with
the machine that knows it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from agui_core.errors import PayloadError, ResponseSchemaError
from agui_core.machine.expiry import read_expires_at
from agui_core.protocol.frozen import maker
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import JSON, Interrupt, ResumeEntry

__all__ = [
    "CONFIRMATION_SCHEMA",
    "CORE_REASONS",
    "BoundAnswer",
    "InterruptFault",
    "answer_fault",
    "answer_schema",
    "check_answer_payload",
    "check_interrupt",
    "format_ids",
    "offers_edits",
]

CORE_REASONS = frozenset({"tool_call", "input_required", "confirmation"})
"""The reasons SPEC section 4 defines; ``core:`` is reserved for future ones."""

CONFIRMATION_SCHEMA: Mapping[str, Any] = {"type": "boolean"}
"""What a ``confirmation`` without a ``responseSchema`` is answered with (SPEC section 4)."""


@attrs.frozen(kw_only=True)
class BoundAnswer:
    """One resume entry bound to the open interrupt it answers, as a run carries it."""

    interrupt: Interrupt
    entry: ResumeEntry
    raised_in: str
    """The run that raised the interrupt."""


make_bound_answer = maker(BoundAnswer)
"""A :class:`BoundAnswer`, built as its class builds it, faster (see :mod:`agui_core.protocol.frozen`)."""


@attrs.frozen(kw_only=True)
class InterruptFault:
    """Why an interrupt is not well formed: the client machine's ``rule`` and a phrase saying why."""

    rule: str
    why: str
    schema_error: ResponseSchemaError | None = None
    """For ``interrupt-schema-invalid``: the compiler's error, as the agent side raises it."""


def format_ids(items: Iterable[str], *, shown: int = 5) -> str:
    """Ids for a message: the first few, quoted, and how many more (messages stay short)."""
    listed = list(items)
    text = ", ".join(repr(i) for i in listed[:shown])
    return text if len(listed) <= shown else f"{text} and {len(listed) - shown} more"


def offers_edits(schema: object) -> bool:
    """Whether a ``responseSchema`` declares ``properties.editedArgs``: the signal that the
    agent accepts approve-with-edits (SPEC section 5)."""
    if not isinstance(schema, Mapping):
        return False
    properties = schema.get("properties")
    return isinstance(properties, Mapping) and "editedArgs" in properties


def answer_schema(interrupt: Interrupt) -> Mapping[str, Any] | None:
    """The schema a resolved answer's payload must pass: the ``responseSchema``, or a boolean
    for a ``confirmation`` that declares none; ``None``: any payload."""
    schema = interrupt.response_schema
    if schema is None and interrupt.reason == "confirmation":
        return CONFIRMATION_SCHEMA
    return schema


def check_interrupt(interrupt: Interrupt, validators: PayloadValidators) -> InterruptFault | None:
    """The first rule ``interrupt`` breaks on its own, or ``None``.

    In order: an empty id, an empty reason, a reason in the reserved ``core:`` namespace, a
    ``tool_call`` without ``toolCallId``, an unreadable ``expiresAt``, ``metadata`` that is
    not an object, a ``responseSchema`` that does not compile.
    """
    if not interrupt.id:
        return InterruptFault(rule="interrupt-id-empty", why="the id is empty")
    reason = interrupt.reason
    if not reason:
        return InterruptFault(rule="interrupt-reason-empty", why="the reason is empty")
    if reason.startswith("core:"):
        return InterruptFault(
            rule="interrupt-reason-reserved",
            why=f"reason {reason!r}: the prefix 'core:' is reserved for future core reasons",
        )
    if reason == "tool_call" and interrupt.tool_call_id is None:
        return InterruptFault(
            rule="interrupt-tool-call-missing", why="reason 'tool_call' needs the toolCallId of the call it gates"
        )
    if interrupt.expires_at is not None:
        try:
            read_expires_at(interrupt.expires_at)
        except ValueError as exc:
            return InterruptFault(rule="interrupt-expires-at-invalid", why=str(exc))
    if interrupt.metadata is not None and not isinstance(interrupt.metadata, Mapping):
        return InterruptFault(rule="outcome-invalid", why="metadata must be an object")
    if interrupt.response_schema is not None:
        try:
            validators.check_schema(interrupt.id, interrupt.response_schema)
        except ResponseSchemaError as schema_error:
            return InterruptFault(rule="interrupt-schema-invalid", why=schema_error.message, schema_error=schema_error)
    return None


def answer_fault(status: object, payload: JSON, metadata: object) -> str | None:
    """Why an answer's shape is invalid (``INVALID_RESUME``), or ``None``.

    The status is ``resolved`` or ``cancelled``; a cancelled answer carries no payload;
    metadata, when present, is an object.
    """
    if status not in ("resolved", "cancelled"):
        return f"status {status!r} is neither 'resolved' nor 'cancelled'"
    if status == "cancelled" and payload is not None:
        return "a cancelled answer carries no payload"
    if metadata is not None and not isinstance(metadata, Mapping):
        return f"metadata must be an object, not {type(metadata).__name__}"
    return None


def check_answer_payload(
    interrupt: Interrupt,
    payload: JSON,
    validators: PayloadValidators,
    *,
    edit_parameters: Mapping[str, JSON] | None = None,
) -> None:
    """Raise :class:`~agui_core.errors.PayloadError` if ``payload`` cannot resolve ``interrupt``.

    ``editedArgs`` in the answer to a tool-bound interrupt is accepted only where the
    interrupt's schema offers edits (SPEC section 9) and, given the tool's
    ``edit_parameters``, only edits that pass them. Then the payload must pass
    :func:`answer_schema`.
    """
    schema = answer_schema(interrupt)
    if interrupt.tool_call_id is not None and isinstance(payload, Mapping) and "editedArgs" in payload:
        if not offers_edits(interrupt.response_schema):
            raise PayloadError(interrupt.id, "this approval does not offer edits", ("editedArgs",))
        if edit_parameters is not None:
            try:
                validators.validate(interrupt.id, edit_parameters, payload["editedArgs"])
            except PayloadError as exc:
                raise PayloadError(interrupt.id, exc.expected, ("editedArgs", *exc.path)) from None
    if schema is not None:
        validators.validate(interrupt.id, schema, payload)
