"""One object per run that the loop and the run driver report to: it writes the spans
(OpenTelemetry GenAI conventions) and the Prometheus instruments, so the loop itself
makes one-line calls and never touches either API.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from gateway import events
from gateway.audit import RunAudit
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.health import UPSTREAM_CODES
from gateway.metrics import Metrics
from gateway.upstream import TurnTranslator
from tools.registry import ToolOutcome

PROVIDER = "anthropic"
ROUTE_BY_ENDPOINT = {"stream": "/api/stream", "research": "/api/research"}


class ModelCall:
    """The `chat {model}` span of one model call, and its retries."""

    def __init__(self, span: Span, metrics: Metrics, turn: int) -> None:
        self.span = span
        self.retries = 0
        self._metrics = metrics
        self._turn = turn

    def retry(self, failure: UpstreamFailure, attempt: int, delay_s: float) -> Event:
        self.retries += 1
        self._metrics.upstream_retries.labels(failure.code).inc()
        self.span.add_event("retry", {"error.type": failure.code, "attempt": attempt})
        message = f"Upstream {failure.code}: {failure.message}. Retry {attempt} in {delay_s:.1f} s"
        return events.warning(
            "upstream_retry", message, self._turn, attempt=attempt, delay_s=round(delay_s, 3),
            error_code=failure.code,
        )  # fmt: skip

    def finish(self, turn: TurnTranslator) -> None:
        usage = turn.usage
        cache_read = usage.get("cache_read_input_tokens", 0)
        cache_creation = usage.get("cache_creation_input_tokens", 0)
        attributes: dict[str, Any] = {
            "gen_ai.response.finish_reasons": [turn.stop_reason or ""],
            # The conventions count cached tokens in input_tokens; Anthropic does not.
            "gen_ai.usage.input_tokens": usage.get("input_tokens", 0) + cache_read + cache_creation,
            "gen_ai.usage.output_tokens": usage.get("output_tokens", 0),
            "gen_ai.usage.cache_read.input_tokens": cache_read,
            "gen_ai.usage.cache_creation.input_tokens": cache_creation,
        }
        if turn.message_id:
            attributes["gen_ai.response.id"] = turn.message_id
        if turn.model:
            attributes["gen_ai.response.model"] = turn.model
        self.span.set_attributes(attributes)


class ToolSpan:
    def __init__(self, span: Span, use: dict[str, Any], observer: RunObserver) -> None:
        self.span = span
        self.name = use["name"]
        self._input = use.get("input")
        self._observer = observer

    def finish(self, outcome: ToolOutcome) -> None:
        if outcome.is_error:
            self.span.set_status(Status(StatusCode.ERROR, outcome.content[:200]))
            self.span.set_attribute("error.type", outcome.error_type or "tool_error")
        if self._observer.trace_content:
            self.span.set_attribute("gen_ai.tool.call.result", outcome.content)
        self._observer.count_tool(self.name, outcome, self._input)


class RunObserver:
    """Spans and metrics of one run; `tool_names` keeps metric labels to a closed set."""

    def __init__(
        self,
        *,
        tracer: Tracer,
        metrics: Metrics,
        run_id: str,
        session_id: str,
        endpoint: str,
        model: str,
        tool_names: frozenset[str],
        parent: Context | None = None,
        trace_content: bool = False,
        caller: str = "anonymous",
        audit: RunAudit | None = None,
    ) -> None:
        self.metrics = metrics
        self.endpoint = endpoint
        self.model = model
        self.trace_content = trace_content
        self._tracer = tracer
        self._tool_names = tool_names
        self.started = time.monotonic()
        self._first_event_seen = False
        self.audit = audit
        self.span = tracer.start_span(
            "invoke_agent research-gateway",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.provider.name": PROVIDER,
                "gen_ai.agent.name": "research-gateway",
                "gen_ai.request.model": model,
                "gen_ai.conversation.id": session_id,
                "gateway.run_id": run_id,
                "gateway.endpoint": endpoint,
                "enduser.id": caller,
            },
        )
        self._context = trace.set_span_in_context(self.span)
        context = self.span.get_span_context()
        self.trace_id = format(context.trace_id, "032x") if context.is_valid else None
        metrics.active_streams.labels(endpoint).inc()
        metrics.runs_started.labels(endpoint).inc()
        if audit is not None:
            audit.run_start(endpoint, model)

    @contextmanager
    def model_call(self, turn: int, params: dict[str, Any]) -> Iterator[ModelCall]:
        span = self._tracer.start_span(
            f"chat {params['model']}",
            context=self._context,
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": PROVIDER,
                "gen_ai.request.model": params["model"],
                "gen_ai.request.max_tokens": params["max_tokens"],
                "gateway.turn": turn,
            },
        )
        call = ModelCall(span, self.metrics, turn)
        try:
            yield call
        except BaseException as exc:
            _record_error(span, exc)
            raise
        finally:
            span.set_attribute("gateway.retries", call.retries)
            span.end()

    @contextmanager
    def tool(self, use: dict[str, Any]) -> Iterator[ToolSpan]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": use["name"],
            "gen_ai.tool.call.id": use["id"],
            "gen_ai.tool.type": "function",
        }
        if self.trace_content:
            attributes["gen_ai.tool.call.arguments"] = orjson.dumps(use["input"]).decode()
        span = self._tracer.start_span(
            f"execute_tool {use['name']}", context=self._context, attributes=attributes
        )
        try:
            yield ToolSpan(span, use, self)
        except BaseException as exc:
            _record_error(span, exc)
            raise
        finally:
            span.end()

    def tool_skipped(self, name: str, outcome: ToolOutcome) -> None:
        self.count_tool(name, outcome)

    def count_tool(self, name: str, outcome: ToolOutcome, tool_input: Any = None) -> None:
        label = name if name in self._tool_names else "unknown"
        status = "error" if outcome.is_error else "success"
        result = outcome.error_type if outcome.is_error else "success"
        if result in ("tool_failure", "exception"):
            result = "error"
        m = self.metrics
        m.tool_invocations.labels(label, status).inc()
        m.loop_tool_invocations.labels(label, result or "error").inc()
        if outcome.error_type != "not_run":
            m.tool_duration_ms.labels(label).observe(outcome.duration_ms)
            m.tool_duration_s.labels(label).observe(outcome.duration_ms / 1000)
        if self.audit is not None:
            self.audit.tool_call(
                name, tool_input, result_bytes=len(outcome.content.encode()),
                is_error=outcome.is_error, duration_ms=outcome.duration_ms,
                outcome=result or "error",
            )  # fmt: skip

    def wrap_up(self, reason: str) -> None:
        self.span.add_event("wrap_up", {"reason": reason})
        if reason == "max_turns":
            self.metrics.max_turns_reached.inc()

    def first_event(self) -> None:
        if not self._first_event_seen:
            self._first_event_seen = True
            elapsed = time.monotonic() - self.started
            self.metrics.time_to_first_event_s.labels(self.endpoint).observe(elapsed)

    def finished(self, outcome: str, turns: int, usage: dict[str, int], failed: bool) -> float:
        """Record the run's end (`outcome` is an outcome or an error code); returns ms."""
        elapsed = time.monotonic() - self.started
        m = self.metrics
        m.active_streams.labels(self.endpoint).dec()
        m.runs.labels(self.endpoint, outcome).inc()
        m.run_duration_s.labels(self.endpoint).observe(elapsed)
        m.stream_duration_ms.labels(self.model).observe(elapsed * 1000)
        m.stream_turns.observe(turns)
        m.tokens_input.labels(self.model).inc(usage["input_tokens"])
        m.tokens_output.labels(self.model).inc(usage["output_tokens"])
        m.cache_read_tokens.labels(self.model).inc(usage["cache_read_input_tokens"])
        m.cache_creation_tokens.labels(self.model).inc(usage["cache_creation_input_tokens"])
        self.span.set_attribute("gateway.outcome", outcome)
        self.span.set_attribute("gateway.turns", turns)
        if failed:
            if outcome in UPSTREAM_CODES:
                m.upstream_errors.labels(outcome).inc()
            m.errors.labels(outcome, ROUTE_BY_ENDPOINT.get(self.endpoint, self.endpoint)).inc()
            self.span.set_status(Status(StatusCode.ERROR, outcome))
            self.span.set_attribute("error.type", outcome)
        self.span.end()
        if self.audit is not None:
            self.audit.run_end(outcome, elapsed * 1000, usage, failed=failed)
        return elapsed * 1000


def _record_error(span: Span, exc: BaseException) -> None:
    code = getattr(exc, "code", None) or type(exc).__name__
    span.set_status(Status(StatusCode.ERROR, str(exc)[:200]))
    span.set_attribute("error.type", str(code))
