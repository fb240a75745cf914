"""A client of one thread over HTTP + SSE, for the adapter tests: every stream checked by a ClientMachine."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson

from agui_core.machine.client import ClientMachine, Reply
from agui_core.protocol.codec import converter, decode_event, encode_input
from agui_core.protocol.framing import SSEReader
from agui_core.protocol.types import Interrupt

__all__ = ["Talk", "of", "outcome", "refusal"]


class Talk:
    """One thread, as a client over HTTP + SSE sees it."""

    def __init__(self, client: httpx.AsyncClient, thread_id: str, headers: Mapping[str, str] | None = None) -> None:
        self.client = client
        self.thread_id = thread_id
        self.headers = {"content-type": "application/json", **(headers or {})}
        self.machine = ClientMachine(thread_id)
        self.runs: list[list[dict[str, Any]]] = []
        self.inputs: list[dict[str, Any]] = []
        self.streams: list[list[dict[str, Any]]] = []
        """Every stream the server sent, refusals included, as it came."""
        self._count = 0

    def run_id(self) -> str:
        self._count += 1
        return f"{self.thread_id}-run-{self._count}"

    async def post(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Send ``body`` as it is; the events that come back (a refusal does not touch the machine)."""
        response = await self.client.post("/", content=orjson.dumps(body), headers=self.headers)
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "text/event-stream"
        reader = SSEReader()
        events = [orjson.loads(frame) for frame in [*reader.feed(response.content), *reader.close()]]
        self.streams.append(events)
        return events

    async def send(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Send ``body`` and check every event with the client machine."""
        events = await self.post(body)
        if events and events[0]["type"] == "RUN_ERROR":
            return events
        for event in events:
            self.machine.receive_event(decode_event(orjson.dumps(event)), now=datetime.now(UTC))
        self.inputs.append(dict(body))
        self.runs.append(events)
        return events

    async def start(self, text: str = "go") -> list[dict[str, Any]]:
        run_id = self.run_id()
        message = {"id": f"u-{run_id}", "role": "user", "content": text}
        body = {
            "threadId": self.thread_id,
            "runId": run_id,
            "messages": [*self.history(), message],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
        }
        return await self.send(body)

    def history(self) -> list[Any]:
        return [orjson.loads(orjson.dumps(m, default=_attrs)) for m in _messages(self.machine)]

    def resume_body(self, answers: Mapping[str, Reply]) -> dict[str, Any]:
        run_input = self.machine.resume(answers, now=datetime.now(UTC), run_id=self.run_id())
        body: dict[str, Any] = orjson.loads(encode_input(run_input))
        return body

    async def resume(self, answers: Mapping[str, Reply]) -> list[dict[str, Any]]:
        return await self.send(self.resume_body(answers))

    @property
    def open(self) -> tuple[Interrupt, ...]:
        return self.machine.open_interrupts

    def entries(self, replies: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """A hand-written resume (for inputs the client machine itself would refuse)."""
        return {
            "threadId": self.thread_id,
            "runId": self.run_id(),
            "messages": self.history(),
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {},
            "resume": [{"interruptId": i, **r} for i, r in replies.items()],
        }


def _attrs(value: object) -> Any:
    return converter.unstructure(value)


def _messages(machine: ClientMachine) -> tuple[Any, ...]:
    return machine.messages


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def outcome(events: list[dict[str, Any]]) -> dict[str, Any]:
    last = events[-1]
    assert last["type"] == "RUN_FINISHED", events
    result: dict[str, Any] = last["outcome"]
    return result


def refusal(events: list[dict[str, Any]]) -> str:
    assert [e["type"] for e in events] == ["RUN_ERROR"], events
    code: str = events[0]["code"]
    return code
