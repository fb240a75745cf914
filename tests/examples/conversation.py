"""A client's side of an example agent: a host in memory, every event checked by a ClientMachine."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from agui_core.examples import TOOLS, assistant
from agui_core.machine.client import ClientMachine, Reply
from agui_core.protocol import events as ev
from agui_core.protocol.types import RunAgentInput, UserMessage
from agui_core.runtime import Host

__all__ = ["Conversation"]


class Conversation:
    """One thread of ``assistant`` served by ``host``; ``runs`` holds each run's events."""

    def __init__(self, host: Host, thread_id: str) -> None:
        self.host = host
        self.machine = ClientMachine(thread_id)
        self.runs: list[list[ev.Event]] = []
        self._count = 0

    @classmethod
    def new_host(cls) -> Host:
        """A host of the example agents, threads in memory."""
        return Host(assistant, tools=TOOLS)

    async def _send(self, run_input: RunAgentInput) -> list[ev.Event]:
        events = []
        async for event in self.host.run(run_input):
            self.machine.receive_event(event, now=datetime.now(UTC))
            events.append(event)
        self.runs.append(events)
        return events

    def _run_id(self) -> str:
        self._count += 1
        return f"run-{self._count}"

    async def start(self, text: str, **props: Any) -> list[ev.Event]:
        run_input = RunAgentInput(
            thread_id=self.machine.thread_id,
            run_id=self._run_id(),
            messages=(UserMessage(id=f"u-{self._count}", content=text),),
            forwarded_props=props or None,
        )
        return await self._send(run_input)

    async def resume(self, answers: Mapping[str, Reply]) -> list[ev.Event]:
        run_input = self.machine.resume(answers, now=datetime.now(UTC), run_id=self._run_id())
        return await self._send(run_input)

    @property
    def result(self) -> Any:
        last = self.runs[-1][-1]
        assert isinstance(last, ev.RunFinishedEvent), last
        return last.result
