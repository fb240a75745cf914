"""The benchmark harness: side-by-side timing of our code and its reference, ratios, reports.

A :class:`Scenario` builds one or more :class:`Case` objects. A case holds the contenders (our
code, the reference implementation, sometimes a floor such as bare ``orjson.dumps``) as
zero-argument callables that each do one operation on data built beforehand, and the
:class:`Comparison` pairs whose speed-up is reported against a target.

Each case is run in one process, contenders alternating: every repeat times one batch of
``n`` operations per contender, and the order of contenders is reversed on every other repeat
so that neither side always runs on a warmer (or hotter) machine. The reported figures are
the median time per operation of each contender, the speed-up of every repeat
(``theirs / ours`` over the same repeat) and the median of those speed-ups. A missed target
is reported, never raised: speed is a measurement here, not a test.

Some figures have no counterpart to compare with (bytes held per thread, throughput of a
store): a scenario reports them as :class:`Measurement` objects from its ``measure``
callable, which is given the settings so a quick run can measure less. They are printed and
written as they are, with no ratio and no target.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import Any, TextIO

from agui_core.compiled import is_compiled

__all__ = [
    "PACKAGES",
    "Case",
    "CaseResult",
    "Comparison",
    "ComparisonResult",
    "Contender",
    "ContenderResult",
    "Measurement",
    "Scenario",
    "ScenarioResult",
    "Settings",
    "environment",
    "format_report",
    "run_case",
    "run_scenarios",
    "to_json",
]

PACKAGES = (
    "agui-core",
    "ag-ui-protocol",
    "orjson",
    "fastjsonschema",
    "cattrs",
    "attrs",
    "pydantic",
    "pydantic-core",
    "jsonschema",
)
"""Distributions whose versions are recorded with every result."""


@dataclass(frozen=True, slots=True)
class Contender:
    """One side of a case: ``run()`` performs exactly one operation."""

    name: str
    run: Callable[[], object]


@dataclass(frozen=True, slots=True)
class Comparison:
    """A speed-up to report: ``theirs`` time over ``ours`` time, against ``target``.

    ``target`` is the smallest acceptable speed-up. A target below 1 reads as "ours within
    ``1 / target`` times theirs", which is how a floor (a bound we cannot beat) is compared.
    """

    ours: str
    theirs: str
    target: float

    @property
    def target_text(self) -> str:
        if self.target >= 1:
            return f">= {self.target:g}x"
        return f"within {1 / self.target:.3g}x"


@dataclass(frozen=True, slots=True)
class Case:
    """Contenders doing the same work on the same data, and the comparisons among them.

    ``check`` runs once before any timing and raises if the contenders do not produce
    equivalent results: a ratio between two different amounts of work is meaningless.
    """

    name: str
    contenders: tuple[Contender, ...]
    comparisons: tuple[Comparison, ...]
    check: Callable[[], None] | None = None
    notes: str = ""


@dataclass(frozen=True, slots=True)
class Measurement:
    """A figure with no reference to compare it with: ``value`` in ``unit``.

    ``at_most`` or ``at_least``, when set, is its target (met or missed, as a comparison's).
    """

    name: str
    value: float
    unit: str
    at_most: float | None = None
    at_least: float | None = None

    @property
    def target_text(self) -> str | None:
        if self.at_most is not None:
            return f"<= {_figure(self.at_most)} {self.unit}"
        if self.at_least is not None:
            return f">= {_figure(self.at_least)} {self.unit}"
        return None

    @property
    def met(self) -> bool | None:
        """Whether the target is met; ``None`` for a figure without one."""
        if self.at_most is not None:
            return self.value <= self.at_most
        if self.at_least is not None:
            return self.value >= self.at_least
        return None


@dataclass(frozen=True, slots=True)
class Scenario:
    """A named benchmark; ``build()`` prepares its cases (data built once, outside timing).

    ``measure``, when set, is called once after the cases and returns figures to report
    without a comparison.
    """

    name: str
    description: str
    build: Callable[[], Sequence[Case]]
    measure: Callable[[Settings], Sequence[Measurement]] | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """How long to measure.

    ``batch_seconds`` is the wall time each timed batch aims for (``n`` is calibrated per
    contender); ``iterations`` fixes ``n`` instead, for smoke runs.
    """

    mode: str
    repeats: int
    batch_seconds: float
    iterations: int | None = None

    @classmethod
    def full(cls) -> Settings:
        return cls(mode="full", repeats=11, batch_seconds=0.2)

    @classmethod
    def quick(cls) -> Settings:
        return cls(mode="quick", repeats=3, batch_seconds=0.01)


@dataclass(frozen=True, slots=True)
class ContenderResult:
    name: str
    iterations: int
    per_op_seconds: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.per_op_seconds)


@dataclass(frozen=True, slots=True)
class ComparisonResult:
    comparison: Comparison
    ratios: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def met(self) -> bool:
        return self.median >= self.comparison.target


@dataclass(frozen=True, slots=True)
class CaseResult:
    name: str
    notes: str
    contenders: tuple[ContenderResult, ...]
    comparisons: tuple[ComparisonResult, ...]


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    name: str
    description: str
    cases: tuple[CaseResult, ...] = field(default=())
    measurements: tuple[Measurement, ...] = field(default=())


def _time_batch(run: Callable[[], object], n: int) -> float:
    """Seconds for ``n`` calls of ``run``, with the cyclic GC off as :mod:`timeit` does."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(n):
            run()
        return time.perf_counter() - start
    finally:
        if was_enabled:
            gc.enable()


def _calibrate(run: Callable[[], object], batch_seconds: float) -> int:
    """How many calls of ``run`` fill about ``batch_seconds``."""
    n = 1
    while True:
        elapsed = _time_batch(run, n)
        # A tenth of the batch is enough to estimate the rate without spending the budget.
        if elapsed >= batch_seconds / 10 or n >= 10_000_000:
            per_op = elapsed / n
            return max(1, math.ceil(batch_seconds / per_op)) if per_op > 0 else n
        n *= 10 if elapsed < batch_seconds / 1000 else 2


def run_case(case: Case, settings: Settings) -> CaseResult:
    """Check, warm up, calibrate, then time ``case`` as the module docstring describes."""
    if case.check is not None:
        case.check()
    contenders = case.contenders
    for contender in contenders:
        contender.run()  # warm-up: first-call costs (imports, lazy caches) stay out of timing
    if settings.iterations is not None:
        counts = {c.name: settings.iterations for c in contenders}
    else:
        counts = {c.name: _calibrate(c.run, settings.batch_seconds) for c in contenders}
    per_op: dict[str, list[float]] = {c.name: [] for c in contenders}
    for repeat in range(settings.repeats):
        order = contenders if repeat % 2 == 0 else tuple(reversed(contenders))
        for contender in order:
            n = counts[contender.name]
            per_op[contender.name].append(_time_batch(contender.run, n) / n)
    contender_results = tuple(
        ContenderResult(name=c.name, iterations=counts[c.name], per_op_seconds=tuple(per_op[c.name]))
        for c in contenders
    )
    comparison_results = tuple(
        ComparisonResult(
            comparison=cmp,
            ratios=tuple(t / o for o, t in zip(per_op[cmp.ours], per_op[cmp.theirs], strict=True)),
        )
        for cmp in case.comparisons
    )
    return CaseResult(case.name, case.notes, contender_results, comparison_results)


def run_scenarios(
    scenarios: Iterable[Scenario], settings: Settings, progress: TextIO | None = None
) -> list[ScenarioResult]:
    results = []
    for scenario in scenarios:
        cases = []
        for case in scenario.build():
            if progress is not None:
                print(f"  running {scenario.name} / {case.name} ...", file=progress, flush=True)
            cases.append(run_case(case, settings))
        measured: tuple[Measurement, ...] = ()
        if scenario.measure is not None:
            if progress is not None:
                print(f"  measuring {scenario.name} ...", file=progress, flush=True)
            measured = tuple(scenario.measure(settings))
        results.append(ScenarioResult(scenario.name, scenario.description, tuple(cases), measured))
    return results


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "Processor"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def environment() -> dict[str, Any]:
    """What the numbers were measured on."""
    versions: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": load_average(),
        "packages": versions,
        # The same source runs compiled (mypyc, a wheel built with a C compiler) or as Python.
        "agui_core_build": "compiled" if is_compiled() else "pure",
    }


def load_average() -> list[float] | None:
    """The machine's load over the last 1, 5 and 15 minutes (``None`` where there is none)."""
    try:
        return [round(load, 2) for load in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def to_json(
    results: Sequence[ScenarioResult],
    settings: Settings,
    argv: Sequence[str],
    *,
    started: str | None = None,
    load_at_start: list[float] | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """The JSON document written next to the table.

    ``started`` and ``load_at_start`` say when the run began and how busy the machine was
    then (the environment has the load at the end); ``note`` is the operator's remark.
    """
    return {
        "format": 1,
        "started": started,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python -m benchmarks", *argv]),
        "note": note,
        "load_average_at_start": load_at_start,
        "settings": {
            "mode": settings.mode,
            "repeats": settings.repeats,
            "batch_seconds": settings.batch_seconds,
            "iterations": settings.iterations,
        },
        "environment": environment(),
        "scenarios": [
            {
                "name": scenario.name,
                "description": scenario.description,
                "cases": [
                    {
                        "name": case.name,
                        "notes": case.notes,
                        "contenders": [
                            {
                                "name": c.name,
                                "iterations": c.iterations,
                                "per_op_seconds": list(c.per_op_seconds),
                                "median_per_op_seconds": c.median,
                            }
                            for c in case.contenders
                        ],
                        "comparisons": [
                            {
                                "ours": r.comparison.ours,
                                "theirs": r.comparison.theirs,
                                "target": r.comparison.target,
                                "target_text": r.comparison.target_text,
                                "ratios": list(r.ratios),
                                "median_ratio": r.median,
                                "met": r.met,
                            }
                            for r in case.comparisons
                        ],
                    }
                    for case in scenario.cases
                ],
                "measurements": [
                    {
                        "name": m.name,
                        "value": m.value,
                        "unit": m.unit,
                        "target_text": m.target_text,
                        "met": m.met,
                    }
                    for m in scenario.measurements
                ],
            }
            for scenario in results
        ],
    }


def _duration(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _figure(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.4g}"


def format_report(results: Sequence[ScenarioResult], settings: Settings) -> str:
    """The results as a plain-text table."""
    lines = [f"mode: {settings.mode}, {settings.repeats} repeats, contenders alternating", ""]
    for scenario in results:
        lines.append(f"== {scenario.name}: {scenario.description}")
        for case in scenario.cases:
            lines.append(f"  -- {case.name}" + (f"  ({case.notes})" if case.notes else ""))
            width = max(len(c.name) for c in case.contenders)
            for c in case.contenders:
                lines.append(f"     {c.name:<{width}}  {_duration(c.median):>10} / op   (n={c.iterations})")
            for r in case.comparisons:
                cmp = r.comparison
                spread = f"[{min(r.ratios):.2f} .. {max(r.ratios):.2f}]"
                verdict = "ok" if r.met else f"MISSED (target {cmp.target_text})"
                lines.append(
                    f"     {cmp.theirs} / {cmp.ours}: {r.median:.2f}x median {spread}   "
                    f"target {cmp.target_text}: {verdict}"
                )
        if scenario.measurements:
            lines.append("  -- measured (no reference)")
            width = max(len(m.name) for m in scenario.measurements)
            for m in scenario.measurements:
                verdict = "" if m.met is None else f"   target {m.target_text}: {'ok' if m.met else 'MISSED'}"
                lines.append(f"     {m.name:<{width}}  {_figure(m.value):>12} {m.unit}{verdict}")
        lines.append("")
    verdicts = [r.met for s in results for c in s.cases for r in c.comparisons]
    verdicts += [m.met for s in results for m in s.measurements if m.met is not None]
    missed = sum(not met for met in verdicts)
    total = len(verdicts)
    note = " (quick mode: indicative only)" if settings.mode == "quick" else ""
    lines.append(f"{total - missed}/{total} targets met{note}")
    return "\n".join(lines)
