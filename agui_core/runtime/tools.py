"""Tools a host runs for its agent, some of them only after a person approves the call.

A tool is an async (or plain) function registered under the name the model calls it by.
A tool that needs approval is proposed to the client (``TOOL_CALL_START/ARGS/END``) and the
run interrupts with ``reason: tool_call``; on resume the host carries out the decision before
the agent runs again: approved runs it with the original arguments or the full
``editedArgs``, denied does not run it and says so in its result, cancelled does not run it
and sends no result.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal

import attrs

from agui_core.protocol.types import JSON

__all__ = [
    "APPROVE_SCHEMA",
    "APPROVE_WITH_EDITS_SCHEMA",
    "Tool",
    "ToolOutcome",
    "tool",
]

APPROVE_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
"""The answer a tool approval expects: ``{"approved": true|false}``."""

APPROVE_WITH_EDITS_SCHEMA: Mapping[str, JSON] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {"type": "object", "description": "Full replacement of the tool args. Not merged."},
    },
    "required": ["approved"],
}
"""The approve-with-edits pattern of SPEC section 5: ``editedArgs`` replaces the arguments whole."""


@attrs.frozen(kw_only=True)
class Tool:
    """A function the agent can call by ``name``; ``needs_approval`` gates it behind a person."""

    name: str
    function: Callable[..., Any]
    needs_approval: bool = False
    allow_edits: bool = True
    description: str = ""
    args_schema: Mapping[str, JSON] | None = None
    """The JSON Schema of the arguments, if known: an approval offers it as ``editedArgs``."""

    @property
    def approval_schema(self) -> Mapping[str, JSON]:
        """The ``responseSchema`` of this tool's approvals (SPEC section 5)."""
        if not self.allow_edits:
            return APPROVE_SCHEMA
        if self.args_schema is None:
            return APPROVE_WITH_EDITS_SCHEMA
        return {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}, "editedArgs": self.args_schema},
            "required": ["approved"],
        }

    async def invoke(self, args: Mapping[str, JSON]) -> JSON:
        """Call the function with ``args`` as keyword arguments; await it when it is async."""
        result = self.function(**args)
        if inspect.isawaitable(result):
            result = await result
        return result


def tool(
    name: str | None = None,
    *,
    needs_approval: bool = False,
    allow_edits: bool = True,
    args_schema: Mapping[str, JSON] | None = None,
) -> Callable[[Callable[..., Awaitable[JSON] | JSON]], Tool]:
    """Make a :class:`Tool` of a function: ``@tool("sendEmail", needs_approval=True)``."""

    def wrap(function: Callable[..., Awaitable[JSON] | JSON]) -> Tool:
        return Tool(
            name=name or function.__name__,
            function=function,
            needs_approval=needs_approval,
            allow_edits=allow_edits,
            description=inspect.getdoc(function) or "",
            args_schema=args_schema,
        )

    return wrap


@attrs.frozen(kw_only=True)
class ToolOutcome:
    """What became of one tool call, as the agent sees it on the run after the decision.

    ``status`` is ``executed`` (``result`` holds what the tool returned), ``denied`` (a person
    said no), ``cancelled`` (nobody decided: not run, no result sent), ``failed`` (the tool
    raised; ``error`` says what) or ``unknown`` (the host stopped while the tool ran; it is
    never run twice, so whether it took effect cannot be known).
    """

    tool_call_id: str
    name: str
    status: Literal["executed", "denied", "cancelled", "failed", "unknown"]
    args: Mapping[str, JSON]
    result: JSON = None
    error: str | None = None
    edited: bool = False
