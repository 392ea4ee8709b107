"""Dead workers' metrics files are folded into one (`fleet.bury`): a fleet that restarted
workers keeps one file for all of them, scrapes add up the same numbers before and after,
and a dead worker's gauges are gone while its counters stay."""

from __future__ import annotations

from pathlib import Path

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from gateway.ops.fleet import DEAD, Member, bury, exposition, publish, serve_snapshots, stop_serving
from gateway.ops.metrics import Metrics


def values(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(text.decode()):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def errors(found: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    return found["claude_errors_total", (("code", "NOT_FOUND"), ("path", "/x"))]


def workers(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], state: str) -> float:
    return found["gateway_metrics_workers", (("state", state),)]


def worker(tmp_path: Path, name: str, errors_counted: int, live: int) -> tuple[Member, Metrics]:
    metrics = Metrics(CollectorRegistry())
    for _ in range(errors_counted):
        metrics.errors.labels("NOT_FOUND", "/x").inc()
    metrics.active_streams.labels("stream").inc(live)
    return Member(tmp_path / name), metrics


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_dead_workers_fold_into_one_file(tmp_path: Path) -> None:
    own, mine = worker(tmp_path, "worker-0-1", 1, 1)
    server = await serve_snapshots(own, mine)
    try:
        for index, count in ((2, 10), (3, 100), (4, 1000)):  # three restarts of worker 1
            member, metrics = worker(tmp_path, f"worker-1-{index}", count, 5)
            publish(metrics, member)  # its last snapshot, and no socket: it has exited
            member.error.write_text("killed\n")
        before = values(await exposition(own, mine))
        assert errors(before) == 1111 and workers(before, "gone") == 3
        for index in (2, 3, 4):
            bury(Member(tmp_path / f"worker-1-{index}"))
        assert names(tmp_path) == sorted([DEAD, "worker-0-1.json", "worker-0-1.sock"])
        after = values(await exposition(own, mine))
        assert errors(after) == 1111 and workers(after, "gone") == 3
        assert workers(after, "answered") == 1
        assert after["sdk_active_streams", (("endpoint", "stream"),)] == 1  # the live one's
        counted = {k: v for k, v in before.items() if not k[0].startswith("gateway_metrics_")}
        assert {k: after.get(k) for k in counted} == counted  # nothing lost, nothing doubled
    finally:
        stop_serving(server, own, mine)


async def test_a_worker_listed_before_its_fold_is_not_counted_twice(tmp_path: Path) -> None:
    own, mine = worker(tmp_path, "worker-0-1", 0, 0)
    server = await serve_snapshots(own, mine)
    try:
        member, metrics = worker(tmp_path, "worker-1-2", 7, 0)
        publish(metrics, member)
        bury(member)
        publish(metrics, member)  # as if a scrape had listed it just before the fold
        found = values(await exposition(own, mine))
        assert errors(found) == 7 and workers(found, "gone") == 1
    finally:
        stop_serving(server, own, mine)
