"""Real Pydantic AI agents on Pydantic AI's own ``FunctionModel`` (a scripted model; no network).

The model answers every request from what it is given: a user prompt gets a short text and the
agent's scripted tool calls; tool returns get a summary of them. ``agui serve
tests.adapters.pydantic_ai_agents:NAME`` serves any of them. Every tool execution is appended
to :data:`EXECUTIONS` and, when the environment variable :data:`EXECUTIONS_ENV` names a file,
to that file as one JSON line (a served host runs in another process).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic_ai import Agent, CallDeferred
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agui_core.adapters.pydantic_ai import PydanticAIAdapter

__all__ = ["EXECUTIONS", "EXECUTIONS_ENV", "FILING_SCHEMA", "HICCUPS", "build", "edits_adapter", "mailer", "parallel"]

EXECUTIONS_ENV = "AGUI_PYDANTIC_AI_EXECUTIONS"
EXECUTIONS: list[dict[str, Any]] = []
HICCUPS: list[str] = []
"""Failures the model raises, one per request, once tool returns are in."""
FILING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]}},
    "required": ["quarter"],
    "additionalProperties": False,
}


def _executed(tool: str, **args: Any) -> None:
    record = {"tool": tool, **args}
    EXECUTIONS.append(record)
    path = os.environ.get(EXECUTIONS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")


def send_email(to: str, subject: str) -> str:
    """Send an email to one person."""
    _executed("send_email", to=to, subject=subject)
    return f"sent to {to}: {subject}"


def look_up(name: str) -> str:
    """Look up a person's address (needs no approval)."""
    _executed("look_up", name=name)
    return f"{name.lower()}@example.com"


def ask_quarter(kind: str) -> str:
    """Ask a person which quarter a report is for (a form)."""
    raise CallDeferred(
        metadata={"message": f"Which quarter is the {kind} report for?", "responseSchema": FILING_SCHEMA}
    )


def scripted(calls: Sequence[tuple[str, dict[str, Any]]]) -> FunctionModel:
    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for p in messages[-1].parts if isinstance(p, ToolReturnPart)]
        if returns:
            if HICCUPS:
                raise RuntimeError(HICCUPS.pop(0))
            return ModelResponse(parts=[TextPart("Done: " + "; ".join(p.model_response_str() for p in returns))])
        return ModelResponse(parts=[TextPart("On it."), *(ToolCallPart(n, a) for n, a in calls)])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        for index, part in enumerate(reply(messages, info).parts):
            if isinstance(part, TextPart):
                yield part.content
            elif isinstance(part, ToolCallPart):
                call = DeltaToolCall(
                    name=part.tool_name, json_args=part.args_as_json_str(), tool_call_id=part.tool_call_id
                )
                yield {index: call}

    return FunctionModel(reply, stream_function=stream)


def build(name: str, calls: Sequence[tuple[str, dict[str, Any]]]) -> Agent[None, str]:
    agent = Agent(scripted(calls), name=name, instructions="You do what you are asked.")
    agent.tool_plain(requires_approval=True)(send_email)
    agent.tool_plain(look_up)
    agent.tool_plain(ask_quarter)
    return agent


BOB = ("send_email", {"to": "bob@example.com", "subject": "Hi"})
mailer = build("mailer", [BOB])
"""One approval: ``send_email`` to Bob (served as it is by ``agui serve``)."""
parallel = build(
    "parallel",
    [BOB, ("send_email", {"to": "ann@example.com", "subject": "Hello"}), ("look_up", {"name": "Cy"})],
)
"""Two approvals in one run, beside a call that needs none."""
filing = build("filing", [BOB, ("ask_quarter", {"kind": "quarterly"})])
"""An approval and a form in one run."""
edits_adapter = PydanticAIAdapter(build("editable", [BOB]), allow_edits=True)
