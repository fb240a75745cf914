"""The package arrows run one way: benchmarks and the application layer above the product.

``agui_core`` (the library) imports neither ``agui_transports`` nor the benchmarks; the
transports import the library and never the benchmarks; only ``agui_core.app`` (the command
line and the demo) may import the transports. Read from the source with :mod:`ast`, so an
import inside a function counts as much as one at the top of a module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent


def _imports(folder: Path) -> Iterator[tuple[Path, str]]:
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                yield path, node.module
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                yield path, node.args[0].value


def _top(name: str) -> str:
    return name.split(".")[0]


def test_the_library_imports_neither_the_transports_nor_the_benchmarks() -> None:
    app = ROOT / "agui_core" / "app"
    wrong = [
        f"{path.relative_to(ROOT)}: {name}"
        for path, name in _imports(ROOT / "agui_core")
        if _top(name) == "benchmarks" or (_top(name) == "agui_transports" and app not in path.parents)
    ]
    assert wrong == []


def test_the_transports_import_neither_the_application_layer_nor_the_benchmarks() -> None:
    wrong = [
        f"{path.relative_to(ROOT)}: {name}"
        for path, name in _imports(ROOT / "transports")
        if _top(name) == "benchmarks" or name == "agui_core.app" or name.startswith("agui_core.app.")
    ]
    assert wrong == []


def test_the_wheel_holds_the_library_and_the_transports_but_not_the_benchmarks() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = pyproject["tool"]["setuptools"]["packages"]
    assert {_top(name) for name in packages} == {"agui_core", "agui_transports"}
    # Every package folder under agui_core is listed, so none is left out of the wheel by accident.
    folders = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "agui_core").rglob("__init__.py")}
    assert folders == {name for name in packages if _top(name) == "agui_core"}
    assert pyproject["project"]["scripts"] == {"agui": "agui_core.app.cli:main"}


def test_the_benchmarks_run_from_the_clone_and_write_only_where_told(tmp_path: Path) -> None:
    out = tmp_path / "results" / "bench.json"
    before = set(ROOT.iterdir())
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--quick",
            "--iterations",
            "1",
            "--repeats",
            "1",
            "--only",
            "payload_validation",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert [s["name"] for s in orjson.loads(out.read_bytes())["scenarios"]] == ["payload_validation"]
    assert set(ROOT.iterdir()) == before  # nothing left in the working directory


def test_the_agui_command_lives_in_the_application_layer_and_has_no_bench() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "agui_core.app.cli", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "serve" in result.stdout and "bench" not in result.stdout
