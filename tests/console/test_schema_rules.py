"""The console's JSON Schema checks (``schema.mjs``) give the host's verdict, case by case.

Every case is a ``responseSchema`` and an answer; the page's validator runs in Node on the
whole corpus at once, and the host's (:class:`~agui_core.protocol.payload.PayloadValidators`)
in this process. They must agree on every case: the console sends nothing the host refuses,
and refuses nothing the host accepts. Node is required, as for the interop tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from agui_core.errors import PayloadError
from agui_core.examples import QUARTERLY_FILING_SCHEMA, SEND_EMAIL_ARGS_SCHEMA
from agui_core.protocol.payload import PayloadValidators
from agui_core.runtime.tools import APPROVE_SCHEMA
from tests.console.conftest import ROOT

SCHEMA_MODULE = ROOT / "transports" / "console" / "schema.mjs"

APPROVAL = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": SEND_EMAIL_ARGS_SCHEMA},
    "required": ["approved"],
}
NESTED = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 5},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "when": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": 10, "multipleOf": 2},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "uniqueItems": True, "maxItems": 2},
        "mode": {"const": "fast"},
        "note": {"type": ["string", "null"]},
    },
    "required": ["name"],
}
REFERENCED = {
    "definitions": {"amount": {"type": "number", "minimum": 0}},
    "type": "object",
    "properties": {"net": {"$ref": "#/definitions/amount"}, "choice": {"anyOf": [{"type": "integer"}, {"const": "x"}]}},
}

CASES: list[tuple[dict[str, Any], Any]] = [
    *[
        (QUARTERLY_FILING_SCHEMA, value)  # type: ignore[misc]
        for value in [
            {"quarter": "Q1", "year": 2026, "revenue": 125000.5},
            {"quarter": "Q5", "year": 2026, "revenue": 1},
            {"quarter": "Q1", "year": 1999, "revenue": 1},
            {"quarter": "Q1", "year": 2026.5, "revenue": 1},
            {"quarter": "Q1", "year": 2026},
            {"quarter": "Q1", "year": "2026", "revenue": 1},
            {"quarter": "Q1", "year": 2026, "revenue": True},
            {"quarter": "Q1", "year": 2026, "revenue": 0, "extra": "allowed"},
            [],
            None,
            "Q1",
        ]
    ],
    *[
        (APPROVAL, value)
        for value in [
            {"approved": True},
            {"approved": False},
            {"approved": "yes"},
            {},
            {"approved": True, "editedArgs": {"to": "carol@example.com", "subject": "Hi", "body": ""}},
            {"approved": True, "editedArgs": {"to": "carol at example.com", "subject": "Hi", "body": ""}},
            {"approved": True, "editedArgs": {"to": "carol@example", "subject": "Hi", "body": ""}},
            {"approved": True, "editedArgs": {"to": ".carol@example.com", "subject": "Hi", "body": ""}},
            {"approved": True, "editedArgs": {"to": "carol@example.com", "subject": "Hi"}},
            {"approved": True, "editedArgs": {"to": "carol@example.com", "subject": 3, "body": ""}},
        ]
    ],
    *[(dict(APPROVE_SCHEMA), value) for value in [{"approved": True}, {"approved": 1}, {"approved": True, "x": 1}]],
    *[
        (NESTED, value)
        for value in [
            {"name": "ann"},
            {"name": ""},
            {"name": "annabel"},
            {"name": "ánn"},
            {"name": "ann", "address": {"city": "Oslo", "zip": "01234"}},
            {"name": "ann", "address": {"city": "Oslo", "zip": "1234"}},
            {"name": "ann", "address": {"zip": "01234"}},
            {"name": "ann", "address": {"city": "Oslo", "street": "Main"}},
            {"name": "ann", "when": "2026-02-29"},
            {"name": "ann", "when": "2028-02-29"},
            {"name": "ann", "when": "2026-13-01"},
            {"name": "ann", "at": "2026-12-31T09:30:00Z"},
            {"name": "ann", "at": "2026-12-31T09:30:00"},
            {"name": "ann", "at": "2026-12-31 09:30:00+01:00"},
            {"name": "ann", "count": 0},
            {"name": "ann", "count": 4},
            {"name": "ann", "count": 3},
            {"name": "ann", "count": 12},
            {"name": "ann", "tags": ["a", "b"]},
            {"name": "ann", "tags": ["a", "a"]},
            {"name": "ann", "tags": ["c"]},
            {"name": "ann", "tags": ["a", "b", "a"]},
            {"name": "ann", "mode": "fast"},
            {"name": "ann", "mode": "slow"},
            {"name": "ann", "note": None},
            {"name": "ann", "note": 1},
        ]
    ],
    *[
        (REFERENCED, value)
        for value in [{"net": 1.5}, {"net": -1}, {"net": "1"}, {"choice": 3}, {"choice": "x"}, {"choice": "y"}, {}]
    ],
    *[({"type": "boolean"}, value) for value in [True, False, "true", None]],
]


def node_verdicts(cases: list[tuple[dict[str, Any], Any]]) -> list[list[dict[str, Any]]]:
    node = shutil.which("node")
    assert node, "the console's schema tests need Node.js (apt-get install nodejs)"
    script = (
        f"import {{ validate }} from {json.dumps(SCHEMA_MODULE.as_uri())};\n"
        "let text = ''; process.stdin.on('data', (d) => (text += d));\n"
        "process.stdin.on('end', () => {\n"
        "  const cases = JSON.parse(text);\n"
        "  process.stdout.write(JSON.stringify(cases.map(([schema, value]) => validate(schema, value))));\n"
        "});\n"
    )
    done = subprocess.run(
        [node, "--input-type=module", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    verdicts: list[list[dict[str, Any]]] = json.loads(done.stdout)
    return verdicts


def host_accepts(validators: PayloadValidators, schema: dict[str, Any], value: Any) -> bool:
    try:
        validators.validate("case", schema, value)
    except PayloadError:
        return False
    return True


def test_the_consoles_checks_agree_with_the_hosts_on_every_case() -> None:
    validators = PayloadValidators()
    verdicts = node_verdicts(CASES)
    disagreements = []
    for (schema, value), problems in zip(CASES, verdicts, strict=True):
        if host_accepts(validators, schema, value) != (problems == []):
            disagreements.append((schema.get("properties", schema), value, problems))
    assert disagreements == []
    # The corpus says both things: the answers pass and fail in about equal numbers.
    passed = sum(problems == [] for problems in verdicts)
    assert 0.3 < passed / len(CASES) < 0.7


def test_a_problem_names_its_field_in_plain_words() -> None:
    cases: list[tuple[dict[str, Any], Any]] = [
        (QUARTERLY_FILING_SCHEMA, {"quarter": "Q1", "year": 1999}),  # type: ignore[list-item]
        (APPROVAL, {"approved": True, "editedArgs": {"to": "nobody", "subject": "Hi", "body": ""}}),
    ]
    form, edits = node_verdicts(cases)
    assert form == [
        {"path": ["year"], "message": "must be at least 2000"},
        {"path": ["revenue"], "message": "is required"},
    ] or form == [
        {"path": ["revenue"], "message": "is required"},
        {"path": ["year"], "message": "must be at least 2000"},
    ]
    assert edits == [{"path": ["editedArgs", "to"], "message": "must be an email address"}]
