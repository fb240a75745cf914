"""Tests for agui_core.machine.client: the client side of the interrupt lifecycle.

The seed document's worked examples are played whole: our ThreadMachine raises the seed's
interrupts, the ClientMachine follows the stream and builds the resume, and the resume is the
one the seed prints, plus ``"messages": []``: the seed leaves ``messages`` out, but both
reference schemas require it (and the ThreadMachine must accept the result). The
approve-with-edits example's address reached us obfuscated (``[email protected]``), which
fails its ``format: email``; the test sends a real address and shows the printed one refused.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st

from agui_core.errors import LocalProtocolError, OrderingError, PayloadError, RunErrorCode
from agui_core.machine.client import (
    CLIENT_RULES,
    DEFAULT_CONFIRMATION_SCHEMA,
    ClientMachine,
    ClientWarning,
    ProposedToolCall,
    Reply,
    RunStatus,
    approve,
    approve_with_edits,
    cancel,
    check_stream,
    deny,
    is_interrupt_expired,
    offers_edits,
    read_expires_at,
    resolve,
)
from agui_core.machine.effects import Emit, Reject, StartAgent
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol import events as ev
from agui_core.protocol.codec import event_from_dict, event_to_dict, input_to_dict
from agui_core.protocol.types import (
    PROTOCOL_VERSION,
    AssistantMessage,
    FunctionCall,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    ToolCall,
    UserMessage,
)
from agui_core.protocol.validation import validate_input
from tests.machine.driver import NOW
from tests.seed import APPROVE_SCHEMA, APPROVE_WITH_ANY_EDITS_SCHEMA, SEED_RESUME_INPUTS, SEED_RUN_FINISHED
from tests.strategies import json_objects, json_values, texts

T0 = datetime(2026, 4, 20, 16, 0, tzinfo=UTC)
TID = "thread-1"

FORM = {
    "type": "object",
    "properties": {"year": {"type": "integer", "minimum": 2000}},
    "required": ["year"],
}


# --- helpers -------------------------------------------------------------------------------


def emitted(effects: Iterable[object]) -> list[ev.Event]:
    return [e.event for e in effects if isinstance(e, Emit)]


def feed(client: ClientMachine, events: Iterable[ev.Event | ev.UnknownEvent], now: datetime = T0) -> None:
    for event in events:
        client.receive_event(event, now=now)


def started(run_id: str = "run-1", thread_id: str = TID) -> ev.RunStartedEvent:
    return ev.RunStartedEvent(thread_id=thread_id, run_id=run_id)


def tool_call(call_id: str, name: str = "send_email", args: str = '{"to":"a@example.com"}') -> list[ev.Event]:
    return [
        ev.ToolCallStartEvent(tool_call_id=call_id, tool_call_name=name),
        ev.ToolCallArgsEvent(tool_call_id=call_id, delta=args),
        ev.ToolCallEndEvent(tool_call_id=call_id),
    ]


SNAPSHOTS: list[ev.Event] = [
    ev.StateSnapshotEvent(snapshot={}),
    ev.MessagesSnapshotEvent(messages=()),
]


def interrupted(*interrupts: Interrupt, run_id: str = "run-1", thread_id: str = TID) -> ev.RunFinishedEvent:
    return ev.RunFinishedEvent(
        thread_id=thread_id,
        run_id=run_id,
        outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
    )


def interrupt_run(*interrupts: Interrupt, run_id: str = "run-1", calls: Sequence[str] = ()) -> list[ev.Event]:
    """A whole run that proposes ``calls``, sends both snapshots and ends on ``interrupts``."""
    body = [e for call in calls for e in tool_call(call)]
    return [started(run_id), *body, *SNAPSHOTS, interrupted(*interrupts, run_id=run_id)]


def client_with(*interrupts: Interrupt, calls: Sequence[str] = ()) -> ClientMachine:
    client = ClientMachine(TID)
    feed(client, interrupt_run(*interrupts, calls=calls))
    return client


def violation(client: ClientMachine, event: ev.Event | ev.UnknownEvent) -> OrderingError:
    before = client.index
    with pytest.raises(OrderingError) as info:
        client.receive_event(event, now=T0)
    assert client.index == before  # a refused event changes nothing
    return info.value


def refusal(client: ClientMachine, answers: dict[str, Any], now: datetime = T0) -> LocalProtocolError:
    with pytest.raises(LocalProtocolError) as info:
        client.resume(answers, now=now, run_id="run-2")
    assert info.value.message.startswith("resume refused: ")
    return info.value


def confirm(iid: str = "c-1", **kw: Any) -> Interrupt:
    return Interrupt(id=iid, reason="confirmation", **kw)


# --- the seed's worked examples, played from the client side ------------------------------

REAL_ADDRESS = "jane@example.com"
SEED_ANSWERS: dict[str, dict[str, Reply]] = {
    "minimal-tool-approval": {"int-abc123": approve()},
    "approve-with-edits": {
        "int-email-edit": approve_with_edits({"to": REAL_ADDRESS, "subject": "Hi", "body": "Hi (revised per my note)"})
    },
    "parallel-interrupts": {"i-1": approve(), "i-2": approve(), "i-3": cancel()},
    "non-tool-input-request": {"int-form": resolve({"quarter": "Q1", "year": 2026, "revenue": 4200000})},
}


def seed_expected(name: str) -> dict[str, Any]:
    # The seed prints no protocolVersion; the 1.1 spec makes a client declare it (issue 26).
    expected = {**SEED_RESUME_INPUTS[name], "messages": [], "protocolVersion": PROTOCOL_VERSION}
    if name == "approve-with-edits":
        payload = expected["resume"][0]["payload"]
        expected["resume"] = [
            {
                **expected["resume"][0],
                "payload": {**payload, "editedArgs": {**payload["editedArgs"], "to": REAL_ADDRESS}},
            }
        ]
    return expected


def play_seed(name: str) -> tuple[ThreadMachine, ClientMachine, list[ev.Event]]:
    """Our agent raises the seed's interrupts; the client receives the stream."""
    seed = SEED_RUN_FINISHED[name]
    finished = event_from_dict(seed)
    assert isinstance(finished, ev.RunFinishedEvent)
    assert isinstance(finished.outcome, RunFinishedInterruptOutcome)
    thread = ThreadMachine(seed["threadId"])
    stream = emitted(thread.receive_input(RunAgentInput(thread_id=seed["threadId"], run_id=seed["runId"]), now=T0))
    for interrupt in finished.outcome.interrupts:
        if interrupt.tool_call_id is not None:
            for event in tool_call(interrupt.tool_call_id):
                stream += emitted(thread.emit(event))
    stream += emitted(thread.interrupt(finished.outcome.interrupts, now=NOW))
    assert event_to_dict(stream[-1]) == seed
    client = ClientMachine(seed["threadId"])
    feed(client, stream)
    return thread, client, stream


@pytest.mark.parametrize("name", sorted(SEED_ANSWERS))
def test_seed_example_resume_is_the_printed_one(name: str) -> None:
    thread, client, _ = play_seed(name)
    assert [i.id for i in client.open_interrupts] == [e["interruptId"] for e in SEED_RESUME_INPUTS[name]["resume"]]
    assert client.awaiting_input
    run_input = client.resume(
        SEED_ANSWERS[name], now=T0 + timedelta(minutes=5), run_id=SEED_RESUME_INPUTS[name]["runId"]
    )
    assert input_to_dict(run_input) == seed_expected(name)
    effects = thread.receive_input(run_input, now=T0 + timedelta(minutes=5))
    assert not any(isinstance(e, ev.RunErrorEvent) for e in emitted(effects))
    assert any(isinstance(e, StartAgent) for e in effects)


@pytest.mark.parametrize("name", sorted(SEED_ANSWERS))
def test_seed_example_answers_in_the_reference_shape_build_the_same_resume(name: str) -> None:
    _, client, _ = play_seed(name)
    responses = {
        e["interruptId"]: {k: v for k, v in e.items() if k != "interruptId"} for e in seed_expected(name)["resume"]
    }
    run_input = client.resume(responses, now=T0, run_id=SEED_RESUME_INPUTS[name]["runId"])
    assert input_to_dict(run_input) == seed_expected(name)


def test_seed_edit_example_as_printed_is_refused_at_the_address() -> None:
    _, client, _ = play_seed("approve-with-edits")
    printed = SEED_RESUME_INPUTS["approve-with-edits"]["resume"][0]["payload"]
    err = refusal(client, {"int-email-edit": resolve(printed)})
    assert err.code is RunErrorCode.INVALID_PAYLOAD
    assert "payload.editedArgs.to" in err.message
    assert isinstance(err.__cause__, PayloadError)
    assert err.__cause__.path == ("editedArgs", "to")


def test_seed_form_example_cannot_be_answered_at_its_expiry() -> None:
    _, client, _ = play_seed("non-tool-input-request")
    expiry = datetime(2026, 4, 20, 17, 0, tzinfo=UTC)
    err = refusal(client, SEED_ANSWERS["non-tool-input-request"], now=expiry)
    assert err.code is RunErrorCode.INTERRUPT_EXPIRED
    cancelled = client.resume({"int-form": cancel()}, now=expiry, run_id="run-31")
    assert input_to_dict(cancelled)["resume"] == [{"interruptId": "int-form", "status": "cancelled"}]


def test_seed_routes() -> None:
    kinds = {}
    for name in SEED_ANSWERS:
        _, client, _ = play_seed(name)
        kinds[name] = [(r.kind, r.editable) for r in map(client.route, client.open_interrupts)]
    assert kinds == {
        "minimal-tool-approval": [("approval", False)],
        "approve-with-edits": [("approval", True)],
        "parallel-interrupts": [("approval", False)] * 3,
        "non-tool-input-request": [("form", False)],
    }


# --- receiving: the ordering rules, with the machine's numbering --------------------------


def test_an_ordering_error_names_the_index_the_type_and_the_rule() -> None:
    client = ClientMachine(TID)
    err = violation(client, ev.TextMessageStartEvent(message_id="m-1"))
    assert (err.rule, err.index) == ("run-not-started", 0)
    assert "TEXT_MESSAGE_START" in err.message and "[run-not-started]" in err.message


def test_the_index_counts_every_event_across_runs_and_unknown_ones() -> None:
    client = ClientMachine(TID)
    finished = ev.RunFinishedEvent(thread_id=TID, run_id="run-1")
    feed(
        client,
        [
            started(),
            ev.UnknownEvent(type="FUTURE", data={"type": "FUTURE"}),
            finished,
            started("run-2"),
        ],
    )
    err = violation(client, ev.TextMessageEndEvent(message_id="m-9"))
    assert (err.rule, err.index) == ("text-message-not-open", 4)
    assert err.message.startswith("event 4: ")


def test_each_input_gets_its_own_stream_so_lone_run_errors_may_follow_each_other() -> None:
    client = client_with(confirm())
    feed(client, [ev.RunErrorEvent(message="no", code="PENDING_INTERRUPTS")] * 2)
    assert client.run_status is RunStatus.REJECTED
    assert [i.id for i in client.open_interrupts] == ["c-1"]
    assert client.last_error is not None and client.last_error.code == "PENDING_INTERRUPTS"


def test_only_a_new_run_follows_a_finished_one() -> None:
    client = client_with(confirm())
    assert violation(client, ev.TextMessageStartEvent(message_id="m")).rule == "run-finished"


def test_run_started_while_a_run_is_active_is_refused() -> None:
    client = ClientMachine(TID)
    feed(client, [started()])
    assert violation(client, started("run-2")).rule == "run-already-active"


# --- receiving: the interrupt rules a client can see ---------------------------------------


def test_thread_mismatch_on_run_started_and_run_finished() -> None:
    client = ClientMachine(TID)
    assert violation(client, started(thread_id="other")).rule == "thread-mismatch"
    feed(client, [started()])
    err = violation(client, ev.RunFinishedEvent(thread_id="other", run_id="run-1"))
    assert err.rule == "thread-mismatch" and "RUN_FINISHED" in err.message


def test_run_finished_for_another_run_is_refused() -> None:
    client = ClientMachine(TID)
    feed(client, [started()])
    assert violation(client, ev.RunFinishedEvent(thread_id=TID, run_id="run-9")).rule == "run-id-mismatch"


def test_an_outcome_of_another_kind_is_refused() -> None:
    client = ClientMachine(TID)
    feed(client, [started()])
    strange = SubagentFinishedSuspendedOutcome()
    odd = ev.RunFinishedEvent(thread_id=TID, run_id="run-1", outcome=strange)  # type: ignore[arg-type]
    assert violation(client, odd).rule == "outcome-invalid"


def test_an_interrupt_outcome_with_no_interrupts_is_refused() -> None:
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    err = violation(client, interrupted())
    assert err.rule == "interrupt-empty" and "RUN_FINISHED" in err.message


@pytest.mark.parametrize(
    ("interrupt", "rule"),
    [
        (Interrupt(id="", reason="confirmation"), "interrupt-id-empty"),
        (Interrupt(id="i-1", reason=""), "interrupt-reason-empty"),
        (Interrupt(id="i-1", reason="core:approval"), "interrupt-reason-reserved"),
        (Interrupt(id="i-1", reason="tool_call"), "interrupt-tool-call-missing"),
        (
            Interrupt(id="i-1", reason="tool_call", tool_call_id="tc-unseen"),
            "interrupt-tool-call-unknown",
        ),
        (
            Interrupt(id="i-1", reason="acme:review", tool_call_id="tc-unseen"),
            "interrupt-tool-call-unknown",
        ),
        (confirm(response_schema={"type": 12}), "interrupt-schema-invalid"),
        (
            confirm(response_schema={"$ref": "https://example.com/s.json"}),
            "interrupt-schema-invalid",
        ),
    ],
)
def test_a_bad_interrupt_is_refused(interrupt: Interrupt, rule: str) -> None:
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    err = violation(client, interrupted(interrupt))
    assert err.rule == rule and err.index == 3 and "RUN_FINISHED" in err.message
    assert rule in CLIENT_RULES


def test_custom_and_core_lookalike_reasons_are_accepted() -> None:
    client = client_with(Interrupt(id="a", reason="langgraph:db_write"), Interrupt(id="b", reason="core"))
    assert [i.id for i in client.open_interrupts] == ["a", "b"]


def test_duplicate_interrupt_ids_within_an_outcome() -> None:
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    err = violation(client, interrupted(confirm("x"), confirm("x")))
    assert err.rule == "interrupt-duplicate-id" and "twice" in err.message


def test_duplicate_interrupt_ids_across_the_thread() -> None:
    client = client_with(confirm("x"))
    feed(client, [started("run-2"), ev.RunFinishedEvent(thread_id=TID, run_id="run-2"), started("run-3"), *SNAPSHOTS])
    err = violation(client, interrupted(confirm("x"), run_id="run-3"))
    assert err.rule == "interrupt-duplicate-id" and "already announced" in err.message


def test_the_run_that_answered_an_interrupt_may_announce_it_still_open() -> None:
    # One vote of a quorum: the interrupt the run answered waits for the other deciders.
    client = client_with(confirm("x"), confirm("y"))
    feed(client, [started("run-2"), *SNAPSHOTS, interrupted(confirm("x"), run_id="run-2")])
    assert [i.id for i in client.open_interrupts] == ["x"]
    # "y" was decided in that run: announcing it again later is a duplicate.
    feed(client, [started("run-3"), *SNAPSHOTS])
    assert violation(client, interrupted(confirm("y"), run_id="run-3")).rule == "interrupt-duplicate-id"


def test_a_tool_call_of_an_earlier_run_is_not_seen_in_this_one() -> None:
    client = ClientMachine(TID)
    feed(client, [started(), *tool_call("tc-1"), ev.RunFinishedEvent(thread_id=TID, run_id="run-1")])
    feed(client, [started("run-2"), *SNAPSHOTS])
    gate = Interrupt(id="i-1", reason="tool_call", tool_call_id="tc-1")
    assert violation(client, interrupted(gate, run_id="run-2")).rule == "interrupt-tool-call-unknown"


def test_a_tool_call_the_runs_messages_snapshot_carries_is_seen() -> None:
    # How a replayed run shows a tool-bound interrupt: snapshot, no TOOL_CALL_* events.
    call = ToolCall(id="tc-1", function=FunctionCall(name="send_email", arguments='{"to":"b@example.com"}'))
    client = ClientMachine(TID)
    feed(
        client,
        [
            started(),
            ev.StateSnapshotEvent(snapshot={}),
            ev.MessagesSnapshotEvent(messages=(AssistantMessage(id="m-1", tool_calls=(call,)),)),
            interrupted(Interrupt(id="i-1", reason="tool_call", tool_call_id="tc-1")),
        ],
    )
    route = client.route(client.open_interrupts[0])
    assert route.tool_call == ProposedToolCall(
        id="tc-1",
        name="send_email",
        arguments='{"to":"b@example.com"}',
        args={"to": "b@example.com"},
    )


def test_a_tool_call_streamed_as_chunks_is_closed_by_run_finished() -> None:
    client = ClientMachine(TID)
    feed(
        client,
        [
            started(),
            *SNAPSHOTS,
            ev.ToolCallChunkEvent(tool_call_id="tc-1", tool_call_name="lookup", delta='{"q":'),
            ev.ToolCallChunkEvent(delta='"x"}'),
            interrupted(Interrupt(id="i-1", reason="tool_call", tool_call_id="tc-1")),
        ],
    )
    assert client.route(client.open_interrupts[0]).tool_call == ProposedToolCall(
        id="tc-1", name="lookup", arguments='{"q":"x"}', args={"q": "x"}
    )


def test_an_open_tool_call_is_an_ordering_error_first() -> None:
    client = ClientMachine(TID)
    feed(
        client,
        [started(), ev.ToolCallStartEvent(tool_call_id="tc-1", tool_call_name="f"), *SNAPSHOTS],
    )
    gate = Interrupt(id="i-1", reason="tool_call", tool_call_id="tc-1")
    assert violation(client, interrupted(gate)).rule == "tool-call-open"


@pytest.mark.parametrize(
    "value",
    [
        "tomorrow",
        "2026-04-20T17:00:00",  # no time zone
        "2026-04-20",
        "2026-W16-1T17:00:00Z",  # ISO week date
        "20260420T170000Z",  # ISO basic format
        "2026-04-20T17:00:00+02",  # hour-only offset
        "2026-04-20T24:00:00Z",
        "2026-04-20T23:59:60Z",
        "+002026-04-20T17:00:00Z",
        "Mon, 20 Apr 2026 17:00:00 GMT",
        "",
    ],
)
def test_an_unreadable_expires_at_is_refused(value: str) -> None:
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    err = violation(client, interrupted(confirm(expires_at=value)))
    assert err.rule == "interrupt-expires-at-invalid" and repr(value) in err.message


@pytest.mark.parametrize(
    ("value", "instant"),
    [
        ("2026-04-20T17:00:00Z", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20T17:00:00z", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20t17:00:00Z", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20 19:00:00+02:00", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20T17:00:00-00:00", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20T17:00:00.1239Z", datetime(2026, 4, 20, 17, 0, 0, 123000, tzinfo=UTC)),
        ("2026-04-20T17:00:00.123456789Z", datetime(2026, 4, 20, 17, 0, 0, 123000, tzinfo=UTC)),
    ],
)
def test_expires_at_is_read_as_rfc_3339_to_the_millisecond(value: str, instant: datetime) -> None:
    assert read_expires_at(value) == instant
    client = client_with(confirm(expires_at=value))
    assert client.open_interrupts[0].expires_at == value


@pytest.mark.parametrize("missing", ["STATE_SNAPSHOT", "MESSAGES_SNAPSHOT"])
def test_an_interrupt_boundary_without_both_snapshots_is_a_warning_not_a_rejection(missing: str) -> None:
    # The seed asks for both snapshots; the published spec does not make a client reject
    # a stream without them (issue 26), so the event is accepted and a warning kept.
    client = ClientMachine(TID)
    feed(client, [started(), *(e for e in SNAPSHOTS if e.type != missing)])
    client.receive_event(interrupted(confirm()), now=T0)
    assert [i.id for i in client.open_interrupts] == ["c-1"]
    [warning] = client.warnings
    assert warning.rule == "snapshot-missing" and missing in warning.message
    assert warning.index == 2


def test_snapshots_of_an_earlier_run_do_not_count() -> None:
    client = ClientMachine(TID)
    feed(
        client,
        [
            started(),
            *SNAPSHOTS,
            ev.RunFinishedEvent(thread_id=TID, run_id="run-1"),
            started("run-2"),
        ],
    )
    client.receive_event(interrupted(confirm(), run_id="run-2"), now=T0)
    assert [w.rule for w in client.warnings] == ["snapshot-missing"]


def test_a_refused_event_leaves_the_machine_as_it_was() -> None:
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    violation(client, interrupted(confirm("a"), Interrupt(id="b", reason="core:x")))
    assert client.run_status is RunStatus.RUNNING and not client.open_interrupts
    client.receive_event(interrupted(confirm("a"), confirm("b")), now=T0)
    assert [i.id for i in client.open_interrupts] == ["a", "b"]


def test_receive_event_needs_an_aware_now() -> None:
    with pytest.raises(LocalProtocolError):
        ClientMachine(TID).receive_event(started(), now=datetime(2026, 4, 20, 16, 0))


# --- what the machine keeps ----------------------------------------------------------------


def test_an_absent_outcome_reads_as_success_and_keeps_the_result() -> None:
    client = ClientMachine(TID)
    feed(client, [started(), ev.RunFinishedEvent(thread_id=TID, run_id="run-1", result={"n": 1})])
    assert client.outcome == RunFinishedSuccessOutcome()
    assert client.result == {"n": 1} and client.run_status is RunStatus.FINISHED and client.run_id == "run-1"


def test_a_cancelled_outcome_reads_as_cancelled_and_closes_the_answered_interrupts() -> None:
    client = client_with(confirm())
    feed(
        client,
        [
            started("run-2"),
            ev.RunFinishedEvent(thread_id=TID, run_id="run-2", outcome=RunFinishedCancelledOutcome()),
        ],
    )
    assert client.outcome == RunFinishedCancelledOutcome()
    assert not client.open_interrupts and not client.awaiting_input


def test_a_run_takes_the_open_interrupts_and_its_error_gives_them_back() -> None:
    client = client_with(confirm("a"), confirm("b"))
    feed(client, [started("run-2")])
    assert client.open_interrupts == () and client.run_status is RunStatus.RUNNING
    feed(client, [ev.RunErrorEvent(message="boom")])
    assert [i.id for i in client.open_interrupts] == ["a", "b"]
    assert client.run_status is RunStatus.ERRORED


def test_chained_interrupts_replace_the_answered_ones() -> None:
    client = client_with(confirm("a"))
    feed(client, interrupt_run(confirm("b"), run_id="run-2"))
    assert [i.id for i in client.open_interrupts] == ["b"]
    assert client.open_since("b") == T0 and client.interrupt("a") is None


def test_state_follows_snapshots_and_deltas() -> None:
    client = ClientMachine(TID)
    feed(
        client,
        [
            started(),
            ev.StateSnapshotEvent(snapshot={"a": 1}),
            ev.StateDeltaEvent(delta=({"op": "add", "path": "/b", "value": [None]},)),
        ],
    )
    assert client.state == {"a": 1, "b": [None]} and not client.state_stale
    feed(client, [ev.StateDeltaEvent(delta=({"op": "remove", "path": "/zzz"},))])
    assert client.state == {"a": 1, "b": [None]} and client.state_stale
    feed(client, [ev.StateSnapshotEvent(snapshot=[1])])
    assert client.state == [1] and not client.state_stale


def test_messages_follow_the_messages_snapshot() -> None:
    message = UserMessage(id="u-1", content="hi")
    client = ClientMachine(TID)
    feed(client, [started(), ev.MessagesSnapshotEvent(messages=(message,))])
    assert client.messages == (message,)


def test_abandon_run_reopens_the_interrupts_so_the_resume_can_be_sent_again() -> None:
    client = client_with(confirm("a"))
    first = client.resume({"a": resolve(True)}, now=T0, run_id="run-2")
    feed(client, [started("run-2"), ev.TextMessageStartEvent(message_id="m-1")])
    client.abandon_run()
    assert client.run_status is RunStatus.ABANDONED and [i.id for i in client.open_interrupts] == ["a"]
    again = client.resume({"a": resolve(True)}, now=T0, run_id="run-3")
    assert again.resume == first.resume
    # The next stream starts afresh.
    assert violation(client, ev.TextMessageEndEvent(message_id="m-1")).rule == "run-not-started"
    feed(client, [started("run-3"), ev.RunFinishedEvent(thread_id=TID, run_id="run-3")])
    assert not client.open_interrupts


def test_abandon_run_without_a_run_does_nothing() -> None:
    client = client_with(confirm("a"))
    client.abandon_run()
    assert client.run_status is RunStatus.FINISHED and client.awaiting_input


# --- routing -------------------------------------------------------------------------------


def test_route_tool_call_with_the_proposed_call() -> None:
    client = client_with(
        Interrupt(
            id="i-1",
            reason="tool_call",
            tool_call_id="tc-1",
            response_schema=APPROVE_WITH_ANY_EDITS_SCHEMA,
            message="Send?",
        ),
        calls=["tc-1"],
    )
    route = client.route(client.open_interrupts[0])
    assert (route.kind, route.editable, route.message, route.schema) == (
        "approval",
        True,
        "Send?",
        APPROVE_WITH_ANY_EDITS_SCHEMA,
    )
    assert route.tool_call == ProposedToolCall(
        id="tc-1",
        name="send_email",
        arguments='{"to":"a@example.com"}',
        args={"to": "a@example.com"},
    )


def test_route_tool_call_unseen_and_without_edits() -> None:
    route = ClientMachine(TID).route(
        Interrupt(id="i", reason="tool_call", tool_call_id="tc-x", response_schema=APPROVE_SCHEMA)
    )
    assert (route.kind, route.editable, route.tool_call) == ("approval", False, None)


def test_route_input_required_is_a_form() -> None:
    route = ClientMachine(TID).route(Interrupt(id="i", reason="input_required", response_schema=FORM))
    assert (route.kind, route.schema) == ("form", FORM)
    assert ClientMachine(TID).route(Interrupt(id="i", reason="input_required")).schema is None


def test_route_confirmation_is_boolean_by_default() -> None:
    client = ClientMachine(TID)
    assert client.route(confirm()).schema == DEFAULT_CONFIRMATION_SCHEMA == {"type": "boolean"}
    assert client.route(confirm(response_schema={"enum": ["yes", "no"]})).schema == {"enum": ["yes", "no"]}
    assert client.route(confirm()).kind == "confirmation"


@pytest.mark.parametrize("reason", ["acme:review", "core:future", "Tool_Call", "", "\x00"])
def test_route_unknown_reason_falls_back(reason: str) -> None:
    interrupt = Interrupt(id="i", reason=reason, message="Look", response_schema=FORM, metadata={"k": None})
    route = ClientMachine(TID).route(interrupt)
    assert (route.kind, route.message, route.schema, route.metadata) == (
        "fallback",
        "Look",
        FORM,
        {"k": None},
    )


@settings(max_examples=200, deadline=None)
@given(
    texts(max_size=20),
    st.one_of(st.none(), json_objects()),
    st.one_of(st.none(), texts()),
    st.one_of(st.none(), texts()),
)
def test_route_never_raises(reason: str, schema: Any, message: str | None, call_id: str | None) -> None:
    interrupt = Interrupt(id="i", reason=reason, response_schema=schema, message=message, tool_call_id=call_id)
    route = ClientMachine(TID).route(interrupt)
    core = {"tool_call": "approval", "input_required": "form", "confirmation": "confirmation"}
    assert route.kind == core.get(reason, "fallback")
    assert route.interrupt is interrupt


def test_offers_edits_reads_properties_edited_args_only() -> None:
    assert offers_edits(APPROVE_WITH_ANY_EDITS_SCHEMA)
    assert not offers_edits(APPROVE_SCHEMA)
    assert not offers_edits({"properties": ["editedArgs"]})
    assert not offers_edits(None)


# --- resuming ------------------------------------------------------------------------------


def test_the_answer_constructors() -> None:
    assert approve() == Reply(status="resolved", payload={"approved": True})
    assert deny({"by": "ann"}) == Reply(status="resolved", payload={"approved": False}, metadata={"by": "ann"})
    assert approve_with_edits({"to": "b"}) == Reply(
        status="resolved", payload={"approved": True, "editedArgs": {"to": "b"}}
    )
    assert cancel() == Reply(status="cancelled")
    assert resolve(3, {"k": None}) == Reply(status="resolved", payload=3, metadata={"k": None})


def test_resume_carries_everything_given_and_passes_the_wire_schema() -> None:
    client = client_with(confirm("a"), Interrupt(id="b", reason="acme:x"))
    message = UserMessage(id="u-1", content="go")
    run_input = client.resume(
        {"b": cancel({"why": None}), "a": resolve(False, {"sig": "abc"})},
        now=T0,
        run_id="run-2",
        messages=[message],
        state={"s": 1},
        parent_run_id="run-1",
        forwarded_props={"f": True},
    )
    wire = input_to_dict(run_input)
    validate_input(wire)
    assert wire == {
        "threadId": TID,
        "runId": "run-2",
        "protocolVersion": PROTOCOL_VERSION,
        "parentRunId": "run-1",
        "state": {"s": 1},
        "messages": [{"id": "u-1", "role": "user", "content": "go"}],
        "forwardedProps": {"f": True},
        # In the order the interrupts were announced, whatever the order of the answers.
        "resume": [
            {
                "interruptId": "a",
                "status": "resolved",
                "payload": False,
                "metadata": {"sig": "abc"},
            },
            {"interruptId": "b", "status": "cancelled", "metadata": {"why": None}},
        ],
    }


def test_resume_changes_nothing() -> None:
    client = client_with(confirm("a"))
    client.resume({"a": resolve(True)}, now=T0, run_id="run-2")
    assert client.awaiting_input and client.index == 4


def test_resume_refused_while_a_run_is_in_progress() -> None:
    client = client_with(confirm("a"))
    feed(client, [started("run-2")])
    assert refusal(client, {"a": resolve(True)}).code is RunErrorCode.THREAD_BUSY


def test_resume_refused_with_nothing_open() -> None:
    assert refusal(ClientMachine(TID), {}).code is RunErrorCode.INVALID_RESUME


def test_resume_refused_for_an_unknown_id() -> None:
    err = refusal(client_with(confirm("a")), {"a": resolve(True), "zz": cancel()})
    assert err.code is RunErrorCode.UNKNOWN_INTERRUPT_ID and "'zz'" in err.message


def test_resume_refused_when_an_open_interrupt_is_unanswered() -> None:
    err = refusal(client_with(confirm("a"), confirm("b")), {"a": resolve(True)})
    assert err.code is RunErrorCode.PARTIAL_RESUME and "'b'" in err.message


def test_resume_refused_for_an_expired_interrupt_unless_cancelled() -> None:
    client = client_with(confirm("a", expires_at="2026-04-20T16:30:00Z"))
    instant = datetime(2026, 4, 20, 16, 30, tzinfo=UTC)
    client.resume({"a": resolve(True)}, now=instant - timedelta(milliseconds=1), run_id="run-2")
    for now in (instant, instant + timedelta(days=1)):
        err = refusal(client, {"a": resolve(True)}, now=now)
        assert err.code is RunErrorCode.INTERRUPT_EXPIRED
        client.resume({"a": cancel()}, now=now, run_id="run-2")
    assert client.expired_interrupts(instant) == client.open_interrupts
    assert client.expired_interrupts(instant - timedelta(seconds=1)) == ()


def test_expiry_below_the_millisecond_counts_from_the_millisecond() -> None:
    interrupt = confirm("a", expires_at="2026-04-20T16:30:00.0009Z")
    now = datetime(2026, 4, 20, 16, 30, tzinfo=UTC)
    assert is_interrupt_expired(interrupt, now)
    assert refusal(client_with(interrupt), {"a": resolve(True)}, now=now).code is RunErrorCode.INTERRUPT_EXPIRED


def test_resume_refused_for_a_payload_that_fails_the_schema_naming_the_path() -> None:
    client = client_with(Interrupt(id="f", reason="input_required", response_schema=FORM))
    err = refusal(client, {"f": resolve({"year": 1999})})
    assert err.code is RunErrorCode.INVALID_PAYLOAD and "payload.year" in err.message
    assert isinstance(err.__cause__, PayloadError) and err.__cause__.path == ("year",)
    assert isinstance(err.event, Reply)


def test_resume_refused_for_a_missing_payload_the_schema_requires() -> None:
    client = client_with(Interrupt(id="f", reason="input_required", response_schema=FORM))
    assert refusal(client, {"f": {"status": "resolved"}}).code is RunErrorCode.INVALID_PAYLOAD


def test_a_confirmation_without_schema_takes_a_boolean() -> None:
    client = client_with(confirm("a"))
    client.resume({"a": resolve(False)}, now=T0, run_id="run-2")
    assert refusal(client, {"a": approve()}).code is RunErrorCode.INVALID_PAYLOAD


def test_edits_are_refused_where_the_schema_offers_none() -> None:
    gate = Interrupt(id="g", reason="tool_call", tool_call_id="tc-1", response_schema=APPROVE_SCHEMA)
    err = refusal(client_with(gate, calls=["tc-1"]), {"g": approve_with_edits({"to": "x"})})
    assert err.code is RunErrorCode.INVALID_PAYLOAD and "editedArgs" in err.message
    bare = Interrupt(id="g", reason="tool_call", tool_call_id="tc-1")
    assert (
        refusal(client_with(bare, calls=["tc-1"]), {"g": approve_with_edits({})}).code is RunErrorCode.INVALID_PAYLOAD
    )
    offered = Interrupt(id="g", reason="tool_call", tool_call_id="tc-1", response_schema=APPROVE_WITH_ANY_EDITS_SCHEMA)
    run_input = client_with(offered, calls=["tc-1"]).resume({"g": approve_with_edits({"to": "x"})}, now=T0, run_id="r")
    assert run_input.resume is not None and run_input.resume[0].payload == {
        "approved": True,
        "editedArgs": {"to": "x"},
    }


@pytest.mark.parametrize(
    "answer",
    [
        {"status": "resolved", "payload": True, "metadata": None},
        {"status": "cancelled", "metadata": None},
        Reply(status="resolved", payload=True, metadata=["not", "an", "object"]),  # type: ignore[arg-type]
        Reply(status="resolved", payload=True, metadata="sig"),  # type: ignore[arg-type]
    ],
)
def test_metadata_null_or_not_an_object_is_refused(answer: Any) -> None:
    err = refusal(client_with(confirm("a")), {"a": answer})
    assert err.code is RunErrorCode.INVALID_RESUME and "metadata" in err.message


@pytest.mark.parametrize(
    "answer",
    [
        {"status": "cancelled", "payload": 1},
        {"status": "cancelled", "payload": None},
        Reply(status="cancelled", payload=False),
    ],
)
def test_a_cancelled_answer_with_a_payload_is_refused(answer: Any) -> None:
    err = refusal(client_with(confirm("a")), {"a": answer})
    assert err.code is RunErrorCode.INVALID_RESUME and "cancelled" in err.message


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ({"status": "denied"}, "status 'denied'"),
        ({"payload": True}, "status None"),
        ({"status": "resolved", "paylod": True}, "unknown key 'paylod'"),
        (True, "is a bool"),
        (Reply(status="resolved", payload={1, 2}), "not a JSON value"),
        (Reply(status="resolved", payload={"n": float("nan")}), "payload.n"),
        (Reply(status="resolved", payload={1: "x"}), "keys are strings"),
        (Reply(status="resolved", payload=True, metadata={"t": object()}), "metadata.t"),
    ],
)
def test_a_malformed_answer_is_refused(answer: Any, words: str) -> None:
    err = refusal(client_with(Interrupt(id="a", reason="acme:x")), {"a": answer})
    assert err.code is RunErrorCode.INVALID_RESUME and words in err.message


def test_answers_that_are_not_a_mapping_are_refused() -> None:
    err = refusal(client_with(confirm("a")), [("a", resolve(True))])  # type: ignore[arg-type]
    assert err.code is RunErrorCode.INVALID_RESUME


def test_the_entries_carry_a_plain_copy_of_the_answer() -> None:
    payload = {"items": ("a", "b"), "more": MappingProxyType({"k": 1})}
    client = client_with(Interrupt(id="a", reason="acme:x"))
    run_input = client.resume({"a": resolve(payload)}, now=T0, run_id="run-2")
    payload["items"] = ()
    assert run_input.resume is not None
    assert run_input.resume[0].payload == {"items": ["a", "b"], "more": {"k": 1}}
    assert type(run_input.resume[0].payload["more"]) is dict


def test_a_resume_input_that_fails_the_wire_schema_is_refused() -> None:
    client = client_with(confirm("a"))
    with pytest.raises(LocalProtocolError) as info:
        client.resume({"a": resolve(True)}, now=T0, run_id="r", messages=["not a message"])  # type: ignore[list-item]
    assert info.value.code is RunErrorCode.INVALID_INPUT


def test_resume_needs_an_aware_now() -> None:
    with pytest.raises(LocalProtocolError):
        client_with(confirm("a")).resume({"a": resolve(True)}, now=datetime(2026, 1, 1), run_id="r")


# --- checking a recorded stream ------------------------------------------------------------


def test_check_stream_reports_every_violation_with_its_place() -> None:
    events = [
        started(),
        ev.TextMessageContentEvent(message_id="m-1", delta="x"),  # 1: not open; run-1 fails
        ev.TextMessageEndEvent(message_id="m-1"),  # 2: passed over, no follow-on error
        *SNAPSHOTS,  # 3, 4
        interrupted(confirm("i")),  # 5: the failed run's end
        started("run-2", thread_id="other"),  # 6: thread
        ev.TextMessageStartEvent(message_id="m-2"),  # 7: not judged against a run that never began
        started("run-2"),  # 8
        *SNAPSHOTS,  # 9, 10
        interrupted(Interrupt(id="j", reason="core:x"), run_id="run-2"),  # 11: reserved
        started("run-3"),  # 12: a run after a refused RUN_FINISHED is no nested run
        ev.RunFinishedEvent(
            thread_id=TID,
            run_id="run-3",
            outcome=RunFinishedInterruptOutcome(interrupts=(confirm("k"),)),
        ),  # 13: no snapshots: a warning, not a violation
        started("run-4"),  # 14: never ends
    ]
    warnings: list[ClientWarning] = []
    found = [(e.index, e.rule) for e in check_stream(events, now=T0, warnings=warnings)]
    assert found == [
        (1, "text-message-not-open"),
        (6, "thread-mismatch"),
        (11, "interrupt-reason-reserved"),
    ]
    assert [(w.index, w.rule) for w in warnings] == [(13, "snapshot-missing")]
    ended = [(e.index, e.rule) for e in check_stream(events, now=T0, ended=True)]
    assert ended == [*found, (14, "run-not-ended")]


def test_end_of_stream_fails_an_open_run_and_reopens_what_it_answered() -> None:
    client = client_with(confirm("a"))
    feed(client, [started("run-2")])
    assert not client.open_interrupts
    error = client.end_of_stream()
    assert error is not None and error.rule == "run-not-ended" and "run-2" in error.message
    assert client.run_status is RunStatus.ABANDONED
    assert [i.id for i in client.open_interrupts] == ["a"]
    assert client.end_of_stream() is None


def test_a_failed_run_is_passed_over_to_its_end() -> None:
    client = client_with(confirm("a"))
    feed(client, [started("run-2")])
    violation(client, ev.TextMessageEndEvent(message_id="nope"))
    client.fail_run()
    assert client.run_status is RunStatus.FAILED
    assert [i.id for i in client.open_interrupts] == ["a"]
    for event in [ev.TextMessageEndEvent(message_id="nope"), ev.RunFinishedEvent(thread_id=TID, run_id="run-2")]:
        client.receive_event(event, now=T0)
    assert client.run_status is RunStatus.FAILED and client.awaiting_input
    client.receive_event(started("run-3"), now=T0)
    assert client.run_status is RunStatus.RUNNING


def test_an_unknown_event_type_is_accepted_with_a_warning() -> None:
    client = ClientMachine(TID)
    feed(client, [started()])
    client.receive_event(ev.UnknownEvent(type="FUTURE_THING", data={"type": "FUTURE_THING"}), now=T0)
    [warning] = client.warnings
    assert (warning.rule, warning.index) == ("event-unknown", 1) and "FUTURE_THING" in warning.message


def test_check_stream_of_a_clean_stream_is_empty() -> None:
    _, _, stream = play_seed("parallel-interrupts")
    assert check_stream(stream, now=T0) == []
    assert check_stream([], now=T0) == []


# --- the two machines agree (Hypothesis) ---------------------------------------------------


class _Agent:
    """Random but valid agent acts on a ThreadMachine, collecting what it emits."""

    def __init__(self, data: st.DataObject, thread: ThreadMachine, ids: Iterator[int], now: datetime) -> None:
        self.data = data
        self.thread = thread
        self.ids = ids
        self.now = now
        self.events: list[ev.Event] = []
        self.calls: list[str] = []

    def new_id(self, prefix: str) -> str:
        return f"{prefix}-{next(self.ids)}"

    def emit(self, event: ev.Event) -> None:
        self.events += emitted(self.thread.emit(event))

    def act(self) -> None:
        draw = self.data.draw
        for answer in self.thread.answers:
            call = answer.interrupt.tool_call_id
            if call is not None and answer.entry.status == "resolved" and draw(st.booleans()):
                self.emit(ev.ToolCallResultEvent(message_id=self.new_id("res"), tool_call_id=call, content="done"))
        actions = draw(
            st.lists(
                st.sampled_from(["text", "tool", "tool", "state", "delta", "step", "messages"]),
                max_size=5,
            )
        )
        for action in actions:
            if action == "text":
                mid = self.new_id("m")
                self.emit(ev.TextMessageStartEvent(message_id=mid))
                self.emit(ev.TextMessageContentEvent(message_id=mid, delta="hi"))
                self.emit(ev.TextMessageEndEvent(message_id=mid))
            elif action == "tool":
                call_id = self.new_id("tc")
                for event in tool_call(call_id):
                    self.emit(event)
                self.calls.append(call_id)
            elif action == "state":
                self.emit(ev.StateSnapshotEvent(snapshot={"n": draw(st.integers(0, 9))}))
            elif action == "delta" and isinstance(self.thread.agent_state, dict):
                self.emit(
                    ev.StateDeltaEvent(delta=({"op": "add", "path": "/d", "value": draw(json_values(max_leaves=3))},))
                )
            elif action == "step":
                self.emit(ev.StepStartedEvent(step_name="s"))
                self.emit(ev.StepFinishedEvent(step_name="s"))
            elif action == "messages":
                self.emit(ev.MessagesSnapshotEvent(messages=self.thread.messages))

    def expiry(self) -> str | None:
        offset = self.data.draw(st.one_of(st.none(), st.integers(-5_000_000, 120_000_000)))
        if offset is None:
            return None
        instant = self.now + timedelta(microseconds=offset)
        text = instant.isoformat()
        return text.replace("+00:00", "Z") if self.data.draw(st.booleans()) else text

    def interrupt(self) -> Interrupt:
        draw = self.data.draw
        kind = draw(
            st.sampled_from(["tool", "form", "confirm", "custom"] if self.calls else ["form", "confirm", "custom"])
        )
        common: dict[str, Any] = {"id": self.new_id("int"), "expires_at": self.expiry()}
        if kind == "tool":
            call = draw(st.sampled_from(self.calls))
            self.calls.remove(call)
            schema = draw(st.sampled_from([None, APPROVE_SCHEMA, APPROVE_WITH_ANY_EDITS_SCHEMA]))
            return Interrupt(reason="tool_call", tool_call_id=call, response_schema=schema, **common)
        if kind == "form":
            return Interrupt(reason="input_required", response_schema=FORM, **common)
        if kind == "confirm":
            return Interrupt(
                reason="confirmation",
                response_schema=draw(st.sampled_from([None, {"type": "boolean"}])),
                **common,
            )
        return Interrupt(reason="acme:review", message="Look at this", metadata={"k": [1]}, **common)

    def end(self) -> str:
        draw = self.data.draw
        how = draw(st.sampled_from(["interrupt", "interrupt", "finish", "cancel", "fail"]))
        if how == "interrupt":
            if not self.calls and draw(st.booleans()):
                for event in tool_call(call_id := self.new_id("tc")):
                    self.emit(event)
                self.calls.append(call_id)
            count = draw(st.integers(1, 3))
            self.events += emitted(self.thread.interrupt([self.interrupt() for _ in range(count)], now=NOW))
        elif how == "finish":
            self.events += emitted(self.thread.finish(draw(st.one_of(st.none(), json_values(max_leaves=3)))))
        elif how == "cancel":
            if draw(st.booleans()):  # leave something open for cancel() to close
                self.emit(ev.TextMessageStartEvent(message_id=self.new_id("m")))
                self.emit(ev.StepStartedEvent(step_name="open"))
            self.events += emitted(self.thread.cancel())
        else:
            self.events += emitted(self.thread.fail("it broke"))
        return how


def _answers(data: st.DataObject, client: ClientMachine, now: datetime) -> dict[str, Reply]:
    answers: dict[str, Reply] = {}
    for interrupt in client.open_interrupts:
        metadata = data.draw(st.sampled_from([None, {"by": "ann", "gone": None}]))
        if is_interrupt_expired(interrupt, now):
            answers[interrupt.id] = cancel(metadata)
            note("an expired interrupt cancelled")
            continue
        route = client.route(interrupt)
        choices: list[Reply] = [cancel(metadata)]
        if route.kind == "approval":
            choices += [approve(metadata), deny(metadata)]
            if route.editable:
                choices.append(approve_with_edits({"to": "z@example.com"}, metadata))
        elif route.kind == "form":
            choices.append(resolve({"year": data.draw(st.integers(2000, 3000))}, metadata))
        elif route.kind == "confirmation":
            choices += [resolve(True, metadata), resolve(False, metadata)]
        else:
            choices.append(resolve(data.draw(json_values(max_leaves=4)), metadata))
        answers[interrupt.id] = data.draw(st.sampled_from(choices))
    return answers


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_client_accepts_every_stream_the_thread_machine_emits_and_vice_versa(
    data: st.DataObject,
) -> None:
    thread = ThreadMachine(TID)
    client = ClientMachine(TID)
    ids = itertools.count()
    run_ids = (f"run-{n}" for n in itertools.count())
    now = T0
    for _ in range(data.draw(st.integers(1, 5))):
        built = client.awaiting_input and data.draw(st.integers(0, 4)) > 0
        answers: dict[str, Reply] = {}
        answered = client.open_interrupts if built else ()
        if built:
            answers = _answers(data, client, now)
            keep = data.draw(st.booleans())
            run_input = client.resume(
                answers,
                now=now,
                run_id=next(run_ids),
                messages=client.messages if keep else None,
                state=client.state if keep else None,
            )
            validate_input(input_to_dict(run_input))
        else:
            # A plain input (refused with a lone RUN_ERROR while live interrupts are open).
            run_input = RunAgentInput(thread_id=TID, run_id=next(run_ids))
        effects = thread.receive_input(run_input, now=now)
        events = emitted(effects)
        if built:
            assert not any(isinstance(e, ev.RunErrorEvent) for e in events), events
            note("a resume built and accepted")
            if any(r.status == "cancelled" for r in answers.values()):
                note("a resume with a cancellation")
        elif any(isinstance(e, ev.RunErrorEvent) for e in events):
            note("a plain input refused while interrupts are open")
        how = None
        if any(isinstance(e, StartAgent) for e in effects):
            agent = _Agent(data, thread, ids, now)
            agent.act()
            how = agent.end()
            events += agent.events
            note(f"a run ended with {how}")
        # The ThreadMachine records a resume for replay only when it answered a live interrupt
        # (cancelling only expired ones is not recorded), so only such a resume is re-sent.
        replayable = any(not is_interrupt_expired(i, now) for i in answered)
        if replayable and how in ("interrupt", "finish", "cancel") and data.draw(st.integers(0, 3)) == 0:
            # The stream breaks off before RUN_FINISHED; the same resume is sent again and the
            # agent replays the run it already carried out.
            feed(client, events[: data.draw(st.integers(1, len(events) - 1))], now)
            client.abandon_run()
            again = client.resume(answers, now=now, run_id=next(run_ids))
            effects = thread.receive_input(again, now=now)
            events = emitted(effects)
            assert not any(isinstance(e, ev.RunErrorEvent) for e in events), events
            assert not any(isinstance(e, StartAgent) for e in effects)  # a replay runs nothing
            note("a broken-off resumed run replayed")
        feed(client, events, now)
        # Whatever the thread holds open the client holds open; the client may hold more
        # only for interrupts that expired (a failed run hands them back, the agent has
        # closed them as expired).
        thread_open = {i.id for i in thread.open_interrupts}
        client_open = {i.id: i for i in client.open_interrupts}
        assert thread_open <= set(client_open)
        assert all(is_interrupt_expired(client_open[i], now) for i in set(client_open) - thread_open)
        if client.run_status is RunStatus.FINISHED and isinstance(client.outcome, RunFinishedInterruptOutcome):
            # The interrupt boundary's snapshots carried the agent's view whole. The client
            # reconciles MESSAGES_SNAPSHOT by id (spec 1.1): a message it already held keeps
            # its place, so only the order of messages it met in a different order may differ.
            assert client.state == thread.agent_state
            assert {m.id: m for m in client.messages} == {m.id: m for m in thread.messages}
            assert len(client.messages) == len(thread.messages)
        now += timedelta(microseconds=data.draw(st.integers(0, 90_000_000)))


# --- the client builds exactly the resumes the agent side admits (issue 27, item 2) ---------


def _thread_with(interrupts: list[Interrupt]) -> ThreadMachine:
    thread = ThreadMachine(TID)
    thread.receive_input(RunAgentInput(thread_id=TID, run_id="run-1"), now=T0)
    thread.interrupt(interrupts, now=T0)
    return thread


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_client_and_agent_admit_the_same_resumes(data: st.DataObject) -> None:
    draw = data.draw
    interrupts = []
    for n in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["confirm", "form", "custom"]))
        expires = draw(st.one_of(st.none(), st.integers(-60, 60)))
        common: dict[str, Any] = {
            "id": f"i-{n}",
            "expires_at": None if expires is None else (T0 + timedelta(seconds=expires)).isoformat(),
        }
        if kind == "confirm":
            interrupts.append(Interrupt(reason="confirmation", **common))
        elif kind == "form":
            interrupts.append(Interrupt(reason="input_required", response_schema=FORM, **common))
        else:
            interrupts.append(Interrupt(reason="acme:review", **common))
    thread = _thread_with(interrupts)
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    client.receive_event(
        ev.RunFinishedEvent(
            thread_id=TID, run_id="run-1", outcome=RunFinishedInterruptOutcome(interrupts=tuple(interrupts))
        ),
        now=T0,
    )
    ids = [i.id for i in interrupts]
    answered = draw(st.lists(st.sampled_from([*ids, "ghost"]), unique=True, min_size=1))
    payloads = st.sampled_from([True, False, {"year": 2030}, {"year": 1999}, "text", None])
    answers = {
        iid: draw(st.sampled_from([cancel(), resolve(draw(payloads))]))
        for iid in sorted(answered, key=lambda i: ids.index(i) if i in ids else len(ids))
    }
    now = T0 + timedelta(seconds=draw(st.integers(0, 30)))
    try:
        built: RunAgentInput | None = client.resume(answers, now=now, run_id="run-2")
        client_code = None
    except LocalProtocolError as exc:
        built, client_code = None, exc.code
    # The same answers, as entries the agent receives whatever the client thought of them.
    run_input = built or RunAgentInput(
        thread_id=TID,
        run_id="run-2",
        resume=tuple(
            ResumeEntry(
                interrupt_id=iid,
                status=reply.status,
                payload=reply.payload if reply.status == "resolved" else None,
            )
            for iid, reply in answers.items()
        ),
    )
    effects = thread.receive_input(run_input, now=now)
    rejected = [e for e in effects if isinstance(e, Reject)]
    agent_code = rejected[0].code if rejected else None
    note(f"client {client_code}, agent {agent_code}")
    assert client_code == agent_code


def test_a_resume_of_more_interrupts_than_a_thread_holds_is_refused_by_both() -> None:
    many = tuple(confirm(f"i-{n}") for n in range(101))
    client = ClientMachine(TID)
    feed(client, [started(), *SNAPSHOTS])
    client.receive_event(
        ev.RunFinishedEvent(thread_id=TID, run_id="run-1", outcome=RunFinishedInterruptOutcome(interrupts=many)),
        now=T0,
    )
    with pytest.raises(LocalProtocolError) as info:
        client.resume({i.id: resolve(True) for i in many}, now=T0, run_id="run-2")
    assert info.value.code is RunErrorCode.INVALID_RESUME
    entries = tuple(ResumeEntry(interrupt_id=i.id, status="resolved", payload=True) for i in many)
    thread = _thread_with([confirm("i-0")])
    (reject,) = thread.receive_input(RunAgentInput(thread_id=TID, run_id="run-2", resume=entries), now=T0)
    assert isinstance(reject, Reject) and reject.code is RunErrorCode.INVALID_RESUME
