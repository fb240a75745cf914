"""Smoke test of the benchmark harness (``python -m benchmarks``), so it never rots.

It runs every scenario for a couple of operations and checks the report and the JSON; it
asserts nothing about speed.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from benchmarks.__main__ import main
from benchmarks.scenarios import SCENARIOS


def test_a_quick_run_reports_every_scenario(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "nested" / "results.json"
    status = main(["--quick", "--iterations", "2", "--repeats", "2", "--out", str(out)])
    assert status == 0

    document = orjson.loads(out.read_bytes())
    assert [s["name"] for s in document["scenarios"]] == [s.name for s in SCENARIOS]
    assert document["settings"] == {
        "mode": "quick",
        "repeats": 2,
        "batch_seconds": 0.01,
        "iterations": 2,
    }
    environment = document["environment"]
    assert environment["python"] and environment["cpu"] and environment["platform"]
    assert environment["packages"]["agui-core"] and environment["packages"]["ag-ui-protocol"]
    assert environment["agui_core_build"] in ("compiled", "pure")
    for scenario in document["scenarios"]:
        assert scenario["cases"], scenario["name"]
        for case in scenario["cases"]:
            names = {c["name"] for c in case["contenders"]}
            assert all(len(c["per_op_seconds"]) == 2 and c["iterations"] == 2 for c in case["contenders"])
            assert case["comparisons"]
            for comparison in case["comparisons"]:
                assert {comparison["ours"], comparison["theirs"]} <= names
                assert len(comparison["ratios"]) == 2 and comparison["median_ratio"] > 0

    table = capsys.readouterr().out
    for scenario in SCENARIOS:
        assert f"== {scenario.name}:" in table
    assert "targets met" in table


def test_only_runs_the_named_scenario(tmp_path: Path) -> None:
    out = tmp_path / "one.json"
    assert (
        main(
            [
                "--quick",
                "--iterations",
                "1",
                "--repeats",
                "1",
                "--only",
                "payload_validation",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert [s["name"] for s in orjson.loads(out.read_bytes())["scenarios"]] == ["payload_validation"]


def test_an_unknown_scenario_is_refused() -> None:
    with pytest.raises(SystemExit) as info:
        main(["--only", "no_such_scenario"])
    assert info.value.code == 2
