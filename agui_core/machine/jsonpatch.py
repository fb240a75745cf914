"""JSON Patch (RFC 6902) over plain JSON values, so the machine can track ``STATE_DELTA``.

The target is never modified: :func:`apply_patch` copies the containers on the path it
changes and shares the rest, which keeps the state of the run before a failure intact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["JsonPatchError", "apply_patch"]


class JsonPatchError(ValueError):
    """A patch that does not apply: a bad pointer, a missing member, a failed ``test``."""


def _tokens(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise JsonPatchError(f"JSON Pointer {pointer!r} does not start with '/'")
    return [tok.replace("~1", "/").replace("~0", "~") for tok in pointer[1:].split("/")]


def _index(container: list[Any], token: str, pointer: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    # ASCII digits only: str.isdigit() also accepts other scripts' digits and superscripts.
    if not (token.isascii() and token.isdigit()) or (token != "0" and token.startswith("0")):
        raise JsonPatchError(f"{pointer!r}: {token!r} is not an array index")
    index = int(token)
    limit = len(container) + (1 if for_add else 0)
    if index >= limit:
        raise JsonPatchError(f"{pointer!r}: index {index} is out of range")
    return index


def _get(doc: Any, pointer: str) -> Any:
    for token in _tokens(pointer):
        if isinstance(doc, dict):
            if token not in doc:
                raise JsonPatchError(f"{pointer!r}: no member {token!r}")
            doc = doc[token]
        elif isinstance(doc, list):
            doc = doc[_index(doc, token, pointer, for_add=False)]
        else:
            raise JsonPatchError(f"{pointer!r}: cannot descend into a {type(doc).__name__}")
    return doc


def _json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value, but ``true`` is not ``1`` as it is in Python."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=False))
    return bool(type(a) is type(b) or (isinstance(a, int | float) and isinstance(b, int | float))) and a == b


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _edit(doc: Any, pointer: str, op: str, value: Any = None) -> Any:
    """A copy of ``doc`` with ``op`` (add, remove, replace) done at ``pointer``."""
    tokens = _tokens(pointer)
    if not tokens:
        if op == "remove":
            raise JsonPatchError("cannot remove the whole document")
        return value

    def walk(node: Any, depth: int) -> Any:
        token = tokens[depth]
        last = depth == len(tokens) - 1
        if isinstance(node, dict):
            out = dict(node)
            if last:
                if op != "add" and token not in out:
                    raise JsonPatchError(f"{pointer!r}: no member {token!r}")
                if op == "remove":
                    del out[token]
                else:
                    out[token] = value
            else:
                if token not in out:
                    raise JsonPatchError(f"{pointer!r}: no member {token!r}")
                out[token] = walk(out[token], depth + 1)
            return out
        if isinstance(node, list):
            items = list(node)
            index = _index(items, token, pointer, for_add=last and op == "add")
            if last:
                if op == "add":
                    items.insert(index, value)
                elif op == "remove":
                    del items[index]
                else:
                    items[index] = value
            else:
                items[index] = walk(items[index], depth + 1)
            return items
        raise JsonPatchError(f"{pointer!r}: cannot descend into a {type(node).__name__}")

    return walk(doc, 0)


def apply_patch(doc: Any, patch: Iterable[Mapping[str, Any]]) -> Any:
    """``doc`` with every operation of ``patch`` applied in order; ``doc`` is left untouched."""
    for operation in patch:
        if not isinstance(operation, Mapping):
            raise JsonPatchError(f"an operation must be an object, not {type(operation).__name__}")
        op = operation.get("op")
        path = operation.get("path")
        if not isinstance(path, str):
            raise JsonPatchError(f"operation {op!r} has no string 'path'")
        if op in ("add", "replace"):
            if "value" not in operation:
                raise JsonPatchError(f"{op} at {path!r} has no 'value'")
            doc = _edit(doc, path, op, _copy(operation["value"]))
        elif op == "remove":
            doc = _edit(doc, path, "remove")
        elif op in ("move", "copy"):
            source = operation.get("from")
            if not isinstance(source, str):
                raise JsonPatchError(f"{op} to {path!r} has no string 'from'")
            if op == "move" and path != source and path.startswith(source + "/"):
                raise JsonPatchError(f"cannot move {source!r} into its own child {path!r}")
            value = _copy(_get(doc, source))
            if op == "move":
                doc = _edit(doc, source, "remove")
            doc = _edit(doc, path, "add", value)
        elif op == "test":
            if "value" not in operation:
                raise JsonPatchError(f"test at {path!r} has no 'value'")
            if not _json_equal(_get(doc, path), operation["value"]):
                raise JsonPatchError(f"test at {path!r} failed")
        else:
            raise JsonPatchError(f"unknown operation {op!r}")
    return doc
