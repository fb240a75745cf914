"""Short builders of the events and messages the ordering tests stream, on thread ``t``.

Each builds one event with the fewest fields the verifier needs; ``sub`` is the
``subagentRunId`` the event is attributed to (``None``: the parent agent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agui_core.protocol.events import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    ReasoningEncryptedValueEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from agui_core.protocol.types import (
    AssistantMessage,
    FunctionCall,
    Interrupt,
    RunAgentInput,
    RunFinishedInterruptOutcome,
    ToolCall,
)

__all__ = [
    "RE",
    "act",
    "actd",
    "assistant",
    "enc",
    "interrupt_outcome",
    "rf",
    "rs",
    "sa",
    "sd",
    "serr",
    "sf",
    "ss",
    "tc",
    "tca",
    "tce",
    "tcr",
    "tcs",
    "te",
    "ts",
]


def rs(run: str = "r1", messages: Sequence[Any] = ()) -> RunStartedEvent:
    run_input = RunAgentInput(thread_id="t", run_id=run, messages=tuple(messages))
    return RunStartedEvent(thread_id="t", run_id=run, input=run_input if messages else None)


def rf(run: str = "r1", outcome: Any = None) -> RunFinishedEvent:
    return RunFinishedEvent(thread_id="t", run_id=run, outcome=outcome)


RE = RunErrorEvent(message="boom")


def ts(mid: str = "m1", sub: str | None = None) -> TextMessageStartEvent:
    return TextMessageStartEvent(message_id=mid, role="assistant", subagent_run_id=sub)


def tc(mid: str = "m1", sub: str | None = None) -> TextMessageContentEvent:
    return TextMessageContentEvent(message_id=mid, delta="x", subagent_run_id=sub)


def te(mid: str = "m1", sub: str | None = None) -> TextMessageEndEvent:
    return TextMessageEndEvent(message_id=mid, subagent_run_id=sub)


def tcs(tid: str = "t1", sub: str | None = None, parent: str | None = None) -> ToolCallStartEvent:
    return ToolCallStartEvent(tool_call_id=tid, tool_call_name="search", parent_message_id=parent, subagent_run_id=sub)


def tca(tid: str = "t1", sub: str | None = None) -> ToolCallArgsEvent:
    return ToolCallArgsEvent(tool_call_id=tid, delta="{}", subagent_run_id=sub)


def tce(tid: str = "t1", sub: str | None = None) -> ToolCallEndEvent:
    return ToolCallEndEvent(tool_call_id=tid, subagent_run_id=sub)


def tcr(tid: str = "t1", mid: str = "tool-m1", sub: str | None = None) -> ToolCallResultEvent:
    return ToolCallResultEvent(message_id=mid, tool_call_id=tid, content="42", subagent_run_id=sub)


def ss(name: str = "plan", sub: str | None = None) -> StepStartedEvent:
    return StepStartedEvent(step_name=name, subagent_run_id=sub)


def sf(name: str = "plan", sub: str | None = None) -> StepFinishedEvent:
    return StepFinishedEvent(step_name=name, subagent_run_id=sub)


def sa(sid: str = "s1", parent: str | None = None) -> SubagentStartedEvent:
    return SubagentStartedEvent(subagent_run_id=sid, name="helper", parent_subagent_run_id=parent)


def sd(sid: str = "s1", outcome: Any = None) -> SubagentFinishedEvent:
    return SubagentFinishedEvent(subagent_run_id=sid, outcome=outcome)


def serr(sid: str = "s1") -> SubagentErrorEvent:
    return SubagentErrorEvent(subagent_run_id=sid, message="failed")


def act(mid: str = "a1", sub: str | None = None, replace: bool | None = None) -> ActivitySnapshotEvent:
    return ActivitySnapshotEvent(message_id=mid, activity_type="plan", content={}, replace=replace, subagent_run_id=sub)


def actd(mid: str = "a1", sub: str | None = None) -> ActivityDeltaEvent:
    return ActivityDeltaEvent(message_id=mid, activity_type="plan", patch=(), subagent_run_id=sub)


def enc(subtype: Any, eid: str, sub: str | None = None) -> ReasoningEncryptedValueEvent:
    return ReasoningEncryptedValueEvent(subtype=subtype, entity_id=eid, encrypted_value="opaque", subagent_run_id=sub)


def interrupt_outcome(tool_call_id: str = "t1") -> RunFinishedInterruptOutcome:
    return RunFinishedInterruptOutcome(interrupts=(Interrupt(id="i1", reason="tool_call", tool_call_id=tool_call_id),))


def assistant(mid: str, sub: str | None = None, calls: Sequence[str] = ()) -> AssistantMessage:
    tool_calls = tuple(ToolCall(id=c, function=FunctionCall(name="search", arguments="{}")) for c in calls)
    return AssistantMessage(id=mid, content="hi", tool_calls=tool_calls or None, subagent_run_id=sub)
