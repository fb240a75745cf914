"""Every rule a stream is judged by, with where it comes from and how hard it binds.

A finding about someone else's stream is only as strong as the rule behind it. AG-UI's published
specification (``docs/spec/1.1`` in ``ag-ui-protocol/ag-ui``) makes some rules a MUST and some a
SHOULD; the seed (AG-UI's Interrupts concept page, SPEC.md) asks for more, and agui-core's host
enforces that stricter profile on itself. Each :class:`Rule` names its :class:`Force` and its
source; :func:`severity` says what a finding under it is in a :data:`Profile`:

- ``spec`` (for a stream from someone else): a spec MUST is an error, a spec SHOULD and a seed
  rule are warnings, an observation is info;
- ``seed`` (for a producer that claims the seed's profile, ours included): a spec MUST and a seed
  rule are errors, a spec SHOULD a warning, an observation info.

The ids are those of :class:`~agui_core.errors.OrderingError` (the verifier's and the client
machine's rules), of :class:`~agui_core.machine.client.ClientWarning`, and of the stream linter
(:mod:`agui_core.machine.stream_lint`). ``docs/conformance.md`` lists the same table.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Literal, TypeAlias

import attrs

__all__ = ["PROFILES", "RULES", "Force", "Profile", "Rule", "Severity", "rule", "severity"]


class Force(enum.StrEnum):
    """How hard a rule binds, by its source."""

    MUST = "spec MUST"
    """The published spec makes it a MUST (or a MUST NOT)."""
    SHOULD = "spec SHOULD"
    """The published spec makes it a SHOULD (or asks the consumer to warn)."""
    SEED = "seed profile"
    """The seed asks for it; the published spec does not (agui-core's host keeps it)."""
    NOTE = "observation"
    """Not a rule: something worth knowing about the stream (a legacy shape read, say)."""


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


Profile: TypeAlias = Literal["spec", "seed"]
PROFILES: tuple[Profile, ...] = ("spec", "seed")


@attrs.frozen(kw_only=True)
class Rule:
    """One rule: its stable ``id``, its ``force``, its ``source`` (a spec page or a section of
    SPEC.md) and a one-line ``summary`` of what breaks it."""

    id: str
    force: Force
    source: str
    summary: str


_LIFECYCLE = "spec 1.1 events/lifecycle"
_STREAMING = "spec 1.1 basic/patterns/streaming"
_SUBAGENTS = "spec 1.1 events/subagents"
_INTERRUPTS = "spec 1.1 basic/patterns/interrupt-resume"
_PROCESSING = "spec 1.1 basic/processing"
_TOOLS = "spec 1.1 events/tool-calls"
_STATE = "spec 1.1 events/state"
_SCHEMA = "spec 1.1 schema"

_TABLE: list[tuple[str, Force, str, str]] = [
    # Runs
    (
        "run-not-started",
        Force.MUST,
        _LIFECYCLE,
        "a stream (or a run) that does not begin with RUN_STARTED or RUN_ERROR",
    ),
    ("run-errored", Force.MUST, _LIFECYCLE, "anything but RUN_STARTED after RUN_ERROR"),
    ("run-finished", Force.MUST, _LIFECYCLE, "anything but RUN_STARTED or RUN_ERROR after RUN_FINISHED"),
    ("run-already-active", Force.MUST, _LIFECYCLE, "RUN_STARTED while a run is active"),
    ("run-not-ended", Force.MUST, _LIFECYCLE, "the stream ends with a run still open (a truncated run)"),
    ("run-id-mismatch", Force.MUST, _LIFECYCLE, "RUN_FINISHED names another run than the one it closes"),
    ("thread-mismatch", Force.SEED, "SPEC.md 3.1", "RUN_STARTED or RUN_FINISHED names another thread"),
    (
        "run-error-after-finished",
        Force.SEED,
        _LIFECYCLE,
        "RUN_ERROR for a run that already finished (the spec admits it as a late failure)",
    ),
    # What RUN_FINISHED finds open
    ("step-open", Force.MUST, _LIFECYCLE, "RUN_FINISHED with a step open"),
    ("text-message-open", Force.MUST, _STREAMING, "RUN_FINISHED with a text message open"),
    ("reasoning-message-open", Force.MUST, _STREAMING, "RUN_FINISHED with a reasoning message open"),
    ("reasoning-open", Force.MUST, _STREAMING, "RUN_FINISHED with a reasoning span open"),
    ("tool-call-open", Force.MUST, _TOOLS, "RUN_FINISHED with a tool call open"),
    ("subagent-open", Force.MUST, _SUBAGENTS, "RUN_FINISHED with a subagent active"),
    # Brackets
    ("text-message-already-open", Force.MUST, _STREAMING, "a text message opened while open"),
    ("text-message-not-open", Force.MUST, _STREAMING, "a text message continued or closed while not open"),
    ("tool-call-already-open", Force.MUST, _TOOLS, "a tool call opened while open"),
    ("tool-call-not-open", Force.MUST, _TOOLS, "a tool call continued or closed while not open"),
    ("reasoning-already-open", Force.MUST, _STREAMING, "a reasoning span opened while open"),
    ("reasoning-not-open", Force.MUST, _STREAMING, "a reasoning span closed while not open"),
    ("reasoning-message-already-open", Force.MUST, _STREAMING, "a reasoning message opened while open"),
    ("reasoning-message-not-open", Force.MUST, _STREAMING, "a reasoning message continued or closed while not open"),
    ("step-already-open", Force.MUST, _LIFECYCLE, "a step opened while a step of that name is open"),
    ("step-not-open", Force.MUST, _LIFECYCLE, "a step finished that was never opened"),
    ("step-owner-mismatch", Force.MUST, _SUBAGENTS, "a step finished under another owner than it opened under"),
    # Attribution and subagents
    ("owner-mismatch", Force.MUST, _SUBAGENTS, "an event's subagentRunId disagrees with its entity's owner"),
    ("tool-call-parent-mismatch", Force.MUST, _TOOLS, "a tool call's owner disagrees with its parent message's"),
    ("subagent-missing-field", Force.MUST, _SCHEMA, "a subagent lifecycle event without a required field"),
    (
        "subagent-outcome-invalid",
        Force.MUST,
        _SUBAGENTS,
        "SUBAGENT_FINISHED with an outcome the schema does not describe",
    ),
    ("subagent-already-active", Force.MUST, _SUBAGENTS, "SUBAGENT_STARTED for a subagent already active"),
    ("subagent-reused", Force.MUST, _SUBAGENTS, "one subagentRunId started twice in a run"),
    ("subagent-parent-not-started", Force.MUST, _SUBAGENTS, "a parentSubagentRunId never started in the run"),
    ("subagent-not-active", Force.MUST, _SUBAGENTS, "SUBAGENT_FINISHED or SUBAGENT_ERROR for a subagent not active"),
    # Chunks
    ("chunk-missing-id", Force.MUST, _STREAMING, "a chunk that opens a stream carries no id"),
    ("chunk-missing-name", Force.MUST, _TOOLS, "a TOOL_CALL_CHUNK that opens a call carries no toolCallName"),
    ("chunk-ambiguous", Force.MUST, _STREAMING, "an id-less chunk while several streams of its kind are open"),
    ("chunk-owner-mismatch", Force.MUST, _STREAMING, "a chunk's subagentRunId disagrees with its stream's"),
    ("chunk-field-mismatch", Force.MUST, _STREAMING, "a continuation chunk repeats an opener field with another value"),
    # Outcomes and interrupts
    ("outcome-invalid", Force.MUST, _LIFECYCLE, "a RUN_FINISHED outcome the schema does not describe"),
    ("interrupt-empty", Force.MUST, _INTERRUPTS, "an interrupt outcome with no interrupts"),
    (
        "interrupt-duplicate-id",
        Force.MUST,
        _INTERRUPTS,
        "an interrupt id used twice (in one outcome, or on the thread)",
    ),
    ("interrupt-id-empty", Force.SEED, "SPEC.md 2", "an interrupt whose id is the empty string"),
    ("interrupt-reason-empty", Force.SEED, "SPEC.md 4", "an interrupt whose reason is the empty string"),
    (
        "interrupt-reason-reserved",
        Force.SEED,
        "SPEC.md 4",
        "a reason in the reserved core: namespace that is not a core reason",
    ),
    ("interrupt-tool-call-missing", Force.SEED, "SPEC.md 4", "a tool_call interrupt without toolCallId"),
    (
        "interrupt-tool-call-unknown",
        Force.SEED,
        "SPEC.md 5",
        "a toolCallId naming no tool call the run closed or snapshotted",
    ),
    (
        "interrupt-expires-at-invalid",
        Force.SEED,
        "SPEC.md 8",
        "an expiresAt that is not RFC 3339 with a zone (the spec leaves its format open)",
    ),
    ("interrupt-schema-invalid", Force.SEED, "SPEC.md 3.6", "a responseSchema that cannot be compiled"),
    (
        "snapshot-missing",
        Force.SEED,
        "SPEC.md 3",
        "an interrupt RUN_FINISHED without STATE_SNAPSHOT and MESSAGES_SNAPSHOT before it",
    ),
    # Content the linter assembles
    ("invalid-event", Force.MUST, _PROCESSING, "a frame that is not an event, or a known field with a malformed value"),
    ("event-unknown", Force.SHOULD, _PROCESSING, "an event of a type this version does not describe (dropped)"),
    (
        "tool-args-invalid-json",
        Force.SEED,
        _TOOLS,
        "a tool call's assembled arguments are not JSON (the spec leaves that to the application)",
    ),
    ("tool-result-unknown-call", Force.SEED, "SPEC.md 5", "a TOOL_CALL_RESULT for a tool call the stream never shows"),
    (
        "state-delta-unapplicable",
        Force.SEED,
        _STATE,
        "a STATE_DELTA that does not apply to the state (the spec warns and skips it)",
    ),
    (
        "property-unknown",
        Force.SHOULD,
        _PROCESSING,
        "an event property this version does not describe (stripped before delivery)",
    ),
    (
        "outcome-unknown",
        Force.SHOULD,
        _PROCESSING,
        "a RUN_FINISHED outcome of a type this version does not describe (stripped; the run finishes)",
    ),
    (
        "patch-op-unknown",
        Force.SHOULD,
        _PROCESSING,
        "a patch operation whose op RFC 6902 does not define (dropped; the rest of the patch applies)",
    ),
    (
        "content-part-unknown",
        Force.SHOULD,
        _PROCESSING,
        "a MESSAGES_SNAPSHOT content part of a type this version does not describe (dropped)",
    ),
    (
        "activity-delta-unapplicable",
        Force.SHOULD,
        "spec 1.1 events/activity",
        "an ACTIVITY_DELTA whose patch does not apply to its activity (warned and skipped)",
    ),
    (
        "interrupt-legacy",
        Force.NOTE,
        "ag-ui-langgraph",
        "interrupts announced as on_interrupt CUSTOM events, no outcome",
    ),
]

RULES: Mapping[str, Rule] = {
    rule_id: Rule(id=rule_id, force=force, source=source, summary=summary) for rule_id, force, source, summary in _TABLE
}
"""Every rule, by id."""


def rule(rule_id: str) -> Rule:
    """The rule with this id; ``KeyError`` for an id no rule has."""
    return RULES[rule_id]


def severity(rule_id: str, profile: Profile) -> Severity:
    """What a finding under ``rule_id`` is when judging by ``profile`` (``spec`` or ``seed``)."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r} is not one of {', '.join(PROFILES)}")
    force = RULES[rule_id].force
    if force is Force.NOTE:
        return Severity.INFO
    if force is Force.MUST or (force is Force.SEED and profile == "seed"):
        return Severity.ERROR
    return Severity.WARNING
