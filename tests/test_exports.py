"""Every module declares ``__all__`` naming things it really has; packages only re-export."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import agui_core

MODULES = sorted(info.name for info in pkgutil.walk_packages(agui_core.__path__, prefix="agui_core.") if not info.ispkg)
PACKAGES = [
    "agui_core",
    "agui_core.protocol",
    "agui_core.machine",
    "agui_core.store",
    "agui_core.runtime",
    "agui_core.examples",
    "agui_core.conformance",
    "agui_core.app",
    "agui_core.episodes",
]


@pytest.mark.parametrize("name", MODULES + PACKAGES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    missing = [n for n in exported if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names missing attributes: {missing}"
    assert len(set(exported)) == len(exported), f"{name}.__all__ has duplicates"


@pytest.mark.parametrize("name", PACKAGES)
def test_package_init_only_reexports(name: str) -> None:
    source = Path(importlib.import_module(name).__file__ or "").read_text()
    for node in ast.parse(source).body:
        allowed = (ast.Import, ast.ImportFrom, ast.Assign, ast.Expr)
        assert isinstance(node, allowed), f"{name}/__init__.py defines more than re-exports: {ast.dump(node)[:80]}"
        if isinstance(node, ast.Assign):
            assert [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__all__"]
