"""Two host processes on one SQLite file receive the same resume at the same moment.

Each round, a thread is interrupted (in this process, by the same host the processes run:
``tests/runtime/crash_host.py``), then two host processes are handed the same resume; they open
the file, load the thread, meet at a barrier and only then run it. Exactly one carries it out
(the tool's side-effect file has one line); the other answers with a replay of the same outcome
or with ``THREAD_BUSY``, never a second execution. Each stream is checked by a client that
followed the thread from its first run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agui_core.protocol.codec import event_from_dict, input_to_dict
from agui_core.store import SqliteThreadStore
from tests.runtime.conversation import Conversation, types
from tests.runtime.test_crash import PROCESS_TIMEOUT, ROOT, approval, first_run, lines, wall_clock

pytestmark = pytest.mark.anyio

ROUNDS = 6
EXECUTED = [
    "RUN_STARTED",
    "TOOL_CALL_RESULT",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "RUN_FINISHED",
]
REPLAYED = ["RUN_STARTED", "TOOL_CALL_RESULT", "RUN_FINISHED"]


async def test_the_same_resume_at_the_same_moment_is_carried_out_once(tmp_path: Path) -> None:
    db = tmp_path / "threads.db"
    answers: list[str] = []
    for round_ in range(ROUNDS):
        thread_id, effects = f"race-{round_}", tmp_path / f"effects-{round_}.txt"
        barrier = tmp_path / f"barrier-{round_}"
        barrier.mkdir()
        first = Conversation(None, thread_id, wall_clock)
        await first_run(db, effects, first)
        resume = approval(first, "run-2")
        # A second client that saw the same first run.
        second = Conversation(None, thread_id, wall_clock)
        second.check([event_from_dict(e) for e in first.streams[0]])

        # Both read the input from a file: neither waits on the other to be fed.
        given = tmp_path / f"input-{round_}.json"
        given.write_bytes(orjson.dumps(input_to_dict(resume)))
        processes = []
        for name, peer in (("a", "b"), ("b", "a")):
            with given.open("rb") as stdin:
                processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "tests.runtime.crash_host",
                            str(db),
                            str(effects),
                            "--barrier",
                            str(barrier),
                            name,
                            peer,
                        ],
                        stdin=stdin,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        cwd=ROOT,
                    )
                )
        outputs = []
        for process in processes:
            out, err = process.communicate(timeout=PROCESS_TIMEOUT)
            assert process.returncode == 0, err.decode()
            outputs.append([event_from_dict(orjson.loads(line)) for line in out.splitlines()])
        streams = [client.check(events) for client, events in zip((first, second), outputs, strict=True)]

        # Exactly one execution.
        assert lines(effects) == [thread_id], f"round {round_}: {[types(s) for s in streams]}"
        executed = [s for s in streams if types(s) == EXECUTED]
        assert len(executed) == 1, f"round {round_}: {[types(s) for s in streams]}"
        (winner,) = executed
        (other,) = [s for s in streams if s is not winner]
        if types(other) == ["RUN_ERROR"]:
            assert other[0]["code"] == "THREAD_BUSY"
            answers.append("busy")
        else:
            # A replay: the same tool result and the same outcome, nothing run again.
            assert types(other) == REPLAYED
            assert other[1] == winner[1]
            assert other[-1] == winner[-1]
            answers.append("replay")
        async with SqliteThreadStore(db) as store:
            (line,) = await store.audit(thread_id)
        assert (line.status, line.answered_in, line.outcome) == ("resolved", "run-2", "success")
    assert len(answers) == ROUNDS
