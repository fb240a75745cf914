"""OpenTelemetry traces of a host: an :class:`~agui_core.runtime.observe.Observer` (extra ``[otel]``).

Three kinds of span, after the OpenTelemetry GenAI conventions where they have a word for it:

- ``invoke_agent``: one per run of the agent (``gen_ai.operation.name`` ``invoke_agent``,
  ``gen_ai.conversation.id`` the thread id, ``agui.run.id``, ``agui.run.outcome``; status
  ``ERROR`` with ``error.type`` the ``RUN_ERROR`` code when the run failed). Its parent is the
  trace context that came with the input (``traceparent``, ``tracestate``: see
  :data:`~agui_core.runtime.observe.trace_carrier`), if any;
- ``execute_tool {name}``: one per gated tool the host runs, child of its run's span
  (``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``agui.tool.result``);
- ``interrupt {reason}``: one per interrupt, from its raise (``raisedAt``) to its decision
  (``answered_at``; an expired one's ``expiresAt``), made when it is decided, with links to the
  run that raised it and to the run that carried the answer (``agui.interrupt.id``,
  ``agui.interrupt.reason``, ``agui.interrupt.status``, ``agui.interrupt.edited``,
  ``gen_ai.conversation.id``). Never a payload, never arguments, never a principal.

The link to the raising run is known to the host that raised it, for ``max_remembered``
interrupts at most: an interrupt answered on another host (or after a restart) has the link
to its deciding run only. Its times come from the record, so they hold across hosts.

Configuration is OpenTelemetry's own: :class:`TracingObserver` uses the tracer provider it is
given, else the global one. ``agui serve --traces`` uses the global provider when one is set
(``opentelemetry-instrument agui serve ...``), else sets up the SDK's from the standard
``OTEL_*`` variables (:func:`provider_from_environment`).
"""

from __future__ import annotations

import importlib
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from datetime import datetime

from opentelemetry import trace
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TracerProvider,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agui_core.machine.record import OpenInterrupt, ResolvedInterrupt
from agui_core.runtime.observe import Observer, RunOutcome, trace_carrier

__all__ = ["TracingObserver", "provider_from_environment"]

_PROPAGATOR = TraceContextTextMapPropagator()


class TracingObserver(Observer):
    """Spans of runs, tools and interrupts on ``provider`` (default: the global tracer provider)."""

    active = True

    def __init__(self, provider: TracerProvider | None = None, *, max_remembered: int = 10_000) -> None:
        self.tracer = (provider if provider is not None else trace.get_tracer_provider()).get_tracer("agui_core")
        self.max_remembered = max_remembered
        self._raised_in: OrderedDict[str, SpanContext] = OrderedDict()  # interrupt id -> its raising run's span
        # (thread id, interrupt id) -> the run a notice about it belongs to: the raising run, then
        # the deciding one (interrupt ids an agent chooses may repeat across threads).
        self._noticed_in: OrderedDict[tuple[str, str], SpanContext] = OrderedDict()

    def run_started(self, *, thread_id: str, run_id: str) -> object:
        carrier = trace_carrier.get()
        parent = _PROPAGATOR.extract(carrier) if carrier else None
        return self.tracer.start_span(
            "invoke_agent",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": thread_id,
                "agui.run.id": run_id,
            },
        )

    def run_ended(self, run: object, *, outcome: RunOutcome, code: str | None = None) -> None:
        if not isinstance(run, Span):
            return
        run.set_attribute("agui.run.outcome", outcome)
        if outcome == "error":
            run.set_attribute("error.type", code or "AGENT_ERROR")
            run.set_status(Status(StatusCode.ERROR))
        run.end()

    def tool_started(self, run: object, *, name: str, call_id: str) -> object:
        parent = trace.set_span_in_context(run) if isinstance(run, Span) else None
        return self.tracer.start_span(
            f"execute_tool {name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
            },
        )

    def tool_ended(self, tool: object, *, name: str, result: str) -> None:
        if not isinstance(tool, Span):
            return  # a call not run now (denied, cancelled, unknown): no span
        tool.set_attribute("agui.tool.result", result)
        if result == "failed":
            tool.set_status(Status(StatusCode.ERROR))
        tool.end()

    def interrupts_raised(self, run: object, *, thread_id: str, interrupts: Sequence[OpenInterrupt]) -> None:
        if not isinstance(run, Span):
            return
        raised_in = run.get_span_context()
        for opened in interrupts:
            self._raised_in[opened.interrupt.id] = raised_in
            self._remember_notice((thread_id, opened.interrupt.id), raised_in)
        while len(self._raised_in) > self.max_remembered:
            self._raised_in.popitem(last=False)

    def _remember_notice(self, key: tuple[str, str], context: SpanContext) -> None:
        self._noticed_in[key] = context
        self._noticed_in.move_to_end(key)
        while len(self._noticed_in) > self.max_remembered:
            self._noticed_in.popitem(last=False)

    def trace_headers(self, thread_id: str, interrupt_id: str) -> Mapping[str, str] | None:
        context = self._noticed_in.get((thread_id, interrupt_id))
        if context is None:
            return None
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(NonRecordingSpan(context)))
        return carrier

    def interrupts_closed(self, run: object, *, thread_id: str, closed: Sequence[ResolvedInterrupt]) -> None:
        decided_in = run.get_span_context() if isinstance(run, Span) else None
        for entry in closed:
            interrupt = entry.interrupt
            if decided_in is not None:
                self._remember_notice((thread_id, interrupt.id), decided_in)
            links = [Link(c) for c in (self._raised_in.pop(interrupt.id, None), decided_in) if c is not None]
            edited = isinstance(entry.payload, dict) and "editedArgs" in entry.payload
            span = self.tracer.start_span(
                f"interrupt {interrupt.reason}",
                context=trace.set_span_in_context(trace.INVALID_SPAN),  # a trace of its own, linked to both runs
                kind=SpanKind.INTERNAL,
                links=links,
                start_time=_nanoseconds(entry.raised_at),
                attributes={
                    "gen_ai.conversation.id": thread_id,
                    "agui.interrupt.id": interrupt.id,
                    "agui.interrupt.reason": interrupt.reason,
                    "agui.interrupt.status": entry.status,
                    "agui.interrupt.edited": edited,
                },
            )
            span.end(end_time=_nanoseconds(entry.answered_at))


def _nanoseconds(text: str | None) -> int | None:
    """An RFC 3339 instant as nanoseconds since the epoch (``None``: unknown, the span uses now)."""
    if text is None:
        return None
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1_000_000_000)
    except ValueError:
        return None


def provider_from_environment() -> TracerProvider:
    """The global tracer provider if one is set; else an SDK provider from the ``OTEL_*`` variables.

    The SDK reads ``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_TRACES_SAMPLER``
    and ``OTEL_SDK_DISABLED`` itself; ``OTEL_TRACES_EXPORTER`` names the exporters here:
    ``otlp`` (default; ``OTEL_EXPORTER_OTLP_*``, needs ``opentelemetry-exporter-otlp``),
    ``console`` or ``none``. ``ValueError`` for an exporter that is not installed or not known.
    """
    current = trace.get_tracer_provider()
    if not isinstance(current, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return current
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    provider = SdkTracerProvider()
    for name in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(","):
        name = name.strip().lower()
        exporter: SpanExporter
        if name in ("", "none"):
            continue
        if name == "console":
            exporter = ConsoleSpanExporter()
        elif name == "otlp":
            try:  # an optional package of its own, looked up by name
                otlp = importlib.import_module("opentelemetry.exporter.otlp.proto.http.trace_exporter")
            except ImportError:
                raise ValueError(
                    "OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-http "
                    "(or set OTEL_TRACES_EXPORTER=console, or run under opentelemetry-instrument)"
                ) from None
            exporter = otlp.OTLPSpanExporter()
        else:
            raise ValueError(f"OTEL_TRACES_EXPORTER: no exporter named {name!r} here (otlp, console, none)")
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider
