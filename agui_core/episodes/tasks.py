"""The task file of ``agui episodes``: one JSON object per line, each a task an agent is run through.

A task gives the episode's opening input and what a correct episode ends with, judged from the
events the server sends (nothing else of the server is visible)::

    {"id": "refund-damaged", "prompt": "Refund order R-1001, it arrived damaged.",
     "gated": ["refundOrder", "cancelOrder"],
     "forms": [{"reason": "damaged"}],
     "expect": {"outcome": "success", "result": {"refunded": true},
                "mustRun": [{"name": "refundOrder", "args": {"orderId": "R-1001"}}],
                "mustNotRun": [{"name": "cancelOrder"}]},
     "expectBy": {"deny:refundOrder": {"result": {"refunded": false},
                                       "mustNotRun": [{"name": "refundOrder"}]}}}

- ``id`` (required, unique in the file) and ``prompt`` (required: the user message that opens
  the episode); ``state`` and ``forwardedProps`` go into the opening input as given.
- ``gated``: the tools that may only run after a person approved the call. A result for one
  of them with no approval is counted as an action executed without an approval.
- ``forms``: the payloads a scripted human answers forms (``input_required`` interrupts) with,
  in the order the forms come; a form past the end of the list is cancelled.
- ``expect``: ``outcome`` (how the episode's last run ended: ``success``, ``interrupt``,
  ``cancelled`` or ``error``; default ``success``), ``result`` (fields the last run's result
  object must hold, each equal), ``mustRun`` and ``mustNotRun`` (tool calls, by ``name`` and,
  optionally, the ``args`` they ran with: each key given must be equal; a tool "ran" when its
  result came back and the person did not deny it).
- ``expectBy``: expectations for particular humans, by the human's full name
  (``deny:refundOrder``) or its kind (``deny``); they replace ``expect`` whole for that human.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import attrs
import orjson

from agui_core.protocol.types import JSON

__all__ = [
    "OUTCOMES",
    "Expectation",
    "Task",
    "TaskFileError",
    "ToolPattern",
    "load_tasks",
    "read_tasks",
]

Outcome = Literal["success", "interrupt", "cancelled", "error"]
OUTCOMES: tuple[Outcome, ...] = ("success", "interrupt", "cancelled", "error")
"""How an episode's last run may end: a ``RUN_FINISHED`` outcome, or ``error`` (``RUN_ERROR``)."""


class TaskFileError(ValueError):
    """A task file line that is not a task; ``line`` is its number (from 1)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


@attrs.frozen(kw_only=True)
class ToolPattern:
    """A tool call by ``name``; ``args`` (when given) are keys its arguments must hold, each equal."""

    name: str
    args: Mapping[str, JSON] | None = None

    def matches(self, name: str, args: JSON) -> bool:
        """Whether a call of ``name`` with ``args`` is one this pattern names."""
        if name != self.name:
            return False
        if self.args is None:
            return True
        return isinstance(args, Mapping) and all(k in args and args[k] == v for k, v in self.args.items())

    def __str__(self) -> str:
        if self.args is None:
            return self.name
        return f"{self.name}({orjson.dumps(dict(self.args)).decode()})"


@attrs.frozen(kw_only=True)
class Expectation:
    """What a correct episode ends with (see the module docstring)."""

    outcome: Outcome = "success"
    result: Mapping[str, JSON] | None = None
    must_run: tuple[ToolPattern, ...] = ()
    must_not_run: tuple[ToolPattern, ...] = ()


@attrs.frozen(kw_only=True)
class Task:
    """One task of a task file (see the module docstring)."""

    id: str
    prompt: str
    expect: Expectation = Expectation()
    expect_by: Mapping[str, Expectation] = attrs.field(factory=dict)
    gated: frozenset[str] = frozenset()
    forms: tuple[JSON, ...] = ()
    state: JSON = None
    forwarded_props: JSON = None

    def expectation_for(self, human: str) -> Expectation:
        """The expectation for the human named ``human``: by its full name, its kind, or ``expect``."""
        if human in self.expect_by:
            return self.expect_by[human]
        kind = human.partition(":")[0]
        return self.expect_by.get(kind, self.expect)


_TASK_KEYS = frozenset({"id", "prompt", "expect", "expectBy", "gated", "forms", "state", "forwardedProps"})
_EXPECT_KEYS = frozenset({"outcome", "result", "mustRun", "mustNotRun"})


def _patterns(line: int, where: str, value: Any) -> tuple[ToolPattern, ...]:
    if not isinstance(value, list):
        raise TaskFileError(line, f"{where} is a list of tool calls")
    patterns = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise TaskFileError(line, f"{where}[{i}] is a tool name or an object with a non-empty name")
        unknown = set(item) - {"name", "args"}
        if unknown:
            raise TaskFileError(line, f"{where}[{i}] has unknown keys {sorted(unknown)}")
        args = item.get("args")
        if args is not None and not isinstance(args, dict):
            raise TaskFileError(line, f"{where}[{i}].args is an object")
        patterns.append(ToolPattern(name=item["name"], args=args))
    return tuple(patterns)


def _expectation(line: int, where: str, value: Any) -> Expectation:
    if not isinstance(value, dict):
        raise TaskFileError(line, f"{where} is an object")
    unknown = set(value) - _EXPECT_KEYS
    if unknown:
        raise TaskFileError(line, f"{where} has unknown keys {sorted(unknown)}")
    outcome = value.get("outcome", "success")
    if outcome not in OUTCOMES:
        raise TaskFileError(line, f"{where}.outcome {outcome!r} is not one of {', '.join(OUTCOMES)}")
    result = value.get("result")
    if result is not None and not isinstance(result, dict):
        raise TaskFileError(line, f"{where}.result is an object of the fields the result must hold")
    return Expectation(
        outcome=outcome,
        result=result,
        must_run=_patterns(line, f"{where}.mustRun", value.get("mustRun", [])),
        must_not_run=_patterns(line, f"{where}.mustNotRun", value.get("mustNotRun", [])),
    )


def _task(line: int, document: Any) -> Task:
    if not isinstance(document, dict):
        raise TaskFileError(line, "a task is a JSON object")
    unknown = set(document) - _TASK_KEYS
    if unknown:
        raise TaskFileError(line, f"unknown keys {sorted(unknown)}")
    for key in ("id", "prompt"):
        if not isinstance(document.get(key), str) or not document[key]:
            raise TaskFileError(line, f"{key!r} is required, a non-empty string")
    gated = document.get("gated", [])
    if not isinstance(gated, list) or not all(isinstance(g, str) and g for g in gated):
        raise TaskFileError(line, "'gated' is a list of tool names")
    forms = document.get("forms", [])
    if not isinstance(forms, list):
        raise TaskFileError(line, "'forms' is a list of payloads")
    expect_by = document.get("expectBy", {})
    if not isinstance(expect_by, dict):
        raise TaskFileError(line, "'expectBy' is an object: human name -> expectation")
    return Task(
        id=document["id"],
        prompt=document["prompt"],
        expect=_expectation(line, "expect", document.get("expect", {})),
        expect_by={name: _expectation(line, f"expectBy[{name!r}]", e) for name, e in expect_by.items()},
        gated=frozenset(gated),
        forms=tuple(forms),
        state=document.get("state"),
        forwarded_props=document.get("forwardedProps"),
    )


def read_tasks(lines: Iterable[bytes | str]) -> list[Task]:
    """The tasks in ``lines`` (JSON lines; blank lines and lines starting with ``#`` are skipped).

    Raises :class:`TaskFileError` naming the line for one that is not a task, or an ``id`` used twice.
    """
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(lines, start=1):
        text = raw.decode() if isinstance(raw, bytes) else raw
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        try:
            document = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise TaskFileError(number, f"not JSON: {exc}") from None
        task = _task(number, document)
        if task.id in seen:
            raise TaskFileError(number, f"task id {task.id!r} is already used on line {seen[task.id]}")
        seen[task.id] = number
        tasks.append(task)
    return tasks


def load_tasks(path: str | Path) -> list[Task]:
    """The tasks of the file at ``path`` (see :func:`read_tasks`); an empty file is an error."""
    tasks = read_tasks(Path(path).read_text().splitlines())
    if not tasks:
        raise TaskFileError(1, f"{path} holds no task")
    return tasks
