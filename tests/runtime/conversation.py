"""A client's side of the host tests: a hand-moved clock, inputs from wire dicts, checked streams.

:class:`Conversation` follows one thread served by a :class:`~agui_core.runtime.Host`. Each
``send`` hands the host one input and collects the stream it answers with, then checks the
stream three ways, as a real client would meet it: every event against its wire schema, the
stream alone with a fresh :class:`~agui_core.machine.ordering.StreamVerifier` (the reference
client runs ``verifyEvents`` once per run), and the whole thread with one
:class:`~agui_core.machine.client.ClientMachine` (the interrupt contract, across runs).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import orjson

from agui_core.machine.client import ClientMachine
from agui_core.machine.ordering import StreamVerifier
from agui_core.machine.record import ThreadRecord
from agui_core.protocol import events as ev
from agui_core.protocol.codec import event_to_dict, input_from_dict
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host

__all__ = [
    "NOW",
    "Clock",
    "Conversation",
    "counter",
    "make_input",
    "same_thread",
    "types",
    "wire",
]

NOW = datetime(2026, 4, 20, 12, 0, 0, tzinfo=UTC)
"""Where every test clock starts: five hours before the seed's quarterly form expires."""


class Clock:
    """A clock the test moves by hand; the host reads it by calling it."""

    def __init__(self, now: datetime = NOW) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def counter() -> Callable[[], str]:
    """Ids for a host: ``"1"``, ``"2"``, ... so a test's ids do not depend on chance."""
    numbers = itertools.count(1)
    return lambda: str(next(numbers))


def make_input(doc: Mapping[str, Any]) -> RunAgentInput:
    """A ``RunAgentInput`` decoded from its wire dict; the fields the seed's examples leave out
    (``// ... existing fields``) are filled with empty values."""
    full: dict[str, Any] = {"messages": [], "tools": [], "context": [], "forwardedProps": {}}
    full.update(doc)
    return input_from_dict(full)


def wire(event: ev.Event) -> dict[str, Any]:
    """The event as JSON, checked against its wire schema; tuples come back as arrays."""
    result: dict[str, Any] = orjson.loads(orjson.dumps(event_to_dict(event, validate=True)))
    return result


def types(stream: Iterable[Mapping[str, Any]]) -> list[str]:
    return [e["type"] for e in stream]


def same_thread(before: ThreadRecord | None, after: ThreadRecord | None) -> bool:
    """Whether two records hold the same thread, apart from how many times it was saved."""
    if before is None or after is None:
        return before is after
    return attrs.evolve(before, version=0) == attrs.evolve(after, version=0)


class Conversation:
    """One thread as a client follows it through ``host``, at the times ``clock`` gives."""

    def __init__(self, host: Host | None, thread_id: str, clock: Callable[[], datetime]) -> None:
        self.host = host
        self.thread_id = thread_id
        self.clock = clock
        self.client = ClientMachine(thread_id)
        self.streams: list[list[dict[str, Any]]] = []

    async def send(self, doc: Mapping[str, Any] | RunAgentInput) -> list[dict[str, Any]]:
        """Send one input (a wire dict is completed and decoded) and return its checked stream."""
        assert self.host is not None, "this conversation's streams come from elsewhere: use check()"
        run_input = doc if isinstance(doc, RunAgentInput) else make_input({"threadId": self.thread_id, **doc})
        events = [event async for event in self.host.run(run_input)]
        return self.check(events)

    def check(self, events: Sequence[ev.Event | ev.UnknownEvent], *, cut: bool = False) -> list[dict[str, Any]]:
        """Check one stream the thread received; its events as wire dicts.

        A ``cut`` stream broke off (its host died): it has no end, and the client abandons
        the run, so the interrupts it was answering are open again for the retry.
        """
        verifier = StreamVerifier()
        for event in events:
            assert isinstance(event, ev.Event), f"not an AG-UI 1.0 event: {event!r}"
            verifier.check(event)
            self.client.receive_event(event, now=self.clock())
        if cut:
            assert not events or not isinstance(events[-1], ev.RunFinishedEvent | ev.RunErrorEvent)
            self.client.abandon_run()
        else:
            assert events and isinstance(events[-1], ev.RunFinishedEvent | ev.RunErrorEvent), "the stream has no end"
        stream = [wire(e) for e in events if isinstance(e, ev.Event)]
        self.streams.append(stream)
        return stream
