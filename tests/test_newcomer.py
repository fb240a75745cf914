"""A newcomer's first hour, from a fresh clone, following the README and nothing else.

The repository is cloned into a temporary folder; the README's own commands are read from the
README (never copied here) and run as written: its first command (``bash scripts/demo``: a
fresh ``.venv`` in the clone, then the demo answering itself), then every block the README marks
runnable (its agent saved as ``mymodule.py``, ``agui serve`` on it, one interrupt and its resume
with ``curl``, the Python client) with the clone's ``.venv/bin`` first on the ``PATH`` as the
README says; then the approval console of that server is opened in Chromium.

The clone gets a fresh virtual environment of its own (``scripts/demo`` makes it; about 25 s
with a warm pip cache), so what is tested is what the clone installs, not this checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.console.conftest import chromium_path
from tests.docs_blocks import Player, runnable_blocks

ROOT = Path(__file__).resolve().parent.parent
DEMO_TIMEOUT = 300


def readme_first_commands(readme: str) -> list[str]:
    """The commands of the README's first shell block (the two commands), comments cut."""
    found = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert found is not None, "the README has no shell block"
    return [line.split("#", 1)[0].strip() for line in found.group(1).splitlines() if line.strip()]


def test_a_fresh_clone_follows_the_readme_from_the_demo_to_the_console(tmp_path: Path) -> None:
    clone = tmp_path / "agui-core"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    readme = (clone / "README.md").read_text(encoding="utf-8")

    commands = readme_first_commands(readme)
    assert commands[1] == "bash scripts/test"  # the other command: the suite this test is part of
    demo = commands[0]
    assert demo == "bash scripts/demo", commands
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.setdefault("PYTHON", getattr(sys, "_base_executable", sys.executable))
    played = subprocess.run(
        ["bash", "-c", demo], cwd=clone, env=env, capture_output=True, text=True, timeout=DEMO_TIMEOUT, check=False
    )
    assert played.returncode == 0, played.stdout + played.stderr
    assert "scenarios ended as expected" in played.stdout, played.stdout
    agui = clone / ".venv" / "bin" / "agui"
    assert agui.exists() and ".venv/bin/agui" in readme  # where the README says agui is

    work = tmp_path / "work"
    work.mkdir()
    player = Player(work, agui.parent)
    try:
        outputs = [player.play(block) for block in runnable_blocks(readme)]
        first_curl = next(o for o in outputs if '"outcome":{"type":"interrupt"' in o)
        assert '"reason":"tool_call"' in first_curl and "RUN_STARTED" in first_curl
        resumed = next(o for o in outputs if "TOOL_CALL_RESULT" in o)
        assert '"content":"{\\"sent\\":true,\\"to\\":\\"bob@example.com\\"}"' in resumed
        (served,) = {port for port in player.ports.values()}
        console = f"http://127.0.0.1:{served}/console/"
        from playwright.sync_api import expect, sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
            try:
                page = browser.new_page()
                page.goto(console)
                waiting = page.locator('button.thread[data-thread="thread-1"]')
                expect(waiting).to_contain_text("Tell Ann it went out?", timeout=15_000)  # the chained question
                expect(page.locator("#sign-out")).to_be_hidden()  # no authenticator: no sign-in machinery
            finally:
                browser.close()
    finally:
        player.close()
        shutil.rmtree(clone / ".venv", ignore_errors=True)
