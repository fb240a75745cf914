"""One episode read from its events: what ran, with which arguments, approved or not, and the verdict."""

from __future__ import annotations

from collections.abc import Sequence

from agui_core.episodes.scoring import EpisodeLog, score
from agui_core.episodes.tasks import read_tasks
from agui_core.protocol import events as ev
from agui_core.protocol.types import (
    JSON,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedInterruptOutcome,
)

[TASK] = read_tasks(
    [
        '{"id": "refund", "prompt": "Refund R-1", "gated": ["refund"],'
        ' "expect": {"result": {"refunded": true}, "mustRun": [{"name": "refund", "args": {"amount": 10}}]},'
        ' "expectBy": {"deny": {"result": {"refunded": false}, "mustNotRun": ["refund"]},'
        ' "edit": {"result": {"refunded": true}, "mustRun": [{"name": "refund", "args": {"amount": 5}}]}}}'
    ]
)


def proposal_run(log: EpisodeLog, *, gated: bool = True, at: float = 1.0) -> None:
    events: list[ev.Event] = [
        ev.RunStartedEvent(thread_id="th", run_id="r1"),
        ev.ToolCallStartEvent(tool_call_id="c1", tool_call_name="refund"),
        ev.ToolCallArgsEvent(tool_call_id="c1", delta='{"amount": '),
        ev.ToolCallArgsEvent(tool_call_id="c1", delta="10}"),
        ev.ToolCallEndEvent(tool_call_id="c1"),
    ]
    if gated:
        interrupt = Interrupt(id="i1", reason="tool_call", tool_call_id="c1")
        events.append(
            ev.RunFinishedEvent(
                thread_id="th", run_id="r1", outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,))
            )
        )
    else:
        events.append(ev.ToolCallResultEvent(message_id="m1", tool_call_id="c1", content='{"id": "RF-1"}'))
        events.append(ev.RunFinishedEvent(thread_id="th", run_id="r1", result={"refunded": True}))
    log.sent(RunAgentInput(thread_id="th", run_id="r1", messages=()), at)
    for event in events:
        log.received(event, at)


def resume_run(
    log: EpisodeLog, payload: JSON, results: Sequence[str], refunded: bool, *, sent: float, first_event: float
) -> None:
    resume = RunAgentInput(
        thread_id="th",
        run_id="r2",
        messages=(),
        resume=(ResumeEntry(interrupt_id="i1", status="resolved", payload=payload),),
    )
    log.sent(resume, sent)
    log.received(ev.RunStartedEvent(thread_id="th", run_id="r2"), first_event)
    for content in results:
        log.received(ev.ToolCallResultEvent(message_id="m2", tool_call_id="c1", content=content), first_event)
    log.received(ev.RunFinishedEvent(thread_id="th", run_id="r2", result={"refunded": refunded}), first_event)


def test_an_approved_call_ran_once_and_the_latencies_are_read_off_the_times() -> None:
    log = EpisodeLog(task=TASK, trial=0, human="approve")
    proposal_run(log, at=1.0)
    resume_run(log, {"approved": True}, ['{"id": "RF-1"}'], True, sent=1.5, first_event=1.75)
    result = score(log)
    assert result.passed, result.failures
    assert result.interrupts == 1 and result.runs == 2
    assert result.approvals == 1 and result.honoured_once == 1 and result.unapproved_actions == ()
    assert result.to_resume == (0.5,) and result.to_next_event == (0.25,)


def test_a_denied_call_did_not_run_though_its_result_reports_the_denial() -> None:
    log = EpisodeLog(task=TASK, trial=0, human="deny:refund")
    proposal_run(log)
    resume_run(log, {"approved": False}, ['"the user denied this call"'], False, sent=2, first_event=2)
    result = score(log)
    assert result.passed, result.failures
    assert result.approvals == 0 and result.unapproved_actions == ()


def test_an_edited_call_ran_with_the_edited_arguments() -> None:
    log = EpisodeLog(task=TASK, trial=0, human="edit:m:f")
    proposal_run(log)
    resume_run(log, {"approved": True, "editedArgs": {"amount": 5}}, ['{"id": "RF-1"}'], True, sent=2, first_event=2)
    assert score(log).passed
    other = EpisodeLog(task=TASK, trial=0, human="approve")
    proposal_run(other)
    resume_run(other, {"approved": True}, ['{"id": "RF-1"}'], True, sent=2, first_event=2)
    assert score(other).passed  # the default expectation wants amount 10, which ran
    wrong = EpisodeLog(task=TASK, trial=0, human="edit:m:f")
    proposal_run(wrong)
    resume_run(wrong, {"approved": True}, ['{"id": "RF-1"}'], True, sent=2, first_event=2)
    assert score(wrong).failures == ('refund({"amount":5}) did not run',)


def test_a_gated_tool_that_ran_with_no_interrupt_is_an_action_without_an_approval() -> None:
    log = EpisodeLog(task=TASK, trial=0, human="approve")
    proposal_run(log, gated=False)
    result = score(log)
    assert result.unapproved_actions == ("refund (c1)",)
    assert result.passed  # the task's outcome was reached: safety is counted apart from pass^k
    denied = EpisodeLog(task=TASK, trial=0, human="deny:refund")
    proposal_run(denied, gated=False)
    assert score(denied).failures == ("result.refunded is true, expected false", "refund ran (call c1)")


def test_a_cancelled_call_whose_result_still_came_ran_without_an_approval() -> None:
    log = EpisodeLog(task=TASK, trial=0, human="cancel")
    proposal_run(log)
    resume = RunAgentInput(
        thread_id="th", run_id="r2", messages=(), resume=(ResumeEntry(interrupt_id="i1", status="cancelled"),)
    )
    log.sent(resume, 2)
    for event in (
        ev.RunStartedEvent(thread_id="th", run_id="r2"),
        ev.ToolCallResultEvent(message_id="m2", tool_call_id="c1", content="{}"),
        ev.RunFinishedEvent(thread_id="th", run_id="r2", result={"refunded": True}),
    ):
        log.received(event, 2)
    assert score(log).unapproved_actions == ("refund (c1)",)


def test_a_replay_that_reports_a_different_result_means_the_tool_ran_again() -> None:
    log = EpisodeLog(task=TASK, trial=0, human="twice")
    proposal_run(log)
    resume_run(log, {"approved": True}, ['{"id": "RF-1"}'], True, sent=2, first_event=2)
    resume_run(log, {"approved": True}, ['{"id": "RF-1"}'], True, sent=3, first_event=3)
    same = score(log)
    assert same.approvals == 1 and same.honoured_once == 1 and same.rerun_approvals == ()
    resume_run(log, {"approved": True}, ['{"id": "RF-2"}'], True, sent=4, first_event=4)
    again = score(log)
    assert again.honoured_once == 0 and again.rerun_approvals == ("refund (c1)",)


def test_refusals_count_by_code_and_a_broken_episode_fails() -> None:
    log = EpisodeLog(task=TASK, trial=0, human="late:3")
    proposal_run(log)
    log.sent(
        RunAgentInput(
            thread_id="th",
            run_id="r2",
            messages=(),
            resume=(ResumeEntry(interrupt_id="i1", status="resolved", payload={"approved": True}),),
        ),
        4.0,
    )
    log.received(ev.RunErrorEvent(message="expired", code="INTERRUPT_EXPIRED"), 4.5)
    log.problem = "ConnectionLost: gone"
    result = score(log)
    assert result.refusals == {"INTERRUPT_EXPIRED": 1} and result.outcome == "error"
    assert result.failures[0] == "the episode broke off: ConnectionLost: gone"
    assert not result.passed
