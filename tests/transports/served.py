"""``agui serve`` as a real process for the transport tests, and a raw HTTP/1.1 client.

The server's log goes to a file (a pipe nobody drains would fill and stop the server); the
process is stopped by its PID when the test is done with it, whatever happened.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import attrs

__all__ = ["ROOT", "Served", "agui_serve", "read_response", "receive_until_closed", "request"]

ROOT = Path(__file__).resolve().parents[2]
STARTUP = 30.0  # seconds a server may take to say where it listens


@attrs.frozen
class Served:
    """A running ``agui serve``: where it listens, and its process."""

    url: str
    port: int
    pid: int
    log: Path

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_bytes(self) -> int:
        """The server's resident memory now (from ``/proc``)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no VmRSS for process {self.pid}")


@asynccontextmanager
async def agui_serve(
    target: str, *options: str, tmp: Path, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> AsyncIterator[Served]:
    """Start ``agui serve TARGET OPTIONS`` (in ``cwd``) and yield it once it listens; stop it by its PID."""
    log = tmp / f"serve-{os.urandom(4).hex()}.log"
    command = [sys.executable, "-m", "agui_core.app.cli", "serve", target, *options]
    with log.open("wb") as sink:
        process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=env or os.environ.copy()
        )
    try:
        with anyio.fail_after(STARTUP):
            while not (found := re.search(r"over \w+: ((?:wss?|https?)://[^ \n]*:(\d+))\n", log.read_text())):
                if process.poll() is not None:
                    raise AssertionError(f"agui serve exited with {process.returncode}: {log.read_text()}")
                await anyio.sleep(0.05)
        yield Served(url=found.group(1), port=int(found.group(2)), pid=process.pid, log=log)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=STARTUP)


async def read_response(stream: anyio.abc.ByteStream, already: bytes = b"") -> tuple[int, bytes, bytes]:
    """One HTTP/1.1 response read off ``stream``: its status, head and body (``Content-Length``)."""
    data = already
    while b"\r\n\r\n" not in data:
        data += await stream.receive()
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
    if length is not None:
        while len(body) < int(length.group(1)):
            body += await stream.receive()
    return status, head, body


async def request(
    stream: anyio.abc.ByteStream, path: str, *, host: str = "127.0.0.1", headers: dict[str, str] | None = None
) -> tuple[int, bytes, bytes]:
    """``GET path`` on a kept-alive connection, and its response."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    await stream.send(("\r\n".join(lines) + "\r\n\r\n").encode())
    return await read_response(stream)


async def receive_until_closed(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    data = b""
    while True:
        try:
            data += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return data
