"""The async host: runs agents on thread machines over a store, and the agent API."""

from agui_core.runtime.capabilities import capabilities
from agui_core.runtime.clock import Clock, ManualClock, SystemClock
from agui_core.runtime.context import RunContext, TextStream
from agui_core.runtime.host import Agent, Host
from agui_core.runtime.tools import APPROVE_SCHEMA, APPROVE_WITH_EDITS_SCHEMA, Tool, ToolOutcome, tool

__all__ = [
    "APPROVE_SCHEMA",
    "APPROVE_WITH_EDITS_SCHEMA",
    "Agent",
    "Clock",
    "Host",
    "ManualClock",
    "RunContext",
    "SystemClock",
    "TextStream",
    "Tool",
    "ToolOutcome",
    "capabilities",
    "tool",
]
