"""What the conformance kit checks, and what it found: the catalogue, results and the report.

Every check has a stable id (``r4.plain-input``), the rule it tests (``R4``: the contract
rules of the seed document are R1 to R8; ``lifecycle``, ``boundary``, ``reasons``,
``tool-bound`` and ``ordering`` name its other sections), and the words it tests, short, in
the seed's own language (Korean) and in English, as SPEC.md restates them. A result is
``pass``, ``fail`` (with the events seen, exactly as they came) or ``n/a`` (with why: the
server never raised what the check needs, say).

:class:`Report` holds the results in catalogue order; :meth:`Report.table` is what a person
reads, :meth:`Report.to_json` what a CI job reads.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

__all__ = ["CATALOGUE", "CheckResult", "CheckSpec", "Report", "Status", "check_spec"]


class Status(enum.StrEnum):
    """A check's verdict."""

    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "n/a"


@attrs.frozen(kw_only=True)
class CheckSpec:
    """One check of the catalogue: ``id``, the ``rule`` it tests, a ``title``, and the words
    of the seed it tests (``seed``: the original, ``words``: in English)."""

    id: str
    rule: str
    title: str
    seed: str
    words: str


def _spec(id: str, rule: str, title: str, seed: str, words: str) -> CheckSpec:
    return CheckSpec(id=id, rule=rule, title=title, seed=seed, words=words)


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

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.spec.id,
            "rule": self.spec.rule,
            "title": self.spec.title,
            "seed": self.spec.seed,
            "words": self.spec.words,
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
        """Whether nothing failed."""
        return not self.failed

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
            "counts": self.counts(),
            "server": dict(self.server),
            "approve": self.approve,
            "answers": list(self.answers),
            "skippedWithoutApprove": list(self.skipped),
            "cleanup": [dict(c) for c in self.cleanup],
            "leftOpen": {thread: list(ids) for thread, ids in self.left_open.items()},
            "checks": [r.to_json() for r in self.results],
        }

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
        header = f"{'status':<6}  {'rule':<{rule_width}}  {'check':<{id_width}}  detail"
        lines += [header, "-" * min(width, max(len(header), 60))]
        for result in self.results:
            detail = _one_line(result.detail, width - 12 - rule_width - id_width)
            lines.append(
                f"{result.status.value:<6}  {result.spec.rule:<{rule_width}}  {result.spec.id:<{id_width}}  {detail}"
            )
        counts = self.counts()
        lines += ["", f"{counts['pass']} passed, {counts['fail']} failed, {counts['n/a']} not applicable"]
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
