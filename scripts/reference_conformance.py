"""Run ``agui conformance`` against agui-core and the two reference AG-UI integrations.

Not run in CI: the reference packages are heavy and are not dependencies of agui-core. Install
them into a virtual environment of the repository and run the script from its root::

    python3 -m venv .venv && .venv/bin/pip install -e '.[test]'
    .venv/bin/pip install ag-ui-langgraph==0.0.47 'langgraph>=1.2' ag-ui-strands==1.0.2 \
        strands-agents==1.62.0 uvicorn fastapi
    .venv/bin/python scripts/reference_conformance.py [--only NAME ...] [--out DIR] [--docs]

It starts, each on a free port of 127.0.0.1:

- ``agui-core``: ``agui serve agui_core.examples.assistant:assistant --http`` (a subprocess,
  in-memory store), driven with the prompt ``email the team``;
- ``ag-ui-langgraph-parallel`` and ``agui-core-langgraph``: one LangGraph graph
  (``scripts/langgraph_conformance_graph.py``: two tool approvals raised in parallel branches,
  each with a ``responseSchema`` and an ``expiresAt``) served by ag-ui-langgraph's endpoint
  (structured outcome on) and by ``agui serve scripts.langgraph_conformance_graph:graph --http``
  (agui-core's LangGraph adapter);
- ``ag-ui-langgraph``: its FastAPI endpoint (``add_langgraph_fastapi_endpoint``) under uvicorn,
  serving a LangGraph graph of plain Python nodes (no LLM, no network) whose ``approve`` node
  calls ``interrupt()`` for an approval with a ``responseSchema``; the structured interrupt
  outcome is switched on (``LangGraphAgent(emit_interrupt_outcome=True)``, off by default);
- ``ag-ui-strands``: its FastAPI endpoint (``add_strands_fastapi_endpoint``) under uvicorn,
  serving a Strands ``Agent`` whose model is a scripted provider (a tool call to ``send_email``
  first, then text once the tool result is in; no LLM, no network) and whose hook raises a
  native Strands interrupt before the tool call (``BeforeToolCallEvent.interrupt``);
- ``agui-core-strands``: that same Strands agent (one function builds both) hosted by
  agui-core's adapter: ``agui serve scripts.reference_conformance:strands_agent --http``.

- ``agui-core-email-bob`` and ``agui-core-form``: the assistant again, with the prompts of its
  other scenarios (one approval; a form with an ``expiresAt``); ``agui-core-default``: the
  assistant with ``email the team`` again, tested as ``agui conformance`` does by default
  (approving nothing).

Then it runs the kit in process (``agui_core.conformance.run_conformance``) against each over
HTTP + SSE, with ``approve`` on (but for ``agui-core-default``): every agent here is local
and scripted, its tools only count or format a string, so the checks that need a tool to run
apply (``agui conformance`` leaves them out unless ``--approve``). It prints each report's
table, writes ``DIR/<name>.json`` (default ``docs/conformance``) and ends with the
side-by-side summary (check by check, with each check's force) and the versions of the
packages used. With ``--docs`` it also rewrites the generated blocks of docs/conformance.md
(between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated: NAME -->``) whose
targets were all measured: the reports there are this script's output, never edited by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import functools
import itertools
import json
import logging
import os
import platform
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from agui_core.conformance import CATALOGUE, Force, Options, Report, run_conformance, transport_for

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "agui-core",
    "ag-ui-protocol",
    "ag-ui-langgraph",
    "langgraph",
    "langchain-core",
    "ag-ui-strands",
    "strands-agents",
    "fastapi",
    "uvicorn",
)
HOOK_ANSWERS: list[Any] = []
"""What the Strands hook's ``interrupt()`` returned on each resume, as it came (kept in the report)."""
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {seconds} s")


class UvicornThread:
    """A FastAPI app served by uvicorn on its own thread and event loop."""

    def __init__(self, app: Any, port: int) -> None:
        import uvicorn

        self.port = port
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> UvicornThread:
        self.thread.start()
        wait_for_port(self.port)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


# ---------------------------------------------------------------------------------------------
# ag-ui-langgraph: a graph of plain Python nodes that asks for an approval


def langgraph_app() -> Any:
    from typing import Annotated

    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import FastAPI
    from langchain_core.messages import AIMessage, AnyMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import interrupt

    # typing_extensions.TypedDict: ag-ui-langgraph 0.0.47 fails on the first run of a graph
    # whose state is a typing.TypedDict on Python 3.11 (issue 15).
    from typing_extensions import TypedDict

    # The functional form: the module's `from __future__ import annotations` would leave a
    # class body's annotations as strings naming this function's locals.
    State = TypedDict(  # noqa: UP013
        "State", {"messages": Annotated[list[AnyMessage], add_messages], "approved": bool}, total=False
    )

    sent = itertools.count(1)

    def draft(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content="I will email the team the release notes.", id=str(uuid.uuid4()))]}

    def approve(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt(
            {
                "reason": "confirmation",
                "message": "Send the release notes to the team?",
                "responseSchema": APPROVAL_SCHEMA,
            }
        )
        approved = isinstance(answer, dict) and answer.get("approved") is True
        return {"approved": approved}

    def send(state: dict[str, Any]) -> dict[str, Any]:
        # The number shows each execution in the stream: a replay that runs the node again
        # shows a different text.
        text = f"Email #{next(sent)} sent." if state.get("approved") else "Not sent."
        return {"messages": [AIMessage(content=text, id=str(uuid.uuid4()))]}

    builder = StateGraph(State)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_node("send", send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", "send")
    builder.add_edge("send", END)
    graph = builder.compile(checkpointer=InMemorySaver())

    app = FastAPI()
    agent = LangGraphAgent(name="approver", graph=graph, emit_interrupt_outcome=True)
    add_langgraph_fastapi_endpoint(app, agent, "/")
    return app


def langgraph_parallel_app() -> Any:
    """ag-ui-langgraph serving scripts/langgraph_conformance_graph.py: the graph agui-core serves too."""
    from ag_ui_langgraph import LangGraphAgent, add_langgraph_fastapi_endpoint
    from fastapi import FastAPI

    # typing_extensions.TypedDict: ag-ui-langgraph 0.0.47 fails on the first run of a graph
    # whose state is a typing.TypedDict on Python 3.11 (issue 15).
    from typing_extensions import TypedDict

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the graph module is scripts/langgraph_conformance_graph.py
    from scripts.langgraph_conformance_graph import build

    app = FastAPI()
    agent = LangGraphAgent(name="approver", graph=build(TypedDict), emit_interrupt_outcome=True)
    add_langgraph_fastapi_endpoint(app, agent, "/")
    return app


# ---------------------------------------------------------------------------------------------
# ag-ui-strands: a scripted model, a tool, and a hook that interrupts before the tool runs


@functools.cache
def _strands_parts() -> tuple[Callable[[list[Any]], Any], Callable[[], Any]]:
    """(build the agent with these hooks, make its approval hook): one definition for both hosts."""
    from strands import Agent, tool
    from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
    from strands.models.model import Model

    executions = itertools.count(1)

    @tool
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        return f"email #{next(executions)} sent to {to}: {subject}"

    class ScriptedModel(Model):
        """Proposes ``send_email`` for a user's message, answers with text once a tool result is in."""

        def __init__(self) -> None:
            self.config: dict[str, Any] = {"model_id": "scripted"}

        def update_config(self, **model_config: Any) -> None:
            self.config.update(model_config)

        def get_config(self) -> Any:
            return self.config

        def structured_output(self, output_model: Any, prompt: Any, system_prompt: Any = None, **kwargs: Any) -> Any:
            raise NotImplementedError("the scripted model has no structured output")

        async def stream(
            self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
        ) -> AsyncIterator[Any]:
            last = messages[-1]["content"] if messages else []
            yield {"messageStart": {"role": "assistant"}}
            if any("toolResult" in block for block in last):
                result = next(block["toolResult"] for block in last if "toolResult" in block)
                words = " ".join(c.get("text", "") for c in result.get("content", []))
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": f"Done ({result.get('status')}): {words}"}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
            else:
                tool_use_id = f"tooluse_{uuid.uuid4().hex[:12]}"
                args = {"to": "team@example.com", "subject": "release notes"}
                yield {"contentBlockStart": {"start": {"toolUse": {"name": "send_email", "toolUseId": tool_use_id}}}}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
            yield {
                "metadata": {
                    "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
                    "metrics": {"latencyMs": 0},
                }
            }

    class ApprovalHook(HookProvider):
        """Asks for an approval (a native Strands interrupt) before every ``send_email`` call."""

        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(BeforeToolCallEvent, self.before_tool)

        def before_tool(self, event: BeforeToolCallEvent) -> None:
            if event.tool_use["name"] != "send_email":
                return
            answer = event.interrupt(
                "approval",
                reason={"message": "Send the release notes to the team?", "tool": "send_email"},
            )
            if len(HOOK_ANSWERS) < 5:
                HOOK_ANSWERS.append(answer)
            # ag-ui-strands 1.0.2 hands the hook {"response": <payload>} rather than the payload
            # sent (issue 16); the unwrapping lets the approval through so the rest of the
            # contract can be measured.
            if isinstance(answer, dict) and isinstance(answer.get("response"), dict):
                answer = answer["response"]
            if not (isinstance(answer, dict) and answer.get("approved") is True):
                event.cancel_tool = "The person did not approve sending the email."

    def build(hooks: list[Any]) -> Any:
        return Agent(
            model=ScriptedModel(),
            tools=[send_email],
            hooks=hooks,
            callback_handler=None,
            system_prompt="You send emails when asked.",
        )

    return build, ApprovalHook


def strands_agent() -> Any:
    """The Strands agent, hook included, as agui-core hosts it: ``agui serve
    scripts.reference_conformance:strands_agent`` (a factory: a fresh agent per run)."""
    build, hook = _strands_parts()
    return build([hook()])


def strands_app() -> Any:
    from ag_ui_strands import StrandsAgent, add_strands_fastapi_endpoint
    from fastapi import FastAPI

    build, hook = _strands_parts()
    app = FastAPI()
    # The hook goes to StrandsAgent, not to the template Agent: the adapter builds an agent per
    # thread and forwards only the providers passed to it (a template's hooks never fire).
    add_strands_fastapi_endpoint(app, StrandsAgent(build([]), name="approver", hooks=[hook()]), "/")
    return app


# ---------------------------------------------------------------------------------------------
# agui-core: its own host, as a subprocess


class AguiServe:
    def __init__(self, port: int, target: str = "agui_core.examples.assistant:assistant") -> None:
        self.port = port
        self.target = target
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> AguiServe:
        agui = Path(sys.executable).with_name("agui")
        command = [str(agui)] if agui.exists() else [sys.executable, "-m", "agui_core.app.cli"]
        self.process = subprocess.Popen(
            [
                *command,
                "serve",
                self.target,
                "--http",
                f"127.0.0.1:{self.port}",
                "--store",
                "memory",
                "--log-level",
                "WARNING",
            ],
            cwd=ROOT,
        )
        wait_for_port(self.port)
        return self

    def __exit__(self, *_: object) -> None:
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


# ---------------------------------------------------------------------------------------------


def version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


# name: (start the server on a port, the prompt, the answers (None: the kit's own payloads)).
# The Strands interrupt carries no responseSchema, so the kit would answer it with {}; the
# answer file gives the approval the hook asks for.
TARGETS: dict[str, tuple[Callable[[int], Any], str, dict[str, Any] | None]] = {
    "agui-core": (AguiServe, "email the team", None),
    "agui-core-email-bob": (AguiServe, "email bob", None),
    # The same as agui-core, run as `agui conformance` runs by default: without approve.
    "agui-core-default": (AguiServe, "email the team", None),
    "agui-core-form": (AguiServe, "file the quarterly form", None),
    "ag-ui-langgraph": (lambda port: UvicornThread(langgraph_app(), port), "Email the team the release notes.", None),
    # One LangGraph graph (scripts/langgraph_conformance_graph.py: two tool approvals raised in
    # parallel branches), served by ag-ui-langgraph and by agui-core's adapter (`agui serve
    # MODULE:GRAPH`): the side by side of docs/conformance.md, "LangGraph, the same graph".
    "ag-ui-langgraph-parallel": (
        lambda port: UvicornThread(langgraph_parallel_app(), port),
        "Email the team the release notes.",
        None,
    ),
    "agui-core-langgraph": (
        lambda port: AguiServe(port, "scripts.langgraph_conformance_graph:graph"),
        "Email the team the release notes.",
        None,
    ),
    "ag-ui-strands": (
        lambda port: UvicornThread(strands_app(), port),
        "Email the team the release notes.",
        {"*": {"approved": True}},
    ),
    # The same Strands agent (model, tool, hook) hosted by agui-core's adapter.
    "agui-core-strands": (
        lambda port: AguiServe(port, "scripts.reference_conformance:strands_agent"),
        "Email the team the release notes.",
        {"*": {"approved": True}},
    ),
}


WITHOUT_APPROVE = {"agui-core-default"}
"""Targets the kit tests as it does by default: approving nothing."""


def measure(name: str, out: Path, options: Options) -> Report | str:
    start, prompt, answers = TARGETS[name]
    port = free_port()
    try:
        with start(port):
            url = f"http://127.0.0.1:{port}/"
            report = asyncio.run(
                run_conformance(
                    transport_for(url),
                    Options(
                        prompt=prompt,
                        answers=answers,
                        expiry_wait=options.expiry_wait,
                        timeout=options.timeout,
                        approve=name not in WITHOUT_APPROVE,
                    ),
                    server={"name": name, "versions": {p: version(p) for p in PACKAGES}},
                )
            )
    except Exception as exc:  # the summary says what could not be measured
        return f"{type(exc).__name__}: {exc}"
    out.mkdir(parents=True, exist_ok=True)
    document = report.to_json()
    document["prompt"] = prompt
    document["answersGiven"] = answers  # the --answers file; the kit's own answers are under "answers"
    if name == "ag-ui-strands":
        document["hookAnswers"] = HOOK_ANSWERS
    (out / f"{name}.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(report.table())
    print()
    return report


def _cell(report: Report | str, check_id: str) -> str:
    if isinstance(report, str):
        return "not run"
    try:
        result = report.result(check_id)
    except KeyError:
        return "-"
    if result.status.value != "fail":
        return result.status.value
    # A result judged by another force than its check's says so.
    extra = f" ({result.judged.value})" if result.judged is not result.spec.force else ""
    return f"**fail**{extra}"


def summary(reports: dict[str, Report | str], headings: dict[str, str] | None = None) -> str:
    """The side-by-side table: a row per check with its force, a column per target, then what
    each target breaks of the spec and misses of the seed's profile, and the totals."""
    names = list(reports)
    shown = [(headings or {}).get(name, name) for name in names]
    lines = [
        "| check | force | rule | " + " | ".join(shown) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for spec in CATALOGUE:
        cells = [_cell(reports[name], spec.id) for name in names]
        lines.append(f"| `{spec.id}` | {spec.force.value} | {spec.rule} | " + " | ".join(cells) + " |")
    for label, force in (
        ("breaks the spec (MUST)", Force.SPEC_MUST),
        ("misses a spec SHOULD", Force.SPEC_SHOULD),
        ("misses only the seed's profile", Force.SEED),
    ):
        cells = []
        for name in names:
            report = reports[name]
            if isinstance(report, str):
                cells.append("not run")
                continue
            failed = [r.spec.id for r in report.failed_by(force)]
            cells.append(f"{len(failed)}" + (f": {', '.join(f'`{i}`' for i in failed)}" if failed else ""))
        lines.append(f"| **{label}** | | | " + " | ".join(cells) + " |")
    totals = []
    for name in names:
        report = reports[name]
        if isinstance(report, str):
            totals.append("not run")
        else:
            counts = report.counts()
            totals.append(f"{counts['pass']} pass, {counts['fail']} fail, {counts['n/a']} n/a")
    lines.append("| **total** | | | " + " | ".join(totals) + " |")
    return "\n".join(lines)


# The generated blocks of docs/conformance.md: name -> (the targets, their column headings).
DOC_BLOCKS: dict[str, tuple[str, ...]] = {
    "catalogue": (),
    "agui-core-scenarios": ("agui-core", "agui-core-email-bob", "agui-core-form"),
    "agui-core-report": ("agui-core",),
    "agui-core-default-report": ("agui-core-default",),
    "references": ("agui-core", "ag-ui-langgraph", "ag-ui-strands"),
    "langgraph-pair": ("agui-core-langgraph", "ag-ui-langgraph-parallel"),
    "strands-pair": ("ag-ui-strands", "agui-core-strands"),
}
HEADINGS = {
    "agui-core": "assistant `email the team`",
    "agui-core-email-bob": "assistant `email bob`",
    "agui-core-form": "assistant `file the quarterly form`",
}


def measured_line() -> str:
    day = datetime.datetime.now(datetime.UTC).date().isoformat()
    versions = ", ".join(f"{p} {version(p)}" for p in PACKAGES if version(p) != "not installed")
    return f"Measured {day} on Python {platform.python_version()} with {versions}; the kit with `approve` on."


def block_text(name: str, reports: dict[str, Report | str]) -> str:
    targets = DOC_BLOCKS[name]
    if name == "catalogue":
        rows = [
            "| check | force | rule | what | source | the seed's words (and in English) |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for spec in CATALOGUE:
            rows.append(
                f"| `{spec.id}` | {spec.force.value} | {spec.rule} | {spec.title} | {spec.source} | "
                f'"{spec.seed}" ({spec.words}) |'
            )
        return "\n".join(rows)
    if name in ("agui-core-report", "agui-core-default-report"):
        report = reports[targets[0]]
        assert not isinstance(report, str)
        # Ports and timings change from run to run; the report is shown as measured.
        return "```\n" + report.table().rstrip("\n") + "\n```"
    chosen = {t: reports[t] for t in targets}
    headings = HEADINGS if name == "agui-core-scenarios" else None
    return measured_line() + "\n\n" + summary(chosen, headings)


def write_docs(path: Path, reports: dict[str, Report | str]) -> list[str]:
    """Rewrite the generated blocks of ``path`` whose targets were all measured; their names."""
    text = path.read_text(encoding="utf-8")
    done = []
    for name, targets in DOC_BLOCKS.items():
        if not all(t in reports and not isinstance(reports[t], str) for t in targets):
            continue
        pattern = re.compile(
            rf"(<!-- BEGIN generated: {re.escape(name)} -->\n).*?(\n<!-- END generated: {re.escape(name)} -->)",
            re.DOTALL,
        )
        if not pattern.search(text):
            raise SystemExit(f"{path} has no generated block {name!r}")
        body = block_text(name, reports)
        text = pattern.sub(lambda m, body=body: m.group(1) + body + m.group(2), text)
        done.append(name)
    path.write_text(text, encoding="utf-8")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=list(TARGETS), help="measure only NAME (repeatable)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "conformance", help="where the JSON reports go")
    parser.add_argument("--expiry-wait", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument(
        "--docs", action="store_true", help="rewrite the generated blocks of docs/conformance.md (see the docstring)"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("OTEL_SDK_DISABLED", "true")
    # Strands' tracing logs "Failed to detach context" for every streamed run under uvicorn.
    logging.getLogger("opentelemetry.context").setLevel(logging.CRITICAL)
    options = Options(expiry_wait=args.expiry_wait, timeout=args.timeout)
    reports = {name: measure(name, args.out, options) for name in (args.only or list(TARGETS))}
    print(summary(reports))
    print()
    for name, report in reports.items():
        if isinstance(report, str):
            print(f"{name}: could not be measured: {report}")
    print("versions: " + ", ".join(f"{p} {version(p)}" for p in PACKAGES))
    if args.docs:
        done = write_docs(ROOT / "docs" / "conformance.md", reports)
        print(f"docs/conformance.md: rewrote {', '.join(done) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
