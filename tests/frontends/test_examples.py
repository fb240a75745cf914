"""The example pages of ``examples/frontends`` still bundle against the pinned packages."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.frontends.browser import HERE, ROOT, node

EXAMPLES = ROOT / "examples" / "frontends"

_BUILD = """
const { build } = require(process.argv[1] + "/node_modules/esbuild");
build({
  entryPoints: [process.argv[2] + "/copilotkit.jsx", process.argv[2] + "/assistant.jsx"],
  nodePaths: [process.argv[1] + "/node_modules"],
  bundle: true, outdir: process.argv[3], format: "esm", jsx: "automatic", logLevel: "error",
  define: { "process.env.NODE_ENV": '"production"' }, loader: { ".css": "empty" },
}).catch(() => process.exit(1));
"""


def test_the_example_pages_bundle_with_the_pinned_packages(tmp_path: Path) -> None:
    completed = subprocess.run(
        [node(), "-e", _BUILD, str(HERE), str(EXAMPLES), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "copilotkit.js").stat().st_size > 0
    assert (tmp_path / "assistant.js").stat().st_size > 0
