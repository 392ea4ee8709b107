"""Prometheus instruments, exported from an injected registry (no module globals).

Node parity names (`claude_*`) are kept so existing dashboards and alerts keep working;
the `sdk_*` names describe the tool loop. Every label comes from a closed set: route
templates, registry tool names (anything else is `unknown`), outcomes and error codes.

The instruments are plain numbers, counted on the event loop's thread and turned into
metric families only when `/metrics` is scraped (one collector on the registry).
`prometheus_client`'s own instruments validate, take a lock and (histograms) scan their
buckets on every update: ~15 updates a run came to 4.5 % of a run start's instructions.
The exposition is the same: `_total`, `_created`, cumulative `_bucket`s, `_count`, `_sum`.

With several workers (`gateway.ops.fleet`) each worker's numbers travel as a `snapshot()` and
the worker answering the scrape adds them up (`merged`): counters and histograms summed,
`_created` the earliest, gauges per their `merge` mode over the workers still alive.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Literal, TypeVar, cast

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

# The `le` label as prometheus_client writes it ("1.0", "1.8e+06", "+Inf").
_go_float = cast(Callable[[float], str], floatToGoString)

MS_BUCKETS = (
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    30_000,
    60_000,
    120_000,
    300_000,
    600_000,
    1_200_000,
    1_800_000,
)
TURN_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
TOOL_SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
RUN_SECONDS_BUCKETS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1200, 1800)
FIRST_EVENT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 30, 60)

Snapshot = dict[str, list[list[Any]]]
"""A process's numbers, as JSON (`Metrics.snapshot`): each metric's series by name."""


class Value:
    """One series of a counter or a gauge."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1) -> None:
        self.value += amount

    def dec(self, amount: float = 1) -> None:
        self.value -= amount

    def set(self, value: float) -> None:
        self.value = value


class Total(Value):
    """One series of a counter: it only goes up (a negative amount, as a hostile upstream's
    token count could be, is not counted; prometheus_client would raise in the run)."""

    __slots__ = ()

    def inc(self, amount: float = 1) -> None:
        if amount > 0:
            self.value += amount


class Spread:
    """One series of a histogram: a count per bucket (not cumulative until exported)."""

    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        # The first bucket whose upper bound is >= amount (+Inf is last), as Prometheus's `le`.
        self.counts[bisect_left(self.bounds, amount)] += 1
        self.sum += amount


S = TypeVar("S", Value, Total, Spread)


class Instrument(Generic[S]):
    """A metric: its series by label values, made on first use and kept (labels come from
    closed sets). Unlabelled metrics have their one series from the start, as
    prometheus_client's do, so they export 0 before anything happens."""

    def __init__(self, name: str, doc: str, labels: Sequence[str] = ()) -> None:
        self.name, self.doc, self.labelnames = name, doc, tuple(labels)
        self.series: dict[tuple[str, ...], S] = {}
        if not self.labelnames:
            self.labels()

    def labels(self, *values: str) -> S:
        found = self.series.get(values)
        if found is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values}")
            found = self.series[values] = self._new()
        return found

    def _new(self) -> S:
        raise NotImplementedError

    def family(self) -> Metric:
        raise NotImplementedError

    def state(self) -> list[list[Any]]:
        """Every series as JSON: `[labels, value, created]` (histograms: `[labels, counts,
        sum, created]`)."""
        raise NotImplementedError

    def absorb(self, state: list[list[Any]]) -> None:
        """Add another process's `state()` to this one's series."""
        raise NotImplementedError


class Counter(Instrument[Total]):
    def _new(self) -> Total:
        return Total()

    def inc(self, amount: float = 1) -> None:
        self.labels().inc(amount)

    def family(self) -> Metric:
        family = CounterMetricFamily(self.name, self.doc, labels=self.labelnames)
        for values, series in self.series.items():
            family.add_metric(values, series.value, created=series.created)
        return family

    def state(self) -> list[list[Any]]:
        return [[list(k), v.value, v.created] for k, v in self.series.items()]

    def absorb(self, state: list[list[Any]]) -> None:
        for values, value, created in state:
            series = self.labels(*values)
            series.value += value
            series.created = min(series.created, created)


class Gauge(Instrument[Value]):
    """`merge` says how several workers' values add up (as prometheus_client's
    multiprocess modes `livesum` and `livemax`): only workers still alive count."""

    def __init__(
        self,
        name: str,
        doc: str,
        labels: Sequence[str] = (),
        *,
        merge: Literal["sum", "max"] = "sum",
    ) -> None:
        self.merge = merge
        super().__init__(name, doc, labels)

    def _new(self) -> Value:
        return Value()

    def inc(self, amount: float = 1) -> None:
        self.labels().inc(amount)

    def dec(self, amount: float = 1) -> None:
        self.labels().dec(amount)

    def family(self) -> Metric:
        family = GaugeMetricFamily(self.name, self.doc, labels=self.labelnames)
        for values, series in self.series.items():
            family.add_metric(values, series.value)
        return family

    def state(self) -> list[list[Any]]:
        return [[list(k), v.value, v.created] for k, v in self.series.items()]

    def absorb(self, state: list[list[Any]]) -> None:
        for values, value, _created in state:
            fresh = tuple(values) not in self.series
            series = self.labels(*values)
            if self.merge == "sum":
                series.value += value
            else:
                series.value = value if fresh else max(series.value, value)


class Histogram(Instrument[Spread]):
    def __init__(
        self, name: str, doc: str, labels: Sequence[str] = (), *, buckets: Sequence[float]
    ) -> None:
        self.bounds = (*map(float, buckets), float("inf"))
        super().__init__(name, doc, labels)

    def _new(self) -> Spread:
        return Spread(self.bounds)

    def observe(self, amount: float) -> None:
        self.labels().observe(amount)

    def family(self) -> Metric:
        family = HistogramMetricFamily(self.name, self.doc, labels=self.labelnames)
        edges = [_go_float(bound) for bound in self.bounds]
        for values, series in self.series.items():
            total, buckets = 0, []
            for edge, count in zip(edges, series.counts, strict=True):
                total += count
                buckets.append((edge, float(total)))
            family.add_metric(values, buckets, series.sum)
            family.add_sample(
                self.name + "_created",
                dict(zip(self.labelnames, values, strict=True)),
                series.created,
            )
        return family

    def state(self) -> list[list[Any]]:
        return [[list(k), v.counts, v.sum, v.created] for k, v in self.series.items()]

    def absorb(self, state: list[list[Any]]) -> None:
        for values, counts, total, created in state:
            series = self.labels(*values)
            if len(counts) != len(series.counts):
                raise ValueError(f"{self.name}: {len(counts)} buckets, want {len(series.counts)}")
            series.counts = [a + b for a, b in zip(series.counts, counts, strict=True)]
            series.sum += total
            series.created = min(series.created, created)


class Metrics:
    """Every instrument the gateway records, registered on `registry`."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        # Node parity.
        self.request_duration_ms = Histogram(
            "claude_request_duration_ms",
            "HTTP request duration (ms), by route template.",
            ["method", "route", "status"],
            buckets=MS_BUCKETS,
        )
        self.stream_duration_ms = Histogram(
            "claude_stream_duration_ms",
            "Duration of a run from start to terminal event (ms).",
            ["model"],
            buckets=MS_BUCKETS,
        )
        self.tool_duration_ms = Histogram(
            "claude_tool_duration_ms",
            "Tool call duration (ms).",
            ["tool"],
            buckets=MS_BUCKETS,
        )
        self.tool_invocations = Counter(
            "claude_tool_invocations_total",
            "Tool calls, by tool and success/error.",
            ["tool", "status"],
        )
        self.errors = Counter(
            "claude_errors_total",
            "Errors answered to clients, by code and route template.",
            ["code", "path"],
        )
        # Tokens by the model that answered and the upstream it answered on.
        self.tokens_input = Counter(
            "claude_tokens_input_total", "Input tokens billed.", ["model", "upstream"]
        )
        self.tokens_output = Counter(
            "claude_tokens_output_total", "Output tokens billed.", ["model", "upstream"]
        )
        self.cache_read_tokens = Counter(
            "claude_cache_read_tokens_total",
            "Input tokens read from the prompt cache.",
            ["model", "upstream"],
        )
        self.cache_creation_tokens = Counter(
            "claude_cache_creation_tokens_total",
            "Input tokens written to the prompt cache.",
            ["model", "upstream"],
        )
        self.cost_usd = Counter(
            "claude_cost_usd_total",
            "Dollars the model calls cost, by model and key (calls of unpriced models add none).",
            ["model", "key"],
        )
        # The loop.
        self.stream_turns = Histogram(
            "sdk_stream_turns", "Model calls per run.", buckets=TURN_BUCKETS
        )
        self.run_duration_s = Histogram(
            "sdk_stream_duration_seconds",
            "Run duration (s), by endpoint.",
            ["endpoint"],
            buckets=RUN_SECONDS_BUCKETS,
        )
        self.loop_tool_invocations = Counter(
            "sdk_tool_invocations_total",
            "Tool calls by outcome: success, error, timeout, invalid_input, unknown_tool, not_run.",
            ["tool", "outcome"],
        )
        self.mcp_calls = Counter(
            "sdk_mcp_calls_total",
            "Calls of MCP servers' tools, by server, tool (the server's name) and outcome.",
            ["server", "tool", "outcome"],
        )
        self.tool_duration_s = Histogram(
            "sdk_tool_duration_seconds",
            "Tool call duration (s).",
            ["tool"],
            buckets=TOOL_SECONDS_BUCKETS,
        )
        self.max_turns_reached = Counter(
            "sdk_max_turns_reached_total", "Runs that hit max_turns and were wrapped up."
        )
        self.runs = Counter(
            "sdk_runs_total",
            "Finished runs by endpoint and outcome (an error code if failed).",
            ["endpoint", "outcome"],
        )
        self.refusals = Counter(
            "gateway_refusals_total",
            "Runs the model refused, by model and stop_details.category (none: no category).",
            ["model", "category"],
        )
        self.active_streams = Gauge("sdk_active_streams", "Runs in progress.", ["endpoint"])
        self.time_to_first_event_s = Histogram(
            "sdk_time_to_first_event_seconds",
            "From run start to the first event produced by the model (s).",
            ["endpoint"],
            buckets=FIRST_EVENT_BUCKETS,
        )
        self.upstream_retries = Counter(
            "sdk_upstream_retries_total",
            "Upstream calls retried, by reason.",
            ["reason", "upstream"],
        )
        self.upstream_errors = Counter(
            "sdk_upstream_errors_total",
            "Runs ended by an upstream failure, by code.",
            ["code", "upstream"],
        )
        self.upstream_fallbacks = Counter(
            "sdk_upstream_fallbacks_total",
            "Model calls handed to the next upstream after this one failed.",
            ["upstream", "code"],
        )
        self.runs_started = Counter(
            "sdk_runs_started_total", "Runs started, by endpoint.", ["endpoint"]
        )
        self.batches = Counter(
            "sdk_batches_total", "Batches ended, by outcome (completed, cancelled).", ["outcome"]
        )
        self.batch_rounds = Counter(
            "sdk_batch_rounds_total", "Rounds of batches submitted (one Message Batch each)."
        )
        self.batch_saved_usd = Counter(
            "claude_batch_saved_usd_total",
            "Dollars batch questions cost less than the same calls live, by model and key.",
            ["model", "key"],
        )
        self.answer_figures = Counter(
            "gateway_answer_figures_total",
            "Figures of final answers by the figure check's status "
            "(sourced, derived, unsourced, other_period) and model.",
            ["status", "model"],
        )
        self.build_info = Gauge(
            "gateway_build_info",
            "Always 1; labels say what is running.",
            ["version", "model", "upstream"],
            merge="max",
        )
        self.sse_readers = Gauge("sdk_sse_readers", "Open SSE connections reading a run.")
        # Who may do what: label values are key names from the configuration.
        self.rate_limited = Counter(
            "gateway_rate_limited_total",
            "Run starts refused with 429, by key name and limit.",
            ["key", "limit"],
        )
        self.key_usd = Counter(
            "gateway_key_spend_usd_total",
            "Dollars charged, by key name and model.",
            ["key", "model"],
        )
        self.key_tokens = Counter(
            "gateway_key_tokens_total",
            "Tokens charged, by key name, model and class (input, output, cache_read, "
            "cache_creation).",
            ["key", "model", "class"],
        )
        self.key_runs = Counter(
            "gateway_key_runs_total",
            "Runs (and batch questions) charged, by key name, model and kind (run, "
            "batch_question).",
            ["key", "model", "kind"],
        )
        self.audit_dropped = Counter(
            "gateway_audit_dropped_total", "Audit lines dropped: the audit queue was full."
        )
        self._tokens: dict[tuple[str, str], tuple[Total, Total, Total, Total]] = {}
        self._runs: dict[str, tuple[Value, Total]] = {}
        # Every instrument above, found once by name: a compiled class has no `vars()`.
        self._instruments: list[Instrument[Any]] = [
            found
            for found in (getattr(self, name, None) for name in dir(self))
            if isinstance(found, Instrument)
        ]
        self.registry = registry if registry is not None else CollectorRegistry()
        self.registry.register(self)  # a collector: `collect()` at every scrape

    def token_series(self, model: str, upstream: str) -> tuple[Total, Total, Total, Total]:
        """A model call's token counters (input, output, cache read, cache creation) for
        its model and upstream: the four looked up once, not four times a call."""
        found = self._tokens.get((model, upstream))
        if found is None:
            found = self._tokens[(model, upstream)] = (
                self.tokens_input.labels(model, upstream),
                self.tokens_output.labels(model, upstream),
                self.cache_read_tokens.labels(model, upstream),
                self.cache_creation_tokens.labels(model, upstream),
            )
        return found

    def run_series(self, endpoint: str) -> tuple[Value, Total]:
        """A run's `active_streams` and `runs_started` series for its endpoint, looked up
        once."""
        found = self._runs.get(endpoint)
        if found is None:
            found = self._runs[endpoint] = (
                self.active_streams.labels(endpoint),
                self.runs_started.labels(endpoint),
            )
        return found

    def collect(self) -> Iterator[Metric]:
        for instrument in self.instruments():
            yield instrument.family()

    def instruments(self) -> list[Instrument[Any]]:
        return self._instruments

    def snapshot(self) -> Snapshot:
        """Every series's numbers, as JSON, for `merged` in another process."""
        return {instrument.name: instrument.state() for instrument in self.instruments()}

    @classmethod
    def merged(cls, alive: Sequence[Snapshot], gone: Sequence[Snapshot]) -> Metrics:
        """Instruments holding the sum of the snapshots of workers `alive` and of workers
        `gone` (those count only in counters and histograms: what they counted happened,
        what they were doing is over). Names this version does not know are left out."""
        merged = cls()
        for instrument in merged.instruments():
            instrument.series.clear()  # no series made now: the earliest `_created` wins
            for snapshot in (*alive, *(() if isinstance(instrument, Gauge) else gone)):
                instrument.absorb(snapshot.get(instrument.name, []))
        return merged
