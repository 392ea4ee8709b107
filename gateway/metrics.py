"""Prometheus instruments, created on an injected registry (no module globals).

Node parity names (`claude_*`) are kept so existing dashboards and alerts keep working;
the `sdk_*` names describe the tool loop. Every label comes from a closed set: route
templates, registry tool names (anything else is `unknown`), outcomes and error codes.
"""

from __future__ import annotations

from typing import TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

M = TypeVar("M", bound=MetricWrapperBase)

MS_BUCKETS = (
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000,
    120_000, 300_000, 600_000, 1_200_000, 1_800_000,
)  # fmt: skip
TURN_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
TOOL_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
RUN_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1200, 1800)
FIRST_EVENT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60)


class Metrics:
    """Every instrument the gateway records, registered on `registry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], MetricWrapperBase] = {}
        r = self.registry
        # Node parity.
        self.request_duration_ms = Histogram(
            "claude_request_duration_ms", "HTTP request duration (ms), by route template.",
            ["method", "route", "status"], buckets=MS_BUCKETS, registry=r,
        )  # fmt: skip
        self.stream_duration_ms = Histogram(
            "claude_stream_duration_ms", "Duration of a run from start to terminal event (ms).",
            ["model"], buckets=MS_BUCKETS, registry=r,
        )  # fmt: skip
        self.tool_duration_ms = Histogram(
            "claude_tool_duration_ms", "Tool call duration (ms).",
            ["tool"], buckets=MS_BUCKETS, registry=r,
        )  # fmt: skip
        self.tool_invocations = Counter(
            "claude_tool_invocations_total", "Tool calls, by tool and success/error.",
            ["tool", "status"], registry=r,
        )  # fmt: skip
        self.errors = Counter(
            "claude_errors_total", "Errors answered to clients, by code and route template.",
            ["code", "path"], registry=r,
        )  # fmt: skip
        # Tokens by the model that answered and the upstream it answered on.
        self.tokens_input = Counter(
            "claude_tokens_input_total", "Input tokens billed.", ["model", "upstream"], registry=r
        )
        self.tokens_output = Counter(
            "claude_tokens_output_total", "Output tokens billed.", ["model", "upstream"],
            registry=r,
        )  # fmt: skip
        self.cache_read_tokens = Counter(
            "claude_cache_read_tokens_total", "Input tokens read from the prompt cache.",
            ["model", "upstream"], registry=r,
        )  # fmt: skip
        self.cache_creation_tokens = Counter(
            "claude_cache_creation_tokens_total", "Input tokens written to the prompt cache.",
            ["model", "upstream"], registry=r,
        )  # fmt: skip
        # The loop.
        self.stream_turns = Histogram(
            "sdk_stream_turns", "Model calls per run.", buckets=TURN_BUCKETS, registry=r
        )
        self.run_duration_s = Histogram(
            "sdk_stream_duration_seconds", "Run duration (s), by endpoint.",
            ["endpoint"], buckets=RUN_SECONDS_BUCKETS, registry=r,
        )  # fmt: skip
        self.loop_tool_invocations = Counter(
            "sdk_tool_invocations_total",
            "Tool calls by outcome: success, error, timeout, invalid_input, unknown_tool, not_run.",
            ["tool", "outcome"], registry=r,
        )  # fmt: skip
        self.tool_duration_s = Histogram(
            "sdk_tool_duration_seconds", "Tool call duration (s).",
            ["tool"], buckets=TOOL_SECONDS_BUCKETS, registry=r,
        )  # fmt: skip
        self.max_turns_reached = Counter(
            "sdk_max_turns_reached_total", "Runs that hit max_turns and were wrapped up.",
            registry=r,
        )  # fmt: skip
        self.runs = Counter(
            "sdk_runs_total", "Finished runs by endpoint and outcome (an error code if failed).",
            ["endpoint", "outcome"], registry=r,
        )  # fmt: skip
        self.active_streams = Gauge(
            "sdk_active_streams", "Runs in progress.", ["endpoint"], registry=r
        )
        self.time_to_first_event_s = Histogram(
            "sdk_time_to_first_event_seconds",
            "From run start to the first event produced by the model (s).",
            ["endpoint"], buckets=FIRST_EVENT_BUCKETS, registry=r,
        )  # fmt: skip
        self.upstream_retries = Counter(
            "sdk_upstream_retries_total", "Upstream calls retried, by reason.",
            ["reason", "upstream"], registry=r,
        )  # fmt: skip
        self.upstream_errors = Counter(
            "sdk_upstream_errors_total", "Runs ended by an upstream failure, by code.",
            ["code", "upstream"], registry=r,
        )  # fmt: skip
        self.upstream_fallbacks = Counter(
            "sdk_upstream_fallbacks_total",
            "Model calls handed to the next upstream after this one failed.",
            ["upstream", "code"], registry=r,
        )  # fmt: skip
        self.runs_started = Counter(
            "sdk_runs_started_total", "Runs started, by endpoint.", ["endpoint"], registry=r
        )
        self.build_info = Gauge(
            "gateway_build_info", "Always 1; labels say what is running.",
            ["version", "model", "upstream"], registry=r,
        )  # fmt: skip
        self.sse_readers = Gauge(
            "sdk_sse_readers", "Open SSE connections reading a run.", registry=r
        )
        # Who may do what: label values are key names from the configuration.
        self.rate_limited = Counter(
            "gateway_rate_limited_total", "Run starts refused with 429, by key name and limit.",
            ["key", "limit"], registry=r,
        )  # fmt: skip

    def child(self, metric: M, *values: str) -> M:
        """`metric.labels(*values)`, kept: prometheus_client validates and locks on every
        `labels` call (a dozen a run); every label comes from a closed set, so this stays
        as small as the metrics' own series."""
        key = (metric, values)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*values)
        return found  # type: ignore[return-value]  # what `metric.labels` gave
