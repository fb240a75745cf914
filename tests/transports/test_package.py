"""``agui_transports``: every module declares an ``__all__`` of names it has; the package only re-exports."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import agui_transports
import pytest

MODULES = sorted(info.name for info in pkgutil.iter_modules(agui_transports.__path__, prefix="agui_transports."))


@pytest.mark.parametrize("name", ["agui_transports", *MODULES])
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert [n for n in exported if not hasattr(module, n)] == []
    assert len(set(exported)) == len(exported)


def test_the_package_only_reexports() -> None:
    source = Path(agui_transports.__file__ or "").read_text()
    for node in ast.parse(source).body:
        assert isinstance(node, (ast.ImportFrom, ast.Assign, ast.Expr)), ast.dump(node)[:80]
        if isinstance(node, ast.Assign):
            assert [t.id for t in node.targets if isinstance(t, ast.Name)] == ["__all__"]


def test_the_package_reexports_what_users_build_on() -> None:
    public = {n for name in MODULES for n in importlib.import_module(name).__all__}
    # Constants and parsers stay in their modules; everything a user builds on is re-exported.
    assert set(agui_transports.__all__) <= public
    assert {"Client", "WebSocketServer", "serve_stdio", "load_transport"} <= set(agui_transports.__all__)
