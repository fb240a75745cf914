"""Prometheus metrics of a host: an :class:`~agui_core.runtime.observe.Observer` (extra ``[metrics]``).

``agui serve ... --metrics`` makes one :class:`PrometheusObserver` and serves its
:meth:`~PrometheusObserver.exposition` at ``GET /metrics`` (text format 0.0.4). The metrics,
in Prometheus' conventions (base units, ``_total`` counters, few label values: never a
thread id, never a principal):

==================================  =========  ==============================================
``agui_interrupts_open``            gauge      open interrupts, by ``reason``, in the store
``agui_interrupt_oldest_age_seconds`` gauge    age of the oldest open interrupt, in the store
``agui_interrupts_raised_total``    counter    interrupts raised, by ``reason``
``agui_decision_seconds``           histogram  raise to decision, by ``reason`` and ``status``
``agui_decisions_total``            counter    decisions, by ``status`` and ``edited``
``agui_interrupts_expired_total``   counter    interrupts closed as expired, by ``reason``
``agui_refusals_total``             counter    inputs refused, by ``RUN_ERROR`` ``code``
``agui_runs_in_flight``             gauge      runs of the agent going on in this host
``agui_run_duration_seconds``       histogram  runs, by ``outcome``
``agui_tool_executions_total``      counter    gated tool calls, by ``tool`` and ``result``
``agui_lease_takeovers_total``      counter    runs of dead hosts this host closed
``agui_store_operation_seconds``    histogram  store operations, by ``operation``
``agui_store_errors_total``         counter    store operations that failed, by ``operation``
``agui_connections``                gauge      client connections open, by ``transport``
==================================  =========  ==============================================

Several hosts on one store. The counters and histograms are each host's own (Prometheus
adds them up across hosts). The two gauges of open interrupts are not: an interrupt raised
on one host is answered on another, so no host's own count is right. They are read from the
store at scrape time (:meth:`ThreadStore.all_waiting
<agui_core.store.base.ThreadStore.all_waiting>`: one query over the interrupted threads),
at most once every ``store_cache`` seconds (2 by default) however many scrapers ask; every
host reports the same value, so aggregate them with ``max``, not ``sum``. A store that cannot
be read leaves the last values (and counts an error of ``all_waiting``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from agui_core.machine.record import OpenInterrupt, ResolvedInterrupt
from agui_core.runtime.observe import Observer, RunOutcome
from agui_core.store.base import StoreError, ThreadStore

__all__ = ["DECISION_BUCKETS", "MEDIA_TYPE", "STORE_SCAN_LIMIT", "PrometheusObserver"]

log = logging.getLogger("agui_core.metrics")

DECISION_BUCKETS = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 24 * 3600.0, 7 * 24 * 3600.0)
"""Buckets of ``agui_decision_seconds``: people answer in seconds to days."""

_RUN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
_STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

MEDIA_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""What ``GET /metrics`` is served as: the text format every Prometheus reads (the names here
need none of the escaping of later versions)."""

STORE_SCAN_LIMIT = 100_000
"""Threads with open interrupts one scrape reads at most (past that, the gauges undercount and
the log says so)."""


class PrometheusObserver(Observer):
    """Counts what a host does in a registry of its own (``registry``: one given, or a new one)."""

    active = True

    def __init__(
        self,
        *,
        registry: CollectorRegistry | None = None,
        store_cache: float = 2.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.store_cache = store_cache
        self._given_clock = clock
        self._clock: Callable[[], datetime] = clock if clock is not None else (lambda: datetime.now(UTC))
        self._store: ThreadStore | None = None
        self._read_at: float | None = None
        self._open: dict[str, int] = {}
        self._oldest: float = 0.0
        r = self.registry
        self.raised = Counter("agui_interrupts_raised", "Interrupts raised.", ["reason"], registry=r)
        self.decision = Histogram(
            "agui_decision_seconds",
            "Time from an interrupt's raise to its decision (answered or cancelled).",
            ["reason", "status"],
            buckets=DECISION_BUCKETS,
            registry=r,
        )
        self.decisions = Counter("agui_decisions", "Decisions on interrupts.", ["status", "edited"], registry=r)
        self.expired = Counter("agui_interrupts_expired", "Interrupts closed as expired.", ["reason"], registry=r)
        self.refusals = Counter("agui_refusals", "Inputs refused, by RUN_ERROR code.", ["code"], registry=r)
        self.in_flight = Gauge("agui_runs_in_flight", "Runs of the agent going on in this host.", registry=r)
        self.run_duration = Histogram(
            "agui_run_duration_seconds", "Runs of the agent.", ["outcome"], buckets=_RUN_BUCKETS, registry=r
        )
        self.tools = Counter(
            "agui_tool_executions", "Gated tool calls, by what became of them.", ["tool", "result"], registry=r
        )
        self.takeovers = Counter("agui_lease_takeovers", "Runs of hosts that died, closed by this host.", registry=r)
        self.store_seconds = Histogram(
            "agui_store_operation_seconds",
            "Thread store operations.",
            ["operation"],
            buckets=_STORE_BUCKETS,
            registry=r,
        )
        self.store_errors = Counter(
            "agui_store_errors", "Thread store operations that failed.", ["operation"], registry=r
        )
        self.connections = Gauge("agui_connections", "Client connections open.", ["transport"], registry=r)
        self._store_children: dict[str, Any] = {}
        r.register(_StoreGauges(self))

    def bind(self, store: ThreadStore, clock: Callable[[], datetime]) -> None:
        self._store = store
        if self._given_clock is None:
            self._clock = clock

    def run_started(self, *, thread_id: str, run_id: str) -> object:
        self.in_flight.inc()
        return time.perf_counter()

    def run_ended(self, run: object, *, outcome: RunOutcome, code: str | None = None) -> None:
        self.in_flight.dec()
        if isinstance(run, float):
            self.run_duration.labels(outcome).observe(time.perf_counter() - run)

    def tool_ended(self, tool: object, *, name: str, result: str) -> None:
        self.tools.labels(name, result).inc()

    def interrupts_raised(self, run: object, *, thread_id: str, interrupts: Sequence[OpenInterrupt]) -> None:
        for opened in interrupts:
            self.raised.labels(opened.interrupt.reason).inc()

    def interrupts_closed(self, run: object, *, thread_id: str, closed: Sequence[ResolvedInterrupt]) -> None:
        for entry in closed:
            reason = entry.interrupt.reason
            if entry.status == "expired":
                self.expired.labels(reason).inc()
                continue
            edited = isinstance(entry.payload, dict) and "editedArgs" in entry.payload
            self.decisions.labels(entry.status, "true" if edited else "false").inc()
            seconds = _between(entry.raised_at, entry.answered_at)
            if seconds is not None:
                self.decision.labels(reason, entry.status).observe(seconds)

    def refused(self, code: str) -> None:
        self.refusals.labels(code or "UNKNOWN").inc()

    def lease_taken_over(self) -> None:
        self.takeovers.inc()

    def connection_opened(self, transport: str) -> None:
        self.connections.labels(transport).inc()

    def connection_closed(self, transport: str) -> None:
        self.connections.labels(transport).dec()

    def store_operation(self, operation: str, seconds: float, *, failed: bool = False) -> None:
        # The most frequent report (every load and save): the labelled child looked up once.
        child = self._store_children.get(operation)
        if child is None:
            child = self._store_children[operation] = self.store_seconds.labels(operation)
        child.observe(seconds)
        if failed:
            self.store_errors.labels(operation).inc()

    async def exposition(self) -> tuple[bytes, str] | None:
        await self.read_store()
        return generate_latest(self.registry), MEDIA_TYPE

    async def read_store(self, *, fresh: bool = False) -> None:
        """Read the open interrupts from the store, unless read less than ``store_cache`` s ago."""
        if self._store is None:
            return
        started = time.perf_counter()
        if not fresh and self._read_at is not None and started - self._read_at < self.store_cache:
            return
        self._read_at = started
        try:
            waiting = await self._store.all_waiting(limit=STORE_SCAN_LIMIT)
        except StoreError as exc:
            log.warning(
                "metrics: cannot read the open interrupts from the store (%s); the gauges keep their values", exc
            )
            return
        if len(waiting) >= STORE_SCAN_LIMIT:
            log.warning("metrics: more than %d threads wait; agui_interrupts_open counts the newest", STORE_SCAN_LIMIT)
        counts = dict.fromkeys(self._open, 0)  # a reason seen once stays, at 0: a series that goes to 0, not away
        oldest: str | None = None
        for thread in waiting:
            for opened in thread.interrupts:
                counts[opened.interrupt.reason] = counts.get(opened.interrupt.reason, 0) + 1
                if opened.raised_at is not None and (oldest is None or _instant(opened.raised_at) < _instant(oldest)):
                    oldest = opened.raised_at
        self._open = counts
        age = _between(oldest, self._clock().isoformat()) if oldest is not None else None
        self._oldest = max(0.0, age) if age is not None else 0.0


class _StoreGauges:
    """The gauges read from the store (see the module docstring), as last read."""

    def __init__(self, observer: PrometheusObserver) -> None:
        self._observer = observer

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> list[Any]:
        opened = GaugeMetricFamily(
            "agui_interrupts_open", "Open interrupts in the store (every host's), by reason.", labels=["reason"]
        )
        for reason, count in sorted(self._observer._open.items()):
            opened.add_metric([reason], count)
        oldest = GaugeMetricFamily(
            "agui_interrupt_oldest_age_seconds", "Age of the oldest open interrupt in the store (0: none)."
        )
        oldest.add_metric([], self._observer._oldest)
        return [opened, oldest]


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _between(start: str | None, end: str | None) -> float | None:
    """Seconds from ``start`` to ``end`` (RFC 3339), or ``None`` if either is missing or unreadable."""
    if start is None or end is None:
        return None
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (ValueError, TypeError):
        return None
