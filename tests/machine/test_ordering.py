"""Tests of agui_core.machine.ordering: one test (or case) per rule of the reference verifier.

Each rejecting case feeds a stream whose every event but the last is accepted, and checks that
the last one raises ``OrderingError`` with the rule's name and the event's index.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import pytest

from agui_core.errors import OrderingError
from agui_core.machine.ordering import StreamVerifier
from agui_core.protocol.events import (
    CustomEvent,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageChunkEvent,
    ToolCallChunkEvent,
    UnknownEvent,
)
from agui_core.protocol.types import (
    ActivityMessage,
    ReasoningMessage,
    ResumeEntry,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    UserMessage,
)
from tests.machine.stream_blocks import (
    RE,
    act,
    actd,
    assistant,
    enc,
    interrupt_outcome,
    rf,
    rs,
    sa,
    sd,
    serr,
    sf,
    ss,
    tc,
    tca,
    tce,
    tcr,
    tcs,
    te,
    ts,
)


def feed(events: Sequence[Any]) -> StreamVerifier:
    """A verifier that accepted every event of ``events``."""
    verifier = StreamVerifier()
    for event in events:
        verifier.check(event)
    return verifier


def rejects(events: Sequence[Any], rule: str) -> OrderingError:
    """Every event but the last is accepted; the last breaks ``rule``."""
    verifier = feed(events[:-1])
    with pytest.raises(OrderingError) as caught:
        verifier.check(events[-1])
    error = caught.value
    assert error.rule == rule, str(error)
    assert error.index == len(events) - 1
    assert error.event is events[-1]
    assert str(error).endswith(f"[{rule}]")
    return error


# --- runs ----------------------------------------------------------------------------------


def test_a_stream_starts_with_run_started() -> None:
    rejects([ts()], "run-not-started")
    rejects([CustomEvent(name="x", value=1)], "run-not-started")
    feed([rs()])


def test_a_lone_run_error_may_open_a_stream_and_only_run_started_may_follow() -> None:
    verifier = feed([RE])
    assert verifier.run_errored and not verifier.run_active
    rejects([RE, RE], "run-errored")
    rejects([RE, rf()], "run-errored")
    feed([RE, rs(), rf()])


def test_nothing_but_run_started_follows_run_error() -> None:
    error = rejects([rs(), RE, ts()], "run-errored")
    assert "TEXT_MESSAGE_START" in error.message
    rejects([rs(), RE, CustomEvent(name="x", value=1)], "run-errored")


def test_nothing_but_run_started_or_run_error_follows_run_finished() -> None:
    rejects([rs(), rf(), ts()], "run-finished")
    rejects([rs(), rf(), rf()], "run-finished")
    rejects([rs(), rf(), StateSnapshotEvent(snapshot={})], "run-finished")
    # The reference accepts RUN_ERROR right after RUN_FINISHED; then only RUN_STARTED.
    verifier = feed([rs(), rf(), RE])
    assert verifier.run_errored
    rejects([rs(), rf(), RE, ts()], "run-errored")


def test_run_started_while_a_run_is_active() -> None:
    error = rejects([rs("r1"), rs("r2")], "run-already-active")
    assert "'r1'" in error.message
    rejects([rs("r1"), ts(), rs("r2")], "run-already-active")


def test_several_runs_one_after_another() -> None:
    verifier = feed([rs("r1"), ts(), te(), rf("r1"), rs("r2"), RE, rs("r3"), tcs(), tce(), rf("r3")])
    assert verifier.run_id == "r3"
    assert verifier.run_finished and not verifier.run_active
    assert verifier.index == 10


def test_run_flags_follow_the_stream() -> None:
    verifier = StreamVerifier()
    assert (verifier.run_active, verifier.run_finished, verifier.run_errored) == (False,) * 3
    assert verifier.run_id is None
    verifier.check(rs())
    assert verifier.run_active and verifier.run_id == "r1"
    verifier.check(rf())
    assert verifier.run_finished and not verifier.run_active
    verifier.check(rs("r2"))
    assert verifier.run_active and not verifier.run_finished


def test_state_custom_and_raw_events_are_free_inside_a_run() -> None:
    feed(
        [
            rs(),
            StateSnapshotEvent(snapshot={"a": 1}),
            StateDeltaEvent(delta=({"op": "add", "path": "/b", "value": 2},), subagent_run_id="s9"),
            CustomEvent(name="x", value=None, subagent_run_id="s9"),
            RawEvent(event={"any": "thing"}),
            rf(),
        ]
    )


# --- brackets ------------------------------------------------------------------------------


def test_text_messages_open_before_they_continue_and_never_twice() -> None:
    rejects([rs(), ts("m1"), ts("m1")], "text-message-already-open")
    rejects([rs(), tc("m1")], "text-message-not-open")
    rejects([rs(), te("m1")], "text-message-not-open")
    rejects([rs(), ts("m1"), te("m1"), tc("m1")], "text-message-not-open")
    error = rejects([rs(), ts("m1"), te("m2")], "text-message-not-open")
    assert str(error) == ("event 2: TEXT_MESSAGE_END for text message 'm2' which is not open [text-message-not-open]")
    verifier = feed([rs(), ts("m1"), ts("m2"), tc("m1"), te("m1")])
    assert set(verifier.open_text_messages) == {"m2"}
    # A closed id may be opened again.
    feed([rs(), ts("m1"), te("m1"), ts("m1"), te("m1"), rf()])


def test_tool_calls_open_before_they_continue_and_never_twice() -> None:
    rejects([rs(), tcs("t1"), tcs("t1")], "tool-call-already-open")
    error = rejects([rs(), tca("tc-1")], "tool-call-not-open")
    assert str(error) == ("event 1: TOOL_CALL_ARGS for tool call 'tc-1' which is not open [tool-call-not-open]")
    rejects([rs(), tce("t1")], "tool-call-not-open")
    rejects([rs(), tcs("t1"), tce("t1"), tca("t1")], "tool-call-not-open")
    verifier = feed([rs(), tcs("t1"), tcs("t2"), tca("t1"), tce("t1")])
    assert set(verifier.open_tool_calls) == {"t2"}
    assert set(verifier.closed_tool_calls_this_run) == {"t1"}


def test_reasoning_spans_and_messages_are_separate_brackets() -> None:
    rejects(
        [rs(), ReasoningStartEvent(message_id="r1"), ReasoningStartEvent(message_id="r1")],
        "reasoning-already-open",
    )
    rejects([rs(), ReasoningEndEvent(message_id="r1")], "reasoning-not-open")
    rejects(
        [
            rs(),
            ReasoningMessageStartEvent(message_id="r1"),
            ReasoningMessageStartEvent(message_id="r1"),
        ],
        "reasoning-message-already-open",
    )
    rejects(
        [rs(), ReasoningMessageContentEvent(message_id="r1", delta="x")],
        "reasoning-message-not-open",
    )
    rejects([rs(), ReasoningMessageEndEvent(message_id="r1")], "reasoning-message-not-open")
    # A span does not open a message of the same id, nor the other way round.
    rejects(
        [rs(), ReasoningStartEvent(message_id="r1"), ReasoningMessageEndEvent(message_id="r1")],
        "reasoning-message-not-open",
    )
    rejects(
        [rs(), ReasoningMessageStartEvent(message_id="r1"), ReasoningEndEvent(message_id="r1")],
        "reasoning-not-open",
    )
    # The canonical shape: one id names the span and the message inside it.
    verifier = feed(
        [
            rs(),
            ReasoningStartEvent(message_id="r1"),
            ReasoningMessageStartEvent(message_id="r1"),
            ReasoningMessageContentEvent(message_id="r1", delta="hmm"),
        ]
    )
    assert set(verifier.open_reasoning_spans) == {"r1"}
    assert set(verifier.open_reasoning_messages) == {"r1"}
    verifier.check(ReasoningMessageEndEvent(message_id="r1"))
    verifier.check(ReasoningEndEvent(message_id="r1"))
    verifier.check(rf())


def test_steps_are_keyed_by_owner_and_name() -> None:
    rejects([rs(), ss("plan"), ss("plan")], "step-already-open")
    rejects([rs(), ss("plan", "s1"), ss("plan", "s1")], "step-already-open")
    rejects([rs(), sf("plan")], "step-not-open")
    rejects([rs(), ss("plan"), sf("plan"), sf("plan")], "step-not-open")
    # The parent and a subagent may both have a step "tools" open.
    verifier = feed([rs(), ss("tools"), ss("tools", "s1")])
    assert set(verifier.open_steps) == {(None, "tools"), ("s1", "tools")}
    verifier.check(sf("tools", "s1"))
    verifier.check(sf("tools"))
    verifier.check(rf())


def test_a_step_is_finished_by_its_own_owner() -> None:
    error = rejects([rs(), ss("plan"), sf("plan", "s1")], "step-owner-mismatch")
    assert "the parent agent" in error.message
    rejects([rs(), ss("plan", "s1"), sf("plan")], "step-owner-mismatch")
    # The empty string is a subagent id like any other, not the parent.
    rejects([rs(), ss("plan"), sf("plan", "")], "step-owner-mismatch")
    feed([rs(), ss("plan", ""), sf("plan", ""), rf()])


# --- RUN_FINISHED while something is open -------------------------------------------------


@pytest.mark.parametrize(
    ("opened", "rule"),
    [
        ([ss("plan")], "step-open"),
        ([ss("plan", "s1")], "step-open"),
        ([ts("m1")], "text-message-open"),
        ([ReasoningMessageStartEvent(message_id="r1")], "reasoning-message-open"),
        ([ReasoningStartEvent(message_id="r1")], "reasoning-open"),
        ([tcs("t1")], "tool-call-open"),
        ([sa("s1")], "subagent-open"),
    ],
)
def test_run_finished_is_refused_while_something_is_open(opened: list[Any], rule: str) -> None:
    rejects([rs(), *opened, rf()], rule)
    verifier = feed([rs(), *opened])
    error = verifier.would_finish_ok()
    assert error is not None and error.rule == rule and error.index == len(opened) + 1


def test_run_finished_reports_the_open_kinds_in_the_reference_order() -> None:
    everything = [
        sa("s1"),
        tcs("t1"),
        ReasoningStartEvent(message_id="r1"),
        ReasoningMessageStartEvent(message_id="r1"),
        ts("m1"),
        ss("plan"),
    ]
    order = [
        "step-open",
        "text-message-open",
        "reasoning-message-open",
        "reasoning-open",
        "tool-call-open",
        "subagent-open",
    ]
    closers = [
        sf("plan"),
        te("m1"),
        ReasoningMessageEndEvent(message_id="r1"),
        ReasoningEndEvent(message_id="r1"),
        tce("t1"),
        sd("s1"),
    ]
    verifier = feed([rs(), *everything])
    for rule, closer in zip(order, closers, strict=True):
        error = verifier.would_finish_ok()
        assert error is not None and error.rule == rule
        verifier.check(closer)
    assert verifier.would_finish_ok() is None
    verifier.check(rf())


def test_would_finish_ok_names_what_is_open_and_changes_nothing() -> None:
    verifier = feed([rs(), tcs("t1"), tcs("t2")])
    error = verifier.would_finish_ok()
    assert error is not None
    assert str(error) == ("event 3: RUN_FINISHED while tool calls are still open: 't1', 't2' [tool-call-open]")
    assert verifier.run_active and verifier.index == 3
    verifier.check(tce("t1"))
    verifier.check(tce("t2"))
    assert verifier.would_finish_ok() is None
    assert verifier.run_active and verifier.index == 5


def test_would_finish_ok_after_the_run_ended() -> None:
    error = feed([rs(), rf()]).would_finish_ok()
    assert error is not None and error.rule == "run-finished"


# --- attribution ---------------------------------------------------------------------------


def test_a_tagged_continuation_must_agree_with_the_opener() -> None:
    # An untagged opener belongs to the parent agent: a tagged continuation disagrees.
    error = rejects([rs(), ts("m1"), tc("m1", "s1")], "owner-mismatch")
    assert str(error) == (
        "event 2: TEXT_MESSAGE_CONTENT for text message 'm1' attributed to subagent 's1', but "
        "the text message belongs to the parent agent [owner-mismatch]"
    )
    rejects([rs(), ts("m1", "s1"), te("m1", "s2")], "owner-mismatch")
    rejects([rs(), tcs("t1", "s1"), tca("t1", "s2")], "owner-mismatch")
    rejects([rs(), tcs("t1", "s1"), tce("t1", "")], "owner-mismatch")
    rejects(
        [
            rs(),
            ReasoningStartEvent(message_id="r1", subagent_run_id="s1"),
            ReasoningMessageStartEvent(message_id="r1", subagent_run_id="s2"),
        ],
        "owner-mismatch",
    )
    rejects(
        [
            rs(),
            ReasoningMessageStartEvent(message_id="r1", subagent_run_id="s1"),
            ReasoningMessageContentEvent(message_id="r1", delta="x", subagent_run_id="s2"),
        ],
        "owner-mismatch",
    )
    # An absent tag never disagrees.
    feed([rs(), ts("m1", "s1"), tc("m1"), te("m1"), tcs("t1", "s1"), tca("t1"), tce("t1"), rf()])


def test_owners_outlive_the_close_within_a_run() -> None:
    rejects([rs(), ts("m1", "s1"), te("m1", "s1"), ts("m1", "s2")], "owner-mismatch")
    # An untagged reopen keeps the first owner instead of handing the id to the parent.
    feed([rs(), ts("m1", "s1"), te("m1"), ts("m1"), tc("m1", "s1"), te("m1"), rf()])
    rejects([rs(), ts("m1", "s1"), te("m1"), ts("m1"), tc("m1", "s2")], "owner-mismatch")
    # An encrypted value may follow the close of its tool call, and is still checked.
    rejects([rs(), tcs("t1", "s1"), tce("t1"), enc("tool-call", "t1", "s2")], "owner-mismatch")


def test_owners_are_forgotten_at_the_next_run() -> None:
    feed([rs("r1"), ts("m1", "s1"), te("m1"), rf("r1"), rs("r2"), ts("m1", "s2"), te("m1"), rf("r2")])


def test_owners_are_kept_per_entity_kind() -> None:
    # A message and a tool call may both be called "x", with different owners.
    verifier = feed([rs(), ts("x", "s1"), te("x"), tcs("x", "s2"), tce("x")])
    verifier.check(enc("tool-call", "x", "s2"))
    verifier.check(enc("message", "x", "s1"))
    rejects(
        [rs(), ts("x", "s1"), te("x"), tcs("x", "s2"), tce("x"), enc("message", "x", "s2")],
        "owner-mismatch",
    )


def test_encrypted_values_are_checked_against_the_owner_their_subtype_names() -> None:
    # "message" covers reasoning messages too: the documented use of the subtype.
    rejects(
        [
            rs(),
            ReasoningMessageStartEvent(message_id="r1", subagent_run_id="s1"),
            enc("message", "r1", "s2"),
        ],
        "owner-mismatch",
    )
    # It opens and closes nothing, and an id nobody owns is not checked.
    verifier = feed([rs(), enc("message", "nobody", "s2"), enc("tool-call", "nobody", "s2")])
    assert not verifier.open_text_messages and not verifier.open_tool_calls
    # A subtype outside the schema falls back to the reasoning owners.
    rejects(
        [
            rs(),
            ReasoningStartEvent(message_id="r1", subagent_run_id="s1"),
            enc("other", "r1", "s2"),
        ],
        "owner-mismatch",
    )


def test_activity_deltas_follow_the_activity_owner() -> None:
    rejects([rs(), act("a1", "s1"), actd("a1", "s2")], "owner-mismatch")
    # A delta needs no snapshot before it.
    feed([rs(), actd("a1", "s2"), actd("a1"), rf()])
    # A replacing snapshot re-owns the activity; a non-replacing one leaves a known one alone.
    feed([rs(), act("a1", "s1"), act("a1", "s2"), actd("a1", "s2"), rf()])
    feed([rs(), act("a1", "s1"), act("a1", "s2", replace=True), actd("a1", "s2"), rf()])
    rejects([rs(), act("a1", "s1"), act("a1", "s2", replace=False), actd("a1", "s2")], "owner-mismatch")
    feed([rs(), act("a1", "s2", replace=False), actd("a1", "s2"), rf()])


def test_a_tool_call_belongs_to_the_message_that_carries_it() -> None:
    error = rejects([rs(), ts("m1", "s1"), tcs("t1", "s2", parent="m1")], "tool-call-parent-mismatch")
    assert "'m1'" in error.message and "subagent 's1'" in error.message
    rejects([rs(), ts("m1"), tcs("t1", "s1", parent="m1")], "tool-call-parent-mismatch")
    # Untagged, it inherits the message's owner.
    feed([rs(), ts("m1", "s1"), tcs("t1", parent="m1"), tca("t1", "s1"), tce("t1"), te("m1"), rf()])
    rejects([rs(), ts("m1", "s1"), tcs("t1", parent="m1"), tca("t1", "s2")], "owner-mismatch")
    # A parent message nobody owns yet constrains nothing.
    feed([rs(), tcs("t1", "s1", parent="unknown"), tce("t1"), rf()])
    # An untagged reopen under a message of another owner contradicts the call's owner.
    rejects(
        [rs(), tcs("t1"), tce("t1"), ts("m1", "s1"), tcs("t1", parent="m1")],
        "tool-call-parent-mismatch",
    )
    # A tagged reopen that disagrees with the call's first owner.
    rejects([rs(), tcs("t1"), tce("t1"), tcs("t1", "s1")], "owner-mismatch")


def test_messages_snapshot_records_owners_and_replaces_them() -> None:
    snapshot = MessagesSnapshotEvent(messages=(assistant("m1", "s1", calls=["t1"]),))
    rejects([rs(), snapshot, ts("m1", "s2")], "owner-mismatch")
    rejects([rs(), snapshot, tcs("t1", "s2")], "owner-mismatch")
    rejects([rs(), snapshot, tcs("t1"), tca("t1", "s2")], "owner-mismatch")
    feed([rs(), snapshot, ts("m1", "s1"), te("m1"), tcs("t1", "s1"), tce("t1"), rf()])
    # Authoritative: the snapshot's owner replaces the one on record.
    moved = MessagesSnapshotEvent(messages=(assistant("m1", "s2"),))
    feed([rs(), ts("m1", "s1"), te("m1"), moved, ts("m1", "s2"), te("m1"), rf()])
    # Each role seeds the owners of the kind it streams as.
    by_role = MessagesSnapshotEvent(
        messages=(
            ReasoningMessage(id="r1", content="...", subagent_run_id="s1"),
            ActivityMessage(id="a1", activity_type="plan", content={}, subagent_run_id="s1"),
        )
    )
    rejects(
        [rs(), by_role, ReasoningStartEvent(message_id="r1", subagent_run_id="s2")],
        "owner-mismatch",
    )
    rejects([rs(), by_role, actd("a1", "s2")], "owner-mismatch")
    feed([rs(), by_role, ts("r1", "s2"), te("r1"), ts("a1", "s2"), te("a1"), rf()])


def test_run_started_input_seeds_owners_that_nothing_else_claimed() -> None:
    history = [UserMessage(id="u1", content="hi"), assistant("m1", "s1", calls=["t1"])]
    rejects([rs(messages=history), ts("m1", "s2")], "owner-mismatch")
    rejects([rs(messages=history), tcs("t1", "s2")], "owner-mismatch")
    # The user message is the parent's: a tagged reopen of it disagrees.
    rejects([rs(messages=history), ts("u1", "s1")], "owner-mismatch")
    feed([rs(messages=history), ts("m1", "s1"), te("m1"), rf()])


def test_tool_call_result_mints_a_message_owned_by_its_tag() -> None:
    rejects([rs(), tcr("t1", "tm1", "s1"), ts("tm1", "s2")], "owner-mismatch")
    # The newest mint wins.
    feed([rs(), tcr("t1", "tm1", "s1"), tcr("t1", "tm1", "s2"), ts("tm1", "s2"), te("tm1"), rf()])
    # An untagged result mints a parent-owned message.
    rejects([rs(), ts("tm1", "s1"), te("tm1"), tcr("t1", "tm1"), ts("tm1", "s1")], "owner-mismatch")


def test_a_tag_may_name_a_subagent_that_finished_or_never_started() -> None:
    feed(
        [
            rs(),
            sa("s1"),
            sd("s1"),
            ts("m1", "s1"),
            te("m1", "s1"),
            ts("m2", "ghost"),
            te("m2"),
            rf(),
        ]
    )


# --- subagents -----------------------------------------------------------------------------


def test_subagent_lifecycle() -> None:
    rejects([rs(), sa("s1"), sa("s1")], "subagent-already-active")
    rejects([rs(), sa("s1"), sd("s1"), sa("s1")], "subagent-reused")
    rejects([rs(), sa("s1"), serr("s1"), sa("s1")], "subagent-reused")
    rejects([rs(), sd("s1")], "subagent-not-active")
    rejects([rs(), serr("s1")], "subagent-not-active")
    rejects([rs(), sa("s1"), sd("s1"), sd("s1")], "subagent-not-active")
    rejects([rs(), sa("s2", parent="s1")], "subagent-parent-not-started")
    # A parent that is active, or that already finished in this run, is fine.
    verifier = feed([rs(), sa("s1"), sa("s2", parent="s1"), sd("s2"), sa("s3", parent="s2")])
    assert set(verifier.open_subagents) == {"s1", "s3"}
    verifier.check(sd("s3"))
    verifier.check(serr("s1"))
    verifier.check(rf())


def test_a_suspended_subagent_continues_in_the_resumed_run() -> None:
    suspended = SubagentFinishedSuspendedOutcome(interrupt_ids=("i1",))
    feed(
        [
            rs("r1"),
            sa("s1"),
            tcs("t1", "s1"),
            tce("t1"),
            sd("s1", suspended),
            rf("r1", interrupt_outcome("t1")),
            # A new run forgets the finished ids: SPEC section 6's continuation.
            rs("r2"),
            sa("s1"),
            tcr("t1", "tm1", "s1"),
            sd("s1"),
            rf("r2"),
        ]
    )


def test_lifecycle_events_missing_their_required_fields() -> None:
    # Only an in-process producer that bypasses the types can build these.
    rejects([rs(), SubagentStartedEvent(subagent_run_id=None, name="x")], "subagent-missing-field")
    rejects([rs(), SubagentStartedEvent(subagent_run_id="s1", name=None)], "subagent-missing-field")
    rejects([rs(), sa("s1"), SubagentFinishedEvent(subagent_run_id=None)], "subagent-missing-field")
    rejects(
        [rs(), sa("s1"), SubagentErrorEvent(subagent_run_id="s1", message=None)],
        "subagent-missing-field",
    )


def test_subagent_finished_outcome_is_success_or_suspended() -> None:
    rejects([rs(), sa("s1"), sd("s1", RunFinishedCancelledOutcome())], "subagent-outcome-invalid")
    rejects(
        [rs(), sa("s1"), sd("s1", SubagentFinishedSuspendedOutcome(interrupt_ids=(1,)))],
        "subagent-outcome-invalid",
    )
    feed([rs(), sa("s1"), sd("s1", SubagentFinishedSuccessOutcome()), rf()])


# --- interrupts ----------------------------------------------------------------------------


def test_an_interrupted_run_and_its_resume() -> None:
    verifier = feed(
        [
            rs("r1"),
            ts("m1"),
            tc("m1"),
            te("m1"),
            tcs("t1", parent="m1"),
            tca("t1"),
            tce("t1"),
            StateSnapshotEvent(snapshot={"step": 1}),
            MessagesSnapshotEvent(messages=(assistant("m1", calls=["t1"]),)),
        ]
    )
    # What the thread machine asks: a tool_call interrupt names a closed call of this run.
    assert "t1" in verifier.closed_tool_calls_this_run
    assert verifier.would_finish_ok() is None
    verifier.check(rf("r1", interrupt_outcome("t1")))
    assert verifier.run_finished
    resume = RunAgentInput(
        thread_id="t",
        run_id="r2",
        resume=(ResumeEntry(interrupt_id="i1", status="resolved", payload={"approved": True}),),
    )
    verifier.check(RunStartedEvent(thread_id="t", run_id="r2", input=resume))
    assert not verifier.closed_tool_calls_this_run
    # verify.ts puts no ordering rule on TOOL_CALL_RESULT (it only records the owner of the
    # tool message it mints), so the resumed run answers the earlier run's tool call with a
    # result and no TOOL_CALL_START: the reference accepts it, and so do we.
    verifier.check(tcr("t1", "tm1"))
    verifier.check(rf("r2"))


def test_tool_call_result_for_a_tool_call_never_seen_is_accepted() -> None:
    feed([rs(), tcr("never-started"), rf()])
    # Even while a call of that id is still open.
    feed([rs(), tcs("t1"), tcr("t1"), tce("t1"), rf()])


def test_an_interrupt_after_a_tool_call_still_open_is_refused() -> None:
    rejects([rs(), tcs("t1"), tca("t1"), rf(outcome=interrupt_outcome("t1"))], "tool-call-open")


def test_a_cancelled_run_finishes_like_any_other() -> None:
    feed([rs(), rf(outcome=RunFinishedCancelledOutcome()), rs("r2"), rf("r2")])


def test_closed_tool_calls_this_run() -> None:
    verifier = feed([rs(), tcs("t1"), tce("t1"), tcs("t2")])
    assert set(verifier.closed_tool_calls_this_run) == {"t1"}
    # A reopened call is open again, not closed.
    verifier.check(tcs("t1"))
    assert set(verifier.closed_tool_calls_this_run) == set()
    verifier.check(tce("t1"))
    verifier.check(tce("t2"))
    assert set(verifier.closed_tool_calls_this_run) == {"t1", "t2"}
    # Tool calls of a run that errored are forgotten by the next run.
    verifier.check(RE)
    verifier.check(rs("r2"))
    assert set(verifier.closed_tool_calls_this_run) == set()


# --- chunk events --------------------------------------------------------------------------


def chunk(mid: str | None = "m1", delta: str | None = "x", sub: str | None = None, **kw: Any) -> TextMessageChunkEvent:
    return TextMessageChunkEvent(message_id=mid, delta=delta, subagent_run_id=sub, **kw)


def tool_chunk(
    tid: str | None = "t1",
    name: str | None = "search",
    delta: str | None = "{}",
    sub: str | None = None,
    **kw: Any,
) -> ToolCallChunkEvent:
    return ToolCallChunkEvent(tool_call_id=tid, tool_call_name=name, delta=delta, subagent_run_id=sub, **kw)


def test_chunks_open_a_stream_that_the_run_end_closes() -> None:
    verifier = feed([rs(), chunk("m1"), chunk(None), chunk(None, delta=None)])
    assert set(verifier.open_text_messages) == {"m1"}
    assert verifier.chunk_streams == {None: ("text", "m1")}
    assert verifier.would_finish_ok() is None
    verifier.check(rf())
    assert not verifier.open_text_messages and not verifier.chunk_streams


def test_a_chunk_with_a_new_id_closes_the_previous_stream_of_its_lane() -> None:
    verifier = feed([rs(), chunk("m1"), chunk("m2")])
    assert set(verifier.open_text_messages) == {"m2"}
    verifier = feed([rs(), chunk("m1"), tool_chunk("t1")])
    assert set(verifier.open_text_messages) == set()
    assert set(verifier.open_tool_calls) == {"t1"}


def test_an_explicit_event_closes_the_chunk_stream_of_its_own_lane() -> None:
    verifier = feed([rs(), chunk("m1"), chunk("m2", sub="s1"), CustomEvent(name="x", value=1)])
    assert set(verifier.open_text_messages) == {"m2"}
    verifier.check(StepStartedEvent(step_name="a", subagent_run_id="s1"))
    assert set(verifier.open_text_messages) == set()
    # Events that speak for no lane leave the streams alone.
    verifier = feed([rs(), chunk("m1"), RawEvent(event={}), actd("a1"), sa("s1"), enc("message", "m1")])
    assert set(verifier.open_text_messages) == {"m1"}
    # A subagent's terminal closes its lane; MESSAGES_SNAPSHOT closes every lane.
    verifier = feed([rs(), sa("s1"), chunk("m1", sub="s1"), chunk("m2")])
    verifier.check(sd("s1"))
    assert set(verifier.open_text_messages) == {"m2"}
    verifier.check(MessagesSnapshotEvent(messages=()))
    assert set(verifier.open_text_messages) == set()


def test_a_chunk_opened_message_is_not_closed_by_an_explicit_end() -> None:
    # The reference ends the chunk stream itself before the explicit END, which then names a
    # message that is no longer open.
    rejects([rs(), chunk("m1"), te("m1")], "text-message-not-open")
    rejects([rs(), tool_chunk("t1"), tce("t1")], "tool-call-not-open")


def test_chunk_rules() -> None:
    rejects([rs(), chunk(None)], "chunk-missing-id")
    rejects([rs(), tool_chunk(None)], "chunk-missing-id")
    rejects([rs(), tool_chunk("t1", name=None)], "chunk-missing-name")
    rejects([rs(), ReasoningMessageChunkEvent(delta="x")], "chunk-missing-id")
    rejects([rs(), chunk("m1", sub="s1"), chunk("m1", sub="s2")], "chunk-owner-mismatch")
    rejects([rs(), chunk("m1", sub="s1"), chunk("m2", sub="s2"), chunk(None)], "chunk-ambiguous")
    rejects([rs(), chunk("m1", role="user"), chunk(None, role="assistant")], "chunk-field-mismatch")
    rejects([rs(), chunk("m1"), chunk("m1", name="bob")], "chunk-field-mismatch")
    rejects([rs(), tool_chunk("t1"), tool_chunk(None, name="other")], "chunk-field-mismatch")
    rejects([rs(), tool_chunk("t1"), tool_chunk("t1", parent_message_id="m9")], "chunk-field-mismatch")
    # Repeating the opener's values is fine; an absent role means assistant.
    feed(
        [
            rs(),
            chunk("m1"),
            chunk("m1", role="assistant"),
            tool_chunk("t1"),
            tool_chunk(None, name="search"),
            rf(),
        ]
    )


def test_chunk_lanes_per_subagent() -> None:
    verifier = feed([rs(), chunk("m1"), chunk("m2", sub="s1"), chunk(None), chunk(None, sub="s1")])
    assert set(verifier.open_text_messages) == {"m1", "m2"}
    # An untagged, id-less chunk continues the sole stream of its kind when the parent has none.
    verifier = feed([rs(), chunk("m1", sub="s1"), chunk(None), chunk(None, sub="s1")])
    assert verifier.chunk_streams == {"s1": ("text", "m1")}
    verifier.check(rf())


def test_expanded_events_obey_every_rule() -> None:
    rejects([chunk("m1")], "run-not-started")
    rejects([rs(), rf(), chunk("m1")], "run-finished")
    rejects([rs(), ts("m1"), chunk("m1")], "text-message-already-open")
    error = rejects(
        [rs(), ts("m1", "s1"), tool_chunk("t1", sub="s2", parent_message_id="m1")],
        "tool-call-parent-mismatch",
    )
    assert "TOOL_CALL_START (expanded from TOOL_CALL_CHUNK)" in error.message
    rejects(
        [
            rs(),
            ReasoningMessageStartEvent(message_id="r1", subagent_run_id="s1"),
            ReasoningMessageEndEvent(message_id="r1"),
            ReasoningMessageChunkEvent(message_id="r1", delta="x", subagent_run_id="s2"),
        ],
        "owner-mismatch",
    )
    feed(
        [
            rs(),
            ReasoningMessageChunkEvent(message_id="r1", delta="x"),
            ReasoningMessageChunkEvent(delta="y"),
            rf(),
        ]
    )


def test_a_rejected_event_changes_nothing() -> None:
    verifier = feed([rs(), ts("m2"), chunk("m1")])
    before = (verifier.index, set(verifier.open_text_messages), verifier.chunk_streams)
    # This chunk would first close m1's stream, then fail to open m2 (already open).
    with pytest.raises(OrderingError) as caught:
        verifier.check(chunk("m2"))
    assert caught.value.rule == "text-message-already-open"
    assert (verifier.index, set(verifier.open_text_messages), verifier.chunk_streams) == before
    with pytest.raises(OrderingError):
        verifier.check(rs("r2"))
    assert verifier.run_active and verifier.run_id == "r1"
    with pytest.raises(OrderingError):
        verifier.check(sf("nope"))
    verifier.check(te("m2"))
    verifier.check(rf())


def test_would_accept_is_a_dry_run() -> None:
    verifier = feed([rs(), ts("m1")])
    assert verifier.would_accept(tc("m1")) is None
    error = verifier.would_accept(tc("m2"))
    assert error is not None and error.rule == "text-message-not-open" and error.index == 2
    assert verifier.would_accept(te("m1")) is None
    assert set(verifier.open_text_messages) == {"m1"} and verifier.index == 2


# --- unknown events ------------------------------------------------------------------------


def test_unknown_events_are_ignored_but_keep_their_place() -> None:
    unknown = UnknownEvent(type="FUTURE_THING", data={"type": "FUTURE_THING"})
    verifier = feed([unknown, rs(), unknown, rf(), unknown])
    assert verifier.index == 5 and verifier.run_finished
    error = rejects([unknown, rs(), unknown, tca("t1")], "tool-call-not-open")
    assert error.index == 3


# --- sans-IO ---------------------------------------------------------------------------------

_IO_MODULES = (
    "asyncio",
    "anyio",
    "socket",
    "sqlite3",
    "threading",
    "time",
    "websockets",
    "selectors",
)


def _modules_after(*imports: str) -> dict[str, list[str]]:
    """The I/O modules a fresh interpreter holds at start and after each of ``imports``."""
    code = (
        "import sys\n"
        f"io = {list(_IO_MODULES)!r}\n"
        "out = {'start': sorted(m for m in io if m in sys.modules)}\n"
        f"for name in {list(imports)!r}:\n"
        "    __import__(name)\n"
        "    out[name] = sorted(m for m in io if m in sys.modules)\n"
        "import json\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    result: dict[str, list[str]] = json.loads(done.stdout)
    return result


def test_ordering_imports_no_io_module() -> None:
    seen = _modules_after("attrs", "agui_core.machine.ordering")
    # The interpreter itself loads `time` before any user code runs (zipimport needs it), and
    # attrs imports `threading` (attr._compat keeps a threading.local for reprs). Neither is
    # brought in by the machine layer; nothing else is loaded at all.
    assert set(seen["start"]) <= {"time"}
    assert set(seen["attrs"]) - set(seen["start"]) <= {"threading"}
    assert seen["agui_core.machine.ordering"] == seen["attrs"]
