"""The client lane: fixtures written from the published spec's consumer rules, run through
``decode_client_event`` and ``ClientMachine`` as a client receives them.

Each file in ``tests/fixtures/client_lane`` holds one stream and what the spec requires of any
client consuming it (the format follows AG-UI's own conformance corpus): ``outcome`` (the client
consumed the stream, ``completed``, or rejected it, ``failed``, with ``errorRule`` and, where it
matters, ``errorCount``), ``runError`` (the producer reported a failure, which is no
rejection), ``eventTypes`` (exactly what reached application code), ``messages`` and ``state``
(subset matches), ``messageCount``, ``eventAbsentPaths`` (``INDEX.key`` absent from a delivered
event), ``warnings`` (rule ids that must be among the warnings) and
``noWarnings``. Every fixture names its ``source``, ``force`` and the one change (``kill``)
that must make it fail. ``MANIFEST.txt`` pins the listing, so a fixture that disappears is a diff.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_core.errors import InvalidEventError, OrderingError
from agui_core.machine.client import ClientMachine
from agui_core.machine.client_strip import decode_client_event
from agui_core.protocol import events as ev
from agui_core.protocol.codec import converter, event_to_dict
from agui_core.protocol.types import Message

LANE = Path(__file__).resolve().parents[1] / "fixtures" / "client_lane"
FIXTURES = sorted(LANE.glob("*.json"))
T0 = datetime(2026, 4, 20, 12, tzinfo=UTC)


def subset(expected: Any, actual: Any) -> bool:
    """Objects compared on the keys named, arrays by length and element, the rest by value."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def consume(stream: list[Any]) -> dict[str, Any]:
    """What a client makes of ``stream``: delivered event types, rejections, warnings, state."""
    thread = next((e.get("threadId") for e in stream if isinstance(e, dict) and "threadId" in e), "")
    machine = ClientMachine(str(thread))
    delivered: list[str] = []
    payloads: list[dict[str, Any]] = []
    errors: list[str] = []
    run_errors: list[str] = []
    for raw in stream:
        try:
            event, stripped = decode_client_event(orjson.dumps(raw))
        except InvalidEventError:
            errors.append("invalid-event")
            machine.fail_run()
            continue
        try:
            shown = machine.receive_event(event, now=T0, stripped=stripped)
        except OrderingError as exc:
            errors.append(exc.rule)
            machine.fail_run()
            continue
        if shown is None:
            continue  # an unknown type, or the rest of a rejected run: never delivered
        delivered.append(shown.type)
        payloads.append(event_to_dict(shown))
        if isinstance(event, ev.RunErrorEvent):
            run_errors.append(event.message)
    ended = machine.end_of_stream()
    if ended is not None:
        errors.append(ended.rule)
    return {
        "delivered": delivered,
        "payloads": payloads,
        "errors": errors,
        "run_errors": run_errors,
        "warnings": [w.rule for w in machine.warnings],
        "messages": [converter.unstructure(m, Message) for m in machine.messages],
        "state": machine.state,
    }


def test_the_lane_holds_every_fixture_in_its_manifest() -> None:
    listed = (LANE / "MANIFEST.txt").read_text().split()
    assert listed == [p.name for p in FIXTURES]
    assert len(FIXTURES) >= 20


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_client_lane(path: Path) -> None:
    fixture = json.loads(path.read_text())
    assert fixture["name"] == path.stem
    assert fixture["kill"] and fixture["source"] and fixture["force"] in ("spec MUST", "spec SHOULD", "seed profile")
    expect = fixture["expect"]
    assert set(expect) - {"outcome"}, "a fixture asserts more than its outcome"
    got = consume(fixture["stream"])
    if expect["outcome"] == "completed":
        assert got["errors"] == []
    else:
        assert expect["errorRule"] in got["errors"]
        assert len(got["errors"]) == expect.get("errorCount", len(got["errors"]))
    if "eventTypes" in expect:
        assert got["delivered"] == expect["eventTypes"]
    if "runError" in expect:
        assert any(expect["runError"] in message for message in got["run_errors"])
    if "messages" in expect:
        assert subset(expect["messages"], got["messages"]), got["messages"]
    if "messageCount" in expect:
        assert len(got["messages"]) == expect["messageCount"]
    if "state" in expect:
        assert subset(expect["state"], got["state"]), got["state"]
    for path in expect.get("eventAbsentPaths", ()):
        index, _, key = path.partition(".")
        assert key not in got["payloads"][int(index)], path
    for rule in expect.get("warnings", ()):
        assert rule in got["warnings"]
    if expect.get("noWarnings"):
        assert got["warnings"] == []
