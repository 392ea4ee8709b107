"""The gateway's own instruments export exactly what prometheus_client's instruments would
for the same updates: same series, same `le` labels, same cumulative buckets and sums
(dashboards and alerts read these names), and a `_created` for every counter and
histogram series."""

from __future__ import annotations

import json
import re
from typing import Any

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from gateway.ops import metrics


def _updates(counter: Any, gauge: Any, histogram: Any) -> None:
    for value in (0.004, 0.005, 0.0051, 1, 120, 121, 1e9):  # on and past the bounds
        histogram.labels("echo").observe(value)
    counter.labels("stream", "completed").inc()
    counter.labels("stream", "completed").inc(2.5)
    counter.labels("research", "cancelled").inc(0)
    gauge.labels("stream").inc()
    gauge.labels("stream").inc()
    gauge.labels("stream").dec()
    gauge.labels("research").set(7)


def _exposition(registry: CollectorRegistry) -> tuple[list[str], list[str]]:
    """The lines without `_created` values (times differ), and the `_created` series."""
    lines = generate_latest(registry).decode().splitlines()
    plain = [line for line in lines if "_created" not in line]
    created = [line.split(" ")[0] for line in lines if re.match(r"\w+_created\{", line)]
    return plain, created


def test_exposition_is_prometheus_clients() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()

    class Mine:
        def __init__(self) -> None:
            self.runs = metrics.Counter("t_runs_total", "Runs.", ["endpoint", "outcome"])
            self.active = metrics.Gauge("t_active", "Active.", ["endpoint"])
            self.tool_s = metrics.Histogram(
                "t_tool_seconds", "Tool s.", ["tool"], buckets=metrics.TOOL_SECONDS_BUCKETS
            )
            self.idle = metrics.Counter("t_idle_total", "Never incremented, no labels.")

        def collect(self) -> object:
            return (self.runs.family(), self.active.family(), self.tool_s.family(),
                    self.idle.family())  # fmt: skip

    mine = Mine()
    ours.register(mine)  # type: ignore[arg-type]
    runs = prometheus_client.Counter(
        "t_runs_total", "Runs.", ["endpoint", "outcome"], registry=theirs
    )
    active = prometheus_client.Gauge("t_active", "Active.", ["endpoint"], registry=theirs)
    tool_s = prometheus_client.Histogram(
        "t_tool_seconds", "Tool s.", ["tool"], buckets=metrics.TOOL_SECONDS_BUCKETS,
        registry=theirs,
    )  # fmt: skip
    prometheus_client.Counter("t_idle_total", "Never incremented, no labels.", registry=theirs)
    _updates(mine.runs, mine.active, mine.tool_s)
    _updates(runs, active, tool_s)
    assert _exposition(ours) == _exposition(theirs)
    assert 't_tool_seconds_bucket{le="0.005",tool="echo"} 2.0' in _exposition(ours)[0]
    assert "t_idle_total 0.0" in _exposition(ours)[0]


def test_a_series_takes_its_metrics_labels() -> None:
    runs = metrics.Counter("t_runs_total", "Runs.", ["endpoint", "outcome"])
    with pytest.raises(ValueError, match="endpoint"):
        runs.labels("stream")
    assert runs.labels("stream", "completed") is runs.labels("stream", "completed")


def test_a_counter_never_goes_down() -> None:
    tokens = metrics.Counter("t_tokens_total", "Tokens.")
    tokens.inc(5)
    tokens.inc(-3)  # a hostile upstream's usage: not counted, and the run goes on
    assert tokens.labels().value == 5


def test_the_gateways_registry_exports_every_instrument() -> None:
    registry = CollectorRegistry()
    instruments = metrics.Metrics(registry)
    instruments.stream_turns.observe(3)
    families = {family.name: family.type for family in registry.collect()}
    assert families["sdk_stream_turns"] == "histogram"
    assert families["sdk_runs"] == "counter"
    assert families["sdk_active_streams"] == "gauge"
    assert len(families) == len(instruments.instruments())
    assert registry.get_sample_value("sdk_stream_turns_bucket", {"le": "3.0"}) == 1
    assert registry.get_sample_value("sdk_stream_turns_bucket", {"le": "2.0"}) == 0


def _run_updates(instruments: metrics.Metrics, endpoint: str, runs: int) -> None:
    for _ in range(runs):
        instruments.runs_started.labels(endpoint).inc()
        instruments.runs.labels(endpoint, "completed").inc()
        instruments.tool_duration_s.labels("sec_search").observe(
            0.25
        )  # exact in binary: sums add up in any order
    instruments.active_streams.labels(endpoint).inc(runs)
    instruments.build_info.labels("1.0", "demo", "demo").set(1)


def test_workers_snapshots_add_up_to_one_process_doing_it_all() -> None:
    """Counters and histograms of several workers, merged, export what one process that
    counted everything would; gauges sum over the workers alive; JSON on the way."""
    first, second, gone, alone = (metrics.Metrics() for _ in range(4))
    _run_updates(first, "stream", 3)
    _run_updates(second, "research", 2)
    _run_updates(gone, "stream", 4)
    gone.active_streams.labels("stream").dec(4)  # what it was doing is over either way
    for endpoint, runs in (("stream", 3), ("research", 2), ("stream", 4)):
        _run_updates(alone, endpoint, runs)
    alone.active_streams.labels("stream").set(3)  # the gone worker's 4 are not running

    def wire(m: metrics.Metrics) -> metrics.Snapshot:
        return json.loads(json.dumps(m.snapshot()))  # type: ignore[no-any-return]

    merged = metrics.Metrics.merged([wire(first), wire(second)], [wire(gone)])
    assert _exposition(merged.registry)[0] == _exposition(alone.registry)[0]
    assert merged.registry.get_sample_value("sdk_runs_total", {"endpoint": "stream",
        "outcome": "completed"}) == 7  # fmt: skip
    assert merged.registry.get_sample_value("gateway_build_info", {"version": "1.0",
        "model": "demo", "upstream": "demo"}) == 1  # fmt: skip
    created = merged.runs.labels("stream", "completed").created
    assert created == min(m.runs.labels("stream", "completed").created for m in (first, gone))


def test_a_snapshot_from_another_version_is_read_as_far_as_it_matches() -> None:
    worker = metrics.Metrics()
    worker.runs.labels("stream", "completed").inc()
    snapshot = {**worker.snapshot(), "sdk_renamed_total": [[[], 5.0, 0.0]]}
    merged = metrics.Metrics.merged([snapshot], [])
    assert merged.registry.get_sample_value("sdk_renamed_total") is None
    broken = {"sdk_stream_turns": [[[], [1, 2], 3.0, 0.0]]}  # other buckets
    with pytest.raises(ValueError, match="sdk_stream_turns: 2 buckets"):
        metrics.Metrics.merged([broken], [])
