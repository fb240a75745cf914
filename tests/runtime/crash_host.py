"""A host process on a SQLite thread store that can be told to die, for the crash and race tests.

Run as ``python -m tests.runtime.crash_host DB EFFECTS [options]`` from the repository root.
It reads ONE ``RunAgentInput`` (JSON) from stdin, runs it through a :class:`Host` over
``SqliteThreadStore(DB)``, and writes the events to stdout, one JSON object per line, each
written straight to the file descriptor (nothing is lost in a buffer when the process dies).

The agent (:func:`order_agent`) proposes ``recordOrder``, an approval-gated tool whose side
effect appends one line to the file ``EFFECTS``, so a tool that ran twice shows as two lines.
It is a straight-line agent: its first run streams a text, proposes the call and ends with
the approval; its resumed run replays to the call, says what became of it and finishes with
``{"order": status}``.

Options:

``--kill POINT``
    SIGKILL this process at ``POINT`` (see :data:`KILL_POINTS`).
``--skew SECONDS``
    the host's clock runs this far ahead of the wall clock (a later process "waits" past the
    lease of a dead one without sleeping).
``--run-timeout SECONDS``
    the host's ``run_timeout`` (default 5).
``--lease SECONDS``
    the host's ``lease`` (default 10; renewed every half of it).
``--barrier DIR NAME PEER``
    once the store is open and the thread loaded, touch ``DIR/NAME`` and wait for
    ``DIR/PEER``, so two processes hand the host their input at the same moment.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio

from agui_core.machine.record import ResolvedInterrupt, ThreadRecord
from agui_core.machine.transitions import ThreadState
from agui_core.protocol.codec import decode_input, encode_event
from agui_core.runtime import Host, RunContext, Tool, tool
from agui_core.store import SqliteThreadStore, ThreadStore

__all__ = ["KILL_POINTS", "KillingStore", "main", "order_agent", "order_tool"]

KILL_POINTS = {
    "agent-before-interrupt": "the first run's agent has proposed the call; its interrupt is not saved",
    "interrupt-saved": "the interrupt is saved; its RUN_FINISHED is not written",
    "resumed-run-started": "the resumed run's RUN_STARTED is written; the tool is not yet journaled",
    "tool-before-effect": "the tool is journaled as started; its side effect has not happened",
    "tool-after-effect": "the tool's side effect has happened; its result is not saved",
    "agent-after-tool": "the tool's result is saved and sent; the resumed agent is mid-way",
    "finish-saved": "the resumed run's success is saved; its RUN_FINISHED is not written",
}
"""Where ``--kill`` can stop the process, and what has happened by then."""

BARRIER_TIMEOUT = 30.0


class _Killer:
    """Kills this process at one named point, once the stream written so far is out."""

    def __init__(self, point: str | None) -> None:
        self.point = point
        self.started = anyio.Event()  # RUN_STARTED has been written to stdout

    def hit(self, point: str) -> bool:
        return point == self.point

    async def die_at(self, point: str) -> None:
        if point != self.point:
            return
        await self.started.wait()
        for _ in range(20):  # let the writer catch up with what the run sent so far
            await anyio.sleep(0)
        self.die()

    def die(self) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


class KillingStore:
    """A :class:`SqliteThreadStore` that dies around the saves the kill points name."""

    def __init__(self, inner: SqliteThreadStore, killer: _Killer) -> None:
        self.inner = inner
        self.killer = killer

    async def load(self, thread_id: str) -> ThreadRecord | None:
        return await self.inner.load(thread_id)

    async def save(self, record: ThreadRecord) -> None:
        killer = self.killer
        starting_tool = any(entry.result is None for entry in record.tool_journal)
        if killer.hit("resumed-run-started") and record.state is ThreadState.RESUMED and starting_tool:
            await killer.die_at("resumed-run-started")
        if killer.hit("agent-before-interrupt") and record.state is ThreadState.INTERRUPTED:
            await killer.die_at("agent-before-interrupt")
        await self.inner.save(record)
        if killer.hit("interrupt-saved") and record.state is ThreadState.INTERRUPTED:
            killer.die()
        if killer.hit("finish-saved") and record.state is ThreadState.IDLE and record.completed_resumes:
            killer.die()

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        return await self.inner.renew_lease(thread_id, run_id, until)

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        return await self.inner.thread_of_interrupt(interrupt_id)

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        return await self.inner.audit(thread_id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> KillingStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def order_tool(effects: Path, killer: _Killer | None = None) -> Tool:
    """``recordOrder(item)``: appends ``item`` to ``effects`` (the side effect), gated."""

    @tool("recordOrder", needs_approval=True)
    async def record_order(item: str) -> str:
        if killer is not None:
            await killer.die_at("tool-before-effect")
        with effects.open("a") as file:
            file.write(item + "\n")
            file.flush()
            os.fsync(file.fileno())
        if killer is not None:
            await killer.die_at("tool-after-effect")
        return f"recorded {item}"

    return record_order


def order_agent(killer: _Killer | None = None) -> Callable[[RunContext], Any]:
    async def agent(ctx: RunContext) -> Any:
        await ctx.text("I will record the order once you approve.")
        outcome = await ctx.call_tool("recordOrder", {"item": ctx.thread_id})  # ends the first run
        await ctx.text(f"The order is {outcome.status}.")
        if killer is not None:
            await killer.die_at("agent-after-tool")
        return {"order": outcome.status}

    return agent


def make_host(
    store: ThreadStore,
    effects: Path,
    *,
    killer: _Killer | None = None,
    skew: float = 0.0,
    run_timeout: float = 5.0,
    lease: float = 10.0,
) -> Host:
    """The host this process runs (the tests use the same one in their own process)."""
    return Host(
        order_agent(killer),
        store=store,
        tools=[order_tool(effects, killer)],
        clock=lambda: datetime.now(UTC) + timedelta(seconds=skew),
        run_timeout=run_timeout,
        lease=lease,
        lease_renew=lease / 2,
    )


def _barrier(directory: Path, name: str, peer: str) -> None:
    (directory / name).touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT
    while not (directory / peer).exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: {peer} never reached the barrier")
        time.sleep(0.0002)


async def _run(args: argparse.Namespace, data: bytes) -> None:
    run_input = decode_input(data)
    killer = _Killer(args.kill)
    async with KillingStore(SqliteThreadStore(args.db), killer) as store:
        host = make_host(
            store, Path(args.effects), killer=killer, skew=args.skew, run_timeout=args.run_timeout, lease=args.lease
        )
        async with host:
            if args.barrier is not None:
                await store.load(run_input.thread_id)  # the file is open and warm before the start
                _barrier(Path(args.barrier[0]), args.barrier[1], args.barrier[2])
            async for event in host.run(run_input):
                os.write(sys.stdout.fileno(), encode_event(event) + b"\n")
                if event.type == "RUN_STARTED":
                    killer.started.set()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="crash_host")
    parser.add_argument("db")
    parser.add_argument("effects")
    parser.add_argument("--kill", choices=sorted(KILL_POINTS))
    parser.add_argument("--skew", type=float, default=0.0)
    parser.add_argument("--run-timeout", type=float, default=5.0)
    parser.add_argument("--lease", type=float, default=10.0)
    parser.add_argument("--barrier", nargs=3, metavar=("DIR", "NAME", "PEER"))
    args = parser.parse_args(argv)
    data = sys.stdin.buffer.read()
    anyio.run(_run, args, data)


if __name__ == "__main__":
    main()
