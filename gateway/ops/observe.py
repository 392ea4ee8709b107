"""One object per run that the loop and the run driver report to: it writes the spans
(OpenTelemetry GenAI conventions) and the Prometheus instruments, so the loop itself
makes one-line calls and never touches either API.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import orjson
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from gateway.errors import UpstreamFailure
from gateway.ops.audit import RunAudit
from gateway.ops.metrics import Metrics
from gateway.ops.telemetry import UnrecordedTracer
from gateway.providers.base import ModelCall, Provider, Turn
from gateway.providers.health import UPSTREAM_CODES
from gateway.providers.seam import CallHooks
from tools.registry import ToolOutcome

ROUTE_BY_ENDPOINT = {"stream": "/api/stream", "research": "/api/research"}


class CallSpan:
    """The `chat {model}` span of one model call: its retries, fallbacks and tokens."""

    def __init__(self, span: Span, metrics: Metrics, observer: RunObserver) -> None:
        self.span = span
        self.retries = 0
        self.turn: Turn | None = None
        self.upstream = ""
        self._metrics = metrics
        self._observer = observer

    def __enter__(self) -> CallSpan:
        return self

    def __exit__(self, _: object, exc: BaseException | None, __: object) -> None:
        # A class, not a generator's context manager: one per model call.
        if exc is not None:
            _record_error(self.span, exc)
        self.span.set_attribute("gateway.retries", self.retries)
        self.span.end()

    def hooks(self, state: Any) -> CallHooks:
        """What the seam reports back: the turn in use (kept on `state.current` so a run
        cut off mid-turn still has its text), each retry, each failure."""

        def on_turn(turn: Turn, provider: Provider) -> None:
            self.turn = state.current = turn
            self.upstream = self._observer.upstream = provider.name
            self.span.set_attribute("gen_ai.provider.name", provider.name)

        return CallHooks(on_turn, self._retried, self._failed, warned=state.dropped_warned)

    def _retried(self, failure: UpstreamFailure, upstream: str) -> None:
        self.retries += 1
        self._metrics.upstream_retries.labels(failure.code, upstream).inc()
        self.span.add_event("retry", {"error.type": failure.code, "upstream": upstream})

    def _failed(self, failure: UpstreamFailure, upstream: str, fallback: bool) -> None:
        self._observer.upstream_result(upstream, failure.code)
        if fallback:
            self._metrics.upstream_fallbacks.labels(upstream, failure.code).inc()
        self.span.add_event("upstream_failed", {"error.type": failure.code, "upstream": upstream})

    def finish(self) -> Turn:
        """The turn that answered, its usage recorded on the span and the counters."""
        turn = self.turn
        assert turn is not None, "the seam announces a turn before it streams"
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
        message_id = getattr(turn, "message_id", None)
        if message_id:
            attributes["gen_ai.response.id"] = message_id
        if turn.model:
            attributes["gen_ai.response.model"] = turn.model
        self.span.set_attributes(attributes)
        self._observer.count_tokens(turn.model or self._observer.model, self.upstream, usage)
        self._observer.upstream_result(self.upstream, None)
        self._observer.audit_server_tools(turn.content)
        return turn


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
        tool_names: Container[str],
        tool_sources: Mapping[str, str] | None = None,
        parent: Context | None = None,
        trace_content: bool = False,
        upstream: str = "anthropic",
        on_upstream_result: Callable[[str, str | None], None] | None = None,
        caller: str = "anonymous",
        audit: RunAudit | None = None,
    ) -> None:
        self.metrics = metrics
        self.upstream = upstream
        """The upstream of the latest model call (the first configured one before any)."""
        self.on_upstream_result = on_upstream_result
        self.endpoint = endpoint
        self.model = model
        self.trace_content = trace_content
        self._tracer = tracer
        self._tool_names = tool_names
        self._tool_sources = tool_sources or {}
        """Tool name -> MCP server, for the tools of MCP servers."""
        self.started = time.monotonic()
        self._first_event_seen = False
        self.audit = audit
        self.caller = caller
        self._recording = type(tracer) is not UnrecordedTracer  # not isinstance: an ABC
        """Spans keep attributes: without an exporter none is built for them."""
        self.span = tracer.start_span(
            "invoke_agent research-gateway",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.provider.name": upstream,
                "gen_ai.agent.name": "research-gateway",
                "gen_ai.request.model": model,
                "gen_ai.conversation.id": session_id,
                "gateway.run_id": run_id,
                "gateway.endpoint": endpoint,
                "enduser.id": caller,
            }
            if self._recording
            else None,
        )
        self._context = trace.set_span_in_context(self.span)
        context = self.span.get_span_context()
        self.trace_id = format(context.trace_id, "032x") if context.is_valid else None
        self._active, started = metrics.run_series(endpoint)
        self._active.inc()
        started.inc()
        if audit is not None:
            audit.run_start(endpoint, model)

    def model_call(self, turn: int, call: ModelCall) -> CallSpan:
        """`with`: the call's span, ended on the way out (an error recorded on it)."""
        span = self._tracer.start_span(
            f"chat {call.model}",
            context=self._context,
            kind=SpanKind.CLIENT,
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.upstream,
                "gen_ai.request.model": call.model,
                "gen_ai.request.max_tokens": call.max_tokens,
                "gateway.turn": turn,
            }
            if self._recording
            else None,
        )
        return CallSpan(span, self.metrics, self)

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
        server = self._tool_sources.get(name)
        if server is not None:
            tool = name[len(server) + 2 :]  # after `<server>__`
            m.mcp_calls.labels(server, tool, result or "error").inc()
        if outcome.error_type != "not_run":
            m.tool_duration_ms.labels(label).observe(outcome.duration_ms)
            m.tool_duration_s.labels(label).observe(outcome.duration_ms / 1000)
        if self.audit is not None:
            self.audit.tool_call(
                name,
                tool_input,
                result_bytes=len(outcome.content.encode()),
                is_error=outcome.is_error,
                duration_ms=outcome.duration_ms,
                outcome=result or "error",
            )

    def audit_server_tools(self, content: list[dict[str, Any]]) -> None:
        """Tools the API ran itself get their audit line as the gateway's own do."""
        if self.audit is None:
            return
        results = {
            b.get("tool_use_id"): b for b in content if b.get("type", "").endswith("_tool_result")
        }
        for block in content:
            if block.get("type") != "server_tool_use":
                continue
            result = results.get(block["id"], {}).get("content")
            failed = isinstance(result, dict) and str(result.get("type", "")).endswith("_error")
            self.audit.tool_call(
                block["name"],
                block.get("input"),
                result_bytes=len(orjson.dumps(result)),
                is_error=failed,
                duration_ms=0.0,
                outcome="error" if failed else "success",
            )

    def wrap_up(self, reason: str) -> None:
        self.span.add_event("wrap_up", {"reason": reason})
        if reason == "max_turns":
            self.metrics.max_turns_reached.inc()

    def count_tokens(self, model: str, upstream: str, usage: dict[str, int]) -> None:
        inputs, outputs, read, created = self.metrics.token_series(model, upstream)
        inputs.inc(usage.get("input_tokens", 0))
        outputs.inc(usage.get("output_tokens", 0))
        read.inc(usage.get("cache_read_input_tokens", 0))
        created.inc(usage.get("cache_creation_input_tokens", 0))

    def refused(self, category: str | None) -> None:
        """A run the model refused, by its category (`events.REFUSAL_CATEGORIES`, `other`,
        or None: `none`)."""
        self.metrics.refusals.labels(self.model, category or "none").inc()

    def count_cost(self, model: str, cost: float | None) -> None:
        """One model call's price (None: its model has no price, and nothing is added)."""
        if cost is not None:
            self.metrics.cost_usd.labels(model, self.caller).inc(cost)

    def count_figures(self, model: str, counts: dict[str, int]) -> None:
        """The figure check of the run's answer."""
        for status, count in counts.items():
            if count:
                self.metrics.answer_figures.labels(status, model).inc(count)

    def upstream_result(self, upstream: str, code: str | None) -> None:
        """A model call answered on `upstream` (None) or failed there after its retries."""
        if self.on_upstream_result is not None:
            self.on_upstream_result(upstream, code)

    def first_event(self) -> None:
        if not self._first_event_seen:
            self._first_event_seen = True
            elapsed = time.monotonic() - self.started
            self.metrics.time_to_first_event_s.labels(self.endpoint).observe(elapsed)

    def finished(self, outcome: str, turns: int, usage: dict[str, int], failed: bool) -> float:
        """Record the run's end (`outcome` is an outcome or an error code); returns ms."""
        elapsed = time.monotonic() - self.started
        m = self.metrics
        self._active.dec()
        m.runs.labels(self.endpoint, outcome).inc()
        m.run_duration_s.labels(self.endpoint).observe(elapsed)
        m.stream_duration_ms.labels(self.model).observe(elapsed * 1000)
        m.stream_turns.observe(turns)
        self.span.set_attribute("gateway.outcome", outcome)
        self.span.set_attribute("gateway.turns", turns)
        if failed:
            if outcome in UPSTREAM_CODES:
                m.upstream_errors.labels(outcome, self.upstream).inc()
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
