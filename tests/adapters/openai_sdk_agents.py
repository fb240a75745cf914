"""Real OpenAI Agents SDK agents on the SDK's own scripted model (``agents.testing``; no network).

Each agent is an ``agents.Agent`` whose ``ScriptedModel`` answers every call from what it is
given: a user message gets a short text and the agent's scripted function calls; the outputs
of those calls get a summary of them. ``agui serve tests.adapters.openai_sdk_agents:NAME``
serves any of them. Every tool execution is appended to :data:`EXECUTIONS` and, when the
environment variable :data:`EXECUTIONS_ENV` names a file, to that file as one JSON line (a
served host runs in another process).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from typing import Any

from agents import Agent, ModelSettings, function_tool, set_tracing_disabled
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from agui_core.adapters.openai_agents import OpenAIAgentsAdapter

__all__ = [
    "EXECUTIONS",
    "EXECUTIONS_ENV",
    "HICCUPS",
    "edits_adapter",
    "flaky_adapter",
    "mailer",
    "parallel",
    "parallel_adapter",
]

set_tracing_disabled(True)  # no trace export: these agents never reach a network

EXECUTIONS_ENV = "AGUI_OPENAI_EXECUTIONS"
EXECUTIONS: list[dict[str, Any]] = []
"""Every tool execution of this process: ``{"tool": name, **arguments}``."""
HICCUPS: list[str] = []
"""Failures the model raises, one per call, once tool outputs are in (a model service that hiccups)."""


def _executed(tool: str, **args: Any) -> None:
    record = {"tool": tool, **args}
    EXECUTIONS.append(record)
    path = os.environ.get(EXECUTIONS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")


@function_tool(needs_approval=True)
def send_email(to: str, subject: str) -> str:
    """Send an email to one person."""
    _executed("send_email", to=to, subject=subject)
    return f"sent to {to}: {subject}"


@function_tool
def look_up(name: str) -> str:
    """Look up a person's address (needs no approval)."""
    _executed("look_up", name=name)
    return f"{name.lower()}@example.com"


def scripted(calls: Sequence[tuple[str, dict[str, Any]]], *, call_ids: str | None = None) -> ScriptedModel:
    """The SDK's scripted model, answering every call (its one step renews itself). With
    ``call_ids``, its calls are numbered afresh every round (``call_ids`` 0, 1, ...), as some
    model providers do, rather than given random ids."""
    model = ScriptedModel()

    def respond(call: ModelCall) -> Any:
        model.enqueue(ModelStep.respond(respond))
        items = call.input if isinstance(call.input, list) else [{"role": "user", "content": call.input}]
        outputs = []
        for item in reversed(items):
            if not (isinstance(item, dict) and item.get("type") == "function_call_output"):
                break
            outputs.insert(0, str(item.get("output")))
        if outputs:
            if HICCUPS:
                raise RuntimeError(HICCUPS.pop(0))
            return [assistant_message("Done: " + "; ".join(outputs))]
        proposed = [
            function_call(n, a, call_id=f"{call_ids}{i}" if call_ids else f"call_{uuid.uuid4().hex[:12]}")
            for i, (n, a) in enumerate(calls)
        ]
        return [assistant_message("On it."), *proposed]

    model.enqueue(ModelStep.respond(respond))
    return model


def build(name: str, calls: Sequence[tuple[str, dict[str, Any]]], *, call_ids: str | None = None) -> Agent[Any]:
    return Agent(
        name=name,
        instructions="You do what you are asked.",
        tools=[send_email, look_up],
        model=scripted(calls, call_ids=call_ids),
        model_settings=ModelSettings(parallel_tool_calls=True),
    )


BOB = ("send_email", {"to": "bob@example.com", "subject": "Hi"})
mailer = build("mailer", [BOB])
"""One approval: ``send_email`` to Bob (served as it is by ``agui serve``)."""
parallel = build(
    "parallel",
    [BOB, ("send_email", {"to": "ann@example.com", "subject": "Hello"}), ("look_up", {"name": "Cy"})],
)
"""Two approvals in one run, beside a call that needs none."""

edits_adapter = OpenAIAgentsAdapter(build("editable", [BOB]), allow_edits=True)
parallel_adapter = OpenAIAgentsAdapter(parallel)
flaky_adapter = OpenAIAgentsAdapter(build("flaky", [BOB]))
"""Its model fails after the approved tool ran while :data:`HICCUPS` holds a failure."""
