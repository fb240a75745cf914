"""Crash safety with real processes: a host SIGKILLed at each step of a run, then a new host
process on the same SQLite file retries the same input.

The host processes run ``tests/runtime/crash_host.py`` (see its docstring and
:data:`~tests.runtime.crash_host.KILL_POINTS`); the steps that nobody kills run the same host in
this process. One client follows each thread through every stream, the broken-off ones
included (:class:`~tests.runtime.conversation.Conversation`, which checks each stream with the
ordering rules and the client's interrupt rules). The tool's side effect is one line in a file,
so a tool that ran twice would show.

Asserted at every kill point: no open interrupt is lost, no approved tool runs twice, no answer
is lost (the audit trail holds it, and what came of it), and the retry gets a correct stream.
A retry that comes while the dead run could still be alive (before its lease runs out) is
``THREAD_BUSY`` and changes nothing; the retrying host's clock runs an hour ahead of the wall
clock (``--skew``) to be past that time without waiting, and one test waits for real.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from agui_core.machine.client import approve
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.codec import event_from_dict, input_to_dict
from agui_core.protocol.types import RunAgentInput
from agui_core.store import SqliteThreadStore
from tests.runtime.conversation import Conversation, make_input, types
from tests.runtime.crash_host import KILL_POINTS, make_host

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SKEW = 3600.0
"""How far ahead of the wall clock a retrying host's clock runs: far past any lease."""
PROCESS_TIMEOUT = 60.0


def wall_clock() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=SKEW)


@attrs.frozen
class Exit:
    returncode: int
    events: list[ev.Event | ev.UnknownEvent]


def host_process(db: Path, effects: Path, run_input: RunAgentInput, *options: str) -> Exit:
    """Run one input through a fresh host process on ``db``; its exit status and its events."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.runtime.crash_host", str(db), str(effects), *options],
        input=orjson.dumps(input_to_dict(run_input)),
        capture_output=True,
        cwd=ROOT,
        timeout=PROCESS_TIMEOUT,
        check=False,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr.decode()
    return Exit(done.returncode, [event_from_dict(orjson.loads(line)) for line in done.stdout.splitlines()])


def killed_at(point: str, db: Path, effects: Path, run_input: RunAgentInput, *options: str) -> Exit:
    exit_ = host_process(db, effects, run_input, "--kill", point, *options)
    assert exit_.returncode == -signal.SIGKILL, f"the host was not killed at {point}"
    return exit_


def lines(effects: Path) -> list[str]:
    """The side effects the tool had: one line per run of it."""
    return effects.read_text().splitlines() if effects.exists() else []


async def first_run(db: Path, effects: Path, thread: Conversation, *, skew: float = SKEW) -> None:
    """Run 1 of ``thread`` in this process, up to its approval."""
    async with SqliteThreadStore(db) as store, make_host(store, effects, skew=skew) as host:
        stream = thread.check([e async for e in host.run(make_input({"threadId": thread.thread_id, "runId": "run-1"}))])
    assert stream[-1]["outcome"]["type"] == "interrupt"


def approval(thread: Conversation, run_id: str) -> RunAgentInput:
    """The client's resume approving every open interrupt, built by the client machine."""
    return thread.client.resume(
        {i.id: approve() for i in thread.client.open_interrupts}, now=wall_clock(), run_id=run_id
    )


async def load(db: Path, thread_id: str) -> Any:
    async with SqliteThreadStore(db) as store:
        return await store.load(thread_id), await store.audit(thread_id)


FIRST_RUN_POINTS = ["agent-before-interrupt", "interrupt-saved"]
RESUMED_RUN_POINTS = [
    "resumed-run-started",
    "tool-before-effect",
    "tool-after-effect",
    "agent-after-tool",
    "finish-saved",
]
ENDED = {"interrupt-saved", "finish-saved"}
"""Points where the dead run had ended and was saved: the retry is a replay, with no wait."""


def past_the_dead_run(point: str) -> tuple[str, ...]:
    """Options for a retrying host: its clock an hour ahead, unless the dead run had ended."""
    return () if point in ENDED else ("--skew", str(SKEW))


def test_every_kill_point_is_tested() -> None:
    assert set(FIRST_RUN_POINTS) | set(RESUMED_RUN_POINTS) == set(KILL_POINTS)


@pytest.mark.parametrize("point", FIRST_RUN_POINTS)
async def test_a_host_killed_in_the_first_run(tmp_path: Path, point: str) -> None:
    db, effects = tmp_path / "threads.db", tmp_path / "effects.txt"
    thread = Conversation(None, "t", wall_clock)
    run_1 = make_input({"threadId": "t", "runId": "run-1"})

    thread.check(killed_at(point, db, effects, run_1).events, cut=True)
    stored, _ = await load(db, "t")
    if point == "interrupt-saved":
        # The interrupt was saved before it was announced: it is open, nothing is lost.
        assert stored.state is ThreadState.INTERRUPTED and len(stored.open_interrupts) == 1
    else:
        assert stored.state is ThreadState.RUNNING and stored.active_run.run_id == "run-1"
        busy = host_process(db, effects, run_1)
        assert types(thread.check(busy.events)) == ["RUN_ERROR"]
        assert thread.streams[-1][0]["code"] == "THREAD_BUSY"
        assert (await load(db, "t"))[0] == stored

    # The same input again, from a new host process on the same file.
    retry = thread.check(host_process(db, effects, run_1, *past_the_dead_run(point)).events)
    assert retry[0] == {"type": "RUN_STARTED", "threadId": "t", "runId": "run-1", "protocolVersion": "1.0"}
    assert retry[-1]["outcome"]["type"] == "interrupt"
    (announced,) = retry[-1]["outcome"]["interrupts"]
    if point == "interrupt-saved":
        # Persisted but never sent: the retry replays it, the same interrupt.
        assert types(retry) == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
        assert announced["id"] == stored.open_interrupts[0].interrupt.id
    after, _ = await load(db, "t")
    assert [o.interrupt.id for o in after.open_interrupts] == [announced["id"]]

    # The approval is answered, and the tool runs once.
    async with SqliteThreadStore(db) as store, make_host(store, effects, skew=SKEW) as host:
        done = thread.check([e async for e in host.run(approval(thread, "run-2"))])
    assert done[-1]["result"] == {"order": "executed"}
    assert lines(effects) == ["t"]


@pytest.mark.parametrize("point", RESUMED_RUN_POINTS)
async def test_a_host_killed_in_the_resumed_run(tmp_path: Path, point: str) -> None:
    db, effects = tmp_path / "threads.db", tmp_path / "effects.txt"
    thread = Conversation(None, "t", wall_clock)
    await first_run(db, effects, thread)
    (interrupt,) = thread.client.open_interrupts
    resume = approval(thread, "run-2")

    cut = thread.check(killed_at(point, db, effects, resume).events, cut=True)
    assert cut[0]["type"] == "RUN_STARTED"
    ran_before_the_kill = point in ("tool-after-effect", "agent-after-tool", "finish-saved")
    assert lines(effects) == (["t"] if ran_before_the_kill else [])
    stored, _ = await load(db, "t")
    if point not in ENDED:
        # The dead run still holds the thread until its time is up: a retry now is refused.
        assert stored.state is ThreadState.RESUMED
        busy = host_process(db, effects, resume)
        assert types(thread.check(busy.events)) == ["RUN_ERROR"]
        assert thread.streams[-1][0]["code"] == "THREAD_BUSY"
        assert (await load(db, "t"))[0] == stored

    retry = thread.check(host_process(db, effects, resume, *past_the_dead_run(point)).events)

    # No approved tool ran twice; one that started and died is not run again, and says so.
    assert lines(effects) == ([] if point == "tool-before-effect" else ["t"])
    unknown = point in ("tool-before-effect", "tool-after-effect")
    assert retry[0] == {"type": "RUN_STARTED", "threadId": "t", "runId": "run-2", "protocolVersion": "1.0"}
    assert retry[1]["type"] == "TOOL_CALL_RESULT" and retry[1]["toolCallId"] == interrupt.tool_call_id
    assert ("not run again" in retry[1]["content"]) if unknown else (retry[1]["content"] == "recorded t")
    assert retry[-1]["outcome"] == {"type": "success"}
    assert retry[-1]["result"] == {"order": "unknown" if unknown else "executed"}
    if point == "finish-saved":
        assert types(retry) == ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"]  # a replay

    # No answer lost: the approval is closed by run-2, with the client's payload, and the thread is free.
    after, audit = await load(db, "t")
    assert after.state is ThreadState.IDLE and after.active_run is None and after.open_interrupts == ()
    (line,) = audit
    assert (line.interrupt.id, line.status, line.payload, line.answered_in, line.outcome) == (
        interrupt.id,
        "resolved",
        {"approved": True},
        "run-2",
        "success",
    )


async def test_a_dead_run_is_recovered_once_its_lease_has_really_run_out(tmp_path: Path) -> None:
    db, effects = tmp_path / "threads.db", tmp_path / "effects.txt"
    thread = Conversation(None, "t", wall_clock)
    await first_run(db, effects, thread, skew=0.0)
    resume = approval(thread, "run-2")
    # Every host here reads the wall clock; the one that dies holds its runs for one second.
    thread.check(killed_at("resumed-run-started", db, effects, resume, "--lease", "1").events, cut=True)
    time.sleep(1.2)
    retry = thread.check(host_process(db, effects, resume).events)
    assert retry[-1]["result"] == {"order": "executed"}
    assert lines(effects) == ["t"]
