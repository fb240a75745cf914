"""The code blocks of the README and ``docs/`` marked runnable, and a player that runs them in order.

A fenced block is runnable when the line before it is an HTML comment that says so:

- ``<!-- runnable -->``: a ``python`` block runs as a script, a ``sh`` block with bash; each
  must exit 0.
- ``<!-- runnable: save as NAME -->``: the block is written to ``NAME`` for the blocks after it.
- ``<!-- runnable: server PORT -->``: a ``sh`` block that starts a server: it is left running
  (until :meth:`Player.close`) and the player waits until ``PORT`` answers.
- ``<!-- runnable: expect TEXT -->``: as ``runnable``, and its output must contain ``TEXT``.
- ``<!-- runnable: with server PORT -->``: as ``runnable``, once that server runs.

The blocks of one page run in order in one folder, with the virtual environment's ``bin`` first
on the ``PATH`` (as after ``source .venv/bin/activate``). Every ``127.0.0.1:PORT`` a page
names (and every ``--port PORT``, as ``uvicorn`` takes it) is moved to a free port, so a test
never depends on a port being free.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import attrs

__all__ = ["Block", "Player", "runnable_blocks"]

_MARKED = re.compile(r"^<!-- runnable(?:: (?P<how>.*?))? -->\n```(?P<lang>\w+)\n(?P<code>.*?)^```$", re.M | re.S)
STEP_TIMEOUT = 120.0


@attrs.frozen
class Block:
    """One runnable block: its language, its code, what its marker says, and where it is."""

    lang: str
    code: str
    how: str
    line: int

    @property
    def server_port(self) -> int | None:
        found = re.fullmatch(r"(?:with )?server (\d+)", self.how)
        return int(found.group(1)) if found else None


def runnable_blocks(text: str) -> list[Block]:
    """The blocks of a Markdown page marked runnable, in order."""
    return [
        Block(lang=m["lang"], code=m["code"], how=(m["how"] or "").strip(), line=text.count("\n", 0, m.start()) + 2)
        for m in _MARKED.finditer(text)
    ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Player:
    """Runs a page's runnable blocks in ``folder`` with the programs of ``bin_dir``."""

    def __init__(self, folder: Path, bin_dir: Path, *, cwd: Path | None = None) -> None:
        self.folder = folder
        self.cwd = cwd or folder
        self.env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        self.env.pop("PYTHONPATH", None)
        self.python = str(bin_dir / "python")
        self.ports: dict[int, int] = {}
        self.servers: list[subprocess.Popen[str]] = []
        self.outputs: list[str] = []

    def moved(self, code: str) -> str:
        """``code`` with every ``127.0.0.1:PORT`` and ``--port PORT`` moved to this player's free port for it."""

        def move(found: re.Match[str]) -> str:
            port = int(found.group(2))
            if port not in self.ports:
                self.ports[port] = free_port()
            return f"{found.group(1)}{self.ports[port]}"

        return re.sub(r"(127\.0\.0\.1:|--port )(\d+)", move, code)

    def play(self, block: Block) -> str:
        """Run ``block``; its output (standard output and error)."""
        code = self.moved(block.code)
        where = f"the block at line {block.line}"
        if block.how.startswith("save as "):
            (self.cwd / block.how.removeprefix("save as ")).write_text(code, encoding="utf-8")
            return ""
        command = [self.python, "-c", code] if block.lang == "python" else ["bash", "-c", code]
        if block.how.startswith("server "):
            assert block.lang == "sh", where
            port = self.ports[block.server_port or 0]
            log = (self.folder / f"server-{port}.log").open("w")
            self.servers.append(
                subprocess.Popen(command, cwd=self.cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT, text=True)
            )
            deadline = time.monotonic() + STEP_TIMEOUT
            while not answers(port):
                assert self.servers[-1].poll() is None, f"{where} exited:\n" + (self.folder / log.name).read_text()
                assert time.monotonic() < deadline, f"{where}: nothing answers on port {port}"
                time.sleep(0.2)
            return ""
        done = subprocess.run(
            command, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=STEP_TIMEOUT, check=False
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{where} exited with {done.returncode}:\n{output}"
        if block.how.startswith("expect "):
            wanted = block.how.removeprefix("expect ")
            assert wanted in output, f"{where}: no {wanted!r} in its output:\n{output}"
        self.outputs.append(output)
        return output

    def close(self) -> None:
        """Stop the servers the blocks started."""
        for server in self.servers:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
