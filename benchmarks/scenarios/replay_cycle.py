"""replay_cycle: what a straight-line agent's replay costs, against the explicit style.

One agent of ten steps, written two ways, under one :class:`~agui_core.runtime.Host` (in-memory
store, in process): nine steps (texts, and a tool that needs no approval), then a
confirmation; the run that answers it ends with one more text.

- straight-line: ``await ctx.text(...)`` nine times (the tool among them), then ``ok = await
  ctx.confirm(...)``; the resumed run replays the nine steps from the thread's step journal
  (nothing sent, nothing run) before the confirmation returns;
- explicit: the same nine steps, then ``await ctx.interrupt(...)``; the resumed run checks
  ``ctx.resumed`` and reads ``ctx.answers``, replaying nothing.

One operation is one whole cycle on a new thread (the interrupting run and the resumed one);
the measurements time the resumed run alone, which is where the replay is.
"""

from __future__ import annotations

import itertools
import statistics
import time
import weakref
from typing import Any

from benchmarks.harness import Case, Comparison, Contender, Measurement, Scenario, Settings
from benchmarks.scenarios.transports import _LoopThread

__all__ = ["SCENARIO"]

STEPS = 9
"""Steps before the confirmation (the tenth step)."""


def _agents() -> tuple[Any, Any, Any]:
    from agui_core.protocol.types import Interrupt
    from agui_core.runtime import RunContext, tool

    @tool("lookUp")
    def look_up(key: str) -> str:
        return key.upper()

    async def straight(ctx: RunContext) -> Any:
        for n in range(STEPS - 1):
            await ctx.text(f"Step {n}: working on it.")
        found = await ctx.call_tool("lookUp", {"key": "total"})
        if await ctx.confirm("Go on?"):
            await ctx.text(f"Done: {found.result}.")
        return "done"

    async def explicit(ctx: RunContext) -> Any:
        if ctx.resumed:
            if ctx.answers[0].entry.payload is True:
                await ctx.text("Done: TOTAL.")
            return "done"
        for n in range(STEPS - 1):
            await ctx.text(f"Step {n}: working on it.")
        await ctx.call_tool("lookUp", {"key": "total"})
        await ctx.interrupt(Interrupt(id=ctx.new_id("confirm"), reason="confirmation", message="Go on?"))
        return None

    return straight, explicit, [look_up]


class _Cycles:
    """Both agents, each on a host of its own, and a cycle of either on a new thread."""

    def __init__(self) -> None:
        from agui_core.runtime import Host

        straight, explicit, tools = _agents()
        self.loop = _LoopThread()
        self.hosts: dict[str, Host] = {}
        self.counter = itertools.count(1)

        def serving(name: str, agent: Any) -> Any:
            async def serve(ready: Any, stop: Any) -> None:
                async with Host(agent, tools=tools) as host:
                    self.hosts[name] = host
                    ready.set()
                    await stop.wait()

            return serve

        self.loop.start(serving("straight", straight))
        self.loop.start(serving("explicit", explicit))

    async def cycle(self, style: str) -> tuple[list[str], float]:
        """One interrupting run and its resume on a new thread: the outcomes, and the resume's seconds."""
        from agui_core.protocol.types import ResumeEntry, RunAgentInput

        host = self.hosts[style]
        thread = f"{style}-{next(self.counter)}"
        first = [e async for e in host.run(RunAgentInput(thread_id=thread, run_id="r1"))]
        (pending,) = first[-1].outcome.interrupts  # type: ignore[union-attr]
        resume = (ResumeEntry(interrupt_id=pending.id, status="resolved", payload=True),)
        started = time.perf_counter()
        done = [e async for e in host.run(RunAgentInput(thread_id=thread, run_id="r2", resume=resume))]
        took = time.perf_counter() - started
        return [first[-1].outcome.type, done[-1].outcome.type, str(done[-1].result)], took  # type: ignore[union-attr]


_CYCLES: list[_Cycles] = []


def _cycles() -> _Cycles:
    if not _CYCLES:
        _CYCLES.append(_Cycles())
        weakref.finalize(_CYCLES[0], _CYCLES[0].loop.close)
    return _CYCLES[0]


NAMES = ("straight-line: 9 steps replayed, then the answer", "explicit: ctx.resumed, ctx.answers")


def _case() -> Case:
    cycles = _cycles()

    def check() -> None:
        for style in ("straight", "explicit"):
            got, _ = cycles.loop.call(cycles.cycle(style))
            if got != ["interrupt", "success", "done"]:
                raise AssertionError(f"{style}: the cycle ended {got}, not interrupt then success")

    return Case(
        name=f"one cycle of a {STEPS + 1}-step agent (interrupting run + resume), a new thread each",
        contenders=(
            Contender(NAMES[0], lambda: cycles.loop.call(cycles.cycle("straight"))),
            Contender(NAMES[1], lambda: cycles.loop.call(cycles.cycle("explicit"))),
        ),
        comparisons=(Comparison(ours=NAMES[0], theirs=NAMES[1], target=1 / 1.5),),
        check=check,
        notes="the straight-line agent's replay, in its resumed run: the measurements below time that run alone",
    )


def _measure(settings: Settings) -> list[Measurement]:
    cycles = _cycles()
    count = 20 if settings.mode == "quick" else 400
    resumed: dict[str, list[float]] = {"straight": [], "explicit": []}
    for _ in range(count):  # alternating, as the harness does, so load falls on both alike
        for style in ("straight", "explicit"):
            _, took = cycles.loop.call(cycles.cycle(style))
            resumed[style].append(took)
    straight, explicit = statistics.median(resumed["straight"]), statistics.median(resumed["explicit"])
    return [
        Measurement(f"resumed run, straight-line ({STEPS} steps replayed)", straight * 1e6, "us"),
        Measurement("resumed run, explicit style", explicit * 1e6, "us"),
        Measurement("resumed run, straight-line over explicit", straight / explicit, "x", at_most=2.0),
    ]


SCENARIO = Scenario(
    name="replay_cycle",
    description="a 10-step straight-line agent's resumed run (its replay) against the same agent in the explicit style",
    build=lambda: [_case()],
    measure=_measure,
)
