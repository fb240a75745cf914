"""The figures over many episodes: τ-bench's pass^k, percentiles, the table, the JSON and the plot."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from agui_core.episodes.plot import plot_svg
from agui_core.episodes.report import pass_hat_k, percentile, summarize
from agui_core.episodes.scoring import EpisodeScore


def episode(task: str, trial: int, passed: bool, **fields: object) -> EpisodeScore:
    values: dict[str, object] = {
        "task": task,
        "trial": trial,
        "human": "approve",
        "passed": passed,
        "failures": () if passed else ("wrong",),
        "outcome": "success",
        "result": {},
        "runs": 2,
        "interrupts": 1,
        "unapproved_actions": (),
        "approvals": 1,
        "honoured_once": 1,
        "rerun_approvals": (),
        "refusals": {},
        "to_resume": (0.001,),
        "to_next_event": (0.010,),
        "seconds": 0.1,
    }
    values.update(fields)
    return EpisodeScore(**values)  # type: ignore[arg-type]


def test_pass_hat_k_is_the_share_of_k_subsets_of_trials_all_right() -> None:
    assert pass_hat_k(4, 2, 1) == 0.5
    assert pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)  # C(2,2)/C(4,2)
    assert pass_hat_k(4, 2, 3) == 0.0
    assert pass_hat_k(8, 8, 8) == 1.0
    assert pass_hat_k(8, 7, 4) == pytest.approx(math.comb(7, 4) / math.comb(8, 4))
    with pytest.raises(ValueError, match="pass\\^5 needs"):
        pass_hat_k(4, 2, 5)
    with pytest.raises(ValueError, match="5 right out of 4"):
        pass_hat_k(4, 5, 1)


def test_percentiles_interpolate() -> None:
    assert percentile([], 50) is None
    assert percentile([3.0], 99) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([4.0, 1.0, 3.0, 2.0], 100) == 4.0


def test_summary_averages_pass_k_over_tasks_and_adds_up_the_rest() -> None:
    scores = [
        episode("a", 0, True),
        episode("a", 1, True),
        episode("b", 0, True, refusals={"INTERRUPT_EXPIRED": 1}),
        episode("b", 1, False, unapproved_actions=("refund (c1)",), honoured_once=0, refusals={"INTERRUPT_EXPIRED": 1}),
    ]
    report = summarize(scores, seconds=2.0, labels={"human": "approve"})
    assert report.pass_k == {1: 0.75, 2: 0.5}  # a: 1, 1; b: 1/2, 0
    assert report.unapproved_actions == 1 and report.approvals == 4 and report.honoured_once == 3
    assert not report.ok
    assert report.refusals == {"INTERRUPT_EXPIRED": 2}
    assert report.interrupts_per_episode == 1.0 and report.episodes_per_second == 2.0
    assert report.to_resume[50] == pytest.approx(0.001)
    document = report.to_json()
    assert document["passK"] == {"1": 0.75, "2": 0.5} and document["human"] == "approve"
    assert document["tasks"]["b"]["passK"] == {"1": 0.5, "2": 0.0}
    assert len(document["episodeScores"]) == 4
    table = report.table()
    assert "pass^1  pass^2" in table
    assert "all   4       3      0.750   0.500   1           INTERRUPT_EXPIRED 2" in table
    assert "actions executed without an approval 1" in table


def test_the_plot_is_an_svg_with_a_line_per_run_and_bars_per_percentile() -> None:
    one = summarize([episode("a", 0, True), episode("a", 1, False)], seconds=1.0, labels={"name": "ours"})
    two = summarize([episode("a", 0, True), episode("a", 1, True)], seconds=1.0, labels={"name": "theirs"})
    svg = ET.fromstring(plot_svg([one, two]))
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.tag == f"{ns}svg"
    assert len(svg.findall(f"{ns}polyline")) == 2
    bars = [r for r in svg.findall(f"{ns}rect") if r.find(f"{ns}title") is not None]
    assert len(bars) == 2 * 6  # two runs, p50/p90/p99 of two latencies
    texts = {t.text for t in svg.iter(f"{ns}text")}
    assert {"ours", "theirs", "pass^k"} <= texts
    with pytest.raises(ValueError, match="no report"):
        plot_svg([])
