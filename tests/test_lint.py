"""The house rules a tool can check: mypy strict on agui_core, ruff on the whole tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_mypy_strict_passes_on_agui_core() -> None:
    result = _run("mypy", "agui_core")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_passes() -> None:
    result = _run("ruff", "check", ".", "--exclude", ".venv")
    assert result.returncode == 0, result.stdout + result.stderr
