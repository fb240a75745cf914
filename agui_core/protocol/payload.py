"""Resume payloads checked against the ``responseSchema`` their interrupt declared.

:class:`PayloadValidators` compiles each schema once and keeps the compiled validators in a
bounded least-recently-used cache keyed by the schema's canonical JSON bytes, so two equal
schemas share one validator whatever the order of their keys.

Only schemas an agent declared are ever compiled: a compiled schema is generated Python code
that gets executed, so a schema sent by a client must never reach this module.

What is checked:

- The dialect is the one the schema's ``$schema`` names among draft-04, draft-06 and draft-07;
  without ``$schema`` (or with a 2019-09 / 2020-12 URI) the draft-07 keywords are checked and
  keywords added after draft-07 are ignored.
- ``format`` is asserted for the formats fastjsonschema knows in the schema's draft (from
  draft-06 on: ``email``, ``date-time``, ``date``, ``time``, ``uri``, ``hostname``, ``ipv4``,
  ``ipv6``, ``uuid``, ``duration``, ``json-pointer``, ``regex`` and a few more); any other
  format name is an annotation and accepts every string.
  Draft-07 leaves this choice to the validator. We assert them because the agent wrote the
  format to be relied on, and clients are told to validate before sending (ours does, with
  the same rules), so a well-behaved client never meets the difference.
- ``default`` is never applied: validating leaves the payload exactly as it came.
- A ``$ref`` may point inside the schema only; a reference to another document is refused
  when the schema is compiled (this layer does no I/O).
- A missing payload is checked as JSON ``null``: it passes only a schema that allows null.
- A schema nested deeper than Python can compile (about 20 levels of arrays within arrays, or
  about 45 of objects within objects) is refused as a broken schema.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NoReturn

import fastjsonschema
import orjson
from mypy_extensions import mypyc_attr

from agui_core.errors import PayloadError, ResponseSchemaError

__all__ = ["PayloadValidators"]

_RawValidator = Callable[[Any], Any]
"""A validator as the compiler makes it: returns, or raises ``JsonSchemaValueException``."""

_MAX_EXPECTED_CHARS = 300
"""A RUN_ERROR message stays readable even when a message quotes a long client value."""

_INDEX = re.compile(r"\[(\d+)\]")


def _refuse_remote_ref(uri: str) -> NoReturn:
    raise fastjsonschema.JsonSchemaDefinitionException(
        f"$ref {uri!r} points outside the schema (only references inside it, such as '#/definitions/x', are resolved)"
    )


class _NoRemoteDocuments(Mapping[str, Callable[[str], Any]]):
    """URI-scheme handlers for the compiler that refuse every scheme.

    The compiler fetches a remote ``$ref`` with urllib for any scheme it has no handler for,
    so claiming to hold a handler for every scheme is what keeps it off the network.
    """

    def __contains__(self, scheme: object) -> bool:
        return True

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return _refuse_remote_ref

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


_NO_REMOTE_DOCUMENTS = _NoRemoteDocuments()


# Compiled (mypyc), a class takes Python subclasses only when it says so: hosts and tests subclass this one.
@mypyc_attr(allow_interpreted_subclasses=True)
class PayloadValidators:
    """Compiled ``responseSchema`` validators, cached by schema (least recently used first out).

    ``maxsize`` bounds how many compiled schemas are kept. :attr:`hits` and :attr:`misses`
    count cache look-ups since construction.
    """

    def __init__(self, maxsize: int = 256) -> None:
        if maxsize < 1:
            raise ValueError(f"maxsize must be at least 1, not {maxsize}")
        self.maxsize = maxsize
        self.hits = 0
        self.misses = 0
        self._cache: OrderedDict[bytes, _RawValidator] = OrderedDict()

    def __len__(self) -> int:
        return len(self._cache)

    def __repr__(self) -> str:
        return f"<PayloadValidators {len(self._cache)}/{self.maxsize} cached, {self.hits} hits, {self.misses} misses>"

    def validate(self, interrupt_id: str, schema: Mapping[str, Any] | None, payload: Any) -> None:
        """Check ``payload`` against ``schema``, the ``responseSchema`` of ``interrupt_id``.

        ``schema=None`` (the interrupt declared none) accepts any payload. Raises
        :class:`PayloadError` naming the first failing location, or :class:`ResponseSchemaError`
        if the schema itself is broken.
        """
        if schema is None:
            return
        _check(interrupt_id, self._raw(interrupt_id, schema), payload)

    def compile(self, interrupt_id: str, schema: Mapping[str, Any]) -> Callable[[Any], None]:
        """A function that checks one payload for ``interrupt_id``, as :meth:`validate` does.

        Raises :class:`ResponseSchemaError` if ``schema`` cannot be compiled.
        """
        raw = self._raw(interrupt_id, schema)

        def check(payload: Any) -> None:
            _check(interrupt_id, raw, payload)

        return check

    def check_schema(self, interrupt_id: str, schema: Mapping[str, Any]) -> None:
        """Compile ``schema`` (keeping it cached) or raise :class:`ResponseSchemaError`.

        Called when the agent raises the interrupt, so a broken schema is reported as the
        agent's error then, not as the client's when the answer arrives.
        """
        self._raw(interrupt_id, schema)

    def _raw(self, interrupt_id: str, schema: Mapping[str, Any]) -> _RawValidator:
        key = _canonical(interrupt_id, schema)
        cache = self._cache
        raw = cache.get(key)
        if raw is not None:
            self.hits += 1
            cache.move_to_end(key)
            return raw
        self.misses += 1
        raw = _compile(interrupt_id, key)
        cache[key] = raw
        if len(cache) > self.maxsize:
            cache.popitem(last=False)
        return raw


def _canonical(interrupt_id: str, schema: Mapping[str, Any]) -> bytes:
    """The cache key: the schema as compact JSON with sorted keys."""
    if not isinstance(schema, dict):
        if not isinstance(schema, Mapping):
            raise ResponseSchemaError(interrupt_id, f"it must be a JSON object, not {type(schema).__name__}")
        schema = dict(schema)
    try:
        return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError as exc:
        raise ResponseSchemaError(interrupt_id, f"it is not plain JSON ({exc})") from None


def _compile(interrupt_id: str, key: bytes) -> _RawValidator:
    # The compiler rewrites ``$ref`` values in the schema it is given, so it gets a private
    # copy parsed back from the key, never the agent's object.
    definition = orjson.loads(key)
    try:
        raw: _RawValidator = fastjsonschema.compile(
            definition,
            handlers=_NO_REMOTE_DOCUMENTS,
            use_default=False,
            use_formats=True,
            detailed_exceptions=True,
            fast_fail=True,
        )
    except (RecursionError, SyntaxError) as exc:
        # The generated code nests one block per schema level, and Python caps block nesting.
        detail = exc.msg if isinstance(exc, SyntaxError) else "recursion limit"
        raise ResponseSchemaError(interrupt_id, f"it is nested too deeply to compile ({detail})") from None
    except fastjsonschema.JsonSchemaDefinitionException as definition_error:
        raise ResponseSchemaError(interrupt_id, f"it is not a valid JSON Schema: {definition_error}") from None
    except re.error as pattern_error:
        raise ResponseSchemaError(interrupt_id, f"it holds an invalid regular expression ({pattern_error})") from None
    except Exception as unexpected:
        raise ResponseSchemaError(
            interrupt_id, f"it is not a valid JSON Schema ({type(unexpected).__name__}: {unexpected})"
        ) from None
    # A ``$ref`` cycle that consumes no input (``{"$ref": "#"}``) compiles but recurses without
    # end on every payload; one trial run finds it now rather than on the client's answer.
    try:
        raw(None)
    except fastjsonschema.JsonSchemaValueException:
        pass
    except RecursionError:
        raise ResponseSchemaError(interrupt_id, "its $ref refers to itself without end") from None
    except Exception as unexpected:
        raise ResponseSchemaError(
            interrupt_id, f"its validator fails on null ({type(unexpected).__name__}: {unexpected})"
        ) from None
    return raw


def _check(interrupt_id: str, raw: _RawValidator, payload: Any) -> None:
    try:
        raw(payload)
    except fastjsonschema.JsonSchemaValueException as exc:
        name = exc.name or "data"
        expected = exc.message
        if expected.startswith(name):
            expected = expected[len(name) :].lstrip()
        if len(expected) > _MAX_EXPECTED_CHARS:
            expected = expected[: _MAX_EXPECTED_CHARS - 1] + "\u2026"
        raise PayloadError(interrupt_id, expected, _path(payload, name)) from None
    except RecursionError:
        raise PayloadError(interrupt_id, "nested too deeply to check", ()) from None
    except Exception as unexpected:
        raise ResponseSchemaError(
            interrupt_id, f"checking a payload failed with {type(unexpected).__name__}: {unexpected}"
        ) from None


def _path(payload: Any, name: str) -> tuple[str | int, ...]:
    """The location the compiler names ``data.a.b[2]``, as keys and indexes from the root.

    The name is ambiguous when keys hold ``.`` or ``[``, so it is matched against the payload
    itself; the plain split is the fallback if nothing matches.
    """
    rest = name.removeprefix("data")
    found = _match(payload, rest, 0, set())
    if found is not None:
        return found
    parts: list[str | int] = []
    for piece in re.split(r"\.|(\[\d+\])", rest):
        if not piece:
            continue
        index = _INDEX.fullmatch(piece)
        parts.append(int(index.group(1)) if index else piece)
    return tuple(parts)


def _match(value: Any, rest: str, pos: int, failed: set[tuple[int, int]]) -> tuple[str | int, ...] | None:
    if pos == len(rest):
        return ()
    # Remembering dead ends keeps a payload full of dotted keys from making this exponential.
    if (id(value), pos) in failed:
        return None
    if isinstance(value, list) and rest.startswith("[", pos):
        index = _INDEX.match(rest, pos)
        if index is not None and int(index.group(1)) < len(value):
            i = int(index.group(1))
            tail = _match(value[i], rest, index.end(), failed)
            if tail is not None:
                return (i, *tail)
    elif isinstance(value, dict) and rest.startswith(".", pos):
        for key, item in value.items():
            if isinstance(key, str) and rest.startswith(key, pos + 1):
                tail = _match(item, rest, pos + 1 + len(key), failed)
                if tail is not None:
                    return (key, *tail)
    failed.add((id(value), pos))
    return None
