"""strands_cycle: one Strands interrupt -> resume cycle over HTTP + SSE, agui-core's adapter against ag-ui-strands.

One operation is a whole cycle on a new thread: a run whose scripted model proposes
``send_email`` and whose hook raises a native Strands interrupt before it (the run ends with
the interrupt), then the resume approving it (the tool runs, the model answers, the run
succeeds). Both servers host the same Strands agent (model, tool, hook; no LLM, no network)
as ASGI applications, driven by the same client (httpx over an in-process ASGI transport, one
event loop):

- agui-core: :class:`~agui_core.adapters.strands.StrandsAdapter` in a
  :class:`~agui_core.runtime.host.Host` (in-memory store) behind
  :class:`~agui_transports.http.HttpApp`: the Strands session snapshot saved with the
  interrupt and loaded into a fresh agent on resume, every contract rule, replay records;
- ag-ui-strands: its FastAPI endpoint (``add_strands_fastapi_endpoint``), default settings
  (agents cached per thread in the process);
- Strands alone: the same two invocations straight on a ``strands.Agent`` (``stream_async``
  with the prompt, then with the ``interruptResponse``), no AG-UI at all: the floor, so
  "ours over the floor" is the adapter's and host's per-cycle overhead.

The check proves each contender ends the cycle in success with the tool run exactly once.
"""

from __future__ import annotations

import itertools
import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from benchmarks.harness import Case, Comparison, Contender, Scenario
from benchmarks.scenarios.transports import _LoopThread

__all__ = ["SCENARIO"]

_SENT: list[str] = []


def _agent_parts() -> tuple[Any, Any]:
    """(build an agent with these hooks, the approval hook class)."""
    from strands import Agent, tool
    from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
    from strands.models.model import Model

    @tool
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        _SENT.append(to)
        return f"sent to {to}: {subject}"

    class ScriptedModel(Model):
        def __init__(self) -> None:
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
            yield {"messageStart": {"role": "assistant"}}
            if any("toolResult" in block for block in last):
                yield {"contentBlockStart": {"start": {}}}
                yield {"contentBlockDelta": {"delta": {"text": "Sent."}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
            else:
                use = {"name": "send_email", "toolUseId": f"tooluse_{uuid.uuid4().hex[:12]}"}
                yield {"contentBlockStart": {"start": {"toolUse": use}}}
                args = {"to": "bob@example.com", "subject": "Hi"}
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "tool_use"}}
            usage = {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}
            yield {"metadata": {"usage": usage, "metrics": {"latencyMs": 0}}}

    class Approval(HookProvider):
        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(BeforeToolCallEvent, self.before_tool_call)

        def before_tool_call(self, event: BeforeToolCallEvent) -> None:
            answer = event.interrupt("approval", reason={"message": "Send it?"})
            if isinstance(answer, dict) and set(answer) == {"response"}:  # ag-ui-strands wraps answers
                answer = answer["response"]
            if answer != {"approved": True}:
                event.cancel_tool = "not approved"

    def build(hooks: list[Any]) -> Any:
        return Agent(model=ScriptedModel(), tools=[send_email], hooks=hooks, callback_handler=None)

    return build, Approval


def _events(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in body.split(b"\n") if line.startswith(b"data:")]


class _HttpCycle:
    """One client of an ASGI application: ``cycle()`` runs one interrupt -> resume on a new thread."""

    def __init__(self, app: Any) -> None:
        import httpx

        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
        self.numbers = itertools.count()

    async def post(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        response = await self.client.post("/", content=json.dumps(body), headers=headers)
        return _events(response.content)

    async def cycle(self) -> list[dict[str, Any]]:
        thread = f"bench-{next(self.numbers)}-{uuid.uuid4().hex[:6]}"
        base = {"threadId": thread, "tools": [], "context": [], "state": {}, "forwardedProps": {}}
        messages: list[Any] = [{"id": "u1", "role": "user", "content": "Email Bob."}]
        first = await self.post({**base, "runId": "r1", "messages": messages})
        snapshot = [e["messages"] for e in first if e["type"] == "MESSAGES_SNAPSHOT"]
        interrupts = first[-1]["outcome"]["interrupts"]
        resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}} for i in interrupts]
        return await self.post(
            {**base, "runId": "r2", "messages": snapshot[-1] if snapshot else messages, "resume": resume}
        )


def _build() -> Sequence[Case]:
    from ag_ui_strands import StrandsAgent, add_strands_fastapi_endpoint
    from agui_transports.http import HttpApp
    from fastapi import FastAPI
    from strands import Agent

    from agui_core.adapters.strands import StrandsAdapter
    from agui_core.runtime import Host
    from agui_core.store import MemoryThreadStore

    # Strands' tracing logs "Failed to detach context" for streams closed on another task, and
    # ag-ui-strands a line for every event it cannot forward raw: noise, not results.
    logging.getLogger("opentelemetry.context").setLevel(logging.CRITICAL)
    logging.getLogger("ag_ui_strands").setLevel(logging.ERROR)
    build, approval = _agent_parts()
    loop = _LoopThread()
    hosts: list[Any] = []

    async def serve(ready: Any, stop: Any) -> None:
        async with Host(StrandsAdapter(lambda: build([approval()])), store=MemoryThreadStore()) as host:
            hosts.append(host)
            ready.set()
            await stop.wait()

    loop.start(serve)
    ours = _HttpCycle(HttpApp(hosts[0]))
    app = FastAPI()
    add_strands_fastapi_endpoint(app, StrandsAgent(build([]), name="bench", hooks=[approval()]), "/")
    theirs = _HttpCycle(app)

    async def bare() -> str:
        agent: Agent = build([approval()])
        result: Any = None
        async for event in agent.stream_async("Email Bob."):
            result = event.get("result", result)
        responses = [
            {"interruptResponse": {"interruptId": i.id, "response": {"approved": True}}} for i in result.interrupts
        ]
        async for event in agent.stream_async(responses):
            result = event.get("result", result)
        return str(result.stop_reason)

    def check() -> None:
        for name, cycle in (("agui-core", ours.cycle), ("ag-ui-strands", theirs.cycle)):
            before = len(_SENT)
            events = loop.call(cycle())
            last = events[-1]
            if last["type"] != "RUN_FINISHED" or (last.get("outcome") or {}).get("type", "success") != "success":
                raise AssertionError(f"{name}: the resume did not succeed: {events[-1]}")
            if len(_SENT) != before + 1:
                raise AssertionError(f"{name}: the tool ran {len(_SENT) - before} times in one cycle")
        before = len(_SENT)
        if loop.call(bare()) != "end_turn" or len(_SENT) != before + 1:
            raise AssertionError("Strands alone did not finish the cycle with one execution")

    case = Case(
        name="interrupt -> resume cycle",
        contenders=(
            Contender("agui-core", lambda: loop.call(ours.cycle())),
            Contender("ag-ui-strands", lambda: loop.call(theirs.cycle())),
            Contender("strands alone", lambda: loop.call(bare())),
        ),
        comparisons=(
            Comparison(ours="agui-core", theirs="ag-ui-strands", target=1.0),
            Comparison(ours="agui-core", theirs="strands alone", target=0.5),
        ),
        check=check,
        notes="a new thread per cycle; both servers in process behind the same ASGI client",
    )
    return [case]


SCENARIO = Scenario(
    name="strands_cycle",
    description="one Strands interrupt -> resume cycle over HTTP + SSE: agui-core's adapter vs ag-ui-strands",
    build=_build,
)
