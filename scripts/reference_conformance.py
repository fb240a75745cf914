"""Run ``agui conformance`` against agui-core and the two reference AG-UI integrations.

Not run in CI: the reference packages are heavy and are not dependencies of agui-core. Install
them into a virtual environment of the repository and run the script from its root::

    python3 -m venv .venv && .venv/bin/pip install -e '.[test]'
    .venv/bin/pip install ag-ui-langgraph==0.0.47 'langgraph>=1.2' ag-ui-strands==1.0.2 \
        strands-agents==1.62.0 uvicorn fastapi
    .venv/bin/python scripts/reference_conformance.py [--only NAME ...] [--out DIR]

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

Then it runs the kit in process (``agui_core.conformance.run_conformance``) against each over
HTTP + SSE, prints each report's table, writes ``DIR/<name>.json`` (default
``docs/conformance``) and ends with the side-by-side summary (check by check) and the versions
of the packages used. The summary is what docs/conformance.md ("Reference integrations") shows.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import json
import logging
import os
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

from agui_core.conformance import CATALOGUE, Options, Report, run_conformance, transport_for

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


def measure(name: str, out: Path, options: Options) -> Report | str:
    start, prompt, answers = TARGETS[name]
    port = free_port()
    try:
        with start(port):
            url = f"http://127.0.0.1:{port}/"
            report = asyncio.run(
                run_conformance(
                    transport_for(url),
                    Options(prompt=prompt, answers=answers, expiry_wait=options.expiry_wait, timeout=options.timeout),
                    server={"name": name, "versions": {p: version(p) for p in PACKAGES}},
                )
            )
    except Exception as exc:  # the summary says what could not be measured
        return f"{type(exc).__name__}: {exc}"
    out.mkdir(parents=True, exist_ok=True)
    document = report.to_json()
    document["prompt"] = prompt
    document["answers"] = answers
    if name == "ag-ui-strands":
        document["hookAnswers"] = HOOK_ANSWERS
    (out / f"{name}.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(report.table())
    print()
    return report


def summary(reports: dict[str, Report | str]) -> str:
    names = list(reports)
    lines = [
        "| check | rule | " + " | ".join(names) + " |",
        "| --- | --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for spec in CATALOGUE:
        cells = []
        for name in names:
            report = reports[name]
            if isinstance(report, str):
                cells.append("not run")
                continue
            try:
                cells.append(report.result(spec.id).status.value)
            except KeyError:
                cells.append("-")
        lines.append(f"| `{spec.id}` | {spec.rule} | " + " | ".join(cells) + " |")
    totals = []
    for name in names:
        report = reports[name]
        if isinstance(report, str):
            totals.append("not run")
        else:
            counts = report.counts()
            totals.append(f"{counts['pass']} pass, {counts['fail']} fail, {counts['n/a']} n/a")
    lines.append("| **total** | | " + " | ".join(totals) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=list(TARGETS), help="measure only NAME (repeatable)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "conformance", help="where the JSON reports go")
    parser.add_argument("--expiry-wait", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=30.0)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
