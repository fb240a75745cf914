"""Tests for agui_core.machine.jsonpatch: RFC 6902 over plain JSON, never touching its input."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_core.machine.jsonpatch import JsonPatchError, apply_patch
from tests.strategies import json_values


def patched(doc: Any, *ops: dict[str, Any]) -> Any:
    """``apply_patch`` that also checks the document and the patch were left as they were."""
    doc_before, ops_before = copy.deepcopy(doc), copy.deepcopy(ops)
    try:
        return apply_patch(doc, ops)
    finally:
        assert doc == doc_before
        assert ops == ops_before


def refused(doc: Any, *ops: dict[str, Any], match: str | None = None) -> JsonPatchError:
    with pytest.raises(JsonPatchError, match=match) as info:
        patched(doc, *ops)
    return info.value


# RFC 6902, Appendix A, one example per test case: (document, patch, result).
RFC_EXAMPLES: dict[str, tuple[Any, list[dict[str, Any]], Any]] = {
    "A.1 add an object member": (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux"}],
        {"baz": "qux", "foo": "bar"},
    ),
    "A.2 add an array element": (
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    "A.3 remove an object member": (
        {"baz": "qux", "foo": "bar"},
        [{"op": "remove", "path": "/baz"}],
        {"foo": "bar"},
    ),
    "A.4 remove an array element": (
        {"foo": ["bar", "qux", "baz"]},
        [{"op": "remove", "path": "/foo/1"}],
        {"foo": ["bar", "baz"]},
    ),
    "A.5 replace a value": (
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    "A.6 move a value": (
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    "A.7 move an array element": (
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    "A.8 test a value: success": (
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    "A.10 add a nested member object": (
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    "A.11 ignore unrecognized elements": (
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    "A.14 ~ escape ordering": (
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}],
        {"/": 9, "~1": 10},
    ),
    "A.16 add an array value": (
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
}


@pytest.mark.parametrize("name", list(RFC_EXAMPLES))
def test_rfc6902_examples(name: str) -> None:
    doc, ops, expected = RFC_EXAMPLES[name]
    assert patched(doc, *ops) == expected


def test_rfc6902_error_examples() -> None:
    # A.9 test a value: error.
    refused(
        {"baz": "qux"},
        {"op": "test", "path": "/baz", "value": "bar"},
        match="test at '/baz' failed",
    )
    # A.12 add to a nonexistent target.
    refused({"foo": "bar"}, {"op": "add", "path": "/baz/bat", "value": "qux"}, match="no member 'baz'")
    # A.15 comparing strings and numbers.
    refused({"/": 9, "~1": 10}, {"op": "test", "path": "/~01", "value": "10"}, match="failed")


def test_the_whole_document() -> None:
    assert patched({"a": 1}, {"op": "replace", "path": "", "value": [1]}) == [1]
    assert patched({"a": 1}, {"op": "add", "path": "", "value": None}) is None
    assert patched(None, {"op": "test", "path": "", "value": None}) is None
    refused({"a": 1}, {"op": "remove", "path": ""}, match="whole document")


def test_empty_patch_and_empty_key() -> None:
    doc = {"a": 1}
    assert patched(doc) is doc
    assert patched({"": 1}, {"op": "replace", "path": "/", "value": 2}) == {"": 2}
    assert patched({"a/b": {"m~n": 0}}, {"op": "replace", "path": "/a~1b/m~0n", "value": 1}) == {"a/b": {"m~n": 1}}


def test_operations_apply_in_order() -> None:
    assert patched(
        {"n": 0},
        {"op": "replace", "path": "/n", "value": 1},
        {"op": "copy", "from": "/n", "path": "/m"},
        {"op": "test", "path": "/m", "value": 1},
        {"op": "remove", "path": "/n"},
    ) == {"m": 1}


def test_copy_and_move() -> None:
    doc = {"a": {"b": [1, {"c": 2}]}}
    assert patched(doc, {"op": "copy", "from": "/a/b/1", "path": "/a/d"}) == {"a": {"b": [1, {"c": 2}], "d": {"c": 2}}}
    # A copy into its own child is fine; a move is not.
    assert patched(doc, {"op": "copy", "from": "/a", "path": "/a/e"}) == {
        "a": {"b": [1, {"c": 2}], "e": {"b": [1, {"c": 2}]}}
    }
    refused(doc, {"op": "move", "from": "/a", "path": "/a/e"}, match="own child")
    # Moving a value onto itself changes nothing; "/ab" is not a child of "/a".
    assert patched(doc, {"op": "move", "from": "/a", "path": "/a"}) == doc
    assert patched(doc, {"op": "move", "from": "/a", "path": "/ab"}) == {"ab": {"b": [1, {"c": 2}]}}
    refused(doc, {"op": "move", "from": "/nope", "path": "/x"}, match="no member 'nope'")
    refused(doc, {"op": "copy", "path": "/x"}, match="no string 'from'")


def test_the_copied_value_is_not_shared() -> None:
    value = {"deep": [1]}
    doc = patched({}, {"op": "add", "path": "/v", "value": value})
    value["deep"].append(2)
    assert doc == {"v": {"deep": [1]}}
    doc = patched({"a": {"x": [1]}}, {"op": "copy", "from": "/a", "path": "/b"})
    assert doc["a"] is not doc["b"]
    assert doc["a"]["x"] is not doc["b"]["x"]


@pytest.mark.parametrize(
    ("doc", "op", "match"),
    [
        ([1, 2], {"op": "replace", "path": "/2", "value": 0}, "out of range"),
        ([1, 2], {"op": "add", "path": "/3", "value": 0}, "out of range"),
        ([1, 2], {"op": "remove", "path": "/-"}, "not an array index"),
        ([1, 2], {"op": "replace", "path": "/01", "value": 0}, "not an array index"),
        ([1, 2], {"op": "replace", "path": "/-1", "value": 0}, "not an array index"),
        ([1, 2], {"op": "replace", "path": "/+1", "value": 0}, "not an array index"),
        ([1, 2], {"op": "replace", "path": "/1.0", "value": 0}, "not an array index"),
        # Digits of other scripts and superscripts are not array indexes either.
        ([1, 2], {"op": "replace", "path": "/\u0661", "value": 0}, "not an array index"),
        ([1, 2], {"op": "replace", "path": "/\u00b2", "value": 0}, "not an array index"),
        ({"a": 1}, {"op": "replace", "path": "/b", "value": 0}, "no member 'b'"),
        ({"a": 1}, {"op": "remove", "path": "/b"}, "no member 'b'"),
        ({"a": 1}, {"op": "add", "path": "/a/b", "value": 0}, "cannot descend into a int"),
        ({"a": "s"}, {"op": "test", "path": "/a/0", "value": "s"}, "cannot descend into a str"),
        ({"a": 1}, {"op": "add", "path": "a", "value": 0}, "does not start with '/'"),
        ({"a": 1}, {"op": "add", "path": "/b"}, "has no 'value'"),
        ({"a": 1}, {"op": "replace", "path": "/a"}, "has no 'value'"),
        # A test without a value is malformed, not a comparison with null.
        ({"a": None}, {"op": "test", "path": "/a"}, "has no 'value'"),
        ({"a": 1}, {"op": "add", "value": 0}, "no string 'path'"),
        ({"a": 1}, {"op": "increment", "path": "/a"}, "unknown operation 'increment'"),
        ({"a": 1}, {"path": "/a"}, "unknown operation None"),
    ],
)
def test_errors(doc: Any, op: dict[str, Any], match: str) -> None:
    refused(doc, op, match=match)


def test_an_operation_must_be_an_object() -> None:
    with pytest.raises(JsonPatchError, match="must be an object"):
        apply_patch({}, ["add"])  # type: ignore[list-item]


def test_a_failing_patch_leaves_the_document_as_it_was() -> None:
    doc = {"a": [1, 2], "b": {"c": 3}}
    refused(
        doc,
        {"op": "remove", "path": "/a/0"},
        {"op": "replace", "path": "/b/c", "value": 4},
        {"op": "test", "path": "/a/0", "value": 1},
    )
    assert doc == {"a": [1, 2], "b": {"c": 3}}


def test_test_is_json_equality() -> None:
    doc = {"t": True, "one": 1, "f": 1.0, "obj": {"x": [1, {"y": None}]}}
    patched(doc, {"op": "test", "path": "/one", "value": 1.0})
    patched(doc, {"op": "test", "path": "/f", "value": 1})
    patched(doc, {"op": "test", "path": "/obj", "value": {"x": [1.0, {"y": None}]}})
    # In Python True == 1; in JSON they differ.
    refused(doc, {"op": "test", "path": "/t", "value": 1}, match="failed")
    refused(doc, {"op": "test", "path": "/one", "value": True}, match="failed")
    refused(doc, {"op": "test", "path": "/obj", "value": {"x": [1]}}, match="failed")
    refused(
        doc,
        {"op": "test", "path": "/obj", "value": {"x": [1, {"y": None}], "z": 0}},
        match="failed",
    )
    refused(doc, {"op": "test", "path": "/one", "value": "1"}, match="failed")


def _pointers(doc: Any, prefix: str = "") -> list[str]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _pointers(value, f"{prefix}/{key.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            out += _pointers(value, f"{prefix}/{index}")
    return out


@st.composite
def docs_and_patches(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    doc = draw(json_values(max_leaves=12))
    pointers = [*_pointers(doc), "/nope", "/0", "/-"]
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]))
        item: dict[str, Any] = {"op": op, "path": draw(st.sampled_from(pointers))}
        if op in ("add", "replace", "test"):
            item["value"] = draw(json_values(max_leaves=3))
        if op in ("move", "copy"):
            item["from"] = draw(st.sampled_from(pointers))
        ops.append(item)
    return doc, ops


@settings(max_examples=200, deadline=None)
@given(docs_and_patches())
def test_the_input_document_is_never_mutated(case: tuple[Any, list[dict[str, Any]]]) -> None:
    # ``patched`` checks the document and the patch after every call, failed ones included.
    # (The result shares the parts the patch did not touch with the input, by design.)
    doc, ops = case
    try:
        patched(doc, *ops)
    except JsonPatchError:
        pass
