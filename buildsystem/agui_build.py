"""The build backend: setuptools, with the sans-IO layers compiled by mypyc when it can.

A wheel is compiled when a C compiler and the Python headers are present, and pure Python
otherwise; both behave the same (``bash scripts/test`` runs the suite on each). The environment
variable ``AGUI_CORE_COMPILE`` decides instead of the probe: ``0`` builds pure Python, ``1``
compiles and fails loudly when it cannot (no compiler, a module mypyc refuses). When the probe
chose to compile and compiling fails, the wheel is built pure and the failure is printed.

Editable installs (``pip install -e``) and sdists are always pure and need nothing beyond
setuptools: mypy (which brings mypyc) is asked for only by a wheel build that compiles.

Every hook is setuptools' own; this module only decides whether ``setup.py`` hands mypyc's
extension modules to setuptools (:func:`ext_modules`). Compiled are ``agui_core/protocol`` and
``agui_core/machine``, module by module, except :data:`EXCLUDED` (each with its reason).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

__all__ = [
    "COMPILED_PACKAGES",
    "EXCLUDED",
    "MYPYC_REQUIREMENT",
    "build_editable",
    "build_sdist",
    "build_wheel",
    "compiled_modules",
    "ext_modules",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

MYPYC_REQUIREMENT = "mypy[mypyc]==2.4.1"
"""The mypyc the compiled modules are tested with (its constructs are what the source avoids)."""

ROOT = Path(__file__).resolve().parent.parent
COMPILED_PACKAGES = ("agui_core/protocol", "agui_core/machine")
"""The sans-IO layers: no I/O, no clock, so nothing in them waits on anything but the CPU."""

EXCLUDED: dict[str, str] = {
    "agui_core/protocol/__init__.py": "only re-exports: nothing to run faster",
    "agui_core/machine/__init__.py": "only re-exports: nothing to run faster",
    "agui_core/protocol/types.py": (
        "the wire's attrs classes: compiled, their annotations lose the parameters the cattrs "
        "converter reads to build the codec (tuple[Message, ...] becomes tuple)"
    ),
    "agui_core/protocol/events.py": "the events' attrs classes, for the same reason as types.py",
}

_SWITCH = "AGUI_CORE_COMPILE"
_compile_this_build = False


def compiled_modules() -> list[str]:
    """The source files mypyc compiles, relative to the project root, in a stable order."""
    found = sorted(
        str(path.relative_to(ROOT)) for package in COMPILED_PACKAGES for path in (ROOT / package).glob("*.py")
    )
    return [path for path in found if path not in EXCLUDED]


def _compiler_missing() -> str | None:
    """Why this machine cannot build C extensions, or ``None`` when it can."""
    compiler = sysconfig.get_config_var("CC")
    if not compiler:
        return "this Python names no C compiler (sysconfig CC)"
    command = shlex.split(str(compiler))[0]
    if shutil.which(command) is None:
        return f"the C compiler {command!r} (sysconfig CC) is not on PATH"
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"the Python headers are missing ({headers})"
    return None


def _switch() -> str:
    value = os.environ.get(_SWITCH, "").strip()
    if value not in ("", "0", "1"):
        raise RuntimeError(f"{_SWITCH} is 0 (pure Python), 1 (compiled) or unset (compiled when it can), not {value!r}")
    return value


def _wants_compiled() -> bool:
    switch = _switch()
    if switch == "0":
        return False
    missing = _compiler_missing()
    if missing is not None:
        if switch == "1":
            raise RuntimeError(f"{_SWITCH}=1 but the compiled core cannot be built: {missing}")
        print(f"agui-core: building pure Python: {missing}", file=sys.stderr)
        return False
    return True


def ext_modules() -> list[Any]:
    """The extension modules for ``setup.py``: mypyc's when this build compiles, else none."""
    if not _compile_this_build:
        return []
    try:
        from mypyc.build import mypycify
    except ImportError as exc:
        raise RuntimeError(f"compiling agui-core needs {MYPYC_REQUIREMENT} in the build environment") from exc
    # The build's own mypy configuration: pyproject's is the lint's, and this one adds the plugin
    # that keeps mypyc from checking attrs fields against their annotations (mypyc_attrs.py).
    config = Path(__file__).resolve().parent / "mypyc.ini"
    return list(mypycify([f"--config-file={config}", *compiled_modules()], opt_level="3", group_name="agui_core"))


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    compiling = _wants_compiled()  # first: a bad AGUI_CORE_COMPILE fails before setup.py runs
    requires = list(_setuptools.get_requires_for_build_wheel(config_settings))
    return [*requires, MYPYC_REQUIREMENT] if compiling else requires


def _forget_built_modules() -> None:
    """Remove what an earlier build left in setuptools' build folder: a pure wheel built after a
    compiled one would otherwise ship the compiled one's extension modules."""
    for built in (ROOT / "build").glob("lib.*"):
        shutil.rmtree(built, ignore_errors=True)
    shutil.rmtree(ROOT / "build" / "lib", ignore_errors=True)


def build_wheel(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    global _compile_this_build
    _compile_this_build = _wants_compiled()
    _forget_built_modules()
    if not _compile_this_build:
        return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))
    try:
        return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))
    except BaseException as exc:  # setuptools reports a failed compile as SystemExit
        if _switch() == "1" or isinstance(exc, KeyboardInterrupt):
            raise
        print(f"agui-core: compiling failed ({exc!r}); building pure Python instead", file=sys.stderr)
    _compile_this_build = False
    _forget_built_modules()
    return str(_setuptools.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str, config_settings: dict[str, Any] | None = None, metadata_directory: str | None = None
) -> str:
    global _compile_this_build
    _compile_this_build = False  # an editable install runs the sources it points at
    return str(_setuptools.build_editable(wheel_directory, config_settings, metadata_directory))
