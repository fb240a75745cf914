"""One Pydantic AI agent served by Pydantic AI's own AG-UI app and by agui-core, side by side.

Not run in CI (it starts servers and measures time). From the repository root::

    .venv/bin/python scripts/pydantic_ai_side_by_side.py [--cycles N] [--json FILE]

The agent is ``tests.adapters.pydantic_ai_agents:parallel`` (Pydantic AI's ``FunctionModel``,
no LLM, no network): one model turn proposes two ``send_email`` calls that require approval
and one ``look_up`` call that needs none. Both servers are processes of their own on free ports
of 127.0.0.1:

- **pydantic-ai**: a Starlette app whose ``POST /`` is ``AGUIAdapter.dispatch_request(request,
  agent=..., output_type=[str, DeferredToolRequests])``, under uvicorn (its documented way of
  serving an agent over AG-UI with tool approvals);
- **agui-core**: ``agui serve tests.adapters.pydantic_ai_agents:parallel --http`` over a
  SQLite file.

For each it runs ``agui conformance`` in process (``run_conformance``, the same options) and
measures the approval cycle: a fresh thread's first run (ends with the two approvals), then
the resume that approves both (ends with success), as wall time over HTTP + SSE from one
client, which sends back the history as the server gave it (``MESSAGES_SNAPSHOT``) or, from a
server that sends none, as rebuilt from the streamed events (what a stock client keeps);
``--cycles`` of them, the median and the 90th percentile reported. The printed table
is the one in docs/pydantic-ai.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

from agui_core.conformance import CATALOGUE, Options, Report, run_conformance, transport_for

ROOT = Path(__file__).resolve().parent.parent
TARGET = "tests.adapters.pydantic_ai_agents:parallel"
PROMPT = "Email Bob and Ann."
PACKAGES = ("agui-core", "pydantic-ai-slim", "ag-ui-protocol", "starlette", "uvicorn")


def reference_app() -> Any:
    """Pydantic AI's own AG-UI endpoint over the same agent."""
    from pydantic_ai import DeferredToolRequests
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from tests.adapters.pydantic_ai_agents import parallel

    async def run(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=parallel, output_type=[str, DeferredToolRequests])

    return Starlette(routes=[Route("/", run, methods=["POST"])])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(kind: str, port: int, workdir: Path) -> subprocess.Popen[bytes]:
    if kind == "pydantic-ai":
        command = [sys.executable, __file__, "serve-reference", str(port)]
    else:
        command = [
            sys.executable, "-m", "agui_core.app.cli", "serve", TARGET, "--http", f"127.0.0.1:{port}",
            "--store", f"sqlite:{workdir / 'threads.sqlite3'}", "--log-level", "ERROR",
        ]  # fmt: skip
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{kind} did not listen on {port}")


async def post(client: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    response = await client.post("/", json=body, headers={"accept": "text/event-stream"})
    return [
        json.loads(line[5:])
        for frame in response.text.split("\n\n")
        for line in frame.splitlines()
        if line.startswith("data:")
    ]


def body(thread: str, messages: list[Any], resume: list[Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "threadId": thread,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if resume is not None:
        out["resume"] = resume
    return out


def streamed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages a run streamed, rebuilt as a stock client does (for a server that sends no snapshot)."""
    assistant: dict[str, Any] = {"id": f"a-{uuid.uuid4().hex[:8]}", "role": "assistant", "content": ""}
    calls: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            assistant["id"] = event["messageId"]
        elif event["type"] == "TEXT_MESSAGE_CONTENT":
            assistant["content"] += event["delta"]
        elif event["type"] == "TOOL_CALL_START":
            function = {"name": event["toolCallName"], "arguments": ""}
            calls[event["toolCallId"]] = {"id": event["toolCallId"], "type": "function", "function": function}
        elif event["type"] == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]]["function"]["arguments"] += event["delta"]
        elif event["type"] == "TOOL_CALL_RESULT":
            results.append(
                {
                    "id": event["messageId"],
                    "role": "tool",
                    "toolCallId": event["toolCallId"],
                    "content": event["content"],
                }
            )
    return [{**assistant, "toolCalls": list(calls.values())}, *results]


async def cycle(client: httpx.AsyncClient) -> tuple[float, str]:
    """One approval cycle on a fresh thread: its wall time, and how it ended."""
    thread = f"t-{uuid.uuid4().hex[:8]}"
    messages: list[Any] = [{"id": f"u-{thread}", "role": "user", "content": PROMPT}]
    began = time.perf_counter()
    first = await post(client, body(thread, messages))
    outcome = (first[-1].get("outcome") or {}) if first else {}
    interrupts = outcome.get("interrupts") or []
    snapshots = [e["messages"] for e in first if e["type"] == "MESSAGES_SNAPSHOT"]
    history = snapshots[-1] if snapshots else [*messages, *streamed(first)]
    resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}} for i in interrupts]
    done = await post(client, body(thread, history, resume))
    took = time.perf_counter() - began
    last = done[-1] if done else {}
    ending = f"{last.get('type')} {(last.get('outcome') or {}).get('type', last.get('code', ''))}".strip()
    return took, f"{len(interrupts)} interrupts, then {ending}"


async def measure(kind: str, cycles: int) -> tuple[Report, dict[str, Any]]:
    with tempfile.TemporaryDirectory() as directory:
        port = free_port()
        process = start(kind, port, Path(directory))
        try:
            url = f"http://127.0.0.1:{port}/"
            probe = transport_for(url)
            try:
                report = await run_conformance(
                    probe, Options(prompt=PROMPT, timeout=20.0, expiry_wait=5.0, approve=True)
                )
            finally:
                await probe.aclose()
            times, endings = [], set()
            async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                await cycle(client)  # warm-up, not counted
                for _ in range(cycles):
                    took, ending = await cycle(client)
                    times.append(took * 1000)
                    endings.add(ending)
        finally:
            process.terminate()
            process.wait(timeout=15)
    times.sort()
    timing = {
        "cycles": cycles,
        "median_ms": round(statistics.median(times), 2),
        "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
        "ended": sorted(endings),
    }
    return report, timing


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "serve-reference":
        import uvicorn

        uvicorn.run(reference_app(), host="127.0.0.1", port=int(args[1]), log_level="error")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=50)
    parser.add_argument("--json", type=Path, help="write the results here too")
    options = parser.parse_args(args)
    results: dict[str, tuple[Report, dict[str, Any]]] = {}
    for kind in ("pydantic-ai", "agui-core"):
        results[kind] = asyncio.run(measure(kind, options.cycles))
        print(results[kind][0].table(), file=sys.stderr)
    lines = [
        "| check | rule | Pydantic AI's AG-UI app | agui-core (Pydantic AI adapter) |",
        "| --- | --- | --- | --- |",
    ]
    for spec in CATALOGUE:
        cells = [results[k][0].result(spec.id).status.value for k in results]
        lines.append(f"| `{spec.id}` | {spec.rule} | " + " | ".join(cells) + " |")
    counts = [results[k][0].counts() for k in results]
    lines.append(
        "| **total** | | " + " | ".join(f"{c['pass']} pass, {c['fail']} fail, {c['n/a']} n/a" for c in counts) + " |"
    )
    for label, key in (("approval cycle, median (ms)", "median_ms"), ("approval cycle, p90 (ms)", "p90_ms")):
        lines.append(f"| {label} | | " + " | ".join(str(results[k][1][key]) for k in results) + " |")
    lines.append("| the cycle ended | | " + " | ".join("; ".join(results[k][1]["ended"]) for k in results) + " |")
    print("\n".join(lines))
    versions = {p: version(p) for p in PACKAGES}
    print("\nversions: " + ", ".join(f"{p} {v}" for p, v in versions.items()))
    if options.json is not None:
        document = {k: {"report": r.to_json(), "timing": t} for k, (r, t) in results.items()}
        options.json.write_text(json.dumps({**document, "versions": versions}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
