"""A Strands agent you can try without a model provider: a scripted model, no network.

``agent`` is a real ``strands.Agent`` whose model is :class:`ScriptedModel`: on the first turn
it says a line and asks for ``send_email`` to Bob; once the tool's result is in, it says what
came of it. The :class:`~agui_core.adapters.strands.ToolApproval` hook gates ``send_email``
behind a person's approval (edits allowed), so the run ends with a ``tool_call`` interrupt.

Serve it (needs the ``strands`` extra: ``pip install -e '.[strands]'``)::

    .venv/bin/agui serve agui_core.examples.strands_offline:agent --http 127.0.0.1:8000

Replace :class:`ScriptedModel` with a real one (``strands.models.BedrockModel``, ...) and the
rest stays as it is. Not imported by :mod:`agui_core.examples`: only this module needs Strands.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from strands import Agent, tool
from strands.models.model import Model

from agui_core.adapters.strands import ToolApproval

__all__ = ["SENT", "ScriptedModel", "agent", "send_email"]

SENT: list[dict[str, str]] = []
"""Every email ``send_email`` sent in this process (nothing leaves it)."""


@tool
def send_email(to: str, subject: str) -> str:
    """Send an email to one person."""
    SENT.append({"to": to, "subject": subject})
    return f"sent to {to}: {subject}"


class ScriptedModel(Model):
    """A stand-in for a language model: asks for one ``send_email``, then reports the result."""

    def __init__(self) -> None:
        self.config: dict[str, Any] = {"model_id": "scripted"}

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any) -> Any:
        raise NotImplementedError("the scripted model gives no structured output")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[Any]:
        last = messages[-1]["content"] if messages else []
        results = [block["toolResult"] for block in last if "toolResult" in block]
        yield {"messageStart": {"role": "assistant"}}
        if results:  # the second turn: say what the tool did
            texts = [part.get("text", "") for result in results for part in result.get("content", [])]
            for event in text_block(f"The email: {results[0]['status']} ({' '.join(texts)})."):
                yield event
            yield {"messageStop": {"stopReason": "end_turn"}}
        else:  # the first turn: a line, then the tool call
            for event in text_block("I will email Bob."):
                yield event
            call = {"name": "send_email", "toolUseId": "tooluse_bob"}
            yield {"contentBlockStart": {"start": {"toolUse": call}}}
            yield {
                "contentBlockDelta": {
                    "delta": {"toolUse": {"input": json.dumps({"to": "bob@example.com", "subject": "Hi"})}}
                }
            }
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
        yield {
            "metadata": {"usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}, "metrics": {"latencyMs": 0}}
        }


def text_block(text: str) -> list[dict[str, Any]]:
    """The stream events of one block of text."""
    return [
        {"contentBlockStart": {"start": {}}},
        {"contentBlockDelta": {"delta": {"text": text}}},
        {"contentBlockStop": {}},
    ]


def agent() -> Agent:
    """A fresh Strands agent per run: the scripted model, ``send_email`` behind an approval."""
    return Agent(
        model=ScriptedModel(),
        tools=[send_email],
        hooks=[ToolApproval("send_email", allow_edits=True)],
        callback_handler=None,
        system_prompt="You send the emails you are asked to.",
    )
