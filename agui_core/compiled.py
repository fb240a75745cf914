"""Which build of the sans-IO layers is running: compiled by mypyc, or the pure-Python package.

A wheel built where a C compiler is present carries :mod:`agui_core.protocol` and
:mod:`agui_core.machine` as extension modules (buildsystem/agui_build.py names the few left
out, and why); an editable install, an sdist and a wheel built without a compiler run the
Python sources. Both behave the same; only speed tells them apart.
"""

from __future__ import annotations

from importlib.machinery import EXTENSION_SUFFIXES

from agui_core.machine import thread

__all__ = ["is_compiled"]


def is_compiled() -> bool:
    """Whether the thread machine (and the layers compiled with it) runs as compiled code."""
    return (thread.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))
