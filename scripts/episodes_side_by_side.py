"""The retail task set with the same scripted humans against agui-core, ag-ui-langgraph and ag-ui-strands, side by side.

Not run in CI (ag-ui-langgraph and ag-ui-strands are reference packages, installed by the
``test`` extra). From the repository root::

    .venv/bin/python scripts/episodes_side_by_side.py [--trials K] [--only SERVER ...] [--json FILE] [--svg FILE]

Servers, each on a free port of 127.0.0.1, all over HTTP + SSE:

- ``agui-core shop``: ``agui serve agui_core.examples.retail:shop --http --store memory``
  (the straight-line agent of ``agui_core/examples/retail.py``), a process of its own;
- ``agui-core graph``: ``agui serve scripts.retail_graph:graph --http --store memory``, the
  shop as a LangGraph graph through agui-core's LangGraph adapter, a process of its own;
- ``ag-ui-langgraph graph``: the same graph behind ag-ui-langgraph's FastAPI endpoint
  (``add_langgraph_fastapi_endpoint``, ``emit_interrupt_outcome=True``) under uvicorn, in a
  process of its own started by this script (``--serve-langgraph PORT``);
- ``agui-core strands``: ``agui serve scripts.retail_strands:agent --http --store memory``, the
  shop as a Strands agent (``scripts/retail_strands.py``: a scripted model, Strands'
  ``interrupt()`` in a hook and in tools) through agui-core's Strands adapter, a process of its own;
- ``ag-ui-strands``: the same Strands agent and hook behind ag-ui-strands' FastAPI endpoint
  (``add_strands_fastapi_endpoint``, ``reference_app`` of that module) under uvicorn, in a
  process of its own started by this script (``--serve-strands PORT``).

``--only`` picks servers by their short names (``shop``, ``graph``, ``langgraph``,
``strands``, ``ag-ui-strands``; all when not given). Every server gets ``agui episodes``'
runner with the task file ``agui_core/examples/retail_tasks.jsonl`` and each human of
:data:`HUMANS`. The printed Markdown table is the one in docs/episodes.md.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HUMANS = (
    "approve",
    "deny:refundOrder",
    "edit:agui_core.examples.retail:halve_refund",
    "cancel",
    "never",
    "twice",
)


SERVERS = {
    "shop": "agui-core shop",
    "graph": "agui-core graph",
    "langgraph": "ag-ui-langgraph graph",
    "strands": "agui-core strands",
    "ag-ui-strands": "ag-ui-strands",
}
"""The servers by the short names ``--only`` takes, in the order they run."""
QUIET_OTEL = {"OTEL_SDK_DISABLED": "true"}
"""For the Strands servers: Strands sets up OpenTelemetry, which has nowhere to send anything here."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_langgraph(port: int) -> None:
    """ag-ui-langgraph serving scripts/retail_graph.py (run in a process of its own)."""
    import uvicorn
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import FastAPI

    # typing_extensions.TypedDict: ag-ui-langgraph fails on a typing.TypedDict state on 3.11 (issue 15).
    from typing_extensions import TypedDict

    sys.path.insert(0, str(ROOT))
    from scripts.retail_graph import build

    app = FastAPI()
    add_langgraph_fastapi_endpoint(
        app, LangGraphAgent(name="shop", graph=build(TypedDict), emit_interrupt_outcome=True), "/"
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def serve_strands(port: int) -> None:
    """ag-ui-strands serving scripts/retail_strands.py (run in a process of its own)."""
    import logging

    import uvicorn

    sys.path.insert(0, str(ROOT))
    from scripts.retail_strands import reference_app

    logging.getLogger("opentelemetry.context").setLevel(logging.CRITICAL)
    uvicorn.run(reference_app(), host="127.0.0.1", port=port, log_level="warning")


@contextmanager
def process(
    command: list[str], log: Path, url_pattern: str | None, port: int | None, env: dict[str, str] | None = None
) -> Iterator[str]:
    """Start ``command`` (with ``env`` added to this environment); yield its URL once it listens; stop it by its PID."""
    environment = {**os.environ, **env} if env else None
    with log.open("wb") as sink:
        child = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, env=environment)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if child.poll() is not None:
                raise RuntimeError(f"{command} exited: {log.read_text()}")
            if url_pattern is not None and (found := re.search(url_pattern, log.read_text())):
                yield found.group(1)
                return
            if port is not None:
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        yield f"http://127.0.0.1:{port}"
                        return
            time.sleep(0.1)
        raise RuntimeError(f"{command} did not listen within 60 s")
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGTERM)
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(child.pid, signal.SIGKILL)
                child.wait()


def agui_serve(target: str, log: Path, env: dict[str, str] | None = None) -> Any:
    command = [sys.executable, "-m", "agui_core.app.cli", "serve", target, "--http", "127.0.0.1:0", "--store", "memory"]
    return process(command, log, r"over http: (http://[^ \n]*)\n", None, env)


def reference_serve(option: str, log: Path, env: dict[str, str] | None = None) -> Any:
    """This script started again with ``option PORT`` (a reference package's server), on a free port."""
    port = free_port()
    command = [sys.executable, str(Path(__file__).resolve()), option, str(port)]
    return process(command, log, None, port, env)


def serve(short: str, tmp: Path) -> Any:
    """The server ``short`` (a key of :data:`SERVERS`) started; its URL once it listens."""
    if short == "shop":
        return agui_serve("agui_core.examples.retail:shop", tmp / "shop.log")
    if short == "graph":
        return agui_serve("scripts.retail_graph:graph", tmp / "graph.log")
    if short == "langgraph":
        return reference_serve("--serve-langgraph", tmp / "langgraph.log")
    if short == "strands":
        return agui_serve("scripts.retail_strands:agent", tmp / "strands.log", QUIET_OTEL)
    return reference_serve("--serve-strands", tmp / "ag-ui-strands.log", QUIET_OTEL)


def run_all(url: str, trials: int) -> dict[str, Any]:
    import anyio

    from agui_core.app.episodes import EpisodesOptions, run_episodes
    from agui_core.episodes import load_tasks, parse_human
    from agui_core.examples.retail import TASKS

    tasks = load_tasks(TASKS)
    options = EpisodesOptions(trials=trials, concurrency=6, seed=0, max_wait=10.0, episode_timeout=60.0)
    return {human: anyio.run(run_episodes, url, tasks, parse_human(human), options) for human in HUMANS}


def markdown(results: dict[str, dict[str, Any]], trials: int) -> str:
    lines = [
        f"| server | human | pass^1 | pass^{trials} | unapproved actions | approvals honoured once "
        "| refusals | broken off |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for server, by_human in results.items():
        for human, report in by_human.items():
            k = max(report.pass_k)
            refusals = ", ".join(f"{c} {n}" for c, n in sorted(report.refusals.items())) or "-"
            lines.append(
                f"| {server} | `{human.split(':')[0] if human.startswith('edit') else human}` "
                f"| {report.pass_k[1]:.2f} | {report.pass_k[k]:.2f} | {report.unapproved_actions} "
                f"| {report.honoured_once}/{report.approvals} | {refusals} | {report.broken} |"
            )
    return "\n".join(lines) + "\n"


def failures(results: dict[str, dict[str, Any]]) -> str:
    lines = []
    for server, by_human in results.items():
        for human, report in by_human.items():
            seen: dict[str, set[str]] = {}
            for episode in report.episodes:
                for failure in episode.failures:
                    seen.setdefault(failure[:160], set()).add(episode.task)
            for failure, tasks in sorted(seen.items()):
                lines.append(f"- {server}, `{human}`: {failure} ({', '.join(sorted(tasks))})")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--svg", metavar="FILE")
    parser.add_argument(
        "--only", action="append", choices=list(SERVERS), metavar="SERVER", help=f"run only these: {', '.join(SERVERS)}"
    )
    parser.add_argument("--serve-langgraph", type=int, metavar="PORT", help=argparse.SUPPRESS)
    parser.add_argument("--serve-strands", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_langgraph is not None:
        serve_langgraph(args.serve_langgraph)
        return 0
    if args.serve_strands is not None:
        serve_strands(args.serve_strands)
        return 0
    import orjson

    from agui_core.episodes.plot import plot_svg

    results: dict[str, dict[str, Any]] = {}
    chosen = [short for short in SERVERS if args.only is None or short in args.only]
    with tempfile.TemporaryDirectory() as tmp:
        for short in chosen:
            with serve(short, Path(tmp)) as url:
                results[SERVERS[short]] = run_all(url, args.trials)
    print(markdown(results, args.trials))
    print(failures(results))
    if args.json:
        document = {s: {h: r.to_json(episodes=False) for h, r in by.items()} for s, by in results.items()}
        Path(args.json).write_bytes(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
    if args.svg:
        import attrs

        named = [attrs.evolve(by["approve"], labels={"name": f"{s}, approve"}) for s, by in results.items()]
        Path(args.svg).write_text(plot_svg(named))
    return 0


if __name__ == "__main__":
    sys.exit(main())
