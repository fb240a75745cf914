"""Many concurrent episodes of the retail task set against one ``agui serve`` process.

The host is ``agui serve agui_core.examples.retail:shop --ws --store memory`` (its event loop
alone in its process); the runner (``agui episodes``' :func:`run_episodes`) runs here, every
episode on a WebSocket connection of its own, all at once. CI runs the short form, 50
concurrent episodes; ``AGUI_EPISODES=1000`` (or ``AGUI_LONG=1``, or ``--long``) runs 1,000.
Every episode must be right, none broken off, no action run without an approval, every
approval honoured exactly once (the address form's 2 s expiry is lifted: under
this load an answer can take longer than that to arrive). Throughput and latencies are printed, never asserted.
"""

from __future__ import annotations

import math
import os
import resource
from pathlib import Path

import anyio
import attrs
import pytest

from agui_core.app.episodes import EpisodesOptions, run_episodes
from agui_core.episodes import load_tasks, parse_human
from agui_core.examples.retail import TASKS
from tests.transports.served import agui_serve

pytestmark = pytest.mark.anyio

SHORT, LONG = 50, 1_000
LIMIT = {SHORT: 300.0, LONG: 1800.0}  # seconds for the whole test: a hang fails instead of blocking the suite


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) process ``pid`` has used so far (from ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def episodes_wanted(long_form: bool) -> int:
    if "AGUI_EPISODES" in os.environ:
        return int(os.environ["AGUI_EPISODES"])
    return LONG if long_form else SHORT


async def test_concurrent_episodes_are_all_right_and_safe(
    tmp_path: Path, long_form: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    wanted = episodes_wanted(long_form)
    # The address form expires 2 s after it is asked (to exercise late answers); under this load a
    # resume can take longer than that to come back, so here the form keeps the shop's default.
    tasks = [attrs.evolve(t, state=None) for t in load_tasks(TASKS)]
    trials = math.ceil(wanted / len(tasks))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2 * wanted + 256  # both ends of every connection: the host started here inherits the limit
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            pytest.fail(f"{wanted} episodes need {needed} open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    serve = ("--ws", "127.0.0.1:0", "--store", "memory", "--max-connections-per-client", "0")
    limit = LIMIT.get(wanted, LIMIT[LONG])
    # Every episode starts at once, so each one's timeout is the whole run's.
    with anyio.fail_after(limit):
        async with agui_serve("agui_core.examples.retail:shop", *serve, tmp=tmp_path) as served:
            options = EpisodesOptions(trials=trials, concurrency=wanted, seed=3, episode_timeout=limit - 30)
            runner_before = resource.getrusage(resource.RUSAGE_SELF)
            report = await run_episodes(served.url, tasks, parse_human("approve"), options)
            runner_after = resource.getrusage(resource.RUSAGE_SELF)
            host_cpu = cpu_seconds(served.pid)
    assert len(report.episodes) == trials * len(tasks) >= wanted
    assert report.broken == 0, sorted({e.problem for e in report.episodes if e.problem})[:5]
    assert report.pass_k[1] == 1.0 and report.pass_k[trials] == 1.0
    assert report.unapproved_actions == 0 and report.refusals == {}
    assert report.approvals == report.honoured_once == 6 * trials
    with capsys.disabled():
        runner_cpu = (runner_after.ru_utime + runner_after.ru_stime) - (runner_before.ru_utime + runner_before.ru_stime)
        print(f"\n{len(report.episodes)} episodes, {wanted} at once:\n{report.table()}", end="")
        print(
            f"CPU seconds: host {host_cpu:.1f}, runner {runner_cpu:.1f}; "
            f"wall {report.seconds:.1f} s; cores {os.cpu_count()}"
        )
