"""payload_validation: a resume payload checked against its interrupt's responseSchema.

The schema is the seed's quarterly filing form (an enum, a minimum, three required fields);
the payload is the seed's valid answer. One operation validates one payload.

- ours cached: :meth:`PayloadValidators.validate` with the schema already compiled (the
  common case: the schema was compiled when the agent raised the interrupt);
- ours cold: a fresh :class:`PayloadValidators` per operation, so compiling is included;
- jsonschema.validate: the call a Python agent would most likely write (it checks the schema
  against the metaschema and builds a validator on every call);
- jsonschema Draft7Validator: a validator built once, outside the timed loop, the fair
  comparison for ours cached. Format checking is on, as it is in ours.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.harness import Case, Comparison, Contender, Scenario

__all__ = ["PAYLOAD", "SCENARIO", "SCHEMA"]

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
        "revenue": {"type": "number"},
    },
    "required": ["quarter", "year", "revenue"],
}
PAYLOAD: dict[str, Any] = {"quarter": "Q1", "year": 2026, "revenue": 4200000}
INVALID: dict[str, Any] = {"quarter": "Q1", "year": 1999, "revenue": 4200000}


def _build() -> Sequence[Case]:
    import jsonschema

    from agui_core.errors import PayloadError
    from agui_core.protocol.payload import PayloadValidators

    warm = PayloadValidators()
    warm.check_schema("int-form", SCHEMA)
    prebuilt = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    validate = jsonschema.validate

    def ours_cached() -> None:
        warm.validate("int-form", SCHEMA, PAYLOAD)

    def ours_cold() -> None:
        PayloadValidators().validate("int-form", SCHEMA, PAYLOAD)

    def reference() -> None:
        validate(PAYLOAD, SCHEMA)

    def reference_prebuilt() -> None:
        prebuilt.validate(PAYLOAD)

    def check() -> None:
        # Same verdict on the valid payload (none raises) and on an invalid one (all raise).
        ours_cached()
        ours_cold()
        reference()
        reference_prebuilt()
        failures = 0
        for attempt in (
            lambda: warm.validate("int-form", SCHEMA, INVALID),
            lambda: PayloadValidators().validate("int-form", SCHEMA, INVALID),
        ):
            try:
                attempt()
            except PayloadError:
                failures += 1
        for attempt in (lambda: validate(INVALID, SCHEMA), lambda: prebuilt.validate(INVALID)):
            try:
                attempt()
            except jsonschema.ValidationError:
                failures += 1
        if failures != 4:
            raise AssertionError(f"only {failures} of 4 validators refused the invalid payload")

    return [
        Case(
            name="quarterly form, valid payload",
            contenders=(
                Contender("ours cached", ours_cached),
                Contender("ours cold", ours_cold),
                Contender("jsonschema.validate", reference),
                Contender("jsonschema Draft7Validator", reference_prebuilt),
            ),
            comparisons=(
                Comparison(ours="ours cached", theirs="jsonschema.validate", target=15.0),
                Comparison(ours="ours cached", theirs="jsonschema Draft7Validator", target=1.0),
                Comparison(ours="ours cold", theirs="jsonschema.validate", target=1.0),
            ),
            check=check,
            notes="one op = one payload",
        )
    ]


SCENARIO = Scenario(
    name="payload_validation",
    description="a resume payload checked against its responseSchema",
    build=_build,
)
