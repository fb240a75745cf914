"""decode_input: a resuming RunAgentInput decoded from JSON bytes, validated, typed.

Two sizes of the same conversation: 10 messages and 100 messages. Both carry every message
role a client sends (system, developer, user, assistant with tool calls, tool results), two
tools with parameter schemas, a context entry, a small state and a ``resume`` of 3 entries
(an approval, an approval with edited arguments, a cancellation with metadata).

- ours, fully built: :func:`agui_core.protocol.codec.decode_input` (JSON -> one walk that
  checks the wire schema and builds the attrs objects together, the compiled schema judging
  only what the walk declines), then every attribute that holds wire objects (messages, tools,
  context, resume) read once, as a host does: the thread machine reads the messages and the
  resume entries of every input it takes;
- ours, decode_input alone: the same call without the attribute reads. It builds everything
  too (an earlier decoder built those attributes on first use, and was timed lazily here); the
  row is kept so that a cost moved into the attribute reads would show;
- ag_ui pydantic: ``ag_ui.core.RunAgentInput.model_validate_json``, which builds everything.

All start from the same bytes. The check proves each reads the same document: each side's
object written back as JSON equals the input. The target is on the fully built figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from benchmarks.harness import Case, Comparison, Contender, Scenario

__all__ = ["SCENARIO", "run_input"]

_BUILT = "ours, fully built"
_ALONE = "ours, decode_input alone"


def _turn(n: int) -> list[dict[str, Any]]:
    """Five messages of one exchange in which the assistant calls a tool and reads its result."""
    call = f"tc-{n}"
    return [
        {
            "id": f"u-{n}",
            "role": "user",
            "content": f"Find the open invoices for customer {n} and summarise them.",
        },
        {
            "id": f"a-{n}",
            "role": "assistant",
            "content": "Looking them up.",
            "toolCalls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {
                        "name": "searchInvoices",
                        "arguments": orjson.dumps({"customer": n, "status": "open"}).decode(),
                    },
                }
            ],
        },
        {
            "id": f"t-{n}",
            "role": "tool",
            "toolCallId": call,
            "content": orjson.dumps(
                [{"invoice": f"INV-{n}-{i}", "amount": 100.5 * i, "due": "2026-05-01"} for i in range(3)]
            ).decode(),
        },
        {
            "id": f"s-{n}",
            "role": "assistant",
            "content": f"Customer {n} has 3 open invoices totalling 301.50 EUR.",
        },
        {
            "id": f"d-{n}",
            "role": "developer",
            "content": "Keep answers under 50 words.",
            "name": "policy",
        },
    ]


def run_input(message_count: int) -> dict[str, Any]:
    """The input as a JSON object, with ``message_count`` messages (a multiple of 5)."""
    messages: list[dict[str, Any]] = [
        {"id": "sys", "role": "system", "content": "You are a careful accounts assistant."}
    ]
    n = 0
    while len(messages) < message_count:
        messages.extend(_turn(n))
        n += 1
    messages = messages[:message_count]
    return {
        "threadId": "thread-accounts-17",
        "runId": "run-0193",
        "parentRunId": "run-0192",
        "state": {"customer": 17, "filters": {"status": "open"}, "page": 1},
        "messages": messages,
        "tools": [
            {
                "name": "searchInvoices",
                "description": "Search invoices by customer and status.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "customer": {"type": "integer"},
                        "status": {"type": "string", "enum": ["open", "paid"]},
                    },
                    "required": ["customer"],
                },
            },
            {
                "name": "sendEmail",
                "description": "Send an e-mail.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "to": {"type": "string"},
                        "subject": {"type": "string"},
                        "body": {"type": "string"},
                    },
                    "required": ["to", "subject", "body"],
                },
            },
        ],
        "context": [{"description": "user's locale", "value": "en-GB"}],
        "forwardedProps": {},
        "resume": [
            {"interruptId": "int-approve", "status": "resolved", "payload": {"approved": True}},
            {
                "interruptId": "int-email-edit",
                "status": "resolved",
                "payload": {
                    "approved": True,
                    "editedArgs": {
                        "to": "ap@example.com",
                        "subject": "Open invoices",
                        "body": "See the list below.",
                    },
                },
                "metadata": {"signature": "c2lnbmVk", "routing": None},
            },
            {
                "interruptId": "int-form",
                "status": "cancelled",
                "metadata": {"reason": "not needed"},
            },
        ],
    }


def _case(message_count: int) -> Case:
    from ag_ui.core import RunAgentInput as ReferenceInput

    from agui_core.protocol.codec import decode_input, encode_input

    document = run_input(message_count)
    data = orjson.dumps(document)
    validate_json = ReferenceInput.model_validate_json

    def ours_built() -> object:
        decoded = decode_input(data)
        # Each attribute read builds its wire objects (and keeps them): what any user of them pays.
        decoded.messages, decoded.tools, decoded.context, decoded.resume  # noqa: B018
        return decoded

    def ours_alone() -> object:
        return decode_input(data)

    def reference() -> object:
        return validate_json(data)

    def check() -> None:
        mine = orjson.loads(encode_input(decode_input(data)))
        built = ours_built()
        if orjson.loads(encode_input(built)) != document:  # type: ignore[arg-type]
            raise AssertionError("ours, fully built, does not read back the input it decoded")
        theirs = orjson.loads(validate_json(data).model_dump_json(by_alias=True))
        if mine != document:
            raise AssertionError(f"ours does not read back the input it decoded: {mine}")
        if theirs != document:
            raise AssertionError(f"ag_ui does not read back the input it decoded: {theirs}")

    return Case(
        name=f"{message_count} messages, 3 resume entries, {len(data) / 1024:.1f} KiB",
        contenders=(
            Contender(_BUILT, ours_built),
            Contender(_ALONE, ours_alone),
            Contender("ag_ui pydantic", reference),
        ),
        comparisons=(
            Comparison(ours=_BUILT, theirs="ag_ui pydantic", target=1.0),
            Comparison(ours=_ALONE, theirs="ag_ui pydantic", target=1.0),
        ),
        check=check,
    )


def _build() -> Sequence[Case]:
    return [_case(10), _case(100)]


SCENARIO = Scenario(
    name="decode_input",
    description="a resuming RunAgentInput decoded from JSON bytes",
    build=_build,
)
