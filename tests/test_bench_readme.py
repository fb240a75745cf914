"""The benchmark tables of ``docs/benchmarks.md`` are the committed results file of a full run, rendered.

``docs/benchmark-results.json`` is what ``python -m benchmarks`` wrote; ``python -m benchmarks.readme``
renders it into ``docs/benchmarks.md`` (the page the README links to) between two markers.
These tests keep the two from drifting apart and the file from losing what makes its figures
traceable.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from benchmarks.readme import BEGIN, END, PAGE, RESULTS, main, render, replace_section


def test_the_benchmark_page_tables_are_the_committed_results_rendered() -> None:
    document = orjson.loads(RESULTS.read_bytes())
    readme = PAGE.read_text(encoding="utf-8")
    assert replace_section(readme, render(document)) == readme
    assert main(["--check"]) == 0


def test_the_committed_results_are_a_full_run_that_says_where_and_when_it_ran() -> None:
    document = orjson.loads(RESULTS.read_bytes())
    assert document["settings"]["mode"] == "full" and document["settings"]["repeats"] >= 11
    assert document["started"] <= document["created"] and document["created"].startswith("20")
    assert document["note"]  # what else was running on the machine
    env = document["environment"]
    assert env["cpu"] and env["cpu_count"] and env["python"] and env["platform"]
    assert env["load_average"] is not None and document["load_average_at_start"] is not None
    for name in ("agui-core", "ag-ui-protocol", "orjson", "fastjsonschema", "pydantic", "jsonschema"):
        assert env["packages"][name]
    # Every scenario of the suite is in it (a run of some would not be "the full run").
    from benchmarks.scenarios import SCENARIOS

    assert [s["name"] for s in document["scenarios"]] == [s.name for s in SCENARIOS]


def test_a_figure_changed_in_the_file_makes_the_check_fail(tmp_path: Path) -> None:
    document = orjson.loads(RESULTS.read_bytes())
    readme = tmp_path / "benchmarks.md"
    readme.write_text(PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    results = tmp_path / "results.json"
    (case,) = [c for s in document["scenarios"] for c in s["cases"]][:1]
    case["comparisons"][0]["median_ratio"] *= 2
    results.write_bytes(orjson.dumps(document))
    assert main(["--check", "--results", str(results), "--page", str(readme)]) == 1
    assert main(["--results", str(results), "--page", str(readme)]) == 0  # regenerates
    assert main(["--check", "--results", str(results), "--page", str(readme)]) == 0
    text = readme.read_text(encoding="utf-8")
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    ratio = case["comparisons"][0]["median_ratio"]
    assert (f"{ratio:,.0f}x" if ratio >= 100 else f"{ratio:.3g}x") in text
