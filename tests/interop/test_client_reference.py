"""The ClientMachine against the reference client, ``@ag-ui/client`` 1.0.0, on the same cases.

Three functions of the reference are asked, each in one node process: ``verifyEvents`` (after
``enforceEvents``, as its agents run them) on whole streams, ``buildResumeArray`` on
interrupts and responses, ``isInterruptExpired`` on interrupts at given instants.

What the reference refuses, we refuse. Where the reference accepts, we accept too, except for
the extra rules we enforce, each shown below by a case the reference accepts and we refuse:

On streams (:data:`agui_core.machine.client.CLIENT_RULES`)
    ``thread-mismatch``, ``run-id-mismatch``, ``interrupt-id-empty``,
    ``interrupt-reason-empty``, ``interrupt-duplicate-id`` (within an outcome and across the
    thread, but for an interrupt the run answered, announced again as still open: a quorum's
    vote), ``interrupt-reason-reserved``, ``interrupt-tool-call-missing``,
    ``interrupt-tool-call-unknown``, ``interrupt-expires-at-invalid`` (any value that is not
    RFC 3339 with a zone, including those the reference reads), ``interrupt-schema-invalid``.
    A missing snapshot at the interrupt boundary is a warning here, accepted by both.
    ``interrupt-empty`` is refused by both, the reference by its schema,
    we when decoding. An outcome of an unknown type the reference strips (with a warning) and
    reads as success; our decoder refuses it (``outcome-invalid`` catches in-process objects).

On resumes (``resume()`` refuses; ``buildResumeArray`` builds)
    a resolved answer at or after ``expiresAt`` (the reference's own ``isInterruptExpired``
    says expired), a payload that fails the ``responseSchema``, a missing payload the schema
    requires, a non-boolean answer to a ``confirmation`` without schema, ``editedArgs`` where
    the schema offers no edits, a cancelled answer with a payload (the reference drops it
    silently), ``metadata: null`` (the reference copies it, and its own schema then refuses
    the input), a status other than resolved/cancelled, a response with an unknown key (a
    misspelt ``payload`` would otherwise be lost).

One difference in output, not in verdict: a resolved answer whose payload is ``null`` is sent
with the payload left out (our types do not tell null from absent, and a missing payload is
read as null); the reference writes ``"payload": null``.

On expiry the two agree on every value both can read, to the millisecond (JavaScript's
``Date`` drops finer digits and so do we). Values the reference cannot read it never treats as
expired; those are refused on receipt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agui_core.errors import LocalProtocolError, RunErrorCode, WireError
from agui_core.machine.client import CLIENT_RULES, ClientMachine, check_stream, is_interrupt_expired
from agui_core.protocol.codec import event_from_dict, input_to_dict
from tests.interop.nodebridge import NodeResult, ResumeResult, node_resume, node_verify
from tests.seed import APPROVE_SCHEMA, SEED_RESUME_INPUTS, SEED_RUN_FINISHED

T0 = datetime(2026, 4, 20, 16, 0, tzinfo=UTC)
TID = "t-1"


# --- wire building blocks ------------------------------------------------------------------


def run_started(run: str = "r-1", thread: str = TID) -> dict[str, Any]:
    return {"type": "RUN_STARTED", "threadId": thread, "runId": run}


def run_finished(run: str = "r-1", thread: str = TID, **extra: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": thread, "runId": run, **extra}


def interrupted(*interrupts: Mapping[str, Any], run: str = "r-1", thread: str = TID) -> dict[str, Any]:
    return run_finished(run, thread, outcome={"type": "interrupt", "interrupts": list(interrupts)})


def tool_call(call_id: str) -> list[dict[str, Any]]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "send_email"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": '{"to":"a@example.com"}'},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


SNAPSHOTS = [
    {"type": "STATE_SNAPSHOT", "snapshot": {}},
    {"type": "MESSAGES_SNAPSHOT", "messages": []},
]


def boundary(*interrupts: Mapping[str, Any], run: str = "r-1") -> list[dict[str, Any]]:
    """A run that proposes the tool calls its interrupts name, then ends on them properly."""
    calls = [e for i in interrupts if "toolCallId" in i for e in tool_call(i["toolCallId"])]
    return [run_started(run), *calls, *SNAPSHOTS, interrupted(*interrupts, run=run)]


def seed_stream(name: str) -> list[dict[str, Any]]:
    finished = SEED_RUN_FINISHED[name]
    calls = [e for i in finished["outcome"]["interrupts"] if "toolCallId" in i for e in tool_call(i["toolCallId"])]
    return [run_started(finished["runId"], finished["threadId"]), *calls, *SNAPSHOTS, finished]


# --- streams: verifyEvents -----------------------------------------------------------------


@dataclass(frozen=True)
class StreamCase:
    name: str
    events: list[dict[str, Any]]
    extra_rule: str | None = None
    """The rule of ours that refuses a stream the reference accepts (None: we agree;
    ``"decode"``: our decoder refuses what the reference strips)."""


CONFIRM = {"id": "c-1", "reason": "confirmation"}

STREAMS: list[StreamCase] = [
    # Both accept.
    *(StreamCase(f"seed/{name}", seed_stream(name)) for name in sorted(SEED_RUN_FINISHED)),
    StreamCase("lone-run-error", [{"type": "RUN_ERROR", "message": "no", "code": "PENDING_INTERRUPTS"}]),
    StreamCase("absent-outcome", [run_started(), run_finished(result={"a": 1})]),
    StreamCase(
        "two-runs-cancelled-then-error",
        [
            run_started(),
            run_finished(outcome={"type": "cancelled"}),
            run_started("r-2"),
            run_finished("r-2", outcome={"type": "success"}),
            {"type": "RUN_ERROR", "message": "refused"},
        ],
    ),
    StreamCase(
        "resumed-run-answers-an-earlier-tool-call",
        [
            *boundary({"id": "i-1", "reason": "tool_call", "toolCallId": "tc-1"}),
            run_started("r-2"),
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "m-9",
                "toolCallId": "tc-1",
                "content": "sent",
            },
            run_finished("r-2", outcome={"type": "success"}),
        ],
    ),
    StreamCase("custom-reason", boundary({"id": "x", "reason": "acme:review", "metadata": {"k": None}})),
    StreamCase("expires-at-lowercase-z", boundary({**CONFIRM, "expiresAt": "2026-04-20t17:00:00.5z"})),
    # The reference refuses: so do we.
    StreamCase(
        "first-event-not-run-started",
        [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}],
    ),
    StreamCase(
        "event-after-run-finished",
        [run_started(), run_finished(), {"type": "STEP_STARTED", "stepName": "s"}],
    ),
    StreamCase(
        "event-after-run-error",
        [
            run_started(),
            {"type": "RUN_ERROR", "message": "x"},
            {"type": "STEP_STARTED", "stepName": "s"},
        ],
    ),
    StreamCase("run-started-twice", [run_started(), run_started("r-2")]),
    StreamCase(
        "text-content-not-open",
        [run_started(), {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"}],
    ),
    StreamCase(
        "tool-args-not-open",
        [run_started(), {"type": "TOOL_CALL_ARGS", "toolCallId": "t", "delta": "{}"}],
    ),
    StreamCase(
        "interrupt-with-tool-call-open",
        [
            run_started(),
            {"type": "TOOL_CALL_START", "toolCallId": "tc-1", "toolCallName": "f"},
            *SNAPSHOTS,
            interrupted({"id": "i-1", "reason": "tool_call", "toolCallId": "tc-1"}),
        ],
    ),
    StreamCase(
        "interrupt-with-text-open",
        [
            run_started(),
            {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
            *SNAPSHOTS,
            interrupted(CONFIRM),
        ],
    ),
    StreamCase(
        "interrupt-with-step-open",
        [
            run_started(),
            {"type": "STEP_STARTED", "stepName": "s"},
            *SNAPSHOTS,
            interrupted(CONFIRM),
        ],
    ),
    StreamCase(
        "interrupt-with-subagent-open",
        [
            run_started(),
            {"type": "SUBAGENT_STARTED", "subagentRunId": "s-1", "name": "helper"},
            *SNAPSHOTS,
            interrupted(CONFIRM),
        ],
    ),
    StreamCase("interrupt-outcome-empty", [run_started(), *SNAPSHOTS, interrupted()]),
    StreamCase("interrupt-without-reason", [run_started(), *SNAPSHOTS, interrupted({"id": "i"})]),
    # The reference accepts; one of our extra rules refuses.
    StreamCase("outcome-unknown-type", [run_started(), run_finished(outcome={"type": "error"})], "decode"),
    StreamCase("thread-mismatch", [run_started(), run_finished(thread="t-other")], "thread-mismatch"),
    StreamCase("run-id-mismatch", [run_started(), run_finished("r-9")], "run-id-mismatch"),
    StreamCase("interrupt-id-empty", boundary({**CONFIRM, "id": ""}), "interrupt-id-empty"),
    StreamCase("interrupt-reason-empty", boundary({**CONFIRM, "reason": ""}), "interrupt-reason-empty"),
    StreamCase("interrupt-duplicate-in-outcome", boundary(CONFIRM, CONFIRM), "interrupt-duplicate-id"),
    StreamCase(
        "interrupt-duplicate-across-runs",
        [*boundary(CONFIRM), run_started("r-2"), run_finished("r-2"), *boundary(CONFIRM, run="r-3")],
        "interrupt-duplicate-id",
    ),
    # The run that answered an interrupt may announce it again, still open: one vote of a
    # quorum (agui_core.machine.quorum). Both accept it.
    StreamCase("interrupt-still-open-after-a-vote", [*boundary(CONFIRM), *boundary(CONFIRM, run="r-2")], None),
    StreamCase(
        "interrupt-reason-reserved",
        boundary({**CONFIRM, "reason": "core:approval"}),
        "interrupt-reason-reserved",
    ),
    StreamCase(
        "tool-call-interrupt-without-tool-call-id",
        boundary({"id": "i", "reason": "tool_call"}),
        "interrupt-tool-call-missing",
    ),
    StreamCase(
        "tool-call-interrupt-for-an-unseen-call",
        [
            run_started(),
            *SNAPSHOTS,
            interrupted({"id": "i", "reason": "tool_call", "toolCallId": "tc-x"}),
        ],
        "interrupt-tool-call-unknown",
    ),
    *(
        StreamCase(
            f"expires-at-{label}",
            boundary({**CONFIRM, "expiresAt": value}),
            "interrupt-expires-at-invalid",
        )
        for label, value in [
            ("no-zone", "2026-04-20T17:00:00"),
            ("date-only", "2026-04-20"),
            ("hour-24", "2026-04-20T24:00:00Z"),
            ("extended-year", "+002026-04-20T17:00:00Z"),
            ("rfc-2822", "Mon, 20 Apr 2026 17:00:00 GMT"),
            ("week-date", "2026-W16-1T17:00:00Z"),
            ("words", "tomorrow"),
        ]
    ),
    StreamCase(
        "response-schema-invalid",
        boundary({**CONFIRM, "responseSchema": {"type": 12}}),
        "interrupt-schema-invalid",
    ),
    # No snapshots at the interrupt boundary: the seed asks for them, the spec does not make a
    # client reject the stream, so both clients accept it (ours warns: snapshot-missing).
    StreamCase("interrupt-without-snapshots", [run_started(), interrupted(CONFIRM)], None),
    StreamCase(
        "seed-run-finished-alone",
        [
            run_started("run-1", "thread-1"),
            *tool_call("tc-001"),
            SEED_RUN_FINISHED["minimal-tool-approval"],
        ],
        None,
    ),
]


@pytest.fixture(scope="module")
def verified() -> dict[str, NodeResult]:
    results = node_verify([case.events for case in STREAMS])
    return {case.name: result for case, result in zip(STREAMS, results, strict=True)}


def our_rules(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rules our client breaks on a wire stream; a decoding failure counts as ``"decode"``."""
    try:
        decoded = [event_from_dict(dict(e)) for e in events]
    except WireError:
        return ["decode"]
    return [error.rule for error in check_stream(decoded, now=T0)]


@pytest.mark.parametrize("case", STREAMS, ids=lambda c: c.name)
def test_streams_agree_with_verify_events(case: StreamCase, verified: dict[str, NodeResult]) -> None:
    reference = verified[case.name]
    ours = our_rules(case.events)
    if not reference.ok:
        assert ours, f"the reference refuses ({reference.error}); we accept"
    elif case.extra_rule is None:
        assert ours == []
        assert reference.stripped == ()
    elif case.extra_rule == "decode":
        assert reference.stripped and ours == ["decode"]
    else:
        assert case.extra_rule in CLIENT_RULES
        assert ours[:1] == [case.extra_rule]


def test_every_extra_stream_rule_has_a_case_the_reference_accepts(
    verified: dict[str, NodeResult],
) -> None:
    shown = {case.extra_rule for case in STREAMS if case.extra_rule is not None and verified[case.name].ok}
    # An empty interrupt list is refused by the reference's schema and by our decoder alike;
    # an unknown outcome is stripped by the reference and refused by our decoder.
    assert shown == (CLIENT_RULES - {"outcome-invalid", "interrupt-empty"}) | {"decode"}
    empty = next(c.events for c in STREAMS if c.name == "interrupt-outcome-empty")
    assert not verified["interrupt-outcome-empty"].ok and our_rules(empty) == ["decode"]


# --- resumes: buildResumeArray -------------------------------------------------------------


@dataclass(frozen=True)
class ResumeCase:
    name: str
    interrupts: list[dict[str, Any]]
    responses: dict[str, Any]
    now: datetime = T0
    extra: RunErrorCode | None = None
    """The code of our refusal where the reference builds (None: we agree)."""


FORM = {"type": "object", "properties": {"year": {"type": "integer"}}, "required": ["year"]}
GATE = {"id": "g", "reason": "tool_call", "toolCallId": "tc-1", "responseSchema": APPROVE_SCHEMA}
EXPIRING = {**CONFIRM, "expiresAt": "2026-04-20T16:30:00Z"}
RESOLVED_TRUE = {"status": "resolved", "payload": True}
REAL_ADDRESS = "jane@example.com"


def _seed_cases() -> list[ResumeCase]:
    cases = []
    for name, finished in sorted(SEED_RUN_FINISHED.items()):
        responses = {
            e["interruptId"]: {k: v for k, v in e.items() if k != "interruptId"}
            for e in SEED_RESUME_INPUTS[name]["resume"]
        }
        if name == "approve-with-edits":
            payload = responses["int-email-edit"]["payload"]
            edited = {**payload["editedArgs"], "to": REAL_ADDRESS}
            responses["int-email-edit"] = {
                "status": "resolved",
                "payload": {**payload, "editedArgs": edited},
            }
        cases.append(ResumeCase(f"seed/{name}", finished["outcome"]["interrupts"], responses))
    return cases


RESUMES: list[ResumeCase] = [
    # Both build the same array.
    *_seed_cases(),
    ResumeCase(
        "answers-in-another-order",
        [CONFIRM, {"id": "x", "reason": "acme:x"}],
        {
            "x": {"status": "cancelled", "metadata": {"k": None}},
            "c-1": {"status": "resolved", "payload": False},
        },
    ),
    ResumeCase(
        "cancel-after-expiry",
        [EXPIRING],
        {"c-1": {"status": "cancelled"}},
        now=T0 + timedelta(hours=1),
    ),
    ResumeCase(
        "resolved-just-before-expiry",
        [EXPIRING],
        {"c-1": RESOLVED_TRUE},
        now=T0 + timedelta(minutes=30, milliseconds=-1),
    ),
    ResumeCase(
        "deny",
        [GATE],
        {"g": {"status": "resolved", "payload": {"approved": False}, "metadata": {"by": "ann"}}},
    ),
    # Both refuse.
    ResumeCase("missing-response", [CONFIRM, {"id": "x", "reason": "acme:x"}], {"c-1": RESOLVED_TRUE}),
    ResumeCase("unknown-id", [CONFIRM], {"c-1": RESOLVED_TRUE, "zz": {"status": "cancelled"}}),
    ResumeCase("no-responses", [CONFIRM], {}),
    ResumeCase("missing-and-unknown", [CONFIRM], {"zz": RESOLVED_TRUE}),
    # The reference builds; we refuse.
    ResumeCase(
        "resolved-at-expiry",
        [EXPIRING],
        {"c-1": RESOLVED_TRUE},
        now=T0 + timedelta(minutes=30),
        extra=RunErrorCode.INTERRUPT_EXPIRED,
    ),
    ResumeCase(
        "resolved-after-expiry",
        [EXPIRING],
        {"c-1": RESOLVED_TRUE},
        now=T0 + timedelta(days=1),
        extra=RunErrorCode.INTERRUPT_EXPIRED,
    ),
    ResumeCase(
        "payload-fails-schema",
        [{"id": "f", "reason": "input_required", "responseSchema": FORM}],
        {"f": {"status": "resolved", "payload": {"year": "2026"}}},
        extra=RunErrorCode.INVALID_PAYLOAD,
    ),
    ResumeCase(
        "payload-missing-where-required",
        [{"id": "f", "reason": "input_required", "responseSchema": FORM}],
        {"f": {"status": "resolved"}},
        extra=RunErrorCode.INVALID_PAYLOAD,
    ),
    ResumeCase(
        "seed-edit-as-printed",
        SEED_RUN_FINISHED["approve-with-edits"]["outcome"]["interrupts"],
        {
            "int-email-edit": {
                "status": "resolved",
                "payload": SEED_RESUME_INPUTS["approve-with-edits"]["resume"][0]["payload"],
            }
        },
        extra=RunErrorCode.INVALID_PAYLOAD,
    ),
    ResumeCase(
        "confirmation-not-boolean",
        [CONFIRM],
        {"c-1": {"status": "resolved", "payload": {"approved": True}}},
        extra=RunErrorCode.INVALID_PAYLOAD,
    ),
    ResumeCase(
        "edits-not-offered",
        [GATE],
        {"g": {"status": "resolved", "payload": {"approved": True, "editedArgs": {"to": "x"}}}},
        extra=RunErrorCode.INVALID_PAYLOAD,
    ),
    ResumeCase(
        "cancelled-with-payload",
        [CONFIRM],
        {"c-1": {"status": "cancelled", "payload": True}},
        extra=RunErrorCode.INVALID_RESUME,
    ),
    ResumeCase(
        "metadata-null",
        [CONFIRM],
        {"c-1": {**RESOLVED_TRUE, "metadata": None}},
        extra=RunErrorCode.INVALID_RESUME,
    ),
    ResumeCase(
        "status-unknown",
        [CONFIRM],
        {"c-1": {"status": "denied", "payload": True}},
        extra=RunErrorCode.INVALID_RESUME,
    ),
    ResumeCase(
        "misspelt-key",
        [CONFIRM],
        {"c-1": {"status": "resolved", "paylod": True}},
        extra=RunErrorCode.INVALID_RESUME,
    ),
]


def _iso(now: datetime) -> str:
    return now.isoformat(timespec="milliseconds")


@pytest.fixture(scope="module")
def built() -> dict[str, ResumeResult]:
    cases = [{"interrupts": c.interrupts, "responses": c.responses, "now": _iso(c.now)} for c in RESUMES]
    return {case.name: result for case, result in zip(RESUMES, node_resume(cases), strict=True)}


def client_for(interrupts: Sequence[Mapping[str, Any]]) -> ClientMachine:
    client = ClientMachine(TID)
    for event in boundary(*interrupts):
        client.receive_event(event_from_dict(event), now=T0)
    return client


def our_resume(case: ResumeCase) -> list[dict[str, Any]] | LocalProtocolError:
    client = client_for(case.interrupts)
    try:
        run_input = client.resume(case.responses, now=case.now, run_id="r-2")
    except LocalProtocolError as exc:
        return exc
    wire = input_to_dict(run_input)
    assert wire["threadId"] == TID and wire["messages"] == []
    resume: list[dict[str, Any]] = wire["resume"]
    return resume


@pytest.mark.parametrize("case", RESUMES, ids=lambda c: c.name)
def test_resumes_agree_with_build_resume_array(case: ResumeCase, built: dict[str, ResumeResult]) -> None:
    reference = built[case.name]
    ours = our_resume(case)
    if not reference.ok:
        assert isinstance(ours, LocalProtocolError), f"the reference refuses ({reference.error}); we build"
        assert ours.code in (RunErrorCode.PARTIAL_RESUME, RunErrorCode.UNKNOWN_INTERRUPT_ID)
    elif case.extra is None:
        assert ours == reference.value
    else:
        assert isinstance(ours, LocalProtocolError), "the extra rule did not refuse"
        assert ours.code is case.extra


def test_the_reference_itself_calls_the_late_answers_expired(
    built: dict[str, ResumeResult],
) -> None:
    for name in ("resolved-at-expiry", "resolved-after-expiry"):
        assert built[name].ok and built[name].expired == (True,)
    assert built["resolved-just-before-expiry"].expired == (False,)


def test_the_reference_copies_metadata_null_which_its_own_schema_then_refuses(
    built: dict[str, ResumeResult],
) -> None:
    value = built["metadata-null"].value
    assert value == [{"interruptId": "c-1", "status": "resolved", "payload": True, "metadata": None}]


def test_a_null_payload_is_left_out_where_the_reference_writes_null() -> None:
    interrupts = [{"id": "x", "reason": "acme:x"}]
    responses = {"x": {"status": "resolved", "payload": None}}
    (reference,) = node_resume([{"interrupts": interrupts, "responses": responses}])
    assert reference.value == [{"interruptId": "x", "status": "resolved", "payload": None}]
    assert our_resume(ResumeCase("null", interrupts, responses)) == [{"interruptId": "x", "status": "resolved"}]


# --- expiry: isInterruptExpired ------------------------------------------------------------

EXPIRY_VALUES = [
    "2026-04-20T17:00:00Z",
    "2026-04-20T17:00:00z",
    "2026-04-20t17:00:00Z",
    "2026-04-20 17:00:00Z",
    "2026-04-20T19:00:00+02:00",
    "2026-04-20T17:00:00-00:00",
    "2026-04-20T16:59:59.999Z",
    "2026-04-20T17:00:00.0005Z",
    "2026-04-20T17:00:00.000999999Z",
    "2026-04-20T17:00:00.001Z",
    "2026-04-20T18:30:00.5+01:30",
]
INSTANT = datetime(2026, 4, 20, 17, 0, tzinfo=UTC)
NOWS = [INSTANT + timedelta(milliseconds=ms) for ms in (-1000, -2, -1, 0, 1, 2, 501, 1000)]


def test_expiry_agrees_with_is_interrupt_expired_to_the_millisecond() -> None:
    interrupts = [{"id": f"e-{n}", "reason": "confirmation", "expiresAt": v} for n, v in enumerate(EXPIRY_VALUES)]
    responses = {i["id"]: {"status": "cancelled"} for i in interrupts}
    results = node_resume([{"interrupts": interrupts, "responses": responses, "now": _iso(now)} for now in NOWS])
    client = client_for(interrupts)
    for now, result in zip(NOWS, results, strict=True):
        ours = tuple(is_interrupt_expired(i, now) for i in client.open_interrupts)
        assert ours == result.expired, now


def test_values_refused_on_receipt_that_the_reference_cannot_read_never_expire_there() -> None:
    unreadable = ["2026-W16-1T17:00:00Z", "20260420T170000Z", "2026-04-20T17:00:00+02", "tomorrow"]
    interrupts = [{"id": f"u-{n}", "reason": "confirmation", "expiresAt": v} for n, v in enumerate(unreadable)]
    (result,) = node_resume([{"interrupts": interrupts, "responses": {}, "now": "2999-01-01T00:00:00.000Z"}])
    assert result.expired == (False,) * len(unreadable)
    for interrupt in interrupts:
        assert our_rules(boundary(interrupt)) == ["interrupt-expires-at-invalid"]
