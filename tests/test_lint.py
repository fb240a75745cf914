"""The house rules a tool can check: mypy strict on agui_core, ruff (lint and format) on the whole tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_mypy_strict_passes_on_agui_core() -> None:
    result = _run("mypy", "agui_core")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_passes_on_agui_transports(tmp_path: Path) -> None:
    # The folder transports/ is the package agui_transports: mypy checks it under that name,
    # through a link, with agui_core found at the root (what it imports stays unchecked here).
    (tmp_path / "agui_transports").symlink_to(ROOT / "transports", target_is_directory=True)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental", "agui_transports"],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_passes() -> None:
    result = _run("ruff", "check", ".", "--exclude", ".venv")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tree_is_formatted() -> None:
    # Code blocks in the Markdown pages too: what a reader copies is what the formatter would write.
    result = _run("ruff", "format", "--check", ".", "--exclude", ".venv")
    assert result.returncode == 0, result.stdout + result.stderr
