"""The documents of the approval console: a principal's inbox and a thread's audit trail, as JSON.

The console (served by the HTTP transport at ``/console``) reads these; any other front end may
too. Both are in wire camelCase; interrupts are as they were announced. What the host keeps for
itself (an interrupt's continuation, a tool's parameter schema) is never in them.

Inbox: ``{"principal", "threads": [{"threadId", "runId", "raisedAt"?, "interrupts": [...],
"toolCalls": {toolCallId: {"name", "arguments"}}}]}``, newest first. ``toolCalls`` are the
proposals the open ``tool_call`` interrupts gate, as the server bound them (what runs on approval).

Audit trail: ``{"threadId", "owner", "entries": [...]}``, one entry per closed interrupt in the
order they were closed: ``interruptId``, ``reason``, ``message``?, ``raisedIn``, ``raisedAt``?,
``status`` (``resolved``, ``cancelled`` or ``expired``), ``payload``?, ``decidedBy``?,
``answeredIn``?, ``answeredAt``?, ``outcome``?, ``proposed``? and ``ran``? (``{"name",
"arguments"}``: the tool and arguments the host ran), ``result``? (the result the thread's
messages hold for the proposed call) and ``ranBy``?: ``"host"`` when the host ran the tool
(one of its approval-gated tools, so ``ran`` says with what), ``"agent"`` when the call is not
one of the host's tools and the agent's own code answered it (a framework's tool under an
adapter: the result is the agent's report; the host cannot vouch for the arguments).
``decidedBy`` is the principal whose resume carried the answer (the thread's owner, or an
approver under a decision policy), with ``decidedRoles``? (the roles its credentials carried)
and ``decidedKey``? (the key whose signature on the decision verified, where it was signed);
a line from before deciders were recorded names the owner; an expired interrupt was decided by
nobody. An interrupt a quorum decided (or that expired waiting for one) carries ``votes``: each
decider's answer in order, the deciding one last (``principal``, ``roles``, ``key``?,
``status``, ``payload``, ``metadata``?, ``runId``, ``at``). Each inbox entry of another's
thread (an approver's) carries ``owner``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from agui_core.machine.record import Proposal, ResolvedInterrupt, ThreadRecord, votes_to_json
from agui_core.protocol.codec import converter
from agui_core.protocol.types import Interrupt, ToolMessage
from agui_core.store.base import WaitingThread

__all__ = ["audit_document", "inbox_document"]


def _call(proposal: Proposal) -> dict[str, Any]:
    return {"name": proposal.name, "arguments": proposal.args}


def inbox_document(principal: str, threads: Sequence[WaitingThread]) -> dict[str, Any]:
    """``principal``'s inbox (see the module docstring)."""
    listed = []
    for waiting in threads:
        entry: dict[str, Any] = {
            "threadId": waiting.thread_id,
            "runId": waiting.interrupts[0].run_id,
            "interrupts": [converter.unstructure(o.interrupt, Interrupt) for o in waiting.interrupts],
            "toolCalls": {o.proposal.tool_call_id: _call(o.proposal) for o in waiting.interrupts if o.proposal},
        }
        if waiting.raised_at is not None:
            entry["raisedAt"] = waiting.raised_at
        if waiting.owner is not None and waiting.owner != principal:
            entry["owner"] = waiting.owner  # an approver's inbox: whose agent asks
        listed.append(entry)
    return {"principal": principal, "threads": listed}


def audit_document(
    record: ThreadRecord, entries: Sequence[ResolvedInterrupt], *, host_tools: Collection[str] = ()
) -> dict[str, Any]:
    """The audit trail of ``record``'s thread (see the module docstring); ``host_tools`` are the
    names of the host's own tools (``Host.tools``)."""
    results = {m.tool_call_id: m.content for m in record.messages if isinstance(m, ToolMessage)}
    listed = []
    for item in entries:
        interrupt = item.interrupt
        entry: dict[str, Any] = {
            "interruptId": interrupt.id,
            "reason": interrupt.reason,
            "raisedIn": item.run_id,
            "status": item.status,
        }
        optional: dict[str, Any] = {
            "message": interrupt.message,
            "raisedAt": item.raised_at,
            "answeredIn": item.answered_in,
            "answeredAt": item.answered_at,
            "outcome": item.outcome,
            # Lines from before deciders were recorded were the owner's: nobody else could decide.
            "decidedBy": item.decided_by or (record.owner if item.status != "expired" else None),
            "decidedRoles": list(item.decided_roles) or None,
            "decidedKey": item.decided_key,
            "proposed": _call(item.proposal) if item.proposal is not None else None,
            "ran": _call(item.ran) if item.ran is not None else None,
        }
        entry.update((key, value) for key, value in optional.items() if value is not None)
        if item.status == "resolved":
            entry["payload"] = item.payload
        call = item.ran or item.proposal
        if call is not None and call.tool_call_id in results:
            result = results[call.tool_call_id]
            entry["result"] = result if isinstance(result, str) else converter.unstructure(result)
            if item.ran is None and call.name not in host_tools:
                entry["ranBy"] = "agent"
        if item.ran is not None:
            entry["ranBy"] = "host"
        if item.votes:
            entry["votes"] = votes_to_json(item.votes)
        listed.append(entry)
    return {"threadId": record.thread_id, "owner": record.owner, "entries": listed}
