"""langgraph_cycle: what one interrupt cycle costs on top of the LangGraph graph itself.

One operation is one whole human-in-the-loop cycle on a new thread: a run that interrupts for
an approval, then the resume that approves it and finishes. The graph is the same for every
contender (plain Python nodes, no LLM, LangGraph's ``InMemorySaver``): ``draft`` writes an AI
message, ``approve`` calls ``interrupt()`` with a ``responseSchema``, ``send`` writes a second
message. In process, no transport, on one event loop in a background thread:

- bare graph: ``graph.astream(...)`` to the interrupt, then ``astream(Command(resume=...))``,
  each stream read to its end (the floor: what the graph costs);
- ours: the same graph as an agui-core agent (``langgraph_agent``) under
  :class:`~agui_core.runtime.Host` over its in-memory store: every event through the thread
  machine (ordering, snapshots, interrupt rules, replay record), the resume checked against the
  schema;
- reference: ag-ui-langgraph's ``LangGraphAgent(emit_interrupt_outcome=True).run(...)`` on the
  same graph, the resume sent as ``resume[]``.

The figure to read is the overhead: a contender's time per cycle minus the bare graph's. The
check proves the three end the first run with one interrupt and the second with success.
(The state is a typing_extensions ``TypedDict`` so the reference can run it on Python 3.11.)
"""

from __future__ import annotations

import itertools
import uuid
import weakref
from typing import Any

from benchmarks.harness import Case, Comparison, Contender, Scenario
from benchmarks.scenarios.transports import _LoopThread

__all__ = ["SCENARIO"]

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]}


def _graph() -> Any:
    from typing import Annotated

    from langchain_core.messages import AIMessage, AnyMessage
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.types import interrupt
    from typing_extensions import TypedDict

    state = TypedDict("State", {"messages": Annotated[list[AnyMessage], add_messages], "approved": bool}, total=False)  # noqa: UP013

    def draft(values: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AIMessage(content="I will email the team.", id=str(uuid.uuid4()))]}

    def approve(values: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"reason": "confirmation", "message": "Send it?", "responseSchema": SCHEMA})
        return {"approved": isinstance(answer, dict) and answer.get("approved") is True}

    def send(values: dict[str, Any]) -> dict[str, Any]:
        return {
            "messages": [AIMessage(content="Sent." if values.get("approved") else "Not sent.", id=str(uuid.uuid4()))]
        }

    builder = StateGraph(state)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_node("send", send)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", "send")
    builder.add_edge("send", END)
    return builder.compile(checkpointer=InMemorySaver())


def _cycle_case() -> Case:
    from ag_ui.core import RunAgentInput as ReferenceInput
    from ag_ui_langgraph import LangGraphAgent
    from langgraph.types import Command

    from agui_core.adapters.langgraph import langgraph_agent
    from agui_core.protocol.types import ResumeEntry, RunAgentInput, UserMessage
    from agui_core.runtime import Host

    loop = _LoopThread()
    counter = itertools.count(1)
    bare_graph, our_graph, their_graph = _graph(), _graph(), _graph()
    hosts: list[Host] = []
    reference = LangGraphAgent(name="bench", graph=their_graph, emit_interrupt_outcome=True)
    user = {"id": "u-1", "role": "user", "content": "Email the team."}

    async def serve(ready: Any, stop: Any) -> None:
        async with Host(langgraph_agent(our_graph)) as host:
            hosts.append(host)
            ready.set()
            await stop.wait()

    loop.start(serve)

    async def bare_cycle() -> list[str]:
        from langchain_core.messages import HumanMessage

        config = {"configurable": {"thread_id": f"bare-{next(counter)}"}}
        seen = []
        async for mode, _ in bare_graph.astream(
            {"messages": [HumanMessage(content="Email the team.", id="u-1")]},
            config,
            stream_mode=["messages", "updates"],
        ):
            seen.append(mode)
        (pending,) = (await bare_graph.aget_state(config)).interrupts
        async for mode, _ in bare_graph.astream(
            Command(resume={pending.id: {"approved": True}}), config, stream_mode=["messages", "updates"]
        ):
            seen.append(mode)
        state = await bare_graph.aget_state(config)
        return ["interrupt", "success" if not state.next and not state.interrupts else "interrupt"]

    async def our_cycle() -> list[str]:
        thread = f"ours-{next(counter)}"
        first = RunAgentInput(
            thread_id=thread, run_id="r1", messages=(UserMessage(id="u-1", content="Email the team."),)
        )
        events = [e async for e in hosts[0].run(first)]
        (pending,) = events[-1].outcome.interrupts  # type: ignore[union-attr]
        resume = (ResumeEntry(interrupt_id=pending.id, status="resolved", payload={"approved": True}),)
        done = [e async for e in hosts[0].run(RunAgentInput(thread_id=thread, run_id="r2", resume=resume))]
        return [events[-1].outcome.type, done[-1].outcome.type]  # type: ignore[union-attr]

    async def reference_cycle() -> list[str]:
        thread = f"theirs-{next(counter)}"
        base = {"thread_id": thread, "state": {}, "tools": [], "context": [], "forwarded_props": {}}
        first = ReferenceInput(run_id="r1", messages=[user], **base)
        events = [e async for e in reference.run(first)]
        outcome = events[-1].outcome
        (pending,) = outcome.interrupts
        resume = [{"interruptId": pending.id, "status": "resolved", "payload": {"approved": True}}]
        second = ReferenceInput(run_id="r2", messages=[user], resume=resume, **base)
        done = [e async for e in reference.run(second)]
        kind = getattr(done[-1], "outcome", None)
        return [outcome.type, "success" if kind is None or kind.type == "success" else kind.type]

    def check() -> None:
        for name, cycle in (("bare", bare_cycle), ("ours", our_cycle), ("reference", reference_cycle)):
            got = loop.call(cycle())
            if got != ["interrupt", "success"]:
                raise AssertionError(f"{name}: the cycle ended {got}, not interrupt then success")

    def release(loop: _LoopThread = loop) -> None:
        loop.close()

    def bare() -> None:
        loop.call(bare_cycle())

    def ours() -> None:
        loop.call(our_cycle())

    def theirs() -> None:
        loop.call(reference_cycle())

    weakref.finalize(ours, release)
    names = (
        "bare graph: astream to the interrupt, astream(Command(resume))",
        "ours: langgraph_agent under Host (thread machine, in-memory store)",
        "reference: ag-ui-langgraph LangGraphAgent.run",
    )
    return Case(
        name="one interrupt cycle (interrupting run + approving resume), a new thread each",
        contenders=(Contender(names[0], bare), Contender(names[1], ours), Contender(names[2], theirs)),
        comparisons=(
            Comparison(ours=names[1], theirs=names[0], target=1 / 2),
            Comparison(ours=names[1], theirs=names[2], target=1.0),
        ),
        check=check,
        notes="overhead per cycle = a contender's time minus the bare graph's",
    )


SCENARIO = Scenario(
    name="langgraph_cycle",
    description="one interrupt cycle of a LangGraph graph: bare, through agui-core's adapter, through ag-ui-langgraph",
    build=lambda: [_cycle_case()],
)
