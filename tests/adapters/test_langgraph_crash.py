"""A host killed between the graph's checkpoint and agui-core's save, then the thread resumed.

The host processes run ``tests/adapters/crash_graph_host.py``: a LangGraph graph on LangGraph's
``AsyncSqliteSaver`` (one file), hosted over agui-core's ``SqliteThreadStore`` (another file).
The graph saves first; the host dies before agui-core saves. A new host process on the same two
files then takes the client's retry. One client (``Conversation``, which checks every stream
with the ordering rules and the client's interrupt rules) follows the thread through every
stream, the broken-off ones included. The node's side effect is a line in a file: a node that
ran twice shows two.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from agui_core.machine.client import approve
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.codec import event_from_dict, input_to_dict
from agui_core.protocol.types import RunAgentInput
from agui_core.store import SqliteThreadStore
from tests.adapters.crash_graph_host import KILL_POINTS
from tests.runtime.conversation import Conversation, make_input, types

ROOT = Path(__file__).resolve().parents[2]
SKEW = 3600.0
"""How far ahead a retrying host's clock runs: past the lease of the dead run, without waiting."""
USER = {"id": "u-1", "role": "user", "content": "Order tea, please."}


def wall_clock() -> datetime:
    return datetime.now(UTC) + timedelta(seconds=SKEW)


def host_process(files: tuple[Path, Path, Path], run_input: RunAgentInput, *options: str) -> tuple[int, list[Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.adapters.crash_graph_host", *map(str, files), *options],
        input=orjson.dumps(input_to_dict(run_input)),
        capture_output=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr.decode()
    return done.returncode, [event_from_dict(orjson.loads(line)) for line in done.stdout.splitlines()]


def lines(effects: Path) -> list[str]:
    return effects.read_text().splitlines() if effects.exists() else []


async def load(db: Path) -> Any:
    async with SqliteThreadStore(db) as store:
        return await store.load("t"), await store.audit("t")


def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    return tmp_path / "threads.db", tmp_path / "checkpoints.db", tmp_path / "effects.txt"


def test_every_kill_point_is_tested() -> None:
    assert set(KILL_POINTS) == {"graph-interrupted", "graph-finished"}


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_killed_after_the_graph_paused_the_retry_announces_the_graphs_interrupt_without_rerunning(
    tmp_path: Path, anyio_backend: str
) -> None:
    paths = files(tmp_path)
    thread = Conversation(None, "t", wall_clock)
    run_1 = make_input({"threadId": "t", "runId": "run-1", "messages": [USER]})

    code, events = host_process(paths, run_1, "--kill", "graph-interrupted")
    assert code == -signal.SIGKILL
    thread.check(events, cut=True)
    stored, _ = await load(paths[0])
    assert stored.state is ThreadState.RUNNING and stored.open_interrupts == ()

    code, events = host_process(paths, run_1, "--skew", str(SKEW))
    retry = thread.check(events)
    assert code == 0 and retry[0] == {
        "type": "RUN_STARTED",
        "threadId": "t",
        "runId": "run-1",
        "protocolVersion": "1.0",
    }
    (announced,) = retry[-1]["outcome"]["interrupts"]
    assert announced["reason"] == "tool_call" and announced["toolCallId"] == "call-order"
    # The graph's proposal is sent again (the dead run's stream never reached the record).
    assert [e["toolCallId"] for e in retry if e["type"] == "TOOL_CALL_START"] == ["call-order"]
    assert lines(paths[2]) == []

    resume = thread.client.resume({announced["id"]: approve()}, now=wall_clock(), run_id="run-2")
    code, events = host_process(paths, resume, "--skew", str(SKEW))
    done = thread.check(events)
    assert done[-1]["outcome"] == {"type": "success"}
    assert [(e["toolCallId"], e["content"]) for e in done if e["type"] == "TOOL_CALL_RESULT"] == [
        ("call-order", "recorded tea")
    ]
    assert lines(paths[2]) == ["tea"]


def approved_then_killed_after_the_graph_finished(paths: Any, thread: Conversation) -> tuple[dict[str, Any], Any]:
    """Run the thread to its approval, then resume it approved in a host killed once the graph
    has finished (the node ran and the graph saved it) and before agui-core's save; the
    approval and the resume input, for a retry."""
    code, events = host_process(paths, make_input({"threadId": "t", "runId": "run-1", "messages": [USER]}))
    (approval,) = thread.check(events)[-1]["outcome"]["interrupts"]
    resume = thread.client.resume({approval["id"]: approve()}, now=wall_clock(), run_id="run-2")
    code, events = host_process(paths, resume, "--kill", "graph-finished")
    assert code == -signal.SIGKILL
    thread.check(events, cut=True)
    assert lines(paths[2]) == ["tea"]  # the node ran, and the graph saved it
    return approval, resume


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_killed_after_the_graph_finished_the_retry_reports_what_the_graph_did_without_rerunning(
    tmp_path: Path, anyio_backend: str
) -> None:
    paths = files(tmp_path)
    thread = Conversation(None, "t", wall_clock)
    approval, resume = approved_then_killed_after_the_graph_finished(paths, thread)
    stored, _ = await load(paths[0])
    # agui-core still holds the resume as a run in progress: the answer is not lost.
    assert stored.state is ThreadState.RESUMED and stored.active_run.run_id == "run-2"

    code, events = host_process(paths, resume, "--skew", str(SKEW))
    retry = thread.check(events)
    assert code == 0 and retry[-1]["outcome"] == {"type": "success"}
    assert [(e["toolCallId"], e["content"]) for e in retry if e["type"] == "TOOL_CALL_RESULT"] == [
        ("call-order", "recorded tea")
    ]
    assert lines(paths[2]) == ["tea"]  # not run again
    after, audit = await load(paths[0])
    assert after.state is ThreadState.IDLE and after.open_interrupts == ()
    (line,) = audit
    assert (line.interrupt.id, line.status, line.payload, line.answered_in) == (
        approval["id"],
        "resolved",
        {"approved": True},
        "run-2",
    )
    assert isinstance(retry, list) and types(retry)[0] == "RUN_STARTED"
    assert all(not isinstance(e, ev.UnknownEvent) for e in events)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_killed_after_the_graph_finished_a_retry_with_another_answer_is_refused_and_the_same_answer_goes_on(
    tmp_path: Path, anyio_backend: str
) -> None:
    paths = files(tmp_path)
    thread = Conversation(None, "t", wall_clock)
    approval, _ = approved_then_killed_after_the_graph_finished(paths, thread)

    # The retry cancels what the graph has already approved and run: refused, nothing recorded.
    second = make_input(
        {"threadId": "t", "runId": "run-3", "resume": [{"interruptId": approval["id"], "status": "cancelled"}]}
    )
    code, events = host_process(paths, second, "--skew", str(SKEW))
    kinds = [type(e).__name__ for e in events]
    assert code == 0 and kinds[-1] == "RunErrorEvent", kinds
    assert "already answered" in events[-1].message and events[-1].code == "INTERRUPT_ALREADY_RESOLVED"
    assert not [e for e in events if isinstance(e, ev.ToolCallResultEvent)]
    after, audit = await load(paths[0])
    assert [o.interrupt.id for o in after.open_interrupts] == [approval["id"]]
    assert [line.status for line in audit if line.answered_in == "run-3"] == []

    # The same answer as the graph took: the thread catches up, the node does not run again.
    third = make_input(
        {
            "threadId": "t",
            "runId": "run-4",
            "resume": [{"interruptId": approval["id"], "status": "resolved", "payload": {"approved": True}}],
        }
    )
    code, events = host_process(paths, third, "--skew", str(SKEW))
    assert code == 0 and isinstance(events[-1], ev.RunFinishedEvent), events
    assert [(e.tool_call_id, e.content) for e in events if isinstance(e, ev.ToolCallResultEvent)] == [
        ("call-order", "recorded tea")
    ]
    assert lines(paths[2]) == ["tea"]
    after, audit = await load(paths[0])
    assert after.state is ThreadState.IDLE and after.open_interrupts == ()
    assert [(line.status, line.answered_in) for line in audit] == [("resolved", "run-4")]
