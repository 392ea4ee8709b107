"""Tracing: a TracerProvider configured once from the standard `OTEL_*` environment.

OTLP over HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-specific variable) is
set; otherwise spans are still made, so every run has a trace id to show, but nothing is
exported. The sampler comes from `OTEL_TRACES_SAMPLER`, the service name from
`OTEL_SERVICE_NAME`, as the SDK reads them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry.context import Context
from opentelemetry.propagators.textmap import DefaultGetter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from gateway import __version__

_PROPAGATOR = TraceContextTextMapPropagator()
_GETTER: DefaultGetter = DefaultGetter()


def configure_tracing(environ: Mapping[str, str] | None = None) -> TracerProvider:
    env = os.environ if environ is None else environ
    resource = Resource.create(
        {"service.name": env.get("OTEL_SERVICE_NAME", "research-gateway"),
         "service.version": __version__}
    )  # fmt: skip
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if not endpoint and env.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        endpoint = env["OTEL_EXPORTER_OTLP_ENDPOINT"].rstrip("/") + "/v1/traces"
    # With nowhere to send spans, record none (ids still exist, so events keep a trace_id),
    # unless a sampler was asked for by name.
    sampler = None if endpoint or env.get("OTEL_TRACES_SAMPLER") else ALWAYS_OFF
    provider = TracerProvider(resource=resource, sampler=sampler)
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def extract_context(headers: Mapping[str, str]) -> Context:
    """The caller's W3C `traceparent`, if any, as the parent of our spans."""
    return _PROPAGATOR.extract(headers, getter=_GETTER)
