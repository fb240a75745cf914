"""``agui check``: recorded streams, JSON lines or SSE, checked as a client would check them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from agui_core.app.cli import check_recording, main
from agui_core.protocol.codec import encode_event
from agui_core.protocol.framing import jsonl_frame, sse_frame
from agui_core.protocol.types import ResumeEntry, RunAgentInput
from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.transports import agents

ROOT = Path(__file__).resolve().parents[2]


async def record() -> list[bytes]:
    """The encoded events of an interrupt -> resume cycle of the approval agent."""
    out: list[bytes] = []
    async with Host(agents.approval_agent, store=MemoryThreadStore(), tools=agents.TOOLS) as host:
        async for event in host.run(RunAgentInput(thread_id="rec", run_id="run-1")):
            out.append(encode_event(event))
            if event.type == "RUN_FINISHED":
                interrupt = event.outcome.interrupts[0]  # type: ignore[union-attr]
        resume = (ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True}),)
        async for event in host.run(RunAgentInput(thread_id="rec", run_id="run-2", resume=resume)):
            out.append(encode_event(event))
    return out


@pytest.fixture(scope="module")
def recording() -> list[bytes]:
    return anyio.run(record)


def test_a_good_json_lines_recording_passes(
    recording: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "good.jsonl"
    path.write_bytes(b"".join(jsonl_frame(body) for body in recording))
    assert main(["check", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no violations" in captured.err


def test_a_good_sse_recording_passes(recording: list[bytes], tmp_path: Path) -> None:
    path = tmp_path / "good.sse"
    path.write_bytes(b": a comment\n" + b"".join(sse_frame(body) for body in recording))
    assert main(["check", str(path)]) == 0


def test_a_bad_recording_names_each_violation_with_its_line(
    recording: list[bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    second_start = recording.index(next(b for b in recording[1:] if b.startswith(b'{"type":"RUN_STARTED"')))
    bad = [*recording[:second_start], b"this is not an event", *recording[second_start + 1 :]]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"".join(jsonl_frame(body) for body in bad))
    assert main(["check", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    garbage_line = second_start + 1
    assert lines[0].startswith(f"{path}:{garbage_line}: invalid event") and lines[0].endswith("[invalid-event]")
    # The resumed run's events come without its RUN_STARTED: the first of them is refused.
    assert lines[1].startswith(f"{path}:{garbage_line + 1}: event {second_start}:")
    assert lines[1].endswith("]")


def test_sse_violations_name_the_line_each_event_starts_on(recording: list[bytes]) -> None:
    data = b"".join(sse_frame(body) for body in recording[1:])  # no RUN_STARTED
    (violation, *_) = check_recording(data, name="x.sse")
    assert violation.startswith("x.sse:1: event 0:")


def test_standard_input_is_read_for_a_dash(recording: list[bytes]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agui_core.app.cli", "check", "-"],
        input=b"".join(jsonl_frame(body) for body in recording[2:]),
        capture_output=True,
        cwd=ROOT,
        timeout=30,
    )
    assert done.returncode == 1
    assert done.stdout.startswith(b"<stdin>:1: event 0:")


def test_an_empty_recording_has_no_violations() -> None:
    assert check_recording(b"\n\n") == []
