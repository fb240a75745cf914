"""The figures of a run of episodes: pass^k, safety, refusals, latencies, throughput; JSON and a table.

pass^k is τ-bench's: the chance that an agent gets a task right in all of k independent
trials, averaged over the tasks. From a task's n trials with c right, the unbiased estimate is
C(c, k) / C(n, k) (the share of the k-subsets of its trials that are all right); it is given
for k = 1 ... n, where n is the fewest trials any task had. pass^1 is the plain success rate.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from agui_core.episodes.scoring import EpisodeScore

__all__ = ["EpisodesReport", "pass_hat_k", "percentile", "summarize"]


def pass_hat_k(trials: int, right: int, k: int) -> float:
    """The estimate of pass^k for one task from ``trials`` trials of which ``right`` were right."""
    if not 0 <= right <= trials:
        raise ValueError(f"{right} right out of {trials} trials")
    if not 1 <= k <= trials:
        raise ValueError(f"pass^{k} needs 1 <= k <= {trials} trials")
    return math.comb(right, k) / math.comb(trials, k)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` by linear interpolation; ``None`` when empty."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


PERCENTILES = (50, 90, 99)
TABLE_K = 8


@attrs.frozen(kw_only=True)
class EpisodesReport:
    """Every episode's score and the figures over all of them."""

    episodes: tuple[EpisodeScore, ...]
    pass_k: Mapping[int, float]
    tasks: Mapping[str, Mapping[str, Any]]
    unapproved_actions: int
    approvals: int
    honoured_once: int
    refusals: Mapping[str, int]
    interrupts_per_episode: float
    to_resume: Mapping[int, float | None]
    to_next_event: Mapping[int, float | None]
    broken: int
    seconds: float
    episodes_per_second: float
    labels: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def ok(self) -> bool:
        """No action executed without an approval, every approval honoured exactly once."""
        return self.unapproved_actions == 0 and self.honoured_once == self.approvals

    def to_json(self, *, episodes: bool = True) -> dict[str, Any]:
        """The report as JSON (the episodes left out unless ``episodes``)."""
        document: dict[str, Any] = {
            **self.labels,
            "episodes": len(self.episodes),
            "passed": sum(e.passed for e in self.episodes),
            "passK": {str(k): v for k, v in self.pass_k.items()},
            "unapprovedActions": self.unapproved_actions,
            "approvals": self.approvals,
            "honouredOnce": self.honoured_once,
            "refusals": dict(self.refusals),
            "interruptsPerEpisode": self.interrupts_per_episode,
            "toResumeSeconds": {f"p{q}": v for q, v in self.to_resume.items()},
            "toNextEventSeconds": {f"p{q}": v for q, v in self.to_next_event.items()},
            "broken": self.broken,
            "seconds": self.seconds,
            "episodesPerSecond": self.episodes_per_second,
            "tasks": dict(self.tasks),
        }
        if episodes:
            document["episodeScores"] = [e.to_json() for e in self.episodes]
        return document

    def table(self) -> str:
        """A human-readable table: one row per task, then the totals (pass^k up to k = 8; the JSON has all)."""
        ks = [k for k in self.pass_k if k <= TABLE_K]
        head = ["task", "trials", "right", *(f"pass^{k}" for k in ks), "unapproved", "refusals"]
        rows = [head]
        for task_id, figures in self.tasks.items():
            refusals = ", ".join(f"{code} {n}" for code, n in sorted(figures["refusals"].items())) or "-"
            pk = figures["passK"]
            rows.append(
                [
                    task_id,
                    str(figures["trials"]),
                    str(figures["right"]),
                    *(f"{pk[str(k)]:.3f}" if str(k) in pk else "-" for k in ks),
                    str(figures["unapprovedActions"]),
                    refusals,
                ]
            )
        rows.append(
            [
                "all",
                str(len(self.episodes)),
                str(sum(e.passed for e in self.episodes)),
                *(f"{self.pass_k[k]:.3f}" for k in ks),
                str(self.unapproved_actions),
                ", ".join(f"{code} {n}" for code, n in sorted(self.refusals.items())) or "-",
            ]
        )
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value * 1000:.1f} ms"

        lines += [
            "",
            f"episodes {len(self.episodes)} in {self.seconds:.2f} s ({self.episodes_per_second:.1f}/s); "
            f"broken off {self.broken}",
            f"interrupts per episode {self.interrupts_per_episode:.2f}; approvals {self.approvals}, "
            f"honoured exactly once {self.honoured_once}; actions executed without an approval "
            f"{self.unapproved_actions}",
            "interrupt -> resume " + ", ".join(f"p{q} {ms(v)}" for q, v in self.to_resume.items()),
            "resume -> next event " + ", ".join(f"p{q} {ms(v)}" for q, v in self.to_next_event.items()),
        ]
        return "\n".join(lines) + "\n"


def summarize(
    episodes: Sequence[EpisodeScore], *, seconds: float, labels: Mapping[str, str] | None = None
) -> EpisodesReport:
    """The report over ``episodes``, which took ``seconds`` of wall time in all."""
    by_task: dict[str, list[EpisodeScore]] = defaultdict(list)
    for episode in episodes:
        by_task[episode.task].append(episode)
    fewest = min((len(v) for v in by_task.values()), default=0)
    tasks: dict[str, dict[str, Any]] = {}
    for task_id, scores in by_task.items():
        right = sum(s.passed for s in scores)
        refusals: Counter[str] = Counter()
        for s in scores:
            refusals.update(s.refusals)
        tasks[task_id] = {
            "trials": len(scores),
            "right": right,
            "passK": {str(k): pass_hat_k(len(scores), right, k) for k in range(1, len(scores) + 1)},
            "unapprovedActions": sum(len(s.unapproved_actions) for s in scores),
            "refusals": dict(refusals),
            "failures": sorted({f for s in scores for f in s.failures}),
        }
    pass_k = {
        k: sum(pass_hat_k(len(v), sum(s.passed for s in v), k) for v in by_task.values()) / len(by_task)
        for k in range(1, fewest + 1)
    }
    refusals_all: Counter[str] = Counter()
    for episode in episodes:
        refusals_all.update(episode.refusals)
    to_resume = [x for e in episodes for x in e.to_resume]
    to_next = [x for e in episodes for x in e.to_next_event]
    return EpisodesReport(
        episodes=tuple(episodes),
        pass_k=pass_k,
        tasks=tasks,
        unapproved_actions=sum(len(e.unapproved_actions) for e in episodes),
        approvals=sum(e.approvals for e in episodes),
        honoured_once=sum(e.honoured_once for e in episodes),
        refusals=dict(refusals_all),
        interrupts_per_episode=sum(e.interrupts for e in episodes) / len(episodes) if episodes else 0.0,
        to_resume={q: percentile(to_resume, q) for q in PERCENTILES},
        to_next_event={q: percentile(to_next, q) for q in PERCENTILES},
        broken=sum(e.problem is not None for e in episodes),
        seconds=seconds,
        episodes_per_second=len(episodes) / seconds if seconds > 0 else 0.0,
        labels=dict(labels or {}),
    )
