"""``agui bench``: the benchmark suite from the installed command, and its one-line refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agui_core.cli import main


def test_a_quick_run_of_one_scenario_writes_its_results_as_json(tmp_path: Path) -> None:
    out = tmp_path / "results" / "bench.json"
    # From a directory that is not the repository: the benchmarks come with the installed package.
    result = subprocess.run(
        [sys.executable, "-m", "agui_core.cli", "bench", "--quick", "--only", "payload_validation", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    document = orjson.loads(out.read_bytes())
    assert document["settings"]["mode"] == "quick"
    assert [s["name"] for s in document["scenarios"]] == ["payload_validation"]
    (case, *_) = document["scenarios"][0]["cases"]
    assert {"ours cached", "jsonschema.validate"} <= {c["name"] for c in case["contenders"]}
    assert all(c["median_ratio"] > 0 for c in case["comparisons"])
    assert document["environment"]["packages"]["ag-ui-protocol"] == "1.0.0"
    assert "== payload_validation:" in result.stdout and str(out) in result.stdout


def test_without_the_reference_sdk_it_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ag_ui", None)  # as if ag-ui-protocol were not installed
    assert main(["bench", "--quick"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "install agui-core[bench]" in err and "ag_ui" in err


def test_an_unknown_scenario_is_refused_with_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--quick", "--only", "no_such_scenario"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agui bench: no scenario no_such_scenario") and "payload_validation" in err


def test_the_wheel_installs_only_project_owned_top_level_packages() -> None:
    import tomllib

    pyproject = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    packages = pyproject["tool"]["setuptools"]["packages"]
    assert "agui_bench" in packages
    assert {name.split(".")[0] for name in packages} == {"agui_core", "agui_transports", "agui_bench"}
