"""The same Strands agents served by ag-ui-strands and by agui-core, probed by one client over HTTP + SSE.

Not run in CI (ag-ui-strands is a reference package, installed by the ``test`` extra). From the
repository root::

    .venv/bin/python scripts/strands_side_by_side.py [--json FILE]

Every server is a process of its own on a free port of 127.0.0.1, started afresh for each
probe: ag-ui-strands 1.0.2 is its FastAPI endpoint (``add_strands_fastapi_endpoint``) under
uvicorn, its default configuration (no session manager); agui-core is ``agui serve
scripts.strands_side_by_side:AGENT --http`` over a SQLite file. Both serve the agents defined
below, the same code: a scripted model (no LLM, no network), ``send_email`` and
``file_report`` tools, and hooks that interrupt with Strands' own ``interrupt()``. The hooks
accept an answer as sent or wrapped as ``{"response": ...}`` (what ag-ui-strands hands them),
except the ``strict`` agent's, which checks the payload it asked for. Tool executions are
appended to a file by the served process.

The probes (one client, plain HTTP + SSE, no client library):

- ``payload``: the strict hook approves only ``{"approved": true}``; is the tool run?
- ``replay``: an approval, then a chained question from inside the tool, answered; then the
  first resume is sent again: what comes back, and does anything run again?
- ``schema``: the chained question declares a JSON Schema (``enum``, ``minimum``,
  ``additionalProperties: false``); an answer breaking it is sent.
- ``expiry``: the hook's interrupt declares ``expiresAt`` 2 s ahead; the answer is sent after it.
- ``workers``: two server processes (ag-ui-strands: the same app twice; agui-core: two hosts
  on one SQLite file); the interrupt is raised through one, answered through the other.
- ``restart``: the server is restarted between the interrupt and its answer.
- ``mid-resume``: the server is killed (SIGKILL) while the approved tool runs (it takes 2 s),
  restarted, and the same resume is sent again until it ends.

The printed table is the one in docs/conformance.md and the README. (No postponed annotations
here: Strands reads the tools' annotations, and they name classes imported inside a function.)
"""

import argparse
import asyncio
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EXECUTIONS_ENV = "STRANDS_SXS_EXECUTIONS"
FILING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
    },
    "required": ["quarter", "year"],
    "additionalProperties": False,
}


# -- the agents (both servers import these) ---------------------------------------------------


def _record(line: dict[str, Any]) -> None:
    path = os.environ.get(EXECUTIONS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(json.dumps(line) + "\n")


def _unwrapped(answer: Any) -> Any:
    """The payload, whether it came as sent or wrapped as ``{"response": payload}``."""
    if isinstance(answer, dict) and set(answer) == {"response"}:
        return answer["response"]
    return answer


@functools.cache
def _parts() -> dict[str, Any]:
    from strands import Agent, ToolContext, tool
    from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
    from strands.models.model import Model

    @tool
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        _record({"tool": "send_email", "to": to, "event": "done"})
        return f"sent to {to}: {subject}"

    @tool
    def slow_email(to: str, subject: str) -> str:
        """Send an email, slowly."""
        _record({"tool": "slow_email", "to": to, "event": "start"})
        time.sleep(2.0)
        _record({"tool": "slow_email", "to": to, "event": "done"})
        return f"sent to {to}: {subject}"

    @tool(context=True)
    def file_report(kind: str, tool_context: ToolContext) -> str:
        """File a report; asks for the quarter while it runs."""
        answer = _unwrapped(
            tool_context.interrupt(
                "quarter",
                reason={"message": f"Which quarter is the {kind} report for?", "responseSchema": FILING_SCHEMA},
            )
        )
        if not isinstance(answer, dict) or "quarter" not in answer:
            return "nothing filed"
        _record({"tool": "file_report", "filing": answer, "event": "done"})
        return f"filed {kind} for {answer.get('quarter')} {answer.get('year')}"

    class ScriptedModel(Model):
        def __init__(self, name: str, args: dict[str, Any]) -> None:
            self.call = (name, args)
            self.config: dict[str, Any] = {"model_id": "scripted"}

        def update_config(self, **model_config: Any) -> None:
            self.config.update(model_config)

        def get_config(self) -> Any:
            return self.config

        def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(
            self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
        ) -> AsyncIterator[Any]:
            last = messages[-1]["content"] if messages else []
            results = [b["toolResult"] for b in last if "toolResult" in b]
            yield {"messageStart": {"role": "assistant"}}
            if results:
                said = " ".join(c.get("text", "") for r in results for c in r.get("content", []))
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": f"Done: {said}"}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
            else:
                name, args = self.call
                use = {"name": name, "toolUseId": f"tooluse_{uuid.uuid4().hex[:12]}"}
                yield {"contentBlockStart": {"start": {"toolUse": use}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
            yield {
                "metadata": {
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                    "metrics": {"latencyMs": 0},
                }
            }

    class Approval(HookProvider):
        """Asks before every tool call; ``strict`` approves only the exact payload ``{"approved": true}``."""

        def __init__(self, *, strict: bool = False, ttl: float | None = None) -> None:
            self.strict = strict
            self.ttl = ttl

        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

        def before_tool_call(self, event: BeforeToolCallEvent) -> None:
            reason: dict[str, Any] = {"message": f"Run {event.tool_use['name']}?"}
            if self.ttl is not None:
                expires = datetime.now(UTC) + timedelta(seconds=self.ttl)
                reason["expiresAt"] = expires.isoformat(timespec="milliseconds").replace("+00:00", "Z")
            answer = event.interrupt("approval", reason=reason)
            if not self.strict:
                answer = _unwrapped(answer)
            if answer != {"approved": True}:
                event.cancel_tool = "not approved"

    def build(call: tuple[str, dict[str, Any]], hooks: list[Any]) -> Any:
        return Agent(
            model=ScriptedModel(*call),
            tools=[send_email, slow_email, file_report],
            hooks=hooks,
            callback_handler=None,
            system_prompt="You do what you are asked.",
        )

    email = ("send_email", {"to": "bob@example.com", "subject": "Hi"})
    return {
        "strict": (email, lambda: [Approval(strict=True)]),
        "approval": (email, lambda: [Approval()]),
        "chained": (("file_report", {"kind": "quarterly"}), lambda: [Approval()]),
        "expiring": (email, lambda: [Approval(ttl=2.0)]),
        "slow": (("slow_email", {"to": "bob@example.com", "subject": "Hi"}), lambda: [Approval()]),
        "build": build,
    }


def _factory(name: str) -> Callable[[], Any]:
    def make() -> Any:
        parts = _parts()
        call, hooks = parts[name]
        return parts["build"](call, hooks())

    make.__name__ = f"{name}_agent"
    return make


strict_agent = _factory("strict")
approval_agent = _factory("approval")
chained_agent = _factory("chained")
expiring_agent = _factory("expiring")
slow_agent = _factory("slow")


def reference_app(name: str) -> Any:
    """The agent ``name`` behind ag-ui-strands' FastAPI endpoint (hooks go to ``StrandsAgent``)."""
    from ag_ui_strands import StrandsAgent, add_strands_fastapi_endpoint
    from fastapi import FastAPI

    parts = _parts()
    call, hooks = parts[name]
    app = FastAPI()
    add_strands_fastapi_endpoint(app, StrandsAgent(parts["build"](call, []), name=name, hooks=hooks()), "/")
    return app


# -- servers ----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """One server process of ``kind`` (``reference`` or ``agui-core``) serving agent ``name``."""

    def __init__(self, kind: str, name: str, port: int, workdir: Path) -> None:
        self.kind, self.name, self.port, self.workdir = kind, name, port, workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> None:
        if self.kind == "reference":
            command = [sys.executable, __file__, "serve-reference", self.name, str(self.port)]
        else:
            command = [
                sys.executable, "-m", "agui_core.app.cli", "serve", f"scripts.strands_side_by_side:{self.name}_agent",
                "--http", f"127.0.0.1:{self.port}", "--store", f"sqlite:{self.workdir / 'threads.sqlite3'}",
                "--log-level", "ERROR",
            ]  # fmt: skip
        env = {**os.environ, EXECUTIONS_ENV: str(self.workdir / "executions.jsonl"), "OTEL_SDK_DISABLED": "true"}
        self.process = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"{self.kind} did not listen on {self.port}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def executions(self) -> list[dict[str, Any]]:
        path = self.workdir / "executions.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@asynccontextmanager
async def served(kind: str, name: str, count: int = 1) -> AsyncIterator[list[Server]]:
    with tempfile.TemporaryDirectory() as directory:
        servers = [Server(kind, name, free_port(), Path(directory)) for _ in range(count)]
        for server in servers:
            server.start()
        try:
            yield servers
        finally:
            for server in servers:
                if server.process is not None and server.process.poll() is None:
                    server.stop()


# -- the client -------------------------------------------------------------------------------


async def post(url: str, body: dict[str, Any], timeout: float = 60.0) -> list[dict[str, Any]]:
    """POST ``body``; the events of the SSE response (``[]`` when the connection broke)."""
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    payload = json.dumps(body).encode()
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
    except OSError:
        return []
    # The Host header names the loopback address: with no authenticator, agui serve answers only that.
    writer.write(
        b"POST / HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
        b"Connection: close\r\nContent-Length: %d\r\n\r\n" % (host.encode(), port.encode(), len(payload)) + payload
    )
    try:
        raw = await asyncio.wait_for(reader.read(-1), timeout)
    except (TimeoutError, OSError):
        raw = b""
    writer.close()
    head, _, body_bytes = raw.partition(b"\r\n\r\n")
    if b"chunked" in head.lower():
        data, rest = bytearray(), body_bytes
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            try:
                size = int(size_line, 16)
            except ValueError:
                break
            if size == 0:
                break
            data += rest[:size]
            rest = rest[size + 2 :]
        body_bytes = bytes(data)
    events = []
    for frame in body_bytes.split(b"\n\n"):
        for line in frame.split(b"\n"):
            if line.startswith(b"data:"):
                events.append(json.loads(line[5:].strip()))
    return events


def run_input(thread: str, messages: list[Any], resume: list[Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "threadId": thread,
        "runId": f"run-{uuid.uuid4().hex[:8]}",
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    if resume is not None:
        body["resume"] = resume
    return body


def messages_of(events: list[dict[str, Any]], before: list[Any]) -> list[Any]:
    snapshots = [e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    return snapshots[-1] if snapshots else before


def interrupts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    last = events[-1] if events else {}
    outcome = last.get("outcome") or {}
    return list(outcome.get("interrupts", [])) if last.get("type") == "RUN_FINISHED" else []


def ending(events: list[dict[str, Any]]) -> str:
    if not events:
        return "no response"
    last = events[-1]
    if last["type"] == "RUN_ERROR":
        return f"RUN_ERROR {last.get('code') or '(no code)'}"
    if last["type"] == "RUN_FINISHED":
        kind = (last.get("outcome") or {}).get("type", "success")
        return f"RUN_FINISHED {kind}"
    return f"cut after {last['type']}"


class Thread:
    def __init__(self) -> None:
        self.id = f"t-{uuid.uuid4().hex[:8]}"
        self.messages: list[Any] = [{"id": "u-1", "role": "user", "content": "Please do it."}]

    async def start(self, url: str) -> list[dict[str, Any]]:
        events = await post(url, run_input(self.id, self.messages))
        self.messages = messages_of(events, self.messages)
        return events

    def resume(self, entries: list[dict[str, Any]]) -> dict[str, Any]:
        return run_input(self.id, self.messages, entries)

    async def send(self, url: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        events = await post(url, body)
        self.messages = messages_of(events, self.messages)
        return events


def approve_all(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}} for i in interrupts(events)]


def ran(server: Server, tool: str) -> int:
    return sum(1 for e in server.executions() if e["tool"] == tool and e["event"] == "done")


# -- the probes -------------------------------------------------------------------------------


async def probe_payload(kind: str) -> str:
    async with served(kind, "strict") as (server,):
        thread = Thread()
        first = await thread.start(server.url)
        done = await thread.send(server.url, thread.resume(approve_all(first)))
        return f"{ending(done)}; tool ran {ran(server, 'send_email')}x"


async def probe_replay(kind: str) -> str:
    async with served(kind, "chained") as (server,):
        thread = Thread()
        first = await thread.start(server.url)
        resume1 = thread.resume(approve_all(first))
        chained = await thread.send(server.url, resume1)
        (question,) = interrupts(chained) or [None]
        if question is None:
            return f"no chained interrupt ({ending(chained)})"
        answer = {"interruptId": question["id"], "status": "resolved", "payload": {"quarter": "Q3", "year": 2026}}
        done = await thread.send(server.url, thread.resume([answer]))
        again = await post(server.url, {**resume1, "runId": f"run-{uuid.uuid4().hex[:8]}"})
        same = interrupts(again) and [i["id"] for i in interrupts(again)] == [question["id"]]
        return (
            f"chain ends {ending(done)}; the first resume again: {ending(again)}"
            + (" (the first outcome replayed)" if same else "")
            + f"; tool ran {ran(server, 'file_report')}x"
        )


async def probe_schema(kind: str) -> str:
    async with served(kind, "chained") as (server,):
        thread = Thread()
        first = await thread.start(server.url)
        chained = await thread.send(server.url, thread.resume(approve_all(first)))
        (question,) = interrupts(chained) or [None]
        if question is None:
            return f"no chained interrupt ({ending(chained)})"
        published = "responseSchema published" if question.get("responseSchema") else "no responseSchema published"
        bad = {"quarter": "Q9", "year": 1999, "extra": True}
        answer = {"interruptId": question["id"], "status": "resolved", "payload": bad}
        done = await thread.send(server.url, thread.resume([answer]))
        filed = [e["filing"] for e in server.executions() if e["tool"] == "file_report"]
        return f"{published}; {json.dumps(bad)}: {ending(done)}" + (f"; filed {filed[0]}" if filed else "")


async def probe_expiry(kind: str) -> str:
    async with served(kind, "expiring") as (server,):
        thread = Thread()
        first = await thread.start(server.url)
        (interrupt,) = interrupts(first) or [None]
        if interrupt is None:
            return f"no interrupt ({ending(first)})"
        carried = f"expiresAt {'set' if interrupt.get('expiresAt') else 'not set'}"
        await asyncio.sleep(2.5)
        late = await thread.send(server.url, thread.resume(approve_all(first)))
        return f"{carried}; answered 0.5 s late: {ending(late)}; tool ran {ran(server, 'send_email')}x"


async def probe_workers(kind: str) -> str:
    async with served(kind, "approval", count=2) as (one, two):
        thread = Thread()
        first = await thread.start(one.url)
        done = await thread.send(two.url, thread.resume(approve_all(first)))
        cell = f"raised on one, answered on the other: {ending(done)}"
        if done and done[-1]["type"] == "RUN_ERROR":
            plain = await post(two.url, run_input(thread.id, thread.messages))
            cell += f"; a plain input there: {ending(plain)}"
        return cell + f"; tool ran {ran(one, 'send_email')}x"


async def probe_restart(kind: str) -> str:
    async with served(kind, "approval") as (server,):
        thread = Thread()
        first = await thread.start(server.url)
        server.stop()
        server.start()
        done = await thread.send(server.url, thread.resume(approve_all(first)))
        return f"{ending(done)}; tool ran {ran(server, 'send_email')}x"


async def probe_mid_resume(kind: str) -> str:
    async with served(kind, "slow") as (server,):
        thread = Thread()
        first = await thread.start(server.url)
        body = thread.resume(approve_all(first))
        cut = asyncio.ensure_future(post(server.url, body))
        deadline = time.monotonic() + 10
        while not any(e["event"] == "start" for e in server.executions()) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        server.stop(signal.SIGKILL)
        await cut
        server.start()
        tries, started = [], time.monotonic()
        while time.monotonic() - started < 40:
            events = await post(server.url, {**body, "runId": body["runId"]})
            tries.append(ending(events))
            if events and events[-1]["type"] == "RUN_FINISHED":
                break
            events = await post(server.url, {**body, "runId": f"run-{uuid.uuid4().hex[:8]}"})
            tries.append(ending(events))
            if events and events[-1]["type"] == "RUN_FINISHED":
                break
            await asyncio.sleep(1.0)
        waited = time.monotonic() - started
        seen = sorted(set(tries), key=tries.index)
        started_runs = sum(1 for e in server.executions() if e["event"] == "start")
        return (
            f"after the restart: {' / '.join(seen)} ({len(tries)} tries, {waited:.0f} s); "
            f"tool started {started_runs}x, finished {ran(server, 'slow_email')}x"
        )


PROBES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "payload": ('the hook\'s `interrupt()` returns the payload sent (`{"approved": true}`)', probe_payload),
    "replay": ("replay of the first resume after a chained interrupt", probe_replay),
    "schema": ("full JSON Schema on the chained question's payload", probe_schema),
    "expiry": ("`expiresAt` declared by the hook, answered late", probe_expiry),
    "workers": ("two workers", probe_workers),
    "restart": ("host restarted between interrupt and resume", probe_restart),
    "mid-resume": ("host killed while the approved tool runs, restarted", probe_mid_resume),
}


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


async def measure(only: list[str]) -> dict[str, dict[str, str]]:
    results: dict[str, dict[str, str]] = {}
    for name in only:
        _, probe = PROBES[name]
        results[name] = {}
        for kind in ("reference", "agui-core"):
            try:
                results[name][kind] = await probe(kind)
            except Exception as exc:  # the table says what could not be measured
                results[name][kind] = f"not measured: {type(exc).__name__}: {exc}"
            print(f"{name} / {kind}: {results[name][kind]}", file=sys.stderr)
    return results


def table(results: dict[str, dict[str, str]]) -> str:
    lines = ["| behaviour | ag-ui-strands 1.0.2 | agui-core (Strands adapter) |", "| --- | --- | --- |"]
    for name, cells in results.items():
        lines.append(f"| {PROBES[name][0]} | {cells['reference']} | {cells['agui-core']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "serve-reference":
        import logging

        import uvicorn

        logging.getLogger("opentelemetry.context").setLevel(logging.CRITICAL)
        uvicorn.run(reference_app(args[1]), host="127.0.0.1", port=int(args[2]), log_level="error")
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=list(PROBES))
    parser.add_argument("--json", type=Path, help="write the results here too")
    options = parser.parse_args(args)
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")
    results = asyncio.run(measure(options.only or list(PROBES)))
    print(table(results))
    versions = {p: version(p) for p in ("agui-core", "ag-ui-strands", "strands-agents", "fastapi", "uvicorn")}
    print("\nversions: " + ", ".join(f"{p} {v}" for p, v in versions.items()))
    if options.json is not None:
        options.json.write_text(json.dumps({"results": results, "versions": versions}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
