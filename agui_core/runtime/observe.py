"""What a host tells whoever watches how it works: metrics, traces (the operator's view).

A host reports what happens to one :class:`Observer`: a run starting and ending, a tool
carried out, interrupts raised and closed (each save's difference from the one before),
refusals, lease takeovers, connections opened and closed, and (through
:class:`ObservedStore`, which the caller wraps a store in) the time each store operation
takes. The base class does nothing, so a host without metrics or traces pays a method call
that returns at once, a handful of times per run and never per event; the Prometheus
observer (:mod:`agui_core.runtime.metrics`, extra ``[metrics]``) and the OpenTelemetry one
(:mod:`agui_core.runtime.tracing`, extra ``[otel]``) live in modules of their own, imported
only by whoever asks for them. Several at once: :class:`Observers`.

Nothing an observer is handed carries a payload it should put in a label or an attribute
without thinking: the interfaces pass thread ids (for traces, which name the conversation)
and reasons, statuses, codes and tool names (for metrics, whose labels must stay few);
never a principal, never an answer's payload.

Trace context. A transport that receives W3C trace headers (``traceparent``, ``tracestate``)
with an input sets :data:`trace_carrier` to them around :meth:`~agui_core.runtime.host.Host.run`;
the run carries them into its task, where a tracing observer reads them when the run starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime
from time import perf_counter
from typing import TypeVar

from agui_core.machine.record import OpenInterrupt, ResolvedInterrupt, ThreadRecord
from agui_core.store.base import DeliveryLedger, Purged, StoreError, ThreadStore, WaitingThread

__all__ = ["NO_OBSERVER", "ObservedStore", "Observer", "Observers", "RunOutcome", "trace_carrier"]

_T = TypeVar("_T")

trace_carrier: ContextVar[Mapping[str, str] | None] = ContextVar("agui_trace_carrier", default=None)
"""The W3C trace headers (lower-case names) that came with the input being run, if any."""

RunOutcome = str
"""How a run ended: ``success``, ``interrupt``, ``error`` or ``stopped`` (no last event sent)."""


class Observer:
    """What a host reports (see the module docstring); every method does nothing here.

    A method must not raise and must not block: the host calls it in the middle of a run.
    ``run_started`` returns a token of the observer's own (a span, a start time), handed back
    to ``run_ended``, ``tool_started`` and ``interrupts_*`` for that run.
    """

    active = False
    """Whether the host should work out what to report at all (the difference between two
    saves of a thread costs a little): ``False`` for this class, ``True`` for any real observer."""

    def run_started(self, *, thread_id: str, run_id: str) -> object:
        """A run of the agent starts on ``thread_id`` (an input the machine admitted)."""
        return None

    def run_ended(self, run: object, *, outcome: RunOutcome, code: str | None = None) -> None:
        """The run ``run`` ended: how (``code``: the ``RUN_ERROR``'s, for an error)."""

    def tool_started(self, run: object, *, name: str, call_id: str) -> object:
        """The host is about to run its tool ``name`` for an approved tool call."""
        return None

    def tool_ended(self, tool: object, *, name: str, result: str) -> None:
        """What became of a gated tool call: ``executed``, ``failed``, ``denied``, ``cancelled``
        or ``unknown``; ``tool`` is ``tool_started``'s token (``None`` for a call not run now)."""

    def interrupts_raised(self, run: object, *, thread_id: str, interrupts: Sequence[OpenInterrupt]) -> None:
        """A save of ``thread_id`` opened ``interrupts`` (``run``: the run saving, if known)."""

    def interrupts_closed(self, run: object, *, thread_id: str, closed: Sequence[ResolvedInterrupt]) -> None:
        """A save of ``thread_id`` closed ``closed`` (answered, cancelled or expired)."""

    def refused(self, code: str) -> None:
        """An input was refused with ``RUN_ERROR`` ``code`` before any agent ran for it."""

    def trace_headers(self, thread_id: str, interrupt_id: str) -> Mapping[str, str] | None:
        """The trace context a notice about ``interrupt_id`` of ``thread_id`` carries
        (``traceparent``, ...): the run that raised it, or that decided it once it is closed;
        ``None`` when unknown here."""
        return None

    def lease_taken_over(self) -> None:
        """This host closed a run whose host stopped renewing its lease."""

    def connection_opened(self, transport: str) -> None:
        """A client connected over ``transport`` (``http``, ``ws``)."""

    def connection_closed(self, transport: str) -> None:
        """A client of ``transport`` disconnected."""

    def store_operation(self, operation: str, seconds: float, *, failed: bool = False) -> None:
        """The store did ``operation`` (a method name: ``load``, ``save``, ...) in ``seconds``."""

    def bind(self, store: ThreadStore, clock: Callable[[], datetime]) -> None:
        """The store the host runs on and its clock, for observers that read them (the gauges
        of open interrupts and their age)."""

    async def exposition(self) -> tuple[bytes, str] | None:
        """The metrics to serve at ``GET /metrics`` and their media type; ``None``: none here."""
        return None


NO_OBSERVER = Observer()
"""The observer of a host given none: it does nothing."""


class Observers(Observer):
    """Several observers as one: each is told everything, in order."""

    def __init__(self, observers: Sequence[Observer]) -> None:
        self.observers = tuple(observers)
        self.active = any(o.active for o in self.observers)

    def run_started(self, *, thread_id: str, run_id: str) -> object:
        return tuple(o.run_started(thread_id=thread_id, run_id=run_id) for o in self.observers)

    def run_ended(self, run: object, *, outcome: RunOutcome, code: str | None = None) -> None:
        for o, token in zip(self.observers, _tokens(run, len(self.observers)), strict=True):
            o.run_ended(token, outcome=outcome, code=code)

    def tool_started(self, run: object, *, name: str, call_id: str) -> object:
        runs = _tokens(run, len(self.observers))
        return tuple(o.tool_started(r, name=name, call_id=call_id) for o, r in zip(self.observers, runs, strict=True))

    def tool_ended(self, tool: object, *, name: str, result: str) -> None:
        for o, token in zip(self.observers, _tokens(tool, len(self.observers)), strict=True):
            o.tool_ended(token, name=name, result=result)

    def interrupts_raised(self, run: object, *, thread_id: str, interrupts: Sequence[OpenInterrupt]) -> None:
        for o, token in zip(self.observers, _tokens(run, len(self.observers)), strict=True):
            o.interrupts_raised(token, thread_id=thread_id, interrupts=interrupts)

    def interrupts_closed(self, run: object, *, thread_id: str, closed: Sequence[ResolvedInterrupt]) -> None:
        for o, token in zip(self.observers, _tokens(run, len(self.observers)), strict=True):
            o.interrupts_closed(token, thread_id=thread_id, closed=closed)

    def refused(self, code: str) -> None:
        for o in self.observers:
            o.refused(code)

    def trace_headers(self, thread_id: str, interrupt_id: str) -> Mapping[str, str] | None:
        return next((h for o in self.observers if (h := o.trace_headers(thread_id, interrupt_id)) is not None), None)

    def lease_taken_over(self) -> None:
        for o in self.observers:
            o.lease_taken_over()

    def connection_opened(self, transport: str) -> None:
        for o in self.observers:
            o.connection_opened(transport)

    def connection_closed(self, transport: str) -> None:
        for o in self.observers:
            o.connection_closed(transport)

    def store_operation(self, operation: str, seconds: float, *, failed: bool = False) -> None:
        for o in self.observers:
            o.store_operation(operation, seconds, failed=failed)

    def bind(self, store: ThreadStore, clock: Callable[[], datetime]) -> None:
        for o in self.observers:
            o.bind(store, clock)

    async def exposition(self) -> tuple[bytes, str] | None:
        for o in self.observers:
            served = await o.exposition()
            if served is not None:
                return served
        return None


def _tokens(token: object, count: int) -> tuple[object, ...]:
    return token if isinstance(token, tuple) and len(token) == count else (None,) * count


class ObservedStore:
    """``store``, timing each operation for ``observer`` (:meth:`Observer.store_operation`).

    Wrap the store when metrics are wanted, and only then: a host on the bare store pays nothing.
    """

    def __init__(self, store: ThreadStore, observer: Observer) -> None:
        self.store = store
        self.observer = observer

    async def _timed(self, operation: str, call: Awaitable[_T]) -> _T:
        started = perf_counter()
        try:
            result = await call
        except BaseException:
            self.observer.store_operation(operation, perf_counter() - started, failed=True)
            raise
        self.observer.store_operation(operation, perf_counter() - started)
        return result

    async def load(self, thread_id: str) -> ThreadRecord | None:
        return await self._timed("load", self.store.load(thread_id))

    async def save(self, record: ThreadRecord) -> None:
        return await self._timed("save", self.store.save(record))

    async def renew_lease(self, thread_id: str, run_id: str, until: datetime) -> bool:
        return await self._timed("renew_lease", self.store.renew_lease(thread_id, run_id, until))

    async def thread_of_interrupt(self, interrupt_id: str) -> str | None:
        return await self._timed("thread_of_interrupt", self.store.thread_of_interrupt(interrupt_id))

    async def audit(self, thread_id: str) -> Sequence[ResolvedInterrupt]:
        return await self._timed("audit", self.store.audit(thread_id))

    async def waiting(self, owner: str, *, limit: int = 100) -> Sequence[WaitingThread]:
        return await self._timed("waiting", self.store.waiting(owner, limit=limit))

    async def all_waiting(self, *, limit: int = 1000) -> Sequence[WaitingThread]:
        return await self._timed("all_waiting", self.store.all_waiting(limit=limit))

    async def audit_since(self, since: datetime, *, limit: int = 10_000) -> Sequence[tuple[str, ResolvedInterrupt]]:
        return await self._timed("audit_since", self.store.audit_since(since, limit=limit))

    async def owner_of(self, thread_id: str) -> str | None:
        return await self._timed("owner_of", self.store.owner_of(thread_id))

    async def purge(self, *, idle_before: datetime, audit_before: datetime | None = None, limit: int = 500) -> Purged:
        return await self._timed(
            "purge", self.store.purge(idle_before=idle_before, audit_before=audit_before, limit=limit)
        )

    async def claim_delivery(self, key: str, *, holder: str, now: datetime, until: datetime) -> int | None:
        return await self._timed(
            "claim_delivery", _ledger(self.store).claim_delivery(key, holder=holder, now=now, until=until)
        )

    async def finish_delivery(
        self, key: str, *, holder: str, delivered: bool, retry_at: datetime | None = None
    ) -> None:
        ledger = _ledger(self.store)
        return await self._timed(
            "finish_delivery", ledger.finish_delivery(key, holder=holder, delivered=delivered, retry_at=retry_at)
        )

    async def aclose(self) -> None:
        await self.store.aclose()


def _ledger(store: ThreadStore) -> DeliveryLedger:
    if not isinstance(store, DeliveryLedger):
        raise StoreError(f"a {type(store).__name__} keeps no ledger of deliveries")
    return store
