"""Differential tests of the codec's decoders against both reference implementations.

Every corpus document goes through three readers: the reference Python SDK (``ag_ui.core``
pydantic models), the reference TypeScript schemas (zod, ``@ag-ui/core/schemas``, one node
process for the whole corpus) and ours (``event_from_dict`` / ``input_from_dict``).

- Both references accept: we accept, and our encoding of what we decoded is the input again.
- Both references reject: we reject, with :class:`InvalidEventError` / :class:`InvalidInputError`.
- The references disagree, or we deliberately differ from both: the case is named in
  :data:`DEVIATIONS` with each verdict and why. Where the references disagree our verdict is
  the TypeScript one unless the entry says why not. A disagreement the table does not name
  fails, and so does an entry whose recorded reference verdicts have gone stale.

Documents Hypothesis draws from ``tests.strategies`` (valid by construction) must be accepted
by all three readers and survive our round trip unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import ag_ui.core
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings

from agui_core.errors import InvalidEventError, InvalidInputError, WireError
from agui_core.protocol import validation
from agui_core.protocol.codec import event_from_dict, event_to_dict, input_from_dict, input_to_dict
from agui_core.protocol.events import EVENT_CLASS_BY_TYPE, UnknownEvent
from tests.interop.corpus import CASES, CASES_BY_NAME, Case
from tests.interop.nodebridge import NodeResult, json_equal, node_validate
from tests.strategies import events, run_agent_inputs

__all__ = ["DEVIATIONS", "ROUND_TRIP_NORMALISED", "Deviation"]


# --- the table of deviations ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deviation:
    """How the three readers judge one corpus case, when they do not simply all agree.

    ``departs_from_typescript`` must say why when the references disagree and ``ours`` is not
    the zod verdict. ``schema_rule`` names the entry of
    :data:`agui_core.protocol.validation.DEVIATIONS` behind a verdict of ours that differs
    from zod's, when our schemas are the reason.
    """

    pydantic: bool
    zod: bool
    ours: bool
    why: str
    departs_from_typescript: str | None = None
    schema_rule: str | None = None


_NULL_OPTIONAL = (
    "null on an optional field: pydantic reads it as absent, zod rejects it. We reject with "
    "zod: SPEC 2, an optional field with no value is left out, never written as null, and the "
    "TypeScript reader refuses it."
)
_NULL_FREE_JSON = (
    "null as the whole value of an optional free-JSON field (result, payload, rawEvent, "
    "forwardedProps, tool parameters, part metadata): pydantic accepts it, zod refines it away "
    "(`!== null`). We reject with zod: there it cannot be told from absent."
)
_LAX_NUMBER = (
    "pydantic's lax mode coerces a numeric string or a boolean to an int; zod wants a JSON integer. We reject with zod."
)
_SNAKE_CASE = (
    "pydantic (populate_by_name) also reads the snake_case attribute names; on the wire keys "
    "are camelCase, so zod finds the required camelCase key missing. We reject with zod."
)
_TAG_DEFAULT = (
    "pydantic gives the role literal of REASONING_MESSAGE_START a default; zod requires the key. We reject with zod."
)
_CANCELLED_PAYLOAD = (
    "Deliberately stricter than both: a cancelled entry must omit payload (seed, SPEC 2; "
    "RUN_ERROR INVALID_RESUME). Both references accept it."
)
_UNKNOWN_TYPE = (
    "Both references reject an event type they do not know; we decode it to UnknownEvent and "
    "encode it back unchanged, so a newer producer never breaks a reader (ThinkingTranslator "
    "rewrites the retired THINKING_* ones). The TypeScript client drops such an event with a "
    "warning (enforceEvents) instead of failing the run, so it does not reject the stream either."
)


def _entries(
    verdicts: tuple[bool, bool, bool], why: str, *names: str, schema_rule: str | None = None
) -> dict[str, Deviation]:
    pydantic_ok, zod_ok, ours_ok = verdicts
    return {name: Deviation(pydantic_ok, zod_ok, ours_ok, why, schema_rule=schema_rule) for name in names}


_PYDANTIC_ONLY = (True, False, False)
"""pydantic accepts, zod rejects, we reject."""

DEVIATIONS: Mapping[str, Deviation] = {
    **_entries(
        _PYDANTIC_ONLY,
        _NULL_OPTIONAL,
        "event/timestamp/null",
        "event/metadata/null",
        "event/subagentRunId/null",
        "event/TEXT_MESSAGE_START/role-null",
        "event/TEXT_MESSAGE_START/name-null",
        "event/TEXT_MESSAGE_CHUNK/delta-null",
        "event/TOOL_CALL_START/parent-null",
        "event/TOOL_CALL_RESULT/role-null",
        "event/TOOL_CALL_RESULT/part-id-null",
        "event/TOOL_CALL_RESULT/url-source-mime-null",
        "event/ACTIVITY_SNAPSHOT/replace-null",
        "event/MESSAGES_SNAPSHOT/assistant-content-null",
        "event/MESSAGES_SNAPSHOT/assistant-toolcalls-null",
        "event/MESSAGES_SNAPSHOT/tool-error-null",
        "event/MESSAGES_SNAPSHOT/message-name-null",
        "event/MESSAGES_SNAPSHOT/message-metadata-null",
        "event/MESSAGES_SNAPSHOT/message-subagent-null",
        "event/MESSAGES_SNAPSHOT/toolcall-metadata-null",
        "event/RUN_STARTED/input-null",
        "event/RUN_STARTED/parentRunId-null",
        "event/RUN_ERROR/code-null",
        "event/RUN_ERROR/usage-null-field",
        "event/RUN_FINISHED/success-pending-null",
        "event/RUN_FINISHED/outcome-null",
        "event/RUN_FINISHED/usage-null",
        "event/SUBAGENT_FINISHED/suspended-ids-null",
        "event/SUBAGENT_FINISHED/outcome-null",
        "event/SUBAGENT_STARTED/description-null",
        "interrupt/message-null",
        "interrupt/toolCallId-null",
        "interrupt/responseSchema-null",
        "interrupt/expiresAt-null",
        "interrupt/metadata-null",
        "interrupt/subagentRunId-null",
        "input/tools-null",
        "input/context-null",
        "input/protocolVersion-null",
        "input/parentRunId-null",
        "input/resume-null",
        "resume/metadata-null",
    ),
    **_entries(
        _PYDANTIC_ONLY,
        _NULL_FREE_JSON,
        "event/rawEvent/null",
        "event/TOOL_CALL_RESULT/part-metadata-null",
        "event/RUN_FINISHED/result-null",
        "event/SUBAGENT_FINISHED/result-null",
        "input/tool-parameters-null",
        "input/forwardedProps-null",
        "input/message-part-metadata-null",
        "resume/resolved-payload-null",
        "resume/cancelled-with-payload-null",
    ),
    **_entries(_PYDANTIC_ONLY, _LAX_NUMBER, "event/timestamp/string", "event/timestamp/bool"),
    **_entries(
        _PYDANTIC_ONLY,
        _SNAKE_CASE,
        "event/snake-case-key",
        "event/RUN_FINISHED/snake-case-ids",
        "input/snake-case-keys",
        "resume/snake-case-key",
    ),
    **_entries(_PYDANTIC_ONLY, _TAG_DEFAULT, "event/REASONING_MESSAGE_START/no-role"),
    **_entries(
        (True, True, False),
        _CANCELLED_PAYLOAD,
        "resume/cancelled-with-payload",
        schema_rule="cancelled-resume-entry-with-payload",
    ),
    **_entries(
        (False, False, True),
        _UNKNOWN_TYPE,
        "event/type/unknown",
        "event/type/lowercase",
        "event/legacy/THINKING_START",
        "event/legacy/THINKING_TEXT_MESSAGE_START",
        "event/legacy/THINKING_TEXT_MESSAGE_CONTENT",
        "event/legacy/THINKING_TEXT_MESSAGE_END",
        "event/legacy/THINKING_END",
    ),
}
"""Every corpus case on which the three readers do not all agree, with the reason."""


def _without(key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda value: {k: v for k, v in value.items() if k != key}


def _input_without(key: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda value: {**value, "input": _without(key)(value["input"])}


ROUND_TRIP_NORMALISED: Mapping[str, tuple[str, Callable[[dict[str, Any]], dict[str, Any]]]] = {
    "input/state-null": (
        "`state: null` reads as no state and is written absent, as zod's own parse normalises it",
        _without("state"),
    ),
    "event/RUN_STARTED/input-state-null": (
        "the same inside RUN_STARTED.input",
        _input_without("state"),
    ),
}
"""Accepted cases whose encoding is not the input itself: what it is instead, and why."""


# --- the three readers ---------------------------------------------------------------------

_EVENT_ADAPTER: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(ag_ui.core.Event)
_PYDANTIC_PARTS: Mapping[str, type[pydantic.BaseModel]] = {
    "Interrupt": ag_ui.core.Interrupt,
    "ResumeEntry": ag_ui.core.ResumeEntry,
}
_ZOD_SCHEMA = {"event": "EventSchema", "input": "RunAgentInputSchema"}


def pydantic_accepts(kind: str, value: Any) -> bool:
    """Whether ``ag_ui.core`` reads the JSON text of ``value`` as that kind of document."""
    text = json.dumps(value)
    try:
        if kind == "event":
            _EVENT_ADAPTER.validate_json(text)
        elif kind == "input":
            ag_ui.core.RunAgentInput.model_validate_json(text)
        else:
            _PYDANTIC_PARTS[kind].model_validate_json(text)
    except pydantic.ValidationError:
        return False
    return True


def our_decode(case: Case) -> tuple[bool, Any]:
    """Our verdict and what we decoded (or the error); any other exception is a bug."""
    try:
        if case.kind == "event":
            return True, event_from_dict(case.value)
        return True, input_from_dict(case.value)
    except (InvalidEventError, InvalidInputError) as exc:
        expected = InvalidEventError if case.kind == "event" else InvalidInputError
        assert isinstance(exc, expected), f"{case.name}: {type(exc).__name__} from the {case.kind} decoder"
        return False, exc


def our_encode(case: Case, decoded: Any) -> dict[str, Any]:
    if case.kind == "event":
        return event_to_dict(decoded)
    return input_to_dict(decoded)


# --- zod, once for the whole corpus --------------------------------------------------------


@pytest.fixture(scope="module")
def zod() -> dict[tuple[str, str], NodeResult]:
    """zod's verdict on every case (key ``(name, "whole")``) and on every part alone
    (``(name, "part")``), from one node process."""
    keys: list[tuple[str, str]] = []
    batch: list[tuple[str, Any]] = []
    for case in CASES:
        keys.append((case.name, "whole"))
        batch.append((_ZOD_SCHEMA[case.kind], case.value))
        if case.part is not None:
            part_kind, part = case.part
            keys.append((case.name, "part"))
            batch.append((f"{part_kind}Schema", part))
    return dict(zip(keys, node_validate(batch), strict=False))


# --- the corpus ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_corpus_case(case: Case, zod: dict[tuple[str, str], NodeResult]) -> None:
    pydantic_ok = pydantic_accepts(case.kind, case.value)
    zod_result = zod[case.name, "whole"]
    ours_ok, decoded = our_decode(case)
    verdicts = f"pydantic {pydantic_ok}, zod {zod_result.ok} ({zod_result.error}), ours {ours_ok} ({decoded!r:.300})"

    deviation = DEVIATIONS.get(case.name)
    if deviation is None:
        assert pydantic_ok == zod_result.ok, f"the references disagree and DEVIATIONS does not name it: {verdicts}"
        expected = zod_result.ok
    else:
        assert (pydantic_ok, zod_result.ok) == (deviation.pydantic, deviation.zod), (
            f"DEVIATIONS is stale for this case: {verdicts}"
        )
        expected = deviation.ours
    assert ours_ok == expected, f"we should {'accept' if expected else 'reject'}: {verdicts}"

    if ours_ok:
        encoded = our_encode(case, decoded)
        why, normalise = ROUND_TRIP_NORMALISED.get(case.name, ("", lambda value: value))
        want = normalise(case.value)
        assert json_equal(encoded, want), (
            f"encoding changed the document ({why or 'no change expected'}):\n{encoded}\n!=\n{want}"
        )


def test_deviations_name_corpus_cases() -> None:
    assert sorted(set(DEVIATIONS) - set(CASES_BY_NAME)) == []
    assert sorted(set(ROUND_TRIP_NORMALISED) - set(CASES_BY_NAME)) == []


def test_deviations_are_deviations() -> None:
    """An entry records a disagreement between the references or a verdict of ours that
    differs from both; anything else does not belong in the table."""
    not_deviations = [name for name, d in DEVIATIONS.items() if d.pydantic == d.zod and d.ours == d.zod]
    assert not_deviations == []


def test_where_references_disagree_we_follow_typescript() -> None:
    departures = [
        name
        for name, d in DEVIATIONS.items()
        if d.pydantic != d.zod and d.ours != d.zod and not d.departs_from_typescript
    ]
    assert departures == []


def test_where_we_differ_from_typescript_a_rule_says_so() -> None:
    """Each verdict of ours that is not zod's comes from a documented schema deviation (or from
    reading unknown event types), and each documented schema deviation is exercised here."""
    schema_rules = {d.name for d in validation.DEVIATIONS}
    unexplained = [
        name
        for name, d in DEVIATIONS.items()
        if d.ours != d.zod and d.why != _UNKNOWN_TYPE and d.schema_rule not in schema_rules
    ]
    assert unexplained == []
    exercised = {d.schema_rule for d in DEVIATIONS.values() if d.ours != d.zod}
    assert sorted(schema_rules - exercised) == []


_OUR_PART_VALIDATORS: Mapping[str, Callable[[Any], None]] = {
    "Interrupt": validation.validate_interrupt,
    "ResumeEntry": validation.validate_resume_entry,
}


def _our_part_verdict(part_kind: str, part: Any) -> bool:
    try:
        _OUR_PART_VALIDATORS[part_kind](part)
    except WireError:
        return False
    return True


def test_parts_alone_get_the_verdict_of_their_document(
    zod: dict[tuple[str, str], NodeResult],
) -> None:
    """Wrapping an interrupt or a resume entry in a document changes no reader's verdict, so
    the document cases speak for the parts (ours judged by the part validators)."""
    mismatches = []
    for case in CASES:
        if case.part is None:
            continue
        part_kind, part = case.part
        alone = (
            pydantic_accepts(part_kind, part),
            zod[case.name, "part"].ok,
            _our_part_verdict(part_kind, part),
        )
        whole = (
            pydantic_accepts(case.kind, case.value),
            zod[case.name, "whole"].ok,
            our_decode(case)[0],
        )
        if alone != whole:
            mismatches.append((case.name, alone, whole))
    assert mismatches == []


def test_unknown_event_types_decode_to_unknown_event() -> None:
    for name, deviation in DEVIATIONS.items():
        if deviation.why != _UNKNOWN_TYPE:
            continue
        value = CASES_BY_NAME[name].value
        decoded = event_from_dict(value)
        assert isinstance(decoded, UnknownEvent), name
        assert (decoded.type, dict(decoded.data)) == (value["type"], value), name


def test_known_event_types_decode_to_their_class() -> None:
    for case in CASES:
        if case.kind != "event" or case.name in DEVIATIONS:
            continue
        ok, decoded = our_decode(case)
        if ok:
            assert type(decoded) is EVENT_CLASS_BY_TYPE[case.value["type"]], case.name


# --- generated documents -------------------------------------------------------------------

# Drawing is what costs here (the three readers take milliseconds for the lot), inputs most.
_GENERATED_EVENTS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
_GENERATED_INPUTS = settings(_GENERATED_EVENTS, max_examples=100)


_SNAKE_CASE_KEY = re.compile(r"[a-z0-9]_[a-z]")


def _pydantic_may_misread(value: Any) -> bool:
    """Whether ``value`` holds a snake_case key anywhere. The strategies add unknown keys that
    are known keys in snake_case on purpose; pydantic reads those as the field itself (the
    ``_SNAKE_CASE`` deviation), so its verdict on such a document says nothing here."""
    if isinstance(value, dict):
        return any(_SNAKE_CASE_KEY.search(k) or _pydantic_may_misread(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_pydantic_may_misread(v) for v in value)
    return False


def _all_accept(kind: str, drawn: list[Any]) -> None:
    """zod's verdict on everything Hypothesis drew, from one node process."""
    results = node_validate([(_ZOD_SCHEMA[kind], value) for value in drawn])
    rejected = [(value, r.error) for value, r in zip(drawn, results, strict=False) if not r.ok]
    assert rejected == [], f"zod rejects {len(rejected)} generated {kind}s; first: {rejected[0]}"


def test_generated_events_are_read_alike() -> None:
    drawn: list[Any] = []

    @_GENERATED_EVENTS
    @given(events())
    def check(value: dict[str, Any]) -> None:
        drawn.append(value)
        assert pydantic_accepts("event", value) or _pydantic_may_misread(value)
        decoded = event_from_dict(value)
        assert not isinstance(decoded, UnknownEvent)
        assert json_equal(event_to_dict(decoded), value)

    check()
    _all_accept("event", drawn)


def test_generated_inputs_are_read_alike() -> None:
    drawn: list[Any] = []

    @_GENERATED_INPUTS
    @given(run_agent_inputs())
    def check(value: dict[str, Any]) -> None:
        drawn.append(value)
        assert pydantic_accepts("input", value) or _pydantic_may_misread(value)
        assert json_equal(input_to_dict(input_from_dict(value)), value)

    check()
    _all_accept("input", drawn)
