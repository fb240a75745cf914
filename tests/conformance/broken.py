"""Deliberately broken servers: agui-core's host with one rule of the contract switched off.

Each class wraps :meth:`Host.run` (what every transport calls) and does, for one kind of
input, what a server that skips the rule would do; everything else goes to the real host.
The kit must fail exactly the checks of the rule that is broken.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from agui_core.machine.record import ANONYMOUS, ThreadRecord
from agui_core.protocol import events as ev
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import ResumeEntry, RunAgentInput, RunFinishedSuccessOutcome
from agui_core.runtime import Host

__all__ = [
    "AcceptsExpired",
    "AcceptsInvalidPayloads",
    "AcceptsPartialResume",
    "AcceptsPlainInput",
    "AcceptsUnknownIds",
    "CodelessErrors",
    "ExecutesReplays",
]


class _Broken(Host):
    async def _open_ids(self, run_input: RunAgentInput, principal: str) -> list[str]:
        view = await self.view(run_input.thread_id, principal)
        return [i.id for i in view.interrupts] if view is not None else []


class AcceptsPlainInput(_Broken):
    """R4 off: an input without ``resume`` on a thread with open interrupts is 'carried out'."""

    async def run(self, run_input: RunAgentInput, *, principal: str = ANONYMOUS) -> AsyncGenerator[ev.Event, None]:
        if not run_input.resume and await self._open_ids(run_input, principal):
            thread, run = run_input.thread_id, run_input.run_id
            yield ev.RunStartedEvent(thread_id=thread, run_id=run)
            yield ev.RunFinishedEvent(thread_id=thread, run_id=run, outcome=RunFinishedSuccessOutcome())
            return
        async for event in super().run(run_input, principal=principal):
            yield event


class AcceptsUnknownIds(_Broken):
    """R2 off: resume entries naming no open interrupt are dropped instead of refused."""

    async def run(self, run_input: RunAgentInput, *, principal: str = ANONYMOUS) -> AsyncGenerator[ev.Event, None]:
        if run_input.resume:
            open_ids = await self._open_ids(run_input, principal)
            known = tuple(e for e in run_input.resume if e.interrupt_id in open_ids)
            if open_ids and known != run_input.resume:
                run_input = attrs.evolve(run_input, resume=known)
        async for event in super().run(run_input, principal=principal):
            yield event


class AcceptsPartialResume(_Broken):
    """R3 off: interrupts a resume leaves out are taken as cancelled."""

    async def run(self, run_input: RunAgentInput, *, principal: str = ANONYMOUS) -> AsyncGenerator[ev.Event, None]:
        if run_input.resume:
            answered = {e.interrupt_id for e in run_input.resume}
            missing = [i for i in await self._open_ids(run_input, principal) if i not in answered]
            if missing and answered:
                filled = tuple(ResumeEntry(interrupt_id=i, status="cancelled") for i in missing)
                run_input = attrs.evolve(run_input, resume=(*run_input.resume, *filled))
        async for event in super().run(run_input, principal=principal):
            yield event


class _LenientValidators(PayloadValidators):
    """Checks a missing payload (as ``null``), waves every present one through."""

    def validate(self, interrupt_id: str, schema: Any, payload: Any) -> None:
        if payload is None:
            super().validate(interrupt_id, schema, payload)


class AcceptsInvalidPayloads(Host):
    """R6 off: a payload is not checked against its interrupt's ``responseSchema``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, payload_validators=_LenientValidators(), **kwargs)


class ExecutesReplays(_Broken):
    """R5 off: the same resume again is carried out again (the thread is put back first)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._before: dict[tuple[str, frozenset[str]], ThreadRecord] = {}

    async def run(self, run_input: RunAgentInput, *, principal: str = ANONYMOUS) -> AsyncGenerator[ev.Event, None]:
        thread = run_input.thread_id
        if run_input.resume and thread not in self._busy:
            key = (thread, frozenset(e.interrupt_id for e in run_input.resume))
            current = await self.store.load(thread)
            earlier = self._before.get(key)
            if earlier is None and current is not None:
                self._before[key] = current
            elif earlier is not None and current is not None and current.version > earlier.version:
                await self.store.save(attrs.evolve(earlier, version=current.version + 1))
        async for event in super().run(run_input, principal=principal):
            yield event


_LATE = contextvars.ContextVar("late", default=False)


def _lagging_clock() -> datetime:
    now = datetime.now(UTC)
    return now - timedelta(days=1) if _LATE.get() else now


class AcceptsExpired(Host):
    """R7 off: a resume is judged on a clock a day behind, so no interrupt ever expires for it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, clock=_lagging_clock, **kwargs)

    async def run(self, run_input: RunAgentInput, *, principal: str = ANONYMOUS) -> AsyncGenerator[ev.Event, None]:
        # The run is carried out in a task started from here, which copies this context.
        _LATE.set(bool(run_input.resume))
        async for event in super().run(run_input, principal=principal):
            yield event


class CodelessErrors(Host):
    """R8 off: every ``RUN_ERROR`` the host sends loses its ``code``."""

    async def run(self, run_input: RunAgentInput, *, principal: str = ANONYMOUS) -> AsyncGenerator[ev.Event, None]:
        async for event in super().run(run_input, principal=principal):
            yield ev.RunErrorEvent(message=event.message) if isinstance(event, ev.RunErrorEvent) else event
