"""The payload generator: valid payloads pass their schema, each violation fails it in the way
it says, checked by an independent validator (``jsonschema``) as well as ours."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from agui_core.conformance import PayloadGenerationError, valid_payload, violating_payloads
from agui_core.conformance.payloads import VIOLATION_KINDS
from agui_core.examples.filing import QUARTERLY_FILING_SCHEMA

APPROVAL = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {"type": "object", "properties": {"to": {"type": "string", "format": "email"}}},
    },
    "required": ["approved"],
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "approval": APPROVAL,
    "filing": dict(QUARTERLY_FILING_SCHEMA),
    "confirmation": {"type": "boolean"},
    "bounded": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 3, "maxLength": 5},
            "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": 9},
            "email": {"type": "string", "format": "email"},
            "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "mode": {"const": "fast"},
        },
        "required": ["name", "count", "email", "tags", "mode"],
        "additionalProperties": False,
    },
    "nested": {
        "type": "object",
        "properties": {"address": {"type": "object", "properties": {"zip": {"type": "string"}}, "required": ["zip"]}},
        "required": ["address"],
    },
    "one-of": {"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]},
}


def _independent(schema: dict[str, Any], value: Any) -> bool:
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return validator.is_valid(value)


@pytest.mark.parametrize("name", SCHEMAS)
def test_the_valid_payload_passes_its_schema(name: str) -> None:
    schema = SCHEMAS[name]
    assert _independent(schema, valid_payload(schema))


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_violation_fails_its_schema(name: str) -> None:
    schema = SCHEMAS[name]
    for violation in violating_payloads(schema):
        assert violation.kind in VIOLATION_KINDS
        assert not _independent(schema, violation.value), violation


def test_an_approval_is_approved_and_broken_three_ways() -> None:
    assert valid_payload(APPROVAL) == {"approved": True}
    found = {(v.kind, v.path): v.value for v in violating_payloads(APPROVAL)}
    assert found == {
        ("wrong type", "$"): "not the expected type",
        ("missing required", "$.approved"): {},
        ("wrong property type", "$.approved"): {"approved": "not the expected type"},
    }


def test_the_seed_form_is_broken_the_ways_the_brief_names() -> None:
    assert valid_payload(QUARTERLY_FILING_SCHEMA) == {"quarter": "Q1", "year": 2000, "revenue": 1}
    violations = violating_payloads(QUARTERLY_FILING_SCHEMA, limit=4)
    assert [(v.kind, v.path) for v in violations] == [
        ("wrong type", "$"),
        ("missing required", "$.quarter"),
        ("enum miss", "$.quarter"),
        ("below minimum", "$.year"),
    ]
    assert violations[3].value == {"quarter": "Q1", "year": 1999, "revenue": 1}


def test_bounds_and_closed_objects_are_broken() -> None:
    kinds = {v.kind for v in violating_payloads(SCHEMAS["bounded"])}
    assert {"too short", "too long", "above maximum", "format miss", "extra property", "missing required"} <= kinds


def test_a_schema_that_accepts_everything_has_no_violation() -> None:
    assert violating_payloads({}) == []


def test_a_pattern_the_generator_cannot_guess_is_reported() -> None:
    with pytest.raises(PayloadGenerationError, match="fails the schema"):
        valid_payload({"type": "string", "pattern": "^[0-9]{4}$"})
    assert violating_payloads({"type": "string", "pattern": "^[0-9]{4}$"}, base="2024")[0].kind == "wrong type"
