"""What the conformance kit checks, and what it found: the catalogue, results and the report.

Every check has a stable id (``r4.plain-input``), the rule it tests (``R4``: the contract
rules of the seed document are R1 to R8; ``lifecycle``, ``boundary``, ``reasons``,
``tool-bound`` and ``ordering`` name its other sections), and the words it tests, short, in
the seed's own language (Korean) and in English, as SPEC.md restates them. A result is
``pass``, ``fail`` (with the events seen, exactly as they came) or ``n/a`` (with why: the
server never raised what the check needs, say).

Every check also names its ``source`` and its :class:`Force`: a MUST of the published AG-UI
1.1 specification (``ag-ui-protocol/ag-ui``, ``docs/spec/1.1/``), a SHOULD of it, or a rule of
the seed's stricter profile (the concept page agui-core's own host enforces, SPEC.md section
11), where the specification leaves the producer free. A failure breaks the specification only
when its force is a spec MUST; a result may carry a force of its own where what failed is
weaker or stronger than the check's main rule (a plain input answered with success while a
tool approval stands open breaks the spec, one refused with no code only the profile).

:class:`Report` holds the results in catalogue order; :meth:`Report.table` is what a person
reads, :meth:`Report.to_json` what a CI job reads.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

__all__ = ["CATALOGUE", "CheckResult", "CheckSpec", "Force", "Report", "Status", "check_spec"]


class Status(enum.StrEnum):
    """A check's verdict."""

    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "n/a"


class Force(enum.StrEnum):
    """How binding the rule a check tests is."""

    SPEC_MUST = "spec MUST"
    SPEC_SHOULD = "spec SHOULD"
    SEED = "seed profile"


_SPEC = "ag-ui docs/spec/1.1/"
_INTERRUPTS = _SPEC + "basic/patterns/interrupt-resume.mdx"
_LIFECYCLE = _SPEC + "events/lifecycle.mdx"
_SCHEMA = _SPEC + "schema.mdx"


@attrs.frozen(kw_only=True)
class CheckSpec:
    """One check of the catalogue: ``id``, the ``rule`` it tests, a ``title``, and the words
    of the seed it tests (``seed``: the original, ``words``: in English)."""

    id: str
    rule: str
    title: str
    seed: str
    words: str
    force: Force
    """How binding the rule is: spec MUST, spec SHOULD or the seed's profile."""
    source: str
    """Where the rule is written: a page of the published spec (``ag-ui docs/spec/1.1/...``) or the seed."""


# id -> (force, source). The spec leaves most of the seed's producer rules free: coverage and
# expiry are the consumer's to judge, an unrecognised resume entry SHOULD be let through, a
# responseSchema is carried opaquely and RUN_ERROR.code is optional.
_LABELS: Final[Mapping[str, tuple[Force, str]]] = {
    "run.outcome": (
        Force.SPEC_MUST,
        f"{_INTERRUPTS}#interrupting (an interrupted run MUST NOT be reported as success; ids MUST be unique), "
        f"{_SCHEMA}#runfinishedinterruptoutcome (at least one interrupt)",
    ),
    "run.ordering": (Force.SPEC_MUST, f"{_LIFECYCLE}#the-run, #after-a-run-closes, #error-handling"),
    "run.snapshots": (Force.SEED, "seed: state at the interrupt boundary (SPEC.md 3); the spec asks for no snapshot"),
    "run.reasons": (
        Force.SPEC_MUST,
        f"{_SCHEMA}#interrupt (reason required); seed: tool_call sets toolCallId, core: reserved (SPEC.md 4)",
    ),
    "run.response-schema": (Force.SEED, f"seed R6; {_SCHEMA}#interrupt: carried opaquely, not validated"),
    "run.expires-at": (Force.SEED, f"seed R7, SPEC.md 8; {_SCHEMA}#interrupt: deliberately format-unconstrained"),
    "r4.plain-input": (
        Force.SEED,
        f"seed R4; {_INTERRUPTS}#resuming: a producer MAY refuse or re-announce an uncovered interrupt, "
        "MUST NOT end as success while one it knows is open stands unanswered",
    ),
    "r2.unknown-id": (
        Force.SEED,
        f"seed R2; {_INTERRUPTS}#resuming: an unrecognised entry SHOULD be let through with a warning",
    ),
    "r3.partial-resume": (
        Force.SEED,
        f"seed R3; {_INTERRUPTS}#resuming: coverage is the consumer's MUST; a producer that can tell "
        "MUST NOT end as success with an interrupt uncovered",
    ),
    "r1.other-thread": (
        Force.SEED,
        f"seed R1; {_INTERRUPTS}#resuming: entries naming no interrupt of the thread are unrecognised",
    ),
    "r8.cancelled-with-payload": (Force.SEED, f"seed R8 (SPEC.md 2); {_SCHEMA}#resumeentry"),
    "r8.metadata-null": (
        Force.SEED,
        f"seed R8; {_SCHEMA}#metadata: never null when present (refusing the input is the seed's rule)",
    ),
    "r8.missing-payload": (Force.SEED, "seed R8"),
    "r6.invalid-payload": (Force.SEED, f"seed R6; {_SCHEMA}#interrupt: the spec does not validate payloads"),
    "resume.accepted": (
        Force.SPEC_MUST,
        f"{_INTERRUPTS}#resuming (continuing means a new run, same threadId), {_LIFECYCLE}#the-run; "
        "seed: the valid resume is carried out (a run that fails with RUN_ERROR misses only that)",
    ),
    "resume.tool-results": (Force.SEED, "seed: tool-bound interrupts (SPEC.md 5)"),
    "resume.no-tool-restart": (Force.SEED, "seed: tool-bound interrupts (SPEC.md 5)"),
    "resume.cancelled-not-executed": (
        Force.SEED,
        f"seed (SPEC.md 5); {_INTERRUPTS}#resuming: what abandoning means is the producer's business",
    ),
    "r5.replay": (Force.SEED, "seed R5"),
    "r5.concurrent": (Force.SEED, "seed R5"),
    "r7.expired": (Force.SEED, f"seed R7; {_INTERRUPTS}#resuming: expiry is the consumer's judgement"),
    "r8.error-codes": (Force.SEED, f"seed R8, SPEC.md 8; {_LIFECYCLE}#run_error: code is OPTIONAL"),
    "r8.refusal-keeps-interrupts": (
        Force.SEED,
        f"seed R8, SPEC.md 8; {_INTERRUPTS}#resuming: a noticed uncovered interrupt is kept open",
    ),
    "r8.streams-complete": (
        Force.SEED,
        f"seed R8; {_LIFECYCLE}#the-run: a run ends with RUN_FINISHED or RUN_ERROR (a cut stream is the transport's)",
    ),
    "r8.nothing-after-terminal": (
        Force.SPEC_MUST,
        f"{_LIFECYCLE}#after-a-run-closes (only RUN_STARTED, or RUN_ERROR after RUN_FINISHED, may follow); "
        "seed: nothing but RUN_STARTED (SPEC.md 7)",
    ),
    "wire.events": (
        Force.SPEC_MUST,
        f"{_SCHEMA}#event (every member normative), {_LIFECYCLE}#error-handling; checked against @ag-ui/core 1.0.0",
    ),
}


def _spec(id: str, rule: str, title: str, seed: str, words: str) -> CheckSpec:
    force, source = _LABELS[id]
    return CheckSpec(id=id, rule=rule, title=title, seed=seed, words=words, force=force, source=source)


CATALOGUE: Final[tuple[CheckSpec, ...]] = (
    # -- the interrupting run ------------------------------------------------------------------
    _spec(
        "run.outcome",
        "lifecycle",
        "the run ends with a structured interrupt outcome",
        "interrupts는 비어 있지 않은 배열",
        'RUN_FINISHED { outcome: { type: "interrupt", interrupts: [...] } }; interrupts is a non-empty array',
    ),
    _spec(
        "run.ordering",
        "ordering",
        "the interrupting run passes the reference client's ordering rules",
        'RunFinished { outcome: { type: "interrupt" ... } }',
        "the stream passes verifyEvents: RUN_STARTED first, nothing open at RUN_FINISHED (SPEC 7)",
    ),
    _spec(
        "run.snapshots",
        "boundary",
        "STATE_SNAPSHOT and MESSAGES_SNAPSHOT before the interrupt RUN_FINISHED",
        "인터럽트를 담은 RunFinished 이벤트 이전에 StateSnapshot와 MessagesSnapshot",
        "before the RunFinished that carries interrupts, StateSnapshot and MessagesSnapshot",
    ),
    _spec(
        "run.reasons",
        "reasons",
        "every interrupt has a reason; tool_call carries a toolCallId of the run",
        "reason은 필수 문자열 … toolCallId must be set",
        "reason is a required string; tool_call: toolCallId must be set",
    ),
    _spec(
        "run.response-schema",
        "R6",
        "every responseSchema compiles",
        "responseSchema — 예상되는 resume.payload에 대한 JSON Schema",
        "responseSchema: the JSON Schema for the expected resume.payload",
    ),
    _spec(
        "run.expires-at",
        "R7",
        "every expiresAt is an RFC 3339 date-time with a time zone",
        "expiresAt — 선택적 ISO-8601 TTL",
        "expiresAt: optional ISO-8601 TTL (with a time zone, SPEC 8)",
    ),
    # -- refusals ------------------------------------------------------------------------------
    _spec(
        "r4.plain-input",
        "R4",
        "a plain input while interrupts are pending is refused",
        "비준수 입력을 받은 에이전트는 RunError를 발행해야 해요",
        "pending interrupts block new input; an agent receiving non-compliant input must emit RunError",
    ),
    _spec(
        "r2.unknown-id",
        "R2",
        "a resume naming an unknown interrupt id is refused",
        "재개가 에이전트가 상관시키지 못하는 interruptId를 참조함",
        "a resume references an interruptId the agent cannot correlate (RunError)",
    ),
    _spec(
        "r3.partial-resume",
        "R3",
        "a resume that leaves an open interrupt unanswered is refused",
        "부분 재개는 지원되지 않아요",
        "a single resume array must address all open interrupts; partial resumes are not supported",
    ),
    _spec(
        "r1.other-thread",
        "R1",
        "the resume sent on another thread is refused",
        "인터럽트된 실행과 같은 threadId를 사용해야 해요",
        "the resume request must use the same threadId as the interrupted run",
    ),
    _spec(
        "r8.cancelled-with-payload",
        "R8",
        "a cancelled entry carrying a payload is refused",
        "cancelled — … payload는 생략해야 해요",
        "cancelled: the user gave up; payload must be omitted",
    ),
    _spec(
        "r8.metadata-null",
        "R8",
        "an entry with metadata null is refused",
        "객체 자체는 부재하거나 객체이며, 결코 null이 아니에요",
        "metadata is absent or an object, never null",
    ),
    _spec(
        "r8.missing-payload",
        "R8",
        "a resolved entry without the payload its schema requires is refused",
        "누락되거나 잘못된 재개 payload를 조용한 실패가 아닌 RunError로",
        "a missing or invalid resume payload is a RunError, not a silent failure",
    ),
    _spec(
        "r6.invalid-payload",
        "R6",
        "a payload that violates the interrupt's responseSchema is refused",
        "재개 payload가 responseSchema에 대한 검증에 실패함",
        "the resume payload fails validation against responseSchema (RunError)",
    ),
    # -- the resume ----------------------------------------------------------------------------
    _spec(
        "resume.accepted",
        "lifecycle",
        "a valid resume starts a new run on the thread and ends it",
        "resume[].interruptId links back to run 1's interrupts",
        "the client starts a new run whose input carries resume; it begins with RunStarted",
    ),
    _spec(
        "resume.tool-results",
        "tool-bound",
        "an approved tool call's result is sent on its original toolCallId",
        "원래 toolCallId에 대해 ToolCallResult를 발행해요",
        "emits ToolCallResult for the original toolCallId",
    ),
    _spec(
        "resume.no-tool-restart",
        "tool-bound",
        "the resumed run does not re-emit the interrupted tool call",
        "ToolCallStart/ToolCallArgs/ToolCallEnd를 다시 발행하지 않고",
        "does not re-emit ToolCallStart/ToolCallArgs/ToolCallEnd in the resumed run",
    ),
    _spec(
        "resume.cancelled-not-executed",
        "tool-bound",
        "a cancelled tool call is not executed (as far as the stream shows)",
        "tc-c를 실행되지 않은 것으로 취급해요",
        "treats the cancelled call as not executed",
    ),
    _spec(
        "r5.replay",
        "R5",
        "the same resume again is a replay: same outcome, no new execution",
        "안전하게 재생될 수 있어야 해요",
        "a resume with the same (threadId, interruptId, status, payload) can be replayed safely",
    ),
    _spec(
        "r5.concurrent",
        "R5",
        "two identical resumes at the same instant execute at most once",
        "안전하게 재생될 수 있어야 해요",
        "replayed safely: of two identical resumes at once, at most one executes",
    ),
    _spec(
        "r7.expired",
        "R7",
        "a resume after expiresAt is refused",
        "지연된 재개는 RunError를 생성해요",
        "a late resume produces a RunError",
    ),
    # -- throughout ----------------------------------------------------------------------------
    _spec(
        "r8.error-codes",
        "R8",
        "every refusal is a RUN_ERROR with a code",
        "조용한 실패가 아닌 RunError로 처리해야 해요",
        "handled as a RunError, not a silent failure (with a code, SPEC 8)",
    ),
    _spec(
        "r8.refusal-keeps-interrupts",
        "R8",
        "a refused resume leaves the interrupts open: the valid resume still works",
        "조용한 실패가 아닌 RunError",
        "a refusal is not a silent failure: a rejected input changes nothing (SPEC 8)",
    ),
    _spec(
        "r8.streams-complete",
        "R8",
        "every response ends with RUN_FINISHED or RUN_ERROR; none is cut",
        "조용한 실패가 아닌 RunError",
        "not a silent failure: every stream reaches its terminal event",
    ),
    _spec(
        "r8.nothing-after-terminal",
        "ordering",
        "nothing follows a terminal event in its response",
        "RunError는 유일한 오류 이벤트예요",
        "nothing but a new RUN_STARTED follows RUN_FINISHED/RUN_ERROR (SPEC 7)",
    ),
    _spec(
        "wire.events",
        "wire",
        "every frame is a valid AG-UI 1.0 event; every stream passes the ordering rules",
        "RunFinished는 선택적 outcome 필드를 담아요",
        "events and fields are those of @ag-ui/core 1.0.0 (SPEC 2, 7)",
    ),
)
"""Every check, in report order."""

_BY_ID: Final[Mapping[str, CheckSpec]] = {spec.id: spec for spec in CATALOGUE}


@attrs.frozen(kw_only=True)
class CheckResult:
    """A check's verdict: ``detail`` says why, ``notes`` add what passed with a remark (a
    refusal whose code differs from agui-core's table, say), ``evidence`` holds the exchanges
    that decided it, each ``{"probe", "sent", "events", "end"}`` with the events as received."""

    spec: CheckSpec
    status: Status
    detail: str
    notes: tuple[str, ...] = ()
    evidence: tuple[Mapping[str, Any], ...] = ()
    force: Force | None = None
    """The force of what this result found, where it differs from the check's (``None``: the check's)."""

    @property
    def judged(self) -> Force:
        """The force this result is judged by: its own, else the check's."""
        return self.force if self.force is not None else self.spec.force

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.spec.id,
            "rule": self.spec.rule,
            "title": self.spec.title,
            "seed": self.spec.seed,
            "words": self.spec.words,
            "force": self.judged.value,
            "source": self.spec.source,
            "status": self.status.value,
            "detail": self.detail,
            "notes": list(self.notes),
            "evidence": [dict(e) for e in self.evidence],
        }


def check_spec(check_id: str) -> CheckSpec:
    """The catalogue entry ``check_id``; ``KeyError`` for an unknown id."""
    return _BY_ID[check_id]


@attrs.frozen(kw_only=True)
class Report:
    """The results of one run of the kit against ``target`` over ``transport``."""

    target: str
    transport: str
    results: tuple[CheckResult, ...]
    started_at: str
    seconds: float
    server: Mapping[str, Any] = attrs.field(factory=dict)
    """What the kit learnt of the server: its capabilities, when it serves them."""
    approve: bool = False
    """Whether the kit was let approve (``--approve``): without it, it denied or cancelled every gate."""
    answers: tuple[str, ...] = ()
    """How the kit answered each interrupt of the main run (approved, denied, cancelled, a form's answer)."""
    skipped: tuple[str, ...] = ()
    """The checks not run because they need a tool to run, which only ``--approve`` allows."""
    cleanup: tuple[Mapping[str, Any], ...] = ()
    """What the kit did at its end to leave no interrupt open: ``{"threadId", "did", "result"}`` each."""
    left_open: Mapping[str, Sequence[Any]] = attrs.field(factory=dict)
    """Threads the kit opened that still have interrupts open after its cleanup (thread id -> ids)."""

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(r for r in self.results if r.status is Status.FAIL)

    @property
    def ok(self) -> bool:
        """Whether nothing failed (the seed's profile: every check counts)."""
        return not self.failed

    def failed_by(self, force: Force) -> tuple[CheckResult, ...]:
        """The failures judged by ``force``."""
        return tuple(r for r in self.failed if r.judged is force)

    @property
    def breaks_spec(self) -> bool:
        """Whether a failure breaks a MUST of the published spec."""
        return bool(self.failed_by(Force.SPEC_MUST))

    def verdict(self) -> dict[str, list[str]]:
        """The failed check ids, by force: what breaks the spec, what misses a SHOULD, what
        misses only the seed's stricter profile."""
        return {force.value: [r.spec.id for r in self.failed_by(force)] for force in Force}

    def result(self, check_id: str) -> CheckResult:
        """The result of ``check_id``; ``KeyError`` if it is not in the report."""
        for result in self.results:
            if result.spec.id == check_id:
                return result
        raise KeyError(check_id)

    def counts(self) -> dict[str, int]:
        """How many checks passed, failed and did not apply."""
        return {status.value: sum(r.status is status for r in self.results) for status in Status}

    def to_json(self) -> dict[str, Any]:
        """The machine-readable report."""
        return {
            "kit": "agui conformance",
            "target": self.target,
            "transport": self.transport,
            "startedAt": self.started_at,
            "seconds": round(self.seconds, 3),
            "ok": self.ok,
            "breaksSpec": self.breaks_spec,
            "counts": self.counts(),
            "failedByForce": self.verdict(),
            "server": dict(self.server),
            "approve": self.approve,
            "answers": list(self.answers),
            "skippedWithoutApprove": list(self.skipped),
            "cleanup": [dict(c) for c in self.cleanup],
            "leftOpen": {thread: list(ids) for thread, ids in self.left_open.items()},
            "checks": [r.to_json() for r in self.results],
        }

    def _summary(self) -> list[str]:
        verdict = self.verdict()
        return [
            _summary_line("breaks the spec (a MUST of AG-UI 1.1)", verdict[Force.SPEC_MUST.value]),
            _summary_line("misses a SHOULD of the spec", verdict[Force.SPEC_SHOULD.value]),
            _summary_line("misses the seed's stricter profile (the spec allows it)", verdict[Force.SEED.value]),
        ]

    def table(self, *, width: int = 120) -> str:
        """The report as a person reads it: one line per check, then what failed, with the events seen."""
        lines = [f"agui conformance {self.target} ({self.transport}), {self.seconds:.1f} s"]
        if self.approve:
            lines.append("--approve: the kit approved the tool calls and confirmations the server asked about")
        else:
            lines.append("without --approve: the kit denied or cancelled every approval; it ran no gated tool")
        lines += [f"  {answer}" for answer in self.answers]
        lines.append("")
        id_width = max(len(r.spec.id) for r in self.results) if self.results else 10
        rule_width = max(len(r.spec.rule) for r in self.results) if self.results else 5
        force_width = max(len(force.value) for force in Force)
        header = f"{'status':<6}  {'force':<{force_width}}  {'rule':<{rule_width}}  {'check':<{id_width}}  detail"
        lines += [header, "-" * min(width, max(len(header), 60))]
        for result in self.results:
            detail = _one_line(result.detail, width - 14 - force_width - rule_width - id_width)
            lines.append(
                f"{result.status.value:<6}  {result.judged.value:<{force_width}}  {result.spec.rule:<{rule_width}}  "
                f"{result.spec.id:<{id_width}}  {detail}"
            )
        counts = self.counts()
        lines += ["", f"{counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} not applicable"]
        lines += self._summary()
        skipped = [r for r in self.results if r.status is Status.NOT_APPLICABLE]
        if skipped:
            lines += ["", "Not applicable:"]
            lines += [f"  {r.spec.id}: {r.detail}" for r in skipped]
        if self.skipped:
            lines += ["", f"Skipped without --approve (they need a tool to run): {', '.join(self.skipped)}"]
        closed = [c for c in self.cleanup if c.get("threadId") is not None]
        lines += ["", f"Cleanup: {len(closed)} exchange(s) to leave no interrupt open"]
        if self.left_open:
            lines.append("LEFT OPEN (cancel these by hand):")
            lines += [f"  thread {t}: {', '.join(map(str, ids))}" for t, ids in self.left_open.items()]
        else:
            lines.append("  every thread the kit opened is left with no open interrupt")
        for result in self.results:
            if result.status is not Status.FAIL and not result.notes:
                continue
            lines += ["", f"{result.status.value.upper()} {result.spec.id} [{result.spec.rule}] {result.spec.title}"]
            lines.append(f"  force: {result.judged.value}; source: {result.spec.source}")
            lines.append(f'  tests: "{result.spec.seed}" ({result.spec.words})')
            if result.status is Status.FAIL:
                lines.append(f"  why: {result.detail}")
            lines += [f"  note: {note}" for note in result.notes]
            if result.status is Status.FAIL:
                for item in result.evidence:
                    lines.append(f"  {item.get('probe')}: sent {_sent_summary(item.get('sent'))}")
                    lines += [f"    {event}" for event in _event_lines(item.get("events") or ())]
                    end = item.get("end")
                    if end and end != "terminal":
                        lines.append(f"    (stream end: {end})")
        return "\n".join(lines) + "\n"


def _summary_line(label: str, ids: Sequence[str]) -> str:
    return f"  {label}: {len(ids)}" + (f" ({', '.join(ids)})" if ids else "")


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= max(width, 20) else text[: max(width, 20) - 1] + "\u2026"


def _sent_summary(sent: Any) -> str:
    if not isinstance(sent, Mapping):
        return repr(sent)
    resume = sent.get("resume")
    what = f"thread {sent.get('threadId')!r} run {sent.get('runId')!r}"
    if isinstance(resume, Sequence) and not isinstance(resume, str):
        entries = []
        for entry in resume:
            if isinstance(entry, Mapping):
                shown = {k: v for k, v in entry.items() if k != "interruptId"}
                entries.append(f"{entry.get('interruptId')}={shown}")
        return f"{what} resume [{'; '.join(entries)}]"
    return f"{what} (no resume)"


def _event_lines(events: Sequence[Any]) -> list[str]:
    out = []
    for event in events:
        text = orjson.dumps(event).decode() if not isinstance(event, str) else event
        out.append(text if len(text) <= 300 else text[:299] + "\u2026")
    return out
