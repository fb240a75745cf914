"""Tests for agui_core.protocol.payload: resume payloads against their responseSchema."""

from __future__ import annotations

import copy
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_core.errors import PayloadError, ResponseSchemaError, RunErrorCode
from agui_core.protocol import payload as payload_module
from agui_core.protocol.payload import PayloadValidators
from tests.seed import APPROVE_SCHEMA, APPROVE_WITH_EDITS_SCHEMA, QUARTERLY_SCHEMA

# The seed's schemas come from tests.seed; its parallel example's interrupts declare none.
PARALLEL: None = None


def failure(schema: Any, payload: Any, interrupt_id: str = "int-1") -> PayloadError:
    with pytest.raises(PayloadError) as info:
        PayloadValidators().validate(interrupt_id, schema, payload)
    return info.value


# -- the seed's schemas ---------------------------------------------------------------------


@pytest.mark.parametrize("payload", [{"approved": True}, {"approved": False}, {"approved": True, "note": "x"}])
def test_approve_accepts_a_boolean_decision(payload: Any) -> None:
    PayloadValidators().validate("int-abc123", APPROVE_SCHEMA, payload)


@pytest.mark.parametrize(
    ("payload", "path", "expected"),
    [
        ({}, (), "must contain ['approved'] properties"),
        ({"approved": "yes"}, ("approved",), "must be boolean"),
        ({"approved": 1}, ("approved",), "must be boolean"),
        (None, (), "must be object"),
        ([True], (), "must be object"),
    ],
)
def test_approve_rejects_with_path_and_expectation(payload: Any, path: tuple[Any, ...], expected: str) -> None:
    err = failure(APPROVE_SCHEMA, payload, "int-abc123")
    assert (err.interrupt_id, err.path, err.expected) == ("int-abc123", path, expected)
    assert err.code is RunErrorCode.INVALID_PAYLOAD


def test_approve_with_edits_accepts_the_seeds_answer_shape() -> None:
    answer = {
        "approved": True,
        "editedArgs": {
            "to": "jane@example.com",
            "subject": "Hi",
            "body": "Hi (revised per my note)",
        },
    }
    PayloadValidators().validate("int-email-edit", APPROVE_WITH_EDITS_SCHEMA, answer)
    PayloadValidators().validate("int-email-edit", APPROVE_WITH_EDITS_SCHEMA, {"approved": False})


@pytest.mark.parametrize(
    ("edited", "path", "expected"),
    [
        ({"to": "not-an-address"}, ("editedArgs", "to"), "must be email"),
        ({"to": 42}, ("editedArgs", "to"), "must be string"),
        ({"subject": None}, ("editedArgs", "subject"), "must be string"),
        (["to"], ("editedArgs",), "must be object"),
    ],
)
def test_approve_with_edits_rejects_bad_edited_args(edited: Any, path: tuple[Any, ...], expected: str) -> None:
    err = failure(APPROVE_WITH_EDITS_SCHEMA, {"approved": True, "editedArgs": edited})
    assert (err.path, err.expected) == (path, expected)


def test_formats_the_compiler_knows_are_asserted() -> None:
    # The seed's own sample address is mangled by an e-mail obfuscator into a non-address:
    # with formats asserted, it is refused.
    err = failure(APPROVE_WITH_EDITS_SCHEMA, {"approved": True, "editedArgs": {"to": "[email protected]"}})
    assert err.path == ("editedArgs", "to")
    err = failure({"type": "string", "format": "date-time"}, "next tuesday")
    assert err.expected == "must be date-time"
    PayloadValidators().validate("i", {"type": "string", "format": "date-time"}, "2026-04-20T17:00:00Z")


def test_an_unknown_format_is_only_an_annotation() -> None:
    PayloadValidators().validate("i", {"type": "string", "format": "multiline-text"}, "anything\nat all")


@pytest.mark.parametrize("payload", [None, {"approved": True}, "whatever", [1, 2]])
def test_no_schema_accepts_any_payload_and_caches_nothing(payload: Any) -> None:
    validators = PayloadValidators()
    validators.validate("i-1", PARALLEL, payload)
    assert (len(validators), validators.hits, validators.misses) == (0, 0, 0)


def test_quarterly_form_accepts_the_seeds_answer() -> None:
    PayloadValidators().validate("int-form", QUARTERLY_SCHEMA, {"quarter": "Q1", "year": 2026, "revenue": 4200000})
    PayloadValidators().validate("int-form", QUARTERLY_SCHEMA, {"quarter": "Q4", "year": 2000, "revenue": 0.5})


def test_quarterly_form_message_names_interrupt_and_location() -> None:
    err = failure(QUARTERLY_SCHEMA, {"quarter": "Q1", "year": 1999, "revenue": 1}, "int-form")
    assert err.path == ("year",)
    assert err.message == (
        "resume payload for interrupt 'int-form' is invalid at payload.year: must be bigger than or equal to 2000"
    )


@pytest.mark.parametrize(
    ("payload", "path", "expected"),
    [
        (
            {"quarter": "Q5", "year": 2026, "revenue": 1},
            ("quarter",),
            "must be one of ['Q1', 'Q2', 'Q3', 'Q4']",
        ),
        ({"quarter": "Q1", "year": 2026.5, "revenue": 1}, ("year",), "must be integer"),
        ({"quarter": "Q1", "year": True, "revenue": 1}, ("year",), "must be integer"),
        ({"quarter": "Q1", "year": "2026", "revenue": 1}, ("year",), "must be integer"),
        ({"quarter": "Q1", "year": 2026, "revenue": "4.2M"}, ("revenue",), "must be number"),
        ({"quarter": "Q1", "revenue": 1}, (), "must contain ['year'] properties"),
        ({}, (), "must contain ['quarter', 'revenue', 'year'] properties"),
        (None, (), "must be object"),
    ],
)
def test_quarterly_form_rejects_with_exact_path(payload: Any, path: tuple[Any, ...], expected: str) -> None:
    err = failure(QUARTERLY_SCHEMA, payload, "int-form")
    assert (err.path, err.expected) == (path, expected)


# -- paths ---------------------------------------------------------------------------------


def test_path_goes_through_array_indexes() -> None:
    schema = {
        "type": "object",
        "properties": {"rows": {"type": "array", "items": {"type": "integer"}}},
    }
    err = failure(schema, {"rows": [1, 2, "three"]})
    assert err.path == ("rows", 2)
    assert "payload.rows[2]" in err.message


def test_path_is_exact_for_keys_holding_dots_and_brackets() -> None:
    schema = {
        "type": "object",
        "additionalProperties": {"type": "array", "items": {"type": "integer"}},
    }
    err = failure(schema, {"a": [1], "a.b": [1, "x"]})
    assert err.path == ("a.b", 1)
    err = failure(schema, {"c[0]": ["y"]})
    assert err.path == ("c[0]", 0)


def test_path_through_a_reference() -> None:
    schema = {
        "definitions": {"line": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}}},
        "type": "object",
        "properties": {"lines": {"type": "array", "items": {"$ref": "#/definitions/line"}}},
    }
    err = failure(schema, {"lines": [{"qty": 2}, {"qty": 0}]})
    assert err.path == ("lines", 1, "qty")


def test_a_long_expectation_is_shortened() -> None:
    schema = {"type": "object", "additionalProperties": False}
    err = failure(schema, {f"key-{i}": i for i in range(500)})
    assert len(err.expected) <= 300


def test_payload_nested_beyond_the_recursion_limit_is_a_payload_error() -> None:
    schema = {"type": "array", "items": {"$ref": "#"}}
    deep: list[Any] = []
    for _ in range(3000):
        deep = [deep]
    err = failure(schema, deep)
    assert (err.path, err.expected) == ((), "nested too deeply to check")


# -- no side effects -----------------------------------------------------------------------


def test_validation_never_fills_in_defaults() -> None:
    schema = {"type": "object", "properties": {"approved": {"type": "boolean", "default": True}}}
    answer: dict[str, Any] = {}
    PayloadValidators().validate("i", schema, answer)
    assert answer == {}


def test_compiling_leaves_the_agents_schema_untouched() -> None:
    schema = {
        "$id": "https://agent.example/form",
        "definitions": {"year": {"type": "integer"}},
        "properties": {"year": {"$ref": "#/definitions/year"}},
    }
    before = copy.deepcopy(schema)
    PayloadValidators().check_schema("i", schema)
    assert schema == before


# -- compile and check_schema --------------------------------------------------------------


def test_compile_returns_a_checker_bound_to_the_interrupt() -> None:
    validators = PayloadValidators()
    check = validators.compile("int-form", QUARTERLY_SCHEMA)
    check({"quarter": "Q2", "year": 2030, "revenue": 7})
    with pytest.raises(PayloadError) as info:
        check({"quarter": "Q2", "year": 1990, "revenue": 7})
    assert (info.value.interrupt_id, info.value.path) == ("int-form", ("year",))
    validators.validate("other", QUARTERLY_SCHEMA, {"quarter": "Q2", "year": 2030, "revenue": 7})
    assert (validators.misses, validators.hits) == (1, 1)


def test_check_schema_compiles_into_the_cache() -> None:
    validators = PayloadValidators()
    validators.check_schema("int-form", QUARTERLY_SCHEMA)
    validators.validate("int-form", QUARTERLY_SCHEMA, {"quarter": "Q3", "year": 2024, "revenue": 1.5})
    assert (len(validators), validators.misses, validators.hits) == (1, 1, 1)


BROKEN_SCHEMAS: list[tuple[str, Any, str]] = [
    ("not an object", ["type", "object"], "must be a JSON object, not list"),
    ("not JSON", {"type": "object", "enum": {1, 2}}, "not plain JSON"),
    ("non-string key", {1: {"type": "string"}}, "not plain JSON"),
    ("unknown type", {"type": "objekt"}, "Unknown type"),
    ("minimum not a number", {"minimum": "ten"}, "minimum must be a number"),
    ("required not an array", {"required": "approved"}, "required must be an array"),
    ("properties not an object", {"properties": ["approved"]}, "not a valid JSON Schema"),
    ("unknown local ref", {"$ref": "#/definitions/missing"}, "Unresolvable ref"),
    (
        "remote ref",
        {"$ref": "https://schemas.example.invalid/form.json"},
        "points outside the schema",
    ),
    ("relative document ref", {"$ref": "form.json#/x"}, "points outside the schema"),
    ("file ref", {"$ref": "file:///etc/passwd"}, "points outside the schema"),
    ("bad regex", {"type": "string", "pattern": "(unclosed"}, "invalid regular expression"),
    ("ref cycle", {"$ref": "#"}, "refers to itself"),
    (
        "ref cycle through definitions",
        {"definitions": {"a": {"$ref": "#/definitions/a"}}, "$ref": "#/definitions/a"},
        "refers to itself",
    ),
]


@pytest.mark.parametrize(
    ("schema", "reason"),
    [(s, r) for _, s, r in BROKEN_SCHEMAS],
    ids=[n for n, _, _ in BROKEN_SCHEMAS],
)
def test_a_broken_schema_is_the_agents_error(schema: Any, reason: str) -> None:
    validators = PayloadValidators()
    with pytest.raises(ResponseSchemaError) as info:
        validators.check_schema("int-broken", schema)
    err = info.value
    assert err.interrupt_id == "int-broken"
    assert err.code is RunErrorCode.AGENT_ERROR
    assert reason in err.reason
    assert err.message.startswith("the responseSchema of interrupt 'int-broken' cannot be compiled: ")
    assert len(validators) == 0
    with pytest.raises(ResponseSchemaError):
        validators.validate("int-broken", schema, {"approved": True})
    with pytest.raises(ResponseSchemaError):
        validators.compile("int-broken", schema)


@pytest.mark.parametrize("depth", [30, 100, 300])
def test_a_schema_nested_too_deeply_is_refused_not_crashed(depth: int) -> None:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(depth):
        schema = {"type": "array", "items": schema}
    with pytest.raises(ResponseSchemaError, match=r"nested too deeply|not plain JSON"):
        PayloadValidators().check_schema("i", schema)


def test_a_self_containing_schema_is_refused() -> None:
    schema: dict[str, Any] = {"type": "object"}
    schema["properties"] = {"me": schema}
    with pytest.raises(ResponseSchemaError, match="not plain JSON"):
        PayloadValidators().check_schema("i", schema)


def test_a_mapping_that_is_not_a_dict_is_accepted() -> None:
    from types import MappingProxyType

    PayloadValidators().validate("i", MappingProxyType(APPROVE_SCHEMA), {"approved": True})


# -- the cache -----------------------------------------------------------------------------


def test_the_same_schema_twice_is_one_miss_then_one_hit() -> None:
    validators = PayloadValidators()
    validators.validate("a", APPROVE_SCHEMA, {"approved": True})
    validators.validate("b", APPROVE_SCHEMA, {"approved": False})
    assert (validators.misses, validators.hits, len(validators)) == (1, 1, 1)


def test_an_equal_schema_with_keys_in_another_order_is_a_hit() -> None:
    reordered = {
        "required": ["approved"],
        "properties": {"approved": {"type": "boolean"}},
        "type": "object",
    }
    validators = PayloadValidators()
    validators.validate("a", APPROVE_SCHEMA, {"approved": True})
    validators.validate("a", reordered, {"approved": True})
    assert (validators.misses, validators.hits, len(validators)) == (1, 1, 1)


def test_different_schemas_are_cached_apart() -> None:
    validators = PayloadValidators()
    validators.validate("a", APPROVE_SCHEMA, {"approved": True})
    validators.validate("b", QUARTERLY_SCHEMA, {"quarter": "Q1", "year": 2026, "revenue": 1})
    assert (validators.misses, validators.hits, len(validators)) == (2, 0, 2)


def test_the_least_recently_used_schema_is_evicted_at_maxsize() -> None:
    first, second, third = ({"type": "string", "maxLength": n} for n in (1, 2, 3))
    validators = PayloadValidators(maxsize=2)
    validators.check_schema("i", first)
    validators.check_schema("i", second)
    validators.check_schema("i", first)  # first is now the most recently used
    validators.check_schema("i", third)  # so second goes
    assert len(validators) == 2
    assert (validators.misses, validators.hits) == (3, 1)
    validators.check_schema("i", first)
    assert (validators.misses, validators.hits) == (3, 2)
    validators.check_schema("i", second)
    assert (validators.misses, validators.hits, len(validators)) == (4, 2, 2)


def test_maxsize_must_be_positive() -> None:
    with pytest.raises(ValueError, match="maxsize"):
        PayloadValidators(maxsize=0)


def test_repr_shows_the_cache() -> None:
    validators = PayloadValidators(maxsize=8)
    validators.check_schema("i", APPROVE_SCHEMA)
    assert repr(validators) == "<PayloadValidators 1/8 cached, 0 hits, 1 misses>"


def test_exports() -> None:
    assert payload_module.__all__ == ["PayloadValidators"]


# -- agreement with the reference validator ------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
quarterly_like = st.fixed_dictionaries(
    {},
    optional={
        "quarter": st.sampled_from(["Q1", "Q2", "Q3", "Q4", "Q5", "q1"]) | json_values,
        "year": st.integers(min_value=1990, max_value=2100)
        | st.floats(allow_nan=False, allow_infinity=False)
        | json_values,
        "revenue": st.floats(allow_nan=False, allow_infinity=False) | st.integers() | json_values,
        "extra": json_values,
    },
)
REFERENCE = jsonschema.Draft7Validator(QUARTERLY_SCHEMA)
SHARED = PayloadValidators()


def resolve(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


@settings(max_examples=250, deadline=None)
@given(quarterly_like | json_values)
def test_agrees_with_jsonschema_and_points_inside_the_payload(candidate: Any) -> None:
    try:
        SHARED.validate("int-form", QUARTERLY_SCHEMA, candidate)
    except PayloadError as err:
        assert not REFERENCE.is_valid(candidate)
        resolve(candidate, err.path)  # the path exists in the payload
    else:
        assert REFERENCE.is_valid(candidate)
