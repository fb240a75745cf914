"""``agui demo``: the main job, played as a user would, and the terminal client's prompts.

The command runs as a subprocess (a real WebSocket host over a SQLite file, the project's
client, answers on standard input); the prompts are also driven directly against the client
machine of a real host's stream, to reach the refusals a scripted session rarely meets.
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from agui_core.app.demo import Check, TerminalPrompter, describe_event, run_demo
from agui_core.errors import LocalProtocolError
from agui_core.examples import TOOLS, assistant
from agui_core.machine.client import ClientMachine, Reply, cancel
from agui_core.protocol import events as ev
from agui_core.protocol.types import (
    Interrupt,
    RunAgentInput,
    RunFinishedInterruptOutcome,
    UserMessage,
)
from agui_core.runtime import Host

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


def agui_demo(*args: str, answers: str | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agui_core.app.cli", "demo", *args],
        input=answers,
        stdin=subprocess.DEVNULL if answers is None else None,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=TIMEOUT,
    )


# --- the command ---------------------------------------------------------------------------


def test_auto_plays_every_scenario_to_its_expected_end_and_a_rerun_does_too(tmp_path: Path) -> None:
    store = tmp_path / "threads.sqlite3"
    first = agui_demo("--auto", "--store", str(store), cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    out = first.stdout
    assert re.search(r"on ws://127\.0\.0\.1:\d+ \(WebSocket\)", out)
    # Each interrupt is shown by its reason, and each answer as the resume entry it became.
    assert out.count("reason=tool_call -> approval") == 4  # the email, then three in parallel
    assert "reason=input_required -> form" in out and "reason=confirmation -> confirmation" in out
    assert "outcome=interrupt (3 interrupts, shown below)" in out
    assert "(revised before sending)" in out.split("-> resume")[1]  # the edited args were sent ...
    assert re.search(r"TOOL_CALL_RESULT .*\(revised before sending\)", out)  # ... and used
    assert len(re.findall(r"^   approval-[\w-]+: cancelled$", out, re.MULTILINE)) == 1
    assert '"quarter":"Q1","year":2026' in out
    for name in ("email", "filing", "parallel"):
        assert f"== {name}: ended as expected" in out
    assert "agui demo: all 3 scenarios ended as expected" in out
    # The main job ends by telling where the approval console is served.
    assert "`bash scripts/demo --console` serves it at http://127.0.0.1:8770/console/" in out
    assert store.stat().st_size > 0 and "stored: " in out
    # Every event is one line, and nothing else was said on standard error.
    assert all(len(line) < 400 for line in out.splitlines())
    assert first.stderr == ""

    again = agui_demo("--auto", "--store", str(store), cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "all 3 scenarios ended as expected" in again.stdout


def test_auto_plays_every_scenario_over_http_too(tmp_path: Path) -> None:
    played = agui_demo("--auto", "--transport", "http", "--store", str(tmp_path / "threads.sqlite3"), cwd=tmp_path)
    assert played.returncode == 0, played.stdout + played.stderr
    assert re.search(r"on http://127\.0\.0\.1:\d+ \(HTTP \+ SSE\)", played.stdout)
    assert "agui demo: all 3 scenarios ended as expected" in played.stdout
    assert played.stderr == ""


def test_the_default_store_is_a_file_in_the_current_directory(tmp_path: Path) -> None:
    result = agui_demo("--auto", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "agui-demo.sqlite3").is_file()


INTERACTIVE = "\n".join(
    [
        "edit",  # the email: edit it
        "",  # to: kept
        "",  # subject: kept
        "Hello Bob, edited.",  # body
        "Q1",  # the form: quarter
        "abc",  # year: not an integer, asked again at once
        "1999",  # year: an integer, but the schema's minimum refuses it (after the whole form)
        "4200000",  # revenue
        "2026",  # year, asked again
        "maybe",  # the confirmation: not an answer
        "y",
        "approve",  # the three parallel approvals
        "deny",
        "cancel",
        "",
    ]
)


def test_an_interactive_session_on_stdin_edits_denies_cancels_and_reasks_a_refused_field(tmp_path: Path) -> None:
    result = agui_demo("--store", str(tmp_path / "threads.sqlite3"), answers=INTERACTIVE, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # The edit: every argument asked, Enter keeping it, the whole set sent and used.
    assert "to (string, format email) [bob@example.com]: \n" in out
    assert (
        '"editedArgs":{"to":"bob@example.com","subject":"Hi","body":"Hello Bob, edited."}' in out.split("-> resume")[1]
    )
    assert re.search(r"TOOL_CALL_RESULT .*Hello Bob, edited\.", out)
    # The form: coercion refused at once, the schema's refusal reported by the client machine.
    assert "'abc' is not an integer" in out
    assert "not accepted: year: must be bigger than or equal to 2000" in out
    assert "year (integer, at least 2000) [1999]: 2026" in out
    assert '{"quarter":"Q1","year":2026,"revenue":4200000}' in out
    assert "please answer yes, no or cancel" in out
    # The parallel approvals: one ran, one was reported denied, one did not run.
    parallel = out.split("== 3/3 parallel")[1]
    assert parallel.count("TOOL_CALL_RESULT") == 2 and "the user denied this call" in parallel
    assert re.search(r"^   approval-[\w-]+: cancelled$", parallel, re.MULTILINE)
    assert "agui demo: all 3 scenarios ended as expected" in out
    assert "Traceback" not in result.stderr


def test_end_of_input_mid_way_leaves_cleanly_with_a_message(tmp_path: Path) -> None:
    result = agui_demo("--store", str(tmp_path / "threads.sqlite3"), answers="edit\n\n", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agui demo: end of input; leaving" in result.stdout
    assert "ended as expected" not in result.stdout
    assert result.stderr == ""


def test_a_port_already_taken_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        status = run_demo(auto=True, store=tmp_path / "threads.sqlite3", port=taken.getsockname()[1])
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("agui demo: ") and err.count("\n") == 1 and "address already in use" in err


# --- the prompts, against a real host's stream ---------------------------------------------


def interrupted(scenario: str) -> ClientMachine:
    """A client machine fed the first run of an example scenario (it ends with interrupts)."""
    machine = ClientMachine(f"t-{scenario}")

    async def play() -> None:
        async with Host(assistant, tools=TOOLS) as host:
            run_input = RunAgentInput(
                thread_id=machine.thread_id,
                run_id="run-1",
                messages=(UserMessage(id="u-1", content="hello"),),
                forwarded_props={"scenario": scenario},
            )
            async for event in host.run(run_input):
                machine.receive_event(event, now=datetime.now(UTC))

    anyio.run(play)
    assert machine.awaiting_input
    return machine


def checker(machine: ClientMachine, interrupt: Interrupt, now: datetime) -> Check:
    """What ``agui demo`` checks an answer with: the resume, the other interrupts cancelled."""

    def check(reply: Reply) -> LocalProtocolError | None:
        answers: dict[str, Reply] = {i.id: cancel() for i in machine.open_interrupts}
        answers[interrupt.id] = reply
        try:
            machine.resume(answers, now=now, run_id="check")
        except LocalProtocolError as exc:
            return exc
        return None

    return check


class Script:
    """Answers typed in advance, and everything the prompter printed."""

    def __init__(self, *answers: str) -> None:
        self._answers: Iterator[str] = iter(answers)
        self.lines: list[str] = []

    def read(self, prompt: str) -> str:
        self.lines.append(prompt)
        try:
            return next(self._answers)
        except StopIteration:
            raise EOFError from None

    def write(self, line: str) -> None:
        self.lines.append(line)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def test_a_form_answered_after_its_expiry_is_cancelled_instead() -> None:
    machine = interrupted("filing")
    (form,) = machine.open_interrupts
    assert form.expires_at is not None
    late = datetime.now(UTC) + timedelta(minutes=11)  # the form is answerable for ten minutes
    script = Script("Q1", "2026", "4200000")
    reply = TerminalPrompter(script.read, script.write).answer(machine.route(form), checker(machine, form, late))
    assert reply == cancel()
    assert "expired" in script.text and "cancelled instead" in script.text


def test_an_unknown_reason_takes_a_raw_json_answer_checked_against_its_schema() -> None:
    machine = ClientMachine("t-custom")
    custom = Interrupt(
        id="int-pick",
        reason="acme:pick_colour",
        message="Pick a colour.",
        response_schema={"type": "object", "properties": {"colour": {"enum": ["red", "blue"]}}, "required": ["colour"]},
        metadata={"acme": {"palette": "basic"}},
    )
    now = datetime.now(UTC)
    for event in (
        ev.RunStartedEvent(thread_id="t-custom", run_id="run-1"),
        ev.StateSnapshotEvent(snapshot={}),
        ev.MessagesSnapshotEvent(messages=()),
        ev.RunFinishedEvent(
            thread_id="t-custom", run_id="run-1", outcome=RunFinishedInterruptOutcome(interrupts=(custom,))
        ),
    ):
        machine.receive_event(event, now=now)
    route = machine.route(custom)
    assert route.kind == "fallback"
    script = Script("red", '{"colour": "green"}', '{"colour": "blue"}')
    reply = TerminalPrompter(script.read, script.write).answer(route, checker(machine, custom, now))
    assert reply.status == "resolved" and reply.payload == {"colour": "blue"}
    assert "that is not JSON" in script.text
    assert "not accepted: colour: must be one of ['red', 'blue']" in script.text

    script = Script("cancel")
    assert TerminalPrompter(script.read, script.write).answer(route, checker(machine, custom, now)) == cancel()


def test_an_edit_whose_arguments_fail_their_schema_asks_again_for_the_field_at_fault() -> None:
    machine = interrupted("email")
    (approval,) = machine.open_interrupts
    script = Script("edit", "not-an-email", "", "", "ann@example.com")
    reply = TerminalPrompter(script.read, script.write).answer(
        machine.route(approval),
        checker(machine, approval, datetime.now(UTC)),
    )
    assert reply.payload == {
        "approved": True,
        "editedArgs": {"to": "ann@example.com", "subject": "Hi", "body": "Hi Bob, just saying hi."},
    }
    assert "not accepted: editedArgs.to: must be email" in script.text
    assert script.text.count("subject (string)") == 1  # only the field at fault was asked again


def test_each_event_is_described_on_one_line_without_its_thread() -> None:
    interrupt = Interrupt(id="i-1", reason="tool_call", tool_call_id="tc-1")
    finished = ev.RunFinishedEvent(
        thread_id="thread-1", run_id="run-1", outcome=RunFinishedInterruptOutcome(interrupts=(interrupt,))
    )
    assert describe_event(finished) == "RUN_FINISHED runId=run-1 outcome=interrupt (1 interrupt, shown below)"
    args = ev.ToolCallArgsEvent(tool_call_id="tc-1", delta='{"to":"bob@example.com"}')
    assert describe_event(args) == 'TOOL_CALL_ARGS toolCallId=tc-1 delta={"to":"bob@example.com"}'
    text = ev.TextMessageContentEvent(message_id="m-1", delta="two words\n" * 40)
    line = describe_event(text)
    assert "\n" not in line and line.endswith("...") and len(line) < 160
