"""A victim's interrupt -> resume latency while attackers send 1 MB inputs of 20,000 messages.

Issue 23, item 5: two clients, each sending such inputs in a loop, pushed another client's
interrupt-resume cycle from milliseconds to most of a second. This script reproduces the
figure against a real ``agui serve`` (the shipped ``email_agent`` over a SQLite file, with a
token for each client, so each is a principal of its own). Not run in CI: it measures, and
asserts nothing. From the repository root::

    .venv/bin/python scripts/attack_latency.py [--transport ws|http] [--seconds 20] [--attackers 2]

``--python PATH --root DIR`` attack another checkout's ``agui serve`` (another worktree with
its own virtual environment: the same client code then measures both); ``--serve-flag`` adds
a flag to its command line (repeatable, ``--serve-flag=--input-budget=0``). ``--messages N``
makes the attackers' inputs N messages long instead (``--messages 2000``: an attacker that
stays within the default ``--max-input-messages``).

- The victim, in this process, runs one cycle every ``--every`` seconds (0.2; within the
  default rate limit of 20 inputs a second on a connection): an input on a new thread, whose
  run ends with the approval interrupt, then the resume that approves it; the cycle's time is
  from sending the first input to the second run's end. Over HTTP each request has a
  connection of its own (a kept-alive one would add issue 23's 40 ms Nagle stall, a
  different problem).
- Each attacker is a process of its own with its own token; it sends its input (a new thread
  each time), reads the answer to its end, and sends again at once, on one connection (a
  new one when the server closes it).

The victim first runs alone for ``--quiet`` seconds, then with the attackers for
``--seconds``. Printed (and written as JSON with ``--json FILE``): the victim's median, p95
and max cycle time, alone and under attack; what the attackers sent and what came back; the
server's CPU seconds during the attack; the load average before and after. Every process
started here is stopped by its PID.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parent.parent
VICTIM_TOKEN = "victim-token-0123456789abcdef"
ATTACKER_TOKENS = [f"attacker-{n}-token-0123456789abcdef" for n in range(1, 9)]
MESSAGES = 20_000
STARTUP = 30.0  # seconds agui serve may take to say where it listens


def attack_input(thread: str, messages: int = MESSAGES) -> bytes:
    """A valid input of ``messages`` short user messages, just under 1 MB (under the 1 MiB frame)."""
    filler = "x" * 7
    body = [{"id": f"m{n}", "role": "user", "content": filler} for n in range(messages)]
    return orjson.dumps({"threadId": thread, "runId": f"{thread}-run", "messages": body})


def victim_input(thread: str, run: str, resume: list[dict[str, Any]] | None = None) -> bytes:
    document: dict[str, Any] = {"threadId": thread, "runId": run, "messages": []}
    if resume is None:
        document["messages"] = [{"id": f"{thread}-u", "role": "user", "content": "email Bob"}]
    else:
        document["resume"] = resume
    return orjson.dumps(document)


def end_of(frames: list[dict[str, Any]]) -> dict[str, Any]:
    return next(f for f in reversed(frames) if f["type"] in ("RUN_FINISHED", "RUN_ERROR"))


# -- talking to the server ----------------------------------------------------------------------


Exchange = Callable[[bytes], Awaitable[list[dict[str, Any]]]]


@asynccontextmanager
async def ws_client(url: str, token: str) -> AsyncIterator[Exchange]:
    """One WebSocket connection; each exchange sends an input and reads its run's frames."""
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(url, additional_headers=headers, max_size=None, ping_interval=None) as ws:

        async def exchange(data: bytes) -> list[dict[str, Any]]:
            await ws.send(data.decode())
            return await ws_frames(ws)

        yield exchange


async def ws_frames(ws: ClientConnection) -> list[dict[str, Any]]:
    frames = [orjson.loads(await ws.recv())]
    while frames[-1]["type"] not in ("RUN_FINISHED", "RUN_ERROR"):
        frames.append(orjson.loads(await ws.recv()))
    return frames


@asynccontextmanager
async def http_client(url: str, token: str) -> AsyncIterator[Exchange]:
    """Each exchange one POST on a connection of its own, its Server-Sent Events read whole."""
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    limits = httpx.Limits(max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=url, headers=headers, limits=limits, timeout=120) as client:

        async def exchange(data: bytes) -> list[dict[str, Any]]:
            response = await client.post("/", content=data)
            frames = []
            for block in response.content.split(b"\n\n"):
                for line in block.split(b"\n"):
                    if line.startswith(b"data:"):
                        frames.append(orjson.loads(line[5:]))
            return frames

        yield exchange


def client_for(transport: str) -> Callable[[str, str], Any]:
    return ws_client if transport == "ws" else http_client


# -- the attacker (a process of its own) -------------------------------------------------------


async def attack(transport: str, url: str, token: str, seconds: float, name: str, messages: int) -> dict[str, Any]:
    """Send ``attack_input`` again and again for ``seconds``; count what came back."""
    answers: Counter[str] = Counter()
    reconnects = 0
    deadline = time.monotonic() + seconds
    n = 0
    template = attack_input("THREAD-PLACEHOLDER", messages)
    while time.monotonic() < deadline:
        try:
            async with client_for(transport)(url, token) as exchange:
                while time.monotonic() < deadline:
                    n += 1
                    data = template.replace(b"THREAD-PLACEHOLDER", f"{name}-{n}".encode())
                    end = end_of(await exchange(data))
                    answers[end.get("code") or end["type"]] += 1
        except (ConnectionClosed, OSError, httpx.HTTPError):
            reconnects += 1
            await asyncio.sleep(0.05)
    return {"sent": n, "answers": dict(answers), "reconnects": reconnects}


# -- the victim ----------------------------------------------------------------------------------


async def victim(transport: str, url: str, seconds: float, every: float, label: str) -> list[float]:
    """Interrupt -> resume cycles for ``seconds``, one every ``every`` seconds: their durations (ms)."""
    durations: list[float] = []
    deadline = time.monotonic() + seconds
    n = 0
    async with client_for(transport)(url, VICTIM_TOKEN) as exchange:
        while time.monotonic() < deadline:
            n += 1
            thread = f"victim-{label}-{n}"
            start = time.perf_counter()
            first = end_of(await exchange(victim_input(thread, f"{thread}-1")))
            if first["type"] != "RUN_FINISHED":
                raise RuntimeError(f"the victim's run was refused: {first}")
            interrupt = first["outcome"]["interrupts"][0]["id"]
            answer = [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": True}}]
            second = end_of(await exchange(victim_input(thread, f"{thread}-2", answer)))
            if second["type"] != "RUN_FINISHED":
                raise RuntimeError(f"the victim's resume was refused: {second}")
            durations.append((time.perf_counter() - start) * 1000)
            await asyncio.sleep(max(0.0, every - (time.perf_counter() - start)))
    return durations


def summary(durations: list[float]) -> dict[str, float]:
    ordered = sorted(durations)
    return {
        "cycles": len(ordered),
        "median_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
        "max_ms": round(ordered[-1], 1),
    }


# -- the orchestra ----------------------------------------------------------------------------------


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def start_server(args: argparse.Namespace, folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    tokens = folder / "tokens"
    lines = [f"victim {VICTIM_TOKEN}"] + [f"attacker{n} {t}" for n, t in enumerate(ATTACKER_TOKENS, 1)]
    tokens.write_text("\n".join(lines) + "\n")
    os.chmod(tokens, 0o600)
    command = [
        args.python, "-m", "agui_core.app.cli", "serve", "agui_core.examples.mail:email_agent",
        f"--{args.transport}", "127.0.0.1:0", "--store", f"sqlite:{folder / 'threads.sqlite3'}",
        "--auth-tokens", str(tokens), *args.serve_flag,
    ]  # fmt: skip
    with open(folder / "serve.log", "wb") as log:  # the server holds its own copy of the file
        server = subprocess.Popen(
            command, cwd=args.root, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + STARTUP
    while time.monotonic() < deadline:
        found = re.search(rb"(ws|http)://127\.0\.0\.1:\d+", (folder / "serve.log").read_bytes())
        if found:
            return server, found.group(0).decode()
        if server.poll() is not None:
            raise RuntimeError(f"agui serve exited: {(folder / 'serve.log').read_text()}")
        await asyncio.sleep(0.1)
    stop(server)
    raise RuntimeError("agui serve did not say where it listens")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


async def orchestrate(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {
        "transport": args.transport,
        "root": str(args.root),
        "serve_flags": args.serve_flag,
        "attackers": args.attackers,
        "attack_input_messages": args.messages,
        "attack_input_bytes": len(attack_input("attacker-1-1", args.messages)),
        "loadavg_before": loadavg(),
    }
    with tempfile.TemporaryDirectory(prefix="attack-latency-") as tmp:
        folder = Path(tmp)
        server, url = await start_server(args, folder)
        attackers: list[subprocess.Popen[bytes]] = []
        try:
            await victim(args.transport, url, 1.0, args.every, "warm")  # imports, caches, the SQLite file
            result["alone"] = summary(await victim(args.transport, url, args.quiet, args.every, "alone"))
            for n in range(args.attackers):
                command = [
                    sys.executable, __file__, "--role", "attacker", "--transport", args.transport, "--url", url,
                    "--token", ATTACKER_TOKENS[n], "--seconds", str(args.seconds + 3), "--name", f"attacker{n + 1}",
                    "--messages", str(args.messages),
                ]  # fmt: skip
                attackers.append(subprocess.Popen(command, stdout=subprocess.PIPE))
            await asyncio.sleep(2.0)  # the attackers' first inputs are in
            cpu_before = cpu_seconds(server.pid)
            durations = await victim(args.transport, url, args.seconds, args.every, "attacked")
            result["server_cpu_s_per_s"] = round((cpu_seconds(server.pid) - cpu_before) / args.seconds, 2)
            result["attacked"] = summary(durations)
            result["attackers_sent"] = []
            for process in attackers:
                out, _ = await asyncio.to_thread(process.communicate, timeout=120)
                result["attackers_sent"].append(json.loads(out))
        finally:
            for process in attackers:
                stop(process)
            stop(server)
    result["loadavg_after"] = loadavg()
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--role", choices=["orchestra", "attacker"], default="orchestra", help=argparse.SUPPRESS)
    parser.add_argument("--transport", choices=["ws", "http"], default="ws")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the victim runs under attack")
    parser.add_argument("--quiet", type=float, default=5.0, help="how long the victim runs alone first")
    parser.add_argument("--every", type=float, default=0.2, help="seconds between the victim's cycles")
    parser.add_argument("--attackers", type=int, default=2, choices=range(0, len(ATTACKER_TOKENS) + 1))
    parser.add_argument("--messages", type=int, default=MESSAGES, help="messages in each attacker's input")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs agui serve")
    parser.add_argument("--root", type=Path, default=ROOT, help="the directory agui serve runs in")
    parser.add_argument("--serve-flag", action="append", default=[], help="a flag for agui serve (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "attacker":
        sent = attack(args.transport, args.url, args.token, args.seconds, args.name, args.messages)
        print(json.dumps(asyncio.run(sent)))
        return 0
    result = asyncio.run(orchestrate(args))
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
