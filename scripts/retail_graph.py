"""The retail shop of ``agui_core.examples.retail`` as a LangGraph graph, for the side-by-side episodes.

Plain Python nodes, no LLM, no network: the same orders, the same requests read from the first
user message, the same forms (``input_required``), the confirmation over the limit, and
approvals bound to their tool calls (``reason: tool_call``, ``toolCallId``, approve-with-edits
schema). What the episode did is kept in the graph's state (``refunded``, ``amount``, ...), the
fields the task file's ``result`` names: ag-ui-langgraph's ``RUN_FINISHED`` carries no result,
so the runner judges such a server on its last ``STATE_SNAPSHOT``. Tool messages are numbered
per execution (a node that runs twice shows).

``build(TypedDict)`` as in ``scripts/langgraph_conformance_graph.py`` (ag-ui-langgraph needs
typing_extensions' on Python 3.11); ``graph`` is what ``agui serve scripts.retail_graph:graph``
serves.
"""

from __future__ import annotations

import itertools
import re
import typing
import uuid
from typing import Annotated, Any

from agui_core.examples.retail import ADDRESS_SCHEMA, ORDERS, REASON_SCHEMA, REFUND_LIMIT

__all__ = ["build"]  # and `graph` (see __getattr__)

APPROVE_WITH_EDITS = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
    "required": ["approved"],
}
CONFIRM = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}
REQUEST = re.compile(r"\b(refund|cancel|address|exchange|status)\b.*?\b(R-\d{4})\b", re.IGNORECASE | re.DOTALL)
FIELDS = ("intent", "orderId", "status", "refunded", "amount", "reason", "cancelled", "addressChanged", "reordered")


def build(typed_dict: Any = typing.TypedDict) -> Any:
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import interrupt

    fields: dict[str, Any] = {"messages": Annotated[list[AnyMessage], add_messages], "form": dict, "total": float}
    fields.update({name: Any for name in FIELDS})
    state = typed_dict("State", fields, total=False)
    numbers = itertools.count(1)

    def call(name: str, args: dict[str, Any]) -> tuple[AIMessage, str]:
        call_id = f"call-{uuid.uuid4().hex[:8]}"
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}]), call_id

    def understand(values: dict[str, Any]) -> dict[str, Any]:
        for message in values["messages"]:
            found = REQUEST.search(message.content) if isinstance(message, HumanMessage) else None
            if found:
                intent, order_id = found.group(1).lower(), found.group(2).upper()
                order = dict(ORDERS[order_id]) if order_id in ORDERS else None
                ai, call_id = call("lookupOrder", {"orderId": order_id})
                result = ToolMessage(content=str(order), tool_call_id=call_id)
                update: dict[str, Any] = {"messages": [ai, result], "intent": intent, "orderId": order_id}
                if order is not None:
                    update["total"] = float(order["total"])
                    if intent == "status":
                        update["status"] = order["status"]
                return update
        return {"intent": None}

    def ask_form(values: dict[str, Any]) -> dict[str, Any]:
        schema = ADDRESS_SCHEMA if values["intent"] == "address" else REASON_SCHEMA
        answer = interrupt({"reason": "input_required", "message": "Details, please.", "responseSchema": schema})
        return {"form": answer if isinstance(answer, dict) else {}}

    def confirm(values: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"reason": "confirmation", "message": "Refund it all?", "responseSchema": CONFIRM})
        return {} if isinstance(answer, dict) and answer.get("approved") is True else {"refunded": False}

    def gated(name: str, args_of: typing.Callable[[dict[str, Any]], dict[str, Any]], flag: str) -> Any:
        def propose(values: dict[str, Any]) -> dict[str, Any]:
            ai, _ = call(name, args_of(values))
            return {"messages": [ai]}

        def review(values: dict[str, Any]) -> dict[str, Any]:
            ai = next(m for m in reversed(values["messages"]) if isinstance(m, AIMessage) and m.tool_calls)
            proposal = ai.tool_calls[0]
            answer = interrupt(
                {
                    "reason": "tool_call",
                    "toolCallId": proposal["id"],
                    "message": f"Run {name}?",
                    "responseSchema": APPROVE_WITH_EDITS,
                }
            )
            if isinstance(answer, dict) and answer.get("approved") is True:
                args = answer.get("editedArgs") or proposal["args"]
                text = f"{name} #{next(numbers)} {args}"
                update: dict[str, Any] = {flag: True}
                if "amount" in args:
                    update["amount"] = args["amount"]
            else:
                text, update = f"{name} not run", {flag: False}
            return {"messages": [ToolMessage(content=text, tool_call_id=proposal["id"])], **update}

        return propose, review

    def order_args(values: dict[str, Any]) -> dict[str, Any]:
        return {"orderId": values["orderId"]}

    def refund_args(values: dict[str, Any]) -> dict[str, Any]:
        return {"orderId": values["orderId"], "amount": values["total"]}

    def address_args(values: dict[str, Any]) -> dict[str, Any]:
        return {"orderId": values["orderId"], **values["form"]}

    def item_args(values: dict[str, Any]) -> dict[str, Any]:
        return {"item": ORDERS[values["orderId"]]["item"]}

    steps = {
        "refund": gated("refundOrder", refund_args, "refunded"),
        "cancel": gated("cancelOrder", order_args, "cancelled"),
        "address": gated("updateAddress", address_args, "addressChanged"),
        "reorder": gated("placeOrder", item_args, "reordered"),
    }
    builder = StateGraph(state)
    builder.add_node("understand", understand)
    builder.add_node("ask_form", ask_form)
    builder.add_node("confirm", confirm)
    for step, (propose, review) in steps.items():
        builder.add_node(f"propose_{step}", propose)
        builder.add_node(f"review_{step}", review)
        builder.add_edge(f"propose_{step}", f"review_{step}")

    def after_understand(values: dict[str, Any]) -> str:
        intent = values.get("intent")
        if intent in ("refund", "address") and "total" in values:
            return "ask_form"
        return {"cancel": "propose_cancel", "exchange": "propose_refund"}.get(intent or "", END)

    def after_form(values: dict[str, Any]) -> str:
        if not values.get("form"):
            return "no_form"
        if values["intent"] == "address":
            return "propose_address"
        return "confirm" if values["total"] > REFUND_LIMIT else "propose_refund"

    def no_form(values: dict[str, Any]) -> dict[str, Any]:
        if values["intent"] == "address":
            return {"addressChanged": False, "form": "cancelled"}  # what the shop's result says
        return {"refunded": False}

    def after_confirm(values: dict[str, Any]) -> str:
        return END if values.get("refunded") is False else "propose_refund"

    def after_refund(values: dict[str, Any]) -> str:
        return "propose_reorder" if values["intent"] == "exchange" else "reason"

    def reason(values: dict[str, Any]) -> dict[str, Any]:
        return {"reason": values.get("form", {}).get("reason")}

    builder.add_node("no_form", no_form)
    builder.add_node("reason", reason)
    builder.add_edge(START, "understand")
    builder.add_conditional_edges("understand", after_understand)
    builder.add_conditional_edges("ask_form", after_form)
    builder.add_conditional_edges("confirm", after_confirm)
    builder.add_conditional_edges("review_refund", after_refund)
    for end in ("no_form", "reason", "review_cancel", "review_address", "review_reorder"):
        builder.add_edge(end, END)
    return builder.compile(checkpointer=InMemorySaver())


def __getattr__(name: str) -> Any:
    if name == "graph":
        return build()
    raise AttributeError(name)
