"""How a SQLite-backed host's store grows over cycles on new threads, with and without ``--retain``.

Issue 23, item 6: nothing ever removed a finished thread, so 3,000 cycles on new threads grew
the store by some kilobytes a thread for ever. This script runs a real ``agui serve`` (the
transport tests' ``approval_agent`` over a fresh SQLite file) and, over one WebSocket
connection, that many cycles: a new thread (a version 4 UUID) whose first run ends with the
approval interrupt, then the resume that approves it, so the thread ends at rest. Every
``--every`` cycles, and once more after the retention has passed, it prints the rows of the
tables and the file's size (pages in use and free: SQLite reuses freed pages, it does not give
them back to the file system; the write-ahead log is checkpointed at about 4 MiB). Not run in
CI: it measures, and asserts nothing. From the repository root::

    .venv/bin/python scripts/retention_growth.py [--retain 2s] [--cycles 3000] [--every 500]

``--python PATH --root DIR`` serve another checkout's ``agui serve`` (a worktree with its own
virtual environment; without ``--retain``, to compare the growth a thread costs there).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio
from agui_transports.client import connect_websocket

from agui_core.machine.client import approve

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("threads", "messages", "audit", "interrupts")


def sizes(path: Path) -> str:
    """The rows of each table and the file's pages, read from a read-only connection."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = {table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES}
        pragmas = ("page_count", "page_size", "freelist_count")
        pages, page_size, free = (db.execute(f"PRAGMA {name}").fetchone()[0] for name in pragmas)
    finally:
        db.close()
    wal = Path(f"{path}-wal")
    counted = " ".join(f"{table}={count}" for table, count in rows.items())
    return (
        f"{counted}; file {pages * page_size // 1024} KiB ({free * page_size // 1024} KiB free),"
        f" wal {wal.stat().st_size // 1024 if wal.exists() else 0} KiB"
    )


async def measure(args: argparse.Namespace) -> None:
    folder = Path(tempfile.mkdtemp(prefix="agui-retention-"))
    store, log_path = folder / "threads.sqlite3", folder / "serve.log"
    command = [
        args.python, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:approval_agent",
        "--ws", "127.0.0.1:0", "--store", f"sqlite:{store}", "--rate-limit", "0",
    ]  # fmt: skip
    if args.retain:
        command += ["--retain", args.retain]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=args.root, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        with anyio.fail_after(30):
            while not (found := re.search(r"(ws://[^ \n]*:\d+)\n", log_path.read_text())):
                if process.poll() is not None:
                    raise SystemExit(f"agui serve exited: {log_path.read_text()}")
                await anyio.sleep(0.05)
        started = time.monotonic()
        async with connect_websocket(found.group(1)) as client:
            for cycle in range(1, args.cycles + 1):
                thread = f"thread-{uuid.uuid4().hex}"
                await client.collect(client.new_input(thread, "Send the report"))
                answers = {i.id: approve() for i in client.machine(thread).open_interrupts}
                await client.collect(client.resume(thread, answers))
                if cycle % args.every == 0:
                    print(f"{cycle:6d} cycles {time.monotonic() - started:6.1f} s: {sizes(store)}", flush=True)
        if args.retain:
            await anyio.sleep(2 * float(re.sub(r"[smhd]$", "", args.retain)) + 1.5)
            print(f"then idle past the retention: {sizes(store)}", flush=True)
    finally:
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--retain", help="agui serve's --retain, in seconds (2s); default: no retention")
    parser.add_argument("--cycles", type=int, default=3000)
    parser.add_argument("--every", type=int, default=500, help="print every this many cycles")
    parser.add_argument("--python", default=sys.executable, help="the Python of the checkout that serves")
    parser.add_argument("--root", default=str(ROOT), help="the checkout that serves")
    args = parser.parse_args()
    if args.retain and not re.fullmatch(r"\d+(\.\d+)?s", args.retain):
        parser.error("--retain takes seconds here, such as 2s")
    anyio.run(measure, args)


if __name__ == "__main__":
    main()
