"""What watching a host costs: one interrupt -> resume cycle through a host, observers off and on.

``python -m benchmarks.observer_cycle [--cycles N] [--rounds R]`` runs the same cycle (the
example ``team_email_agent``: three parallel approvals, then a resume approving them, one with
edits, and the three tools run) through a :class:`~agui_core.runtime.host.Host` on the memory
store, with no observer, with the Prometheus observer (its store timed through
:class:`~agui_core.runtime.observe.ObservedStore`) and, when the ``[otel]`` extra is installed,
with the OpenTelemetry observer on an SDK tracer provider with no exporter. Configurations take
turns cycle by cycle, round after round, and each reports its median time per cycle over the rounds, and its
ratio to no observer. Not one of ``python -m benchmarks``' scenarios (nothing of it is
compared with the reference SDK); the figures go in docs/operations.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio

from agui_core.examples import TOOLS, team_email_agent
from agui_core.protocol import events as ev
from agui_core.protocol.types import ResumeEntry, RunAgentInput, UserMessage
from agui_core.runtime.host import Host
from agui_core.runtime.observe import ObservedStore, Observer
from agui_core.store import MemoryThreadStore

__all__ = ["main"]


def _start(thread_id: str) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread_id,
        run_id=f"{thread_id}-1",
        messages=(UserMessage(id=f"{thread_id}-m", content="Email the team."),),
    )


async def _cycle(host: Host, thread_id: str) -> None:
    first = [e async for e in host.run(_start(thread_id))]
    finished = first[-1]
    assert isinstance(finished, ev.RunFinishedEvent) and finished.outcome is not None
    interrupts = finished.outcome.interrupts or ()
    answers = tuple(ResumeEntry(interrupt_id=i.id, status="resolved", payload={"approved": True}) for i in interrupts)
    resume = RunAgentInput(thread_id=thread_id, run_id=f"{thread_id}-2", messages=(), resume=answers)
    second = [e async for e in host.run(resume)]
    assert isinstance(second[-1], ev.RunFinishedEvent)


async def _measure(
    configurations: dict[str, Callable[[], Observer | None]], cycles: int, rounds: int
) -> dict[str, list[float]]:
    """Seconds per cycle of each configuration (each on a host of its own), one figure per
    round of ``cycles`` cycles each, taken in turn cycle by cycle."""
    times: dict[str, list[float]] = {name: [] for name in configurations}
    async with AsyncExitStack() as stack:
        hosts: dict[str, Host] = {}
        for name, make in configurations.items():
            observer = make()
            store: Any = MemoryThreadStore()
            if observer is not None:
                store = ObservedStore(store, observer)
            hosts[name] = await stack.enter_async_context(
                Host(team_email_agent, store=store, tools=TOOLS, observer=observer)
            )
        for round_ in range(rounds + 1):
            spent = dict.fromkeys(hosts, 0.0)
            for n in range(cycles):  # one cycle of each in turn: a drift in load falls on all alike
                for name, host in hosts.items():
                    started = time.perf_counter()
                    await _cycle(host, f"r{round_}-{n}")
                    spent[name] += time.perf_counter() - started
            if round_:  # the first round warms every host up
                for name, seconds in spent.items():
                    times[name].append(seconds / cycles)
    return times


def _configurations() -> dict[str, Callable[[], Observer | None]]:
    made: dict[str, Callable[[], Observer | None]] = {"no observer": lambda: None}
    try:
        from agui_core.runtime.metrics import PrometheusObserver

        made["prometheus"] = lambda: PrometheusObserver()
    except ImportError:
        pass
    try:
        from opentelemetry.sdk.trace import TracerProvider

        from agui_core.runtime.tracing import TracingObserver

        made["opentelemetry"] = lambda: TracingObserver(TracerProvider())
    except ImportError:
        pass
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.observer_cycle", description=__doc__)
    parser.add_argument("--cycles", type=int, default=20, help="cycles per round and configuration")
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args(argv)
    configurations = _configurations()
    times = anyio.run(_measure, configurations, args.cycles, args.rounds)
    base = statistics.median(times["no observer"])
    for name, per_cycle in times.items():
        median = statistics.median(per_cycle)
        print(f"{name:>14}: {median * 1e6:8.1f} us per cycle  x{median / base:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
