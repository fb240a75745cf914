"""Real Strands agents on a scripted model (no LLM, no network), for the adapter's tests.

Each ``*_agent`` is a factory (a fresh ``strands.Agent`` per call) and each ``*_adapter`` the
agui-core agent that hosts it, servable with ``agui serve tests.adapters.strands_agents:NAME``.
Every tool execution is appended to :data:`EXECUTIONS` and, when the environment variable
:data:`EXECUTIONS_ENV` names a file, to that file as one JSON line (a served host runs in
another process).
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from strands import Agent, ToolContext, tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.models.model import Model

from agui_core.adapters.strands import CANCELLED, StrandsAdapter, ToolApproval

__all__ = [
    "ANSWERS",
    "EXECUTIONS",
    "EXECUTIONS_ENV",
    "FILING_SCHEMA",
    "GATE",
    "HICCUPS",
    "SEEN",
    "approval_adapter",
    "broken_adapter",
    "careless_adapter",
    "chained_adapter",
    "exact_hook_adapter",
    "expiring_adapter",
    "flaky_adapter",
    "flaky_chained_adapter",
    "gated_adapter",
    "in_tool_adapter",
    "mail_adapter",
    "parallel_adapter",
    "stuck_adapter",
    "template",
    "template_adapter",
    "ungated_template",
]

EXECUTIONS_ENV = "AGUI_STRANDS_EXECUTIONS"
EXECUTIONS: list[dict[str, Any]] = []
"""Every tool execution of this process: ``{"tool": name, **arguments}``."""
ANSWERS: list[Any] = []
"""What each ``interrupt()`` of a hook or tool returned, in order (this process)."""

FILING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
    },
    "required": ["quarter", "year"],
    "additionalProperties": False,
}


def _executed(name: str, **args: Any) -> None:
    record = {"tool": name, **args}
    EXECUTIONS.append(record)
    path = os.environ.get(EXECUTIONS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps(record) + "\n")


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email to one person."""
    _executed("send_email", to=to, subject=subject)
    return f"sent to {to}: {subject}"


@tool(context=True)
def file_report(kind: str, tool_context: ToolContext) -> str:
    """File a report; asks a person for the quarter while it runs."""
    answer = tool_context.interrupt(
        "quarter", reason={"message": f"Which quarter is the {kind} report for?", "responseSchema": FILING_SCHEMA}
    )
    ANSWERS.append(answer)
    if answer is CANCELLED or not isinstance(answer, dict):
        return "nothing filed"
    _executed("file_report", kind=kind, **answer)
    tool_context.agent.state.set("filed", {"kind": kind, **answer})
    return f"filed {kind} for {answer['quarter']} {answer['year']}"


class ScriptedModel(Model):
    """Proposes ``calls`` (name, input) after some text; once tool results are in, sums them up."""

    def __init__(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self.calls = list(calls)
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model has no structured output")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        last = messages[-1]["content"] if messages else []
        results = [block["toolResult"] for block in last if "toolResult" in block]
        yield {"messageStart": {"role": "assistant"}}
        if results:
            said = "; ".join(
                f"{r['status']}: " + " ".join(c.get("text", "") for c in r.get("content", [])) for r in results
            )
            for text in ("Done. ", said):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": text}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:
            yield {"contentBlockStart": {"start": {}}}
            yield {"contentBlockDelta": {"delta": {"text": "On it."}}}
            yield {"contentBlockStop": {}}
            for name, args in self.calls:
                use_id = f"tooluse_{uuid.uuid4().hex[:12]}"
                yield {"contentBlockStart": {"start": {"toolUse": {"name": name, "toolUseId": use_id}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use" if self.calls else "end_turn"}}
        yield {
            "metadata": {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {"latencyMs": 0}}
        }


class ExactApproval(HookProvider):
    """A hook written against Strands alone: it runs ``send_email`` only for exactly ``{"approved": true}``."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

    def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        answer = event.interrupt("approval", reason={"message": "Send the release notes to the team?"})
        ANSWERS.append(answer)
        if answer != {"approved": True}:
            event.cancel_tool = "not approved"


def _agent(
    calls: Sequence[tuple[str, dict[str, Any]]],
    hooks: Sequence[HookProvider] = (),
    model: type[ScriptedModel] | None = None,
) -> Agent:
    return Agent(
        model=(model or ScriptedModel)(calls),
        tools=[send_email, file_report],
        hooks=list(hooks),
        callback_handler=None,
        system_prompt="You do what you are asked.",
    )


BOB = ("send_email", {"to": "bob@example.com", "subject": "Hi"})
TEAM = [("send_email", {"to": f"{who}@example.com", "subject": "Notes"}) for who in ("ann", "bob", "cy")]
REPORT = ("file_report", {"kind": "quarterly"})


def approval_agent() -> Agent:
    """One email to Bob behind an approval that offers edits."""
    return _agent([BOB], [ToolApproval("send_email", allow_edits=True)])


def in_tool_agent() -> Agent:
    """A report whose tool asks for the quarter while it runs (no approval before it)."""
    return _agent([REPORT])


def parallel_agent() -> Agent:
    """Three emails in one message: three approvals in one interrupt."""
    return _agent(TEAM, [ToolApproval("send_email")])


def chained_agent() -> Agent:
    """A report behind an approval; once approved, the tool asks for the quarter: two interrupts in a row."""
    return _agent([REPORT], [ToolApproval("file_report")])


def exact_hook_agent() -> Agent:
    """The reference script's agent: a hook that checks the payload it asked for."""
    return _agent([("send_email", {"to": "team@example.com", "subject": "release notes"})], [ExactApproval()])


approval_adapter = StrandsAdapter(approval_agent, allow_edits=True)
in_tool_adapter = StrandsAdapter(in_tool_agent)
parallel_adapter = StrandsAdapter(parallel_agent)
chained_adapter = StrandsAdapter(chained_agent)
exact_hook_adapter = StrandsAdapter(exact_hook_agent)
expiring_adapter = StrandsAdapter(approval_agent, ttl=timedelta(minutes=5))
template = approval_agent()
"""A Strands ``Agent`` itself, as ``agui serve`` may be handed one."""
template_adapter = StrandsAdapter(template)
"""The same agent handed over as an ``Agent`` (a template) rather than a factory."""


class CarelessApproval(HookProvider):
    """A hook that asks, then ignores the answer: a cancelled call must still not run."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

    def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        ANSWERS.append(event.interrupt("heads-up", reason="About to send an email."))


class GatedModel(ScriptedModel):
    """A scripted model that waits for :data:`GATE` before answering a tool result (a run held open)."""

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        if any("toolResult" in block for block in messages[-1]["content"]):
            await GATE.wait()
        async for chunk in super().stream(messages, tool_specs, system_prompt, **kwargs):
            yield chunk


class BrokenModel(ScriptedModel):
    """A model whose service fails."""

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        raise RuntimeError("the model service is down")
        yield  # an async generator


GATE = asyncio.Event()

SEEN: list[list[Any]] = []
"""The conversation each call of a :class:`SeeingModel` was given (this process)."""


class SeeingModel(ScriptedModel):
    """A scripted model that keeps a copy of every conversation it is given in :data:`SEEN`."""

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        SEEN.append(json.loads(json.dumps(messages, default=str)))
        async for chunk in super().stream(messages, tool_specs, system_prompt, **kwargs):
            yield chunk


def careless_agent() -> Agent:
    return _agent([BOB], [CarelessApproval()])


def gated_agent() -> Agent:
    return _agent([BOB], [ToolApproval("send_email")], GatedModel)


def broken_agent() -> Agent:
    return _agent([], model=BrokenModel)


careless_adapter = StrandsAdapter(careless_agent)
gated_adapter = StrandsAdapter(gated_agent)
broken_adapter = StrandsAdapter(broken_agent)


ungated_template = _agent([BOB], model=SeeingModel)
"""An ``Agent`` (not a factory) whose model calls a tool no hook gates: serving it must not run it."""


HICCUPS: list[str] = []
"""While not empty, a :class:`FlakyModel` fails (taking one entry) when it is handed tool results."""


class FlakyModel(ScriptedModel):
    """A scripted model whose service fails once per :data:`HICCUPS` entry, after a tool ran."""

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        if HICCUPS and any("toolResult" in block for block in messages[-1]["content"]):
            HICCUPS.pop()
            raise RuntimeError("the model service hiccuped")
        async for chunk in super().stream(messages, tool_specs, system_prompt, **kwargs):
            yield chunk


def flaky_agent() -> Agent:
    """One email to Bob behind an approval with edits, on a model that may fail after the tool ran."""
    return _agent([BOB], [ToolApproval("send_email", allow_edits=True)], FlakyModel)


def flaky_chained_agent() -> Agent:
    """The chained report (approval, then a question inside the tool) on a model that may fail."""
    return _agent([REPORT], [ToolApproval("file_report")], FlakyModel)


flaky_adapter = StrandsAdapter(flaky_agent, allow_edits=True)
flaky_chained_adapter = StrandsAdapter(flaky_chained_agent)


STUCK = asyncio.Event()
"""What :func:`stuck_email` waits for (never set by the tests: the run is cut while it waits)."""


@tool
async def stuck_email(to: str) -> str:
    """Send an email through a server that does not answer."""
    _executed("stuck_email", to=to, event="start")
    await STUCK.wait()
    _executed("stuck_email", to=to, event="done")
    return f"sent to {to}"


def stuck_agent() -> Agent:
    """One email behind an approval, through a tool that never returns."""
    return Agent(
        model=ScriptedModel([("stuck_email", {"to": "bob@example.com"})]),
        tools=[stuck_email],
        hooks=[ToolApproval("stuck_email")],
        callback_handler=None,
    )


stuck_adapter = StrandsAdapter(stuck_agent)


class Email(BaseModel):
    """An email, a nested model parameter: Strands refers to it by ``#/$defs/Email``."""

    to: str
    subject: str


@tool
def send_mail(mail: Email) -> str:
    """Send one email, given as a whole."""
    mail = Email.model_validate(mail)  # Strands validates the input, then hands a nested model over as a dict
    _executed("send_mail", to=mail.to, subject=mail.subject)
    return f"mailed {mail.to}: {mail.subject}"


def mail_agent() -> Agent:
    """One email as a model parameter, behind an approval that offers edits."""
    return Agent(
        model=ScriptedModel([("send_mail", {"mail": {"to": "bob@example.com", "subject": "Hi"}})]),
        tools=[send_mail],
        hooks=[ToolApproval("send_mail", allow_edits=True)],
        callback_handler=None,
    )


mail_adapter = StrandsAdapter(mail_agent, allow_edits=True)
