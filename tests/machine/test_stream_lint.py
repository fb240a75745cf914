"""The stream linter: what a careful validator catches, with the force of the rule behind it."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agui_core.machine import ordering
from agui_core.machine.client import CLIENT_RULES, CLIENT_WARNINGS
from agui_core.machine.rulebook import RULES, Force, Severity, severity
from agui_core.machine.stream_lint import Finding, lint_stream
from agui_core.protocol.codec import decode_event, event_from_dict
from agui_core.protocol.framing import SSEReader

T0 = datetime(2026, 4, 20, 12, tzinfo=UTC)
TID = "t-1"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ag_ui_langgraph"


def started(run: str = "r-1") -> dict[str, Any]:
    return {"type": "RUN_STARTED", "threadId": TID, "runId": run}


def finished(run: str = "r-1", **rest: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": TID, "runId": run, **rest}


def tool_call(call_id: str, args: str) -> list[dict[str, Any]]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": "send"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": args},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]


def lint(stream: list[dict[str, Any]], profile: str = "spec") -> list[Finding]:
    return lint_stream([event_from_dict(e) for e in stream], now=T0, profile=profile)  # type: ignore[arg-type]


def rules(found: list[Finding], level: Severity | None = None) -> list[tuple[int | None, str]]:
    return [(f.index, f.rule) for f in found if level is None or f.severity is level]


def test_every_rule_the_machines_raise_is_in_the_rulebook() -> None:
    # The source next to the module: compiled, ``__file__`` is the extension module.
    source = (Path(ordering.__file__).parent / "ordering.py").read_text()
    verifier_rules = set(re.findall(r'_fail\(\s*"([a-z]+(?:-[a-z]+)+)"', source))
    assert verifier_rules  # the pattern still finds them
    missing = (verifier_rules | CLIENT_RULES | CLIENT_WARNINGS | {"run-not-ended"}) - set(RULES)
    assert missing == set()


@pytest.mark.parametrize(
    ("force", "spec", "seed"),
    [
        (Force.MUST, Severity.ERROR, Severity.ERROR),
        (Force.SHOULD, Severity.WARNING, Severity.WARNING),
        (Force.SEED, Severity.WARNING, Severity.ERROR),
        (Force.NOTE, Severity.INFO, Severity.INFO),
    ],
)
def test_the_profile_decides_what_is_an_error(force: Force, spec: Severity, seed: Severity) -> None:
    rule_id = next(r.id for r in RULES.values() if r.force is force)
    assert (severity(rule_id, "spec"), severity(rule_id, "seed")) == (spec, seed)


def test_a_stream_that_never_terminates_is_an_error_in_both_profiles() -> None:
    stream = [finished(), started("r-2"), {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}]
    stream = [started(), *stream]
    for profile in ("spec", "seed"):
        assert rules(lint(stream, profile), Severity.ERROR) == [(2, "run-not-ended")]


def test_run_error_after_run_finished_is_caught() -> None:
    stream = [started(), finished(), {"type": "RUN_ERROR", "message": "flush failed"}]
    assert rules(lint(stream, "seed"), Severity.ERROR) == [(2, "run-error-after-finished")]
    # The spec admits a late failure: reported, but no error for someone else's stream.
    assert rules(lint(stream), Severity.WARNING) == [(2, "run-error-after-finished")]
    assert rules(lint(stream), Severity.ERROR) == []


def test_tool_arguments_that_are_not_json_once_assembled_are_caught() -> None:
    stream = [started(), *tool_call("c-1", '{"to": "ann"'), *tool_call("c-2", '{"ok": 1}'), finished()]
    assert rules(lint(stream, "seed"), Severity.ERROR) == [(3, "tool-args-invalid-json")]
    assert rules(lint(stream), Severity.WARNING) == [(3, "tool-args-invalid-json")]


def test_tool_arguments_streamed_as_chunks_are_judged_at_run_end() -> None:
    chunk = {"type": "TOOL_CALL_CHUNK", "toolCallId": "c-1", "toolCallName": "send", "delta": "{nope"}
    stream = [started(), chunk, finished()]
    assert rules(lint(stream, "seed"), Severity.ERROR) == [(2, "tool-args-invalid-json")]


def test_a_tool_result_for_an_unknown_tool_call_is_caught() -> None:
    result = {"type": "TOOL_CALL_RESULT", "messageId": "m-9", "toolCallId": "ghost", "content": "done"}
    stream = [started(), *tool_call("c-1", "{}"), result, finished()]
    assert rules(lint(stream, "seed"), Severity.ERROR) == [(4, "tool-result-unknown-call")]
    # A result for a call the stream does show, even in a later snapshot, is fine.
    known = {**result, "toolCallId": "c-1"}
    assert lint([started(), *tool_call("c-1", "{}"), known, finished()], "seed") == []


def test_a_state_delta_that_cannot_be_applied_is_caught() -> None:
    snapshot = {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}}
    bad = {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/missing/deep", "value": 2}]}
    good = {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/a", "value": 2}]}
    stream = [started(), snapshot, good, bad, finished()]
    assert rules(lint(stream, "seed"), Severity.ERROR) == [(3, "state-delta-unapplicable")]
    assert rules(lint(stream), Severity.WARNING) == [(3, "state-delta-unapplicable")]
    # Without a snapshot the baseline is the input's state, which a recording does not hold.
    assert lint([started(), bad, finished()], "seed") == []


def test_an_interrupt_without_snapshots_is_a_warning_and_causes_no_cascade() -> None:
    interrupted = finished(outcome={"type": "interrupt", "interrupts": [{"id": "i-1", "reason": "confirmation"}]})
    stream = [started(), interrupted, started("r-2"), finished("r-2")]
    spec = lint(stream)
    assert rules(spec) == [(1, "snapshot-missing")] and spec[0].severity is Severity.WARNING
    assert rules(lint(stream, "seed"), Severity.ERROR) == [(1, "snapshot-missing")]


def test_a_broken_run_is_reported_once() -> None:
    stream = [
        started(),
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "x"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"},
        finished(),
        started("r-2"),
        finished("r-2"),
    ]
    assert rules(lint(stream)) == [(1, "text-message-not-open")]


def test_an_unknown_event_type_is_a_warning() -> None:
    stream = [started(), {"type": "FUTURE_EVENT", "x": 1}, finished()]
    events = [decode_event(__import__("orjson").dumps(e)) for e in stream]
    found = lint_stream(events, now=T0)
    assert [(f.index, f.rule, f.severity) for f in found] == [(1, "event-unknown", Severity.WARNING)]


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.sse")))
def test_valid_streams_from_another_producer_have_no_errors(name: str) -> None:
    reader = SSEReader()
    events = [decode_event(body) for body in reader.feed((FIXTURES / name).read_bytes())]
    found = lint_stream(events, now=T0)
    assert rules(found, Severity.ERROR) == []


def test_the_conformance_page_lists_every_rule_with_its_force() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text()
    rows = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0].startswith("`") and cells[0].strip("`") in RULES:
            rows[cells[0].strip("`")] = cells
    assert set(rows) == set(RULES)
    for rule_id, (_, force, source, summary, spec, seed) in rows.items():
        rule = RULES[rule_id]
        assert (force, source, summary) == (str(rule.force), rule.source, rule.summary), rule_id
        assert (spec, seed) == (severity(rule_id, "spec"), severity(rule_id, "seed")), rule_id
