"""setuptools' script: pyproject.toml holds the metadata; this adds mypyc's extension modules
when the build backend (buildsystem/agui_build.py) compiles the wheel, and none otherwise."""

import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "buildsystem"))

import agui_build  # found through the line above when setup.py runs on its own

setup(ext_modules=agui_build.ext_modules())
