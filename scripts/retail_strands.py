"""The retail shop of ``agui_core.examples.retail`` as a Strands agent, for the side-by-side episodes.

A real Strands ``Agent`` on a scripted model (no LLM, no network) that reads the whole
conversation on every turn and decides the next step from it, deterministically: the request
in the first user message that makes one (``refund R-1001``, ...), then the shop's steps as
tool calls, each decided by the results before it. The same orders, forms and rules as the
shop; the person is asked with Strands' own ``interrupt()``:

- ``askReason`` and ``askAddress`` are tools that ask inside themselves
  (``ToolContext.interrupt``), with the shop's schemas; the address form declares
  ``expiresAt`` (``formTtlSeconds`` of the agent's state, default 600 s);
- ``confirmRefund`` asks for the confirmation over :data:`REFUND_LIMIT` the same way (no
  ``responseSchema``: a boolean, as the shop's ``ctx.confirm``);
- :class:`Approvals` is a hook that asks before each call of ``refundOrder`` (edits offered:
  ``editedArgs`` replace the input), ``cancelOrder``, ``updateAddress`` and ``placeOrder``;
  the exchange proposes ``refundOrder`` and ``placeOrder`` in one turn, so one run asks twice.

Every interrupt is written so that both servers can read it. Its reason is a dict with what
agui-core's adapter reads (``message``, ``responseSchema``, ``expiresAt``, ``reason``), and its
name is what ag-ui-strands publishes as the AG-UI reason: ``input_required`` for a form,
``confirmation``, and ``ag_ui:tool_call:<tool>`` (ag-ui-strands' reserved prefix, with the
``tool_name``, ``tool_input`` and ``tool_use_id`` it reads) for an approval. An answer is
accepted as sent or wrapped as ``{"response": ...}`` (how ag-ui-strands hands a form's answer
to a tool); a cancelled form reaches a tool as ``{"cancelled": true}`` from ag-ui-strands, and
is not run at all by agui-core.

What the episode did goes into the agent's state by a last tool, ``reportOutcome``, whose
arguments are the fields the task file's ``result`` names (``refunded``, ``amount``, ...);
the turn after it says nothing, so agui-core's adapter (whose run result is the agent's last
text) sends no result, and both servers are judged on their last ``STATE_SNAPSHOT``, as
ag-ui-langgraph is. agui-core sends ``agent.state``; ag-ui-strands sends only the input state
and what a ``ToolBehavior(state_from_result=...)`` derives, which :func:`reference_app` sets
for ``reportOutcome``. Tool results are numbered per execution in this process (a tool run
twice shows).

``agent`` is what ``agui serve scripts.retail_strands:agent`` serves (a factory: a fresh
agent per run); :func:`reference_app` puts the same agent, the same hook, behind
ag-ui-strands' FastAPI endpoint. (No postponed annotations: Strands reads the tools'.)
"""

import functools
import itertools
import json
import re
import uuid
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from agui_core.examples.retail import ADDRESS_SCHEMA, ORDERS, REASON_SCHEMA, REFUND_LIMIT

__all__ = ["GATED", "agent", "build", "reference_app"]

GATED = ("refundOrder", "cancelOrder", "updateAddress", "placeOrder")
"""The tools :class:`Approvals` asks about."""
EDITABLE = ("refundOrder",)
"""The tools whose approval offers edits (``editedArgs``)."""
APPROVAL_PREFIX = "ag_ui:tool_call:"
"""The interrupt name ag-ui-strands reads as a tool-call approval (its ``_TOOL_APPROVAL_NAME_PREFIX``)."""
REQUEST = re.compile(r"\b(refund|cancel|address|exchange|status)\b.*?\b(R-\d{4})\b", re.IGNORECASE | re.DOTALL)
REFUND_ARGS: dict[str, Any] = {
    "type": "object",
    "properties": {"orderId": {"type": "string"}, "amount": {"type": "number", "exclusiveMinimum": 0}},
    "required": ["orderId", "amount"],
    "additionalProperties": False,
}
APPROVE: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
    "not": {"required": ["editedArgs"]},
}
APPROVE_WITH_EDITS: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": REFUND_ARGS},
    "required": ["approved"],
}

_numbers = itertools.count(1)


def _number(prefix: str) -> str:
    return f"{prefix}-{next(_numbers):04d}"


def _unwrapped(answer: Any) -> Any:
    """The payload, as sent or wrapped as ``{"response": payload}``."""
    if isinstance(answer, dict) and set(answer) == {"response"}:
        return answer["response"]
    return answer


def _yes(answer: Any) -> bool:
    """Whether a confirmation's answer says yes (``{"approved": true}``, ``{"confirmed": true}`` or ``true``)."""
    if answer is True:
        return True
    return isinstance(answer, dict) and (answer.get("approved") is True or answer.get("confirmed") is True)


def _not_answered(answer: Any) -> dict[str, Any]:
    """A form's result with no usable answer (ag-ui-strands hands a cancellation over as ``{"cancelled": true}``)."""
    cancelled = isinstance(answer, dict) and answer.get("cancelled") is True
    return {"answered": False, "status": "cancelled" if cancelled else "invalid"}


# -- the conversation as the model reads it ---------------------------------------------------


def _content_text(result: Mapping[str, Any]) -> str:
    return "".join(str(c.get("text", "")) for c in result.get("content", []) if isinstance(c, dict))


def _decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


class Transcript:
    """What the model sees: the request, and the tool calls of the current turn with their results.

    The current turn starts at the last user message that says something (text and no tool
    result): as the shop's agent runs again from the top on every run of the thread, a new
    message starts the request over; resumes add only tool results, so the turn goes on.
    """

    def __init__(self, messages: list[Any]) -> None:
        self.request: tuple[str, str] | None = None
        self.calls: dict[str, dict[str, Any]] = {}
        """Tool name -> the last call of it in the current turn: its input, and its result once it came."""
        by_id: dict[str, dict[str, Any]] = {}
        for message in messages:
            blocks = [b for b in message.get("content", []) if isinstance(b, dict)]
            if message.get("role") == "user":
                texts = [str(b["text"]) for b in blocks if "text" in b]
                if texts and not any("toolResult" in b for b in blocks):
                    self.calls, by_id = {}, {}
                    found = None if self.request else REQUEST.search(" ".join(texts))
                    if found:
                        self.request = found.group(1).lower(), found.group(2).upper()
                for block in blocks:
                    if "toolResult" in block and block["toolResult"].get("toolUseId") in by_id:
                        by_id[block["toolResult"]["toolUseId"]]["result"] = block["toolResult"]
            else:
                for block in blocks:
                    if "toolUse" in block:
                        use = block["toolUse"]
                        call = {"input": use.get("input") or {}, "result": None}
                        by_id[use["toolUseId"]] = self.calls[use["name"]] = call

    def result(self, name: str) -> tuple[str, Any] | None:
        """``(status, decoded content)`` of the last call of ``name`` in this turn; ``None`` before it answered."""
        call = self.calls.get(name)
        if call is None or call["result"] is None:
            return None
        text = _content_text(call["result"])
        return call["result"].get("status", "success"), _decoded(text)

    def ran(self, name: str) -> Any:
        """The decoded result of ``name`` when it ran (``None`` when it did not, or was denied)."""
        found = self.result(name)
        return found[1] if found is not None and found[0] == "success" else None


Step = tuple[str, list[tuple[str, dict[str, Any]]]]
"""What the model says next: a text (may be empty) and the tool calls it proposes (none: the end)."""


def _refund(seen: Transcript, order_id: str, total: float) -> Step:
    if "askReason" not in seen.calls:
        return "", [("askReason", {"orderId": order_id})]
    answer = seen.ran("askReason")
    reason = answer.get("reason") if isinstance(answer, dict) else None
    if reason is None:
        return _report("No reason given, so no refund.", intent="refund", orderId=order_id, refunded=False)
    if total > REFUND_LIMIT:
        if "confirmRefund" not in seen.calls:
            return "", [("confirmRefund", {"orderId": order_id, "total": total})]
        confirmed = seen.ran("confirmRefund")
        if not (isinstance(confirmed, dict) and confirmed.get("confirmed") is True):
            return _report("Not refunded.", intent="refund", orderId=order_id, refunded=False)
    if "refundOrder" not in seen.calls:
        return "", [("refundOrder", {"orderId": order_id, "amount": total})]
    done = seen.ran("refundOrder")
    refunded = isinstance(done, dict) and "refundId" in done
    amount = done.get("amount") if refunded else None
    return _report(
        f"Refund {'executed' if refunded else 'not executed'}.",
        intent="refund",
        orderId=order_id,
        refunded=refunded,
        amount=amount,
        reason=reason,
    )


def _address(seen: Transcript, order_id: str) -> Step:
    if "askAddress" not in seen.calls:
        return "", [("askAddress", {"orderId": order_id})]
    answer = seen.ran("askAddress")
    if not (isinstance(answer, dict) and {"street", "city"} <= set(answer)):
        status = answer.get("status") if isinstance(answer, dict) else None
        status = status if isinstance(status, str) else "cancelled"
        return _report(
            f"The address stays as it was ({status}).",
            intent="address",
            orderId=order_id,
            addressChanged=False,
            form=status,
        )
    if "updateAddress" not in seen.calls:
        return "", [("updateAddress", {"orderId": order_id, "street": answer["street"], "city": answer["city"]})]
    changed = isinstance(seen.ran("updateAddress"), dict)
    return _report(
        "Address changed." if changed else "Address not changed.",
        intent="address",
        orderId=order_id,
        addressChanged=changed,
    )


def _report(text: str, **outcome: Any) -> Step:
    return text, [("reportOutcome", {"outcome": outcome})]


def decide(messages: list[Any]) -> Step:
    """The shop's next step from the conversation (see the module docstring)."""
    seen = Transcript(messages)
    if "reportOutcome" in seen.calls:
        return "", []  # reported: the end, with nothing said (agui-core then sends no result)
    if seen.request is None:
        return _report(
            "I can refund, cancel, exchange, re-address or look up an order: say which, and its id.", intent=None
        )
    intent, order_id = seen.request
    if "lookupOrder" not in seen.calls:
        return "", [("lookupOrder", {"orderId": order_id})]
    order = seen.ran("lookupOrder")
    if not (isinstance(order, dict) and order.get("found")):
        return _report(f"There is no order {order_id}.", intent=intent, orderId=order_id, found=False)
    total = float(order["total"])
    if intent == "status":
        return _report(
            f"Order {order_id} is {order['status']}.", intent="status", orderId=order_id, status=order["status"]
        )
    if intent == "refund":
        return _refund(seen, order_id, total)
    if intent == "address":
        return _address(seen, order_id)
    if intent == "cancel":
        if "cancelOrder" not in seen.calls:
            return "", [("cancelOrder", {"orderId": order_id})]
        cancelled = isinstance(seen.ran("cancelOrder"), dict)
        return _report(
            f"Cancellation {'executed' if cancelled else 'not executed'}.",
            intent="cancel",
            orderId=order_id,
            cancelled=cancelled,
        )
    if "refundOrder" not in seen.calls:
        return "", [("refundOrder", {"orderId": order_id, "amount": total}), ("placeOrder", {"item": order["item"]})]
    refunded = isinstance(seen.ran("refundOrder"), dict)
    reordered = isinstance(seen.ran("placeOrder"), dict)
    return _report(
        f"Refund {'executed' if refunded else 'not executed'}; new order {'placed' if reordered else 'not placed'}.",
        intent="exchange",
        orderId=order_id,
        refunded=refunded,
        reordered=reordered,
    )


# -- the Strands parts ------------------------------------------------------------------------


@functools.cache
def _parts() -> dict[str, Any]:
    from strands import Agent, ToolContext, tool
    from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
    from strands.models.model import Model

    @tool(name="lookupOrder")
    def lookup_order(orderId: str) -> dict[str, Any]:
        """Look an order up."""
        order = ORDERS.get(orderId)
        return {"found": False} if order is None else {"found": True, "orderId": orderId, **order}

    @tool(name="refundOrder")
    def refund_order(orderId: str, amount: float) -> dict[str, Any]:
        """Refund an amount on an order."""
        return {"refundId": _number("RF"), "orderId": orderId, "amount": amount}

    @tool(name="cancelOrder")
    def cancel_order(orderId: str) -> dict[str, Any]:
        """Cancel an order."""
        return {"cancellationId": _number("CX"), "orderId": orderId}

    @tool(name="updateAddress")
    def update_address(orderId: str, street: str, city: str) -> dict[str, Any]:
        """Ship an order to a new address."""
        return {"changeId": _number("AD"), "orderId": orderId, "street": street, "city": city}

    @tool(name="placeOrder")
    def place_order(item: str) -> dict[str, Any]:
        """Place a new order for an item."""
        return {"orderId": _number("R"), "item": item}

    @tool(name="askReason", context=True)
    def ask_reason(orderId: str, tool_context: ToolContext) -> dict[str, Any]:
        """Ask the person why the order should be refunded."""
        answer = _unwrapped(
            tool_context.interrupt(
                "input_required",
                reason={"message": f"Why should order {orderId} be refunded?", "responseSchema": dict(REASON_SCHEMA)},
            )
        )
        if isinstance(answer, dict) and isinstance(answer.get("reason"), str):
            return {"reason": answer["reason"]}
        return _not_answered(answer)

    @tool(name="askAddress", context=True)
    def ask_address(orderId: str, tool_context: ToolContext) -> dict[str, Any]:
        """Ask the person where the order should go (the form expires after ``formTtlSeconds``)."""
        ttl = tool_context.agent.state.get("formTtlSeconds")
        if not isinstance(ttl, int | float):
            ttl = 600
        expires = datetime.now(UTC) + timedelta(seconds=float(ttl))
        answer = _unwrapped(
            tool_context.interrupt(
                "input_required",
                reason={
                    "message": f"Where should order {orderId} go?",
                    "responseSchema": dict(ADDRESS_SCHEMA),
                    "expiresAt": expires.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                },
            )
        )
        if isinstance(answer, dict) and all(isinstance(answer.get(k), str) and answer[k] for k in ("street", "city")):
            return {"street": answer["street"], "city": answer["city"]}
        return _not_answered(answer)

    @tool(name="confirmRefund", context=True)
    def confirm_refund(orderId: str, total: float, tool_context: ToolContext) -> dict[str, Any]:
        """Ask the person to confirm a refund over the limit."""
        answer = _unwrapped(
            tool_context.interrupt(
                "confirmation",
                reason={
                    "reason": "confirmation",
                    "message": f"Order {orderId} comes to {total}: refund it all?",
                },
            )
        )
        return {"confirmed": _yes(answer)}

    @tool(name="reportOutcome", context=True)
    def report_outcome(outcome: dict[str, Any], tool_context: ToolContext) -> dict[str, Any]:
        """Record what the episode did in the agent's state."""
        for key, value in outcome.items():
            tool_context.agent.state.set(key, value)
        return dict(outcome)

    class Approvals(HookProvider):
        """Asks before each call of :data:`GATED`; edits of :data:`EDITABLE` replace the input."""

        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

        def before_tool_call(self, event: BeforeToolCallEvent) -> None:
            use = event.tool_use
            name = use["name"]
            if name not in GATED:
                return
            answer = _unwrapped(
                event.interrupt(
                    f"{APPROVAL_PREFIX}{name}",
                    reason={
                        # agui-core's adapter reads these two ...
                        "message": f"Run {name} with {json.dumps(use['input'], sort_keys=True)}?",
                        "responseSchema": APPROVE_WITH_EDITS if name in EDITABLE else APPROVE,
                        # ... and ag-ui-strands these three.
                        "tool_name": name,
                        "tool_input": dict(use["input"]),
                        "tool_use_id": use["toolUseId"],
                    },
                )
            )
            if not (isinstance(answer, dict) and answer.get("approved") is True):
                event.cancel_tool = f"The person did not approve {name}; it was not run."
                return
            edited = answer.get("editedArgs")
            if name in EDITABLE and isinstance(edited, dict):
                use["input"] = edited

    class ShopModel(Model):
        """A scripted model: :func:`decide` on the conversation, streamed as a model would."""

        def __init__(self) -> None:
            self.config: dict[str, Any] = {"model_id": "retail-script"}

        def update_config(self, **model_config: Any) -> None:
            self.config.update(model_config)

        def get_config(self) -> Any:
            return self.config

        def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(
            self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
        ) -> AsyncIterator[Any]:
            text, calls = decide(list(messages))
            yield {"messageStart": {"role": "assistant"}}
            if text:
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": text}}}
                yield {"contentBlockStop": {}}
            for name, args in calls:
                use = {"name": name, "toolUseId": f"tooluse_{uuid.uuid4().hex[:12]}"}
                yield {"contentBlockStart": {"start": {"toolUse": use}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use" if calls else "end_turn"}}
            usage = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
            yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 0}}}

    tools = [
        lookup_order,
        refund_order,
        cancel_order,
        update_address,
        place_order,
        ask_reason,
        ask_address,
        confirm_refund,
        report_outcome,
    ]

    def build(hooks: list[Any]) -> Any:
        return Agent(
            model=ShopModel(),
            tools=tools,
            hooks=hooks,
            callback_handler=None,
            system_prompt="You are the shop's assistant.",
        )

    return {"build": build, "Approvals": Approvals}


def build(*, with_hooks: bool = True) -> Any:
    """A fresh shop agent; ``with_hooks=False`` leaves :class:`Approvals` out (ag-ui-strands takes it apart)."""
    parts = _parts()
    return parts["build"]([parts["Approvals"]()] if with_hooks else [])


def agent() -> Any:
    """What ``agui serve scripts.retail_strands:agent`` serves: a fresh agent per run."""
    return build()


def reference_app() -> Any:
    """The same agent and hook behind ag-ui-strands' FastAPI endpoint, at ``/``.

    ag-ui-strands builds an agent per thread from the one it is given and takes the hooks
    apart; its state on the wire is the input state and what ``state_from_result`` derives,
    so ``reportOutcome``'s result (the outcome) is merged into it.
    """
    from ag_ui_strands import StrandsAgent, StrandsAgentConfig, ToolBehavior, add_strands_fastapi_endpoint
    from fastapi import FastAPI

    def outcome_state(context: Any) -> dict[str, Any] | None:
        data = context.result_data
        return dict(data) if isinstance(data, dict) else None

    config = StrandsAgentConfig(tool_behaviors={"reportOutcome": ToolBehavior(state_from_result=outcome_state)})
    app = FastAPI()
    served = StrandsAgent(build(with_hooks=False), name="shop", hooks=[_parts()["Approvals"]()], config=config)
    add_strands_fastapi_endpoint(app, served, "/")
    return app
