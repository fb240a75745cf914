"""The task file: what a task says, and the line a mistake is on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agui_core.episodes.tasks import TaskFileError, ToolPattern, load_tasks, read_tasks
from agui_core.examples.retail import TASKS

TASK = (
    '{"id": "t1", "prompt": "Refund R-1", "gated": ["refund"], "forms": [{"reason": "late"}],'
    ' "expect": {"result": {"refunded": true}, "mustRun": [{"name": "refund", "args": {"id": "R-1"}}],'
    ' "mustNotRun": ["cancel"]},'
    ' "expectBy": {"deny:refund": {"result": {"refunded": false}}, "cancel": {"outcome": "success"}}}'
)


def test_a_task_reads_with_its_expectations_per_human() -> None:
    [task] = read_tasks(["# a comment", "", TASK])
    assert task.id == "t1" and task.prompt == "Refund R-1"
    assert task.gated == frozenset({"refund"}) and task.forms == ({"reason": "late"},)
    assert task.expect.outcome == "success"
    assert task.expect.must_run == (ToolPattern(name="refund", args={"id": "R-1"}),)
    assert task.expect.must_not_run == (ToolPattern(name="cancel"),)
    assert task.expectation_for("approve") is task.expect
    assert task.expectation_for("deny:refund").result == {"refunded": False}
    assert task.expectation_for("cancel").result is None
    assert task.expectation_for("deny:other") is task.expect  # no "deny" kind entry: the default


def test_a_pattern_matches_by_name_and_the_arguments_it_names() -> None:
    pattern = ToolPattern(name="refund", args={"id": "R-1"})
    assert pattern.matches("refund", {"id": "R-1", "amount": 3})
    assert not pattern.matches("refund", {"id": "R-2"})
    assert not pattern.matches("refund", None)
    assert not pattern.matches("cancel", {"id": "R-1"})
    assert ToolPattern(name="refund").matches("refund", None)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 2: not JSON"),
        ("[]", "line 2: a task is a JSON object"),
        ('{"prompt": "p"}', "line 2: 'id' is required"),
        ('{"id": "a", "prompt": ""}', "line 2: 'prompt' is required"),
        ('{"id": "a", "prompt": "p", "colour": 1}', "line 2: unknown keys ['colour']"),
        ('{"id": "a", "prompt": "p", "gated": "refund"}', "line 2: 'gated' is a list of tool names"),
        ('{"id": "a", "prompt": "p", "expect": {"outcome": "won"}}', "line 2: expect.outcome 'won' is not one of"),
        ('{"id": "a", "prompt": "p", "expect": {"mustRun": [{"args": {}}]}}', "line 2: expect.mustRun[0] is a tool"),
        ('{"id": "a", "prompt": "p", "expectBy": {"x": {"result": 3}}}', "line 2: expectBy['x'].result is an object"),
        ('{"id": "t1", "prompt": "again"}', "line 2: task id 't1' is already used on line 1"),
    ],
)
def test_a_line_that_is_not_a_task_is_refused_with_its_number(line: str, message: str) -> None:
    with pytest.raises(TaskFileError, match="^" + re.escape(message)) as caught:
        read_tasks([TASK, line])
    assert caught.value.line == 2


def test_an_empty_task_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("# nothing\n")
    with pytest.raises(TaskFileError, match="holds no task"):
        load_tasks(path)


def test_the_shipped_retail_tasks_read() -> None:
    tasks = load_tasks(TASKS)
    assert [t.id for t in tasks] == [
        "status-shipped",
        "refund-damaged",
        "cancel-processing",
        "address-change",
        "exchange-shoes",
        "refund-over-limit",
    ]
