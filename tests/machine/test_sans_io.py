"""The sans-IO layers import no I/O module: checked in a fresh interpreter.

A fresh interpreter imports ``agui_core`` and every module of ``agui_core.protocol`` and
``agui_core.machine``, and reports each module of the forbidden list that got imported, with
the stack of the import that brought it in. The interpreter loads a few of them (``time``)
before any user code runs, so they are dropped from ``sys.modules`` first and seen again only
if something imports them anew.

A forbidden module our own code imports is a failure. One a third-party dependency imports
on its own is not ours to remove: it is listed in ``KNOWN_THIRD_PARTY`` with the import chain
that brings it in, and a new one fails until it is looked at. Today that is ``threading``,
imported by attrs itself: ``agui_core/machine/effects.py`` -> ``attrs/__init__.py`` ->
``attr/__init__.py`` -> ``attr/converters.py`` -> ``attr/_compat.py`` (``import threading``),
and ``time``, which the standard library's ``threading.py`` imports in turn. Importing them
starts no thread and reads no clock.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

FORBIDDEN = (
    "asyncio",
    "anyio",
    "trio",
    "socket",
    "selectors",
    "sqlite3",
    "threading",
    "time",
    "websockets",
    "ssl",
    "subprocess",
    "multiprocessing",
    "concurrent.futures",
    "http.client",
    "urllib.request",
)

KNOWN_THIRD_PARTY = {"threading": "attr", "time": "attr"}
"""Forbidden module -> the third-party package whose own import statement brings it in."""

THIRD_PARTY = ("attr", "attrs", "cattrs", "orjson", "fastjsonschema", "mypy_extensions", "typing_extensions")
"""The runtime dependencies of the sans-IO layers."""

REPO = Path(__file__).resolve().parents[2]

_SCRIPT = r"""
import importlib, json, pkgutil, sys, traceback

forbidden = set(json.loads(sys.argv[1]))
# Loaded by the interpreter itself before any user code: forget them, to see who imports them again.
for name in forbidden:
    sys.modules.pop(name, None)

chains = {}

class Watch:
    def find_spec(self, name, path=None, target=None):
        if name in forbidden and name not in chains:
            chains[name] = [
                [frame.filename, frame.lineno]
                for frame in traceback.extract_stack()[:-1]
                if not frame.filename.startswith("<frozen")
            ]
        return None

sys.meta_path.insert(0, Watch())

import agui_core
names = ["agui_core"]
for package in ("agui_core.protocol", "agui_core.machine"):
    module = importlib.import_module(package)
    names.append(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        importlib.import_module(info.name)
        names.append(info.name)

print(json.dumps({
    "imported": names,
    "forbidden": {name: chains.get(name, []) for name in sorted(forbidden) if name in sys.modules},
}))
"""


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(FORBIDDEN)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _stdlib(filename: str) -> bool:
    paths = sysconfig.get_paths()
    return filename.startswith(paths["stdlib"]) and not filename.startswith(paths["purelib"])


def importer(chain: list[list[Any]]) -> str:
    """Who brought the module in: the innermost frame outside the standard library."""
    for filename, _ in reversed(chain):
        if not _stdlib(filename):
            return str(filename)
    return "<the standard library>"


def package_of(filename: str) -> str:
    if filename.startswith(str(REPO / "agui_core")):
        return "agui_core"
    return Path(filename).relative_to(sysconfig.get_paths()["purelib"]).parts[0]


def _short(filename: str) -> str:
    for root in (str(REPO), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]):
        if filename.startswith(root + "/"):
            return filename[len(root) + 1 :]
    return filename


def describe(chain: list[list[Any]]) -> str:
    return " -> ".join(f"{_short(f)}:{n}" for f, n in chain)


def test_every_module_was_imported(report: dict[str, Any]) -> None:
    imported = set(report["imported"])
    assert {
        "agui_core.machine.thread",
        "agui_core.machine.ordering",
        "agui_core.protocol.codec",
    } <= imported
    assert {
        "agui_core.machine.transitions",
        "agui_core.machine.jsonpatch",
        "agui_core.protocol.payload",
    } <= imported


def test_our_code_imports_no_io_module(report: dict[str, Any]) -> None:
    ours = {
        name: describe(chain)
        for name, chain in report["forbidden"].items()
        if not chain or package_of(importer(chain)) == "agui_core"
    }
    assert ours == {}, f"sans-IO modules import I/O modules: {ours}"


def test_third_party_imports_are_the_known_ones(report: dict[str, Any]) -> None:
    theirs = {name: package_of(importer(chain)) for name, chain in report["forbidden"].items() if chain}
    assert all(package in THIRD_PARTY for package in theirs.values()), theirs
    assert theirs == KNOWN_THIRD_PARTY, (
        "a dependency now imports another forbidden module (or no longer does): "
        + "; ".join(f"{name}: {describe(report['forbidden'][name])}" for name in theirs)
    )
