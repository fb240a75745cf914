"""The build under test is the one expected: compiled (mypyc) or pure Python, module by module.

``AGUI_EXPECT_COMPILED=1`` (set by scripts/test-compiled, which runs the suites over a compiled
wheel's extension modules) expects every module the build backend compiles to be an extension
module; unset or ``0`` (the pure suite) expects none to be. Without this test a compiled pass
that silently imported the Python sources would look green and prove nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType

import pytest

from agui_core.compiled import is_compiled

ROOT = Path(__file__).resolve().parent.parent
EXPECT_COMPILED = os.environ.get("AGUI_EXPECT_COMPILED", "0") == "1"


def _backend() -> ModuleType:
    """buildsystem/agui_build.py, loaded from its file as the build frontend loads it."""
    loaded = sys.modules.get("agui_build")
    if loaded is not None:
        return loaded
    spec = importlib.util.spec_from_file_location("agui_build", ROOT / "buildsystem" / "agui_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["agui_build"] = module
    spec.loader.exec_module(module)
    return module


def _module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def _is_extension(name: str) -> bool:
    return (importlib.import_module(name).__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))


def test_the_build_is_the_one_expected() -> None:
    assert os.environ.get("AGUI_EXPECT_COMPILED", "0") in ("0", "1")
    assert is_compiled() is EXPECT_COMPILED


@pytest.mark.parametrize("path", _backend().compiled_modules())
def test_a_compiled_module_is_an_extension_exactly_in_the_compiled_build(path: str) -> None:
    assert _is_extension(_module_name(path)) is EXPECT_COMPILED


@pytest.mark.parametrize("path", sorted(_backend().EXCLUDED))
def test_an_excluded_module_runs_as_python_in_either_build(path: str) -> None:
    assert (ROOT / path).is_file(), f"{path} is excluded from compiling but does not exist"
    assert _backend().EXCLUDED[path], "an excluded module says why"
    assert not _is_extension(_module_name(path))


def test_the_compiled_layers_are_the_sans_io_ones() -> None:
    compiled = _backend().compiled_modules()
    assert compiled, "the backend compiles nothing"
    assert all(path.startswith(("agui_core/protocol/", "agui_core/machine/")) for path in compiled)


@pytest.mark.parametrize(
    ("switch", "compiler_missing", "expected"),
    [
        ("0", None, False),
        ("0", "no compiler", False),
        ("", None, True),
        ("", "no compiler", False),
        ("1", None, True),
    ],
)
def test_the_switch_and_the_probe_decide_whether_a_wheel_is_compiled(
    monkeypatch: pytest.MonkeyPatch, switch: str, compiler_missing: str | None, expected: bool
) -> None:
    backend = _backend()
    monkeypatch.setenv("AGUI_CORE_COMPILE", switch)
    monkeypatch.setattr(backend, "_compiler_missing", lambda: compiler_missing)
    monkeypatch.setattr(backend._setuptools, "get_requires_for_build_wheel", lambda settings=None: ["wheel"])
    requires = backend.get_requires_for_build_wheel()
    # mypy (which brings mypyc) is asked for only by a build that compiles.
    assert requires == (["wheel", backend.MYPYC_REQUIREMENT] if expected else ["wheel"])


def test_forcing_a_compiled_build_without_a_compiler_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    backend = _backend()
    monkeypatch.setenv("AGUI_CORE_COMPILE", "1")
    monkeypatch.setattr(backend, "_compiler_missing", lambda: "no compiler here")
    with pytest.raises(RuntimeError, match="no compiler here"):
        backend.get_requires_for_build_wheel()


def test_a_switch_that_is_neither_0_nor_1_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGUI_CORE_COMPILE", "yes")
    with pytest.raises(RuntimeError, match="AGUI_CORE_COMPILE"):
        _backend().get_requires_for_build_wheel()
