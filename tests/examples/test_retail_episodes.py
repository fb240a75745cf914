"""The retail shop's task set through a real ``agui serve`` process: the figures each human must give.

``agui serve agui_core.examples.retail:shop`` (every consequential tool gated) must pass every
task with every human, run no action without an approval and honour each approval exactly
once, over HTTP and over WebSocket; ``unsafe_shop`` (refunds and cancellations ungated) is
caught: its actions are counted, its denied refunds fail their tasks, and ``agui episodes``
exits with 1.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agui_core.app.episodes import EpisodesOptions, run_episodes
from agui_core.episodes import load_tasks, parse_human
from agui_core.examples.retail import TASKS
from tests.transports.served import ROOT, agui_serve

pytestmark = pytest.mark.anyio

ALL = load_tasks(TASKS)
# Interrupts per trial: status 0, refund 2 (form, approval), cancel 1, address 2 (form, approval),
# exchange 2 (two approvals at once), refund over the limit 3 (form, confirmation, approval).
INTERRUPTS = 10
# Approvals per trial by human: refund, cancel, address, exchange (2), refund over the limit.
APPROVALS = {"approve": 6, "deny:refundOrder": 3, "cancel": 0, "never": 0, "twice": 6, "edit": 6}
HALVE = "edit:agui_core.examples.retail:halve_refund"
TRIALS = 2


async def run(url: str, human: str, *, tasks: list = ALL, trials: int = TRIALS, concurrency: int = 6):  # type: ignore[no-untyped-def, type-arg]
    options = EpisodesOptions(trials=trials, concurrency=concurrency, seed=1, max_wait=15.0)
    return await run_episodes(url, tasks, parse_human(human), options)


async def test_the_shop_passes_every_task_with_every_human_over_http(tmp_path: Path) -> None:
    async with agui_serve(
        "agui_core.examples.retail:shop", "--http", "127.0.0.1:0", "--store", "memory", tmp=tmp_path
    ) as served:
        for human in (
            "approve",
            "deny:refundOrder",
            "cancel",
            "never",
            "twice",
            HALVE,
        ):
            report = await run(served.http_url, human)
            failures = {e.task: e.failures for e in report.episodes if not e.passed}
            assert failures == {}, human
            assert report.pass_k == {1: 1.0, 2: 1.0}, human
            assert report.broken == 0 and report.unapproved_actions == 0, human
            approvals = APPROVALS["edit" if human == HALVE else human]
            assert report.approvals == report.honoured_once == TRIALS * approvals, human
            assert report.refusals == {}, human
            if human not in ("never", "cancel"):
                assert sum(e.interrupts for e in report.episodes) == TRIALS * INTERRUPTS, human
        # An answer sent after the form's expiresAt (2 s) is refused, and the address stays.
        late = await run(served.http_url, "late:3", tasks=[t for t in ALL if t.id == "address-change"])
        assert late.pass_k == {1: 1.0, 2: 1.0}
        assert late.refusals == {"INTERRUPT_EXPIRED": TRIALS}


async def test_the_shop_passes_over_websocket_and_replays_a_resume_sent_twice(tmp_path: Path) -> None:
    async with agui_serve(
        "agui_core.examples.retail:shop", "--ws", "127.0.0.1:0", "--store", "memory", tmp=tmp_path
    ) as served:
        for human in ("approve", "twice"):
            report = await run(served.url, human, trials=3)
            assert report.pass_k == {1: 1.0, 2: 1.0, 3: 1.0}, human
            assert report.unapproved_actions == 0 and report.refusals == {}, human
            assert report.approvals == report.honoured_once == 3 * APPROVALS[human], human
        # Each replay is a run of its own: twice as many resumed runs as approve makes.
        approve_runs = sum(e.runs for e in (await run(served.url, "approve", trials=1)).episodes)
        twice_runs = sum(e.runs for e in (await run(served.url, "twice", trials=1)).episodes)
        assert twice_runs - approve_runs == approve_runs - len(ALL)


async def test_the_unsafe_shop_is_caught(tmp_path: Path) -> None:
    async with agui_serve(
        "agui_core.examples.retail:unsafe_shop", "--http", "127.0.0.1:0", "--store", "memory", tmp=tmp_path
    ) as served:
        approving = await run(served.http_url, "approve")
        # refund-damaged, cancel-processing, exchange-shoes and refund-over-limit each run one
        # gated tool with no approval, in every trial.
        assert approving.unapproved_actions == 4 * TRIALS
        caught = {e.task: e.unapproved_actions for e in approving.episodes if e.unapproved_actions}
        assert sorted(caught) == ["cancel-processing", "exchange-shoes", "refund-damaged", "refund-over-limit"]
        assert caught["cancel-processing"][0].startswith("cancelOrder (")
        assert caught["refund-damaged"][0].startswith("refundOrder (")
        assert not approving.ok
        denying = await run(served.http_url, "deny:refundOrder")
        # The denied refunds ran anyway: the three refund tasks fail, in every trial.
        assert {e.task for e in denying.episodes if not e.passed} == {
            "refund-damaged",
            "exchange-shoes",
            "refund-over-limit",
        }
        assert denying.pass_k == {1: 0.5, 2: 0.5}
        out_json, out_svg = tmp_path / "unsafe.json", tmp_path / "unsafe.svg"
        command = [
            sys.executable, "-m", "agui_core.app.cli", "episodes", served.http_url, "--tasks", str(TASKS),
            "--humans", "approve", "--trials", "2", "--json", str(out_json), "--svg", str(out_svg),
        ]  # fmt: skip
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        assert "actions executed without an approval 8" in done.stdout
        document = orjson.loads(out_json.read_bytes())
        assert document["unapprovedActions"] == 8 and document["passK"] == {"1": 1.0, "2": 1.0}
        assert out_svg.read_text().startswith("<svg")


def test_agui_episodes_refuses_a_bad_task_file_and_an_unknown_human(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    for extra, message in (
        (["--tasks", str(bad), "--humans", "approve"], "line 1: 'prompt' is required"),
        (["--tasks", str(TASKS), "--humans", "maybe"], "no human is called 'maybe'"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "agui_core.app.cli", "episodes", "http://127.0.0.1:9", *extra],
            cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 2 and message in done.stderr
