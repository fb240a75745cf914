"""``agui demo --console`` (what ``bash scripts/demo --console`` runs): the console's address
printed, a thread of each scenario waiting in its inbox, Ctrl-C to stop."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.console.conftest import ROOT


def test_the_demo_serves_the_console_with_a_thread_of_each_scenario_waiting(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agui_core.app.cli",
            "demo",
            "--console",
            "--port",
            "0",  # the default, 8770, may be taken on a test machine: its own test is below
            "--store",
            str(tmp_path / "demo.sqlite3"),
        ],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.fullmatch(r"agui demo: the approval console: (http://127\.0\.0\.1:\d+)/console/\n", first)
        assert found, first + (process.stderr.read() if process.poll() is not None and process.stderr else "")
        url = found.group(1)
        assert "3 threads wait there for you" in process.stdout.readline()
        page = httpx.get(url + "/console/", timeout=10)
        assert page.status_code == 200 and "<title>Approvals" in page.text
        inbox = httpx.get(url + "/inbox", timeout=10).json()  # no authenticator: anonymous, on loopback
        assert inbox["principal"] == "anonymous"
        reasons = sorted(
            (t["threadId"].split("-")[1], [i["reason"] for i in t["interrupts"]]) for t in inbox["threads"]
        )
        assert reasons == [
            ("email", ["tool_call"]),
            ("filing", ["input_required"]),
            ("parallel", ["tool_call", "tool_call", "tool_call"]),
        ]
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert out.endswith("agui demo: stopped\n") and err == ""


def test_scripts_demo_console_run_as_a_process_serves_the_console_not_the_terminal_demo(tmp_path: Path) -> None:
    # What the demo's own last line advises: the script must hand --console on to `agui demo`.
    process = subprocess.Popen(
        ["bash", str(ROOT / "scripts" / "demo"), "--console", "--port", "0", "--store", str(tmp_path / "d.sqlite3")],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        found = re.fullmatch(r"agui demo: the approval console: (http://127\.0\.0\.1:\d+)/console/\n", first)
        assert found, first + (process.stderr.read() if process.poll() is not None and process.stderr else "")
        page = httpx.get(found.group(1) + "/console/", timeout=10)
        assert page.status_code == 200 and "<title>Approvals" in page.text
    finally:
        process.send_signal(signal.SIGINT)  # the script exec'd agui: this is agui's process
        out, _ = process.communicate(timeout=20)
    assert process.returncode == 0
    assert "auto" not in out and out.endswith("agui demo: stopped\n")


def test_the_console_is_served_at_the_address_the_main_job_names(monkeypatch: pytest.MonkeyPatch) -> None:
    import agui_core.app.demo_console
    from agui_core.app.cli import main

    ports: list[int] = []
    monkeypatch.setattr(agui_core.app.demo_console, "run_console", lambda *, store, port: ports.append(port) or 0)
    assert main(["demo", "--console"]) == 0
    assert main(["demo", "--console", "--port", "0"]) == 0
    assert main(["demo", "--console", "--port", "9001"]) == 0
    assert (
        ports == [agui_core.app.demo_console.CONSOLE_PORT, 0, 9001] and agui_core.app.demo_console.CONSOLE_PORT == 8770
    )
