"""Tracing: a TracerProvider configured once from the standard `OTEL_*` environment.

OTLP over HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-specific variable) is
set; otherwise spans are still made, so every run has a trace id to show, but nothing is
recorded or exported (`UnrecordedTracerProvider`). The sampler comes from
`OTEL_TRACES_SAMPLER`, the service name from `OTEL_SERVICE_NAME`, as the SDK reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.propagators.textmap import DefaultGetter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway import __version__

_PROPAGATOR = TraceContextTextMapPropagator()
_GETTER: DefaultGetter = DefaultGetter()


class UnrecordedTracer(trace.NoOpTracer):
    """Spans with their ids and nothing else: a run's trace id in its events, a caller's
    `traceparent` continued, each span an id of its own, as the SDK makes them with its
    ALWAYS_OFF sampler. The SDK builds a sampling result, a span builder and its
    attributes for each, only to drop them: ~10 us a span against ~1 us here (three spans
    a run start: 0.8 % of its instructions, bench/notes.md, eighth round)."""

    _ids = RandomIdGenerator()

    def start_span(
        self, name: str, context: Context | None = None, *_: Any, **__: Any
    ) -> trace.Span:
        parent = trace.get_current_span(context).get_span_context()
        if parent.is_valid:
            trace_id, state = parent.trace_id, parent.trace_state
        else:
            trace_id, state = self._ids.generate_trace_id(), None
        span_id = self._ids.generate_span_id()
        return trace.NonRecordingSpan(
            trace.SpanContext(trace_id, span_id, is_remote=False, trace_state=state)
        )

    def start_as_current_span(  # type: ignore[override]
        self, name: str, context: Context | None = None, *_: Any, **__: Any
    ) -> _Current:
        """As the API's: the span is the context's current one inside the `with`. Without
        its two generator context managers (`start_as_current_span` and `use_span`, ~170
        opcodes a request): a span that records nothing has no exception or status to
        record on the way out."""
        return _Current(self.start_span(name, context))


class _Current:
    """`with`: `span` the current span of the context, as `trace.use_span` makes it."""

    __slots__ = ("_span", "_token")

    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def __enter__(self) -> trace.Span:
        self._token = context_api.attach(trace.set_span_in_context(self._span))
        return self._span

    def __exit__(self, *_: object) -> None:
        context_api.detach(self._token)
        self._span.end()


class UnrecordedTracerProvider(trace.TracerProvider):
    """Tracing with nowhere to send spans (`UnrecordedTracer`)."""

    def get_tracer(self, *_: Any, **__: Any) -> trace.Tracer:
        return UnrecordedTracer()

    def shutdown(self) -> None:
        """Nothing to flush (as the SDK provider's `shutdown`, for the server's exit)."""


Tracing = TracerProvider | UnrecordedTracerProvider


def configure_tracing(environ: Mapping[str, str] | None = None) -> Tracing:
    env = os.environ if environ is None else environ
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if not endpoint and env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        endpoint = env["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
    # With nowhere to send spans, record none (ids still exist, so events keep a trace_id),
    # unless a sampler was asked for by name (spans for a processor added later, say).
    if not endpoint and not env.get("OTEL_TRACES_SAMPLER"):
        return UnrecordedTracerProvider()
    resource = Resource.create(
        {
            "service.name": env.get("OTEL_SERVICE_NAME", "research-gateway"),
            "service.version": __version__,
        }
    )
    provider = TracerProvider(resource=resource)
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def extract_context(headers: Mapping[str, str]) -> Context:
    """The caller's W3C `traceparent`, if any, as the parent of our spans."""
    return _PROPAGATOR.extract(headers, getter=_GETTER)
