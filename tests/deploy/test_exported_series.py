"""The alert rules against what a real `python -m gateway --workers 2` exports.

Two workers under load are scraped as Prometheus would (one worker killed mid-way); the
series they export are checked against every selector in deploy/alerts.yml and the
series the promtool unit tests invent, then given to promtool as input: no counter ever
resets, the runs add up, no alert fires under load and GatewayNoRuns fires once it stops.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gateway.ops.metrics import Metrics
from tests.deploy.dashboards import ALERTS, JOB
from tests.deploy.test_promtool import UNIT_TESTS, needs_promtool, promtool, without_annotations
from tests.procs.gateway import GatewayProcess
from tests.procs.load import Load, Sample, counted, scrape, total
from tests.procs.redis import redis_server
from tests.test_workers import DEMO, two_workers

pytestmark = pytest.mark.redis
yaml = pytest.importorskip("yaml")  # no type stubs: read as Any

SELECTOR = re.compile(r"\b([a-z_:][a-z0-9_:]*)\s*(\{[^}]*\})?")
MATCHER = re.compile(r"([a-z_]+)\s*(?:=~|!~|!=|=)")
PROMQL_WORDS = {
    "sum", "by", "on", "and", "or", "unless", "rate", "increase", "absent", "max",
    "histogram_quantile", "le", "job", "tool", "endpoint", "code", "instance",
}  # fmt: skip
Scraped = dict[Sample, float]
HEALTHY = "How has NVIDIA's revenue grown?"
"""A question whose tools all answer: a run a minute with a failing tool call (as in
`Load`'s own) is a tool error ratio of a half, which GatewayToolErrorRatioHigh must see."""
TARGET = {"job": JOB, "instance": "gw:3001"}  # what Prometheus adds to every series


def exported_labels(text: str) -> dict[str, set[str]]:
    """Each sample name the exposition has, with every label name it carries. A family
    with no series yet (no upstream error so far) has its name and its declared labels."""
    declared = {i.name: i.labelnames for i in Metrics().instruments()}
    labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}
        for suffix in suffixes.get(family.type, [""]) if not family.samples else []:
            name = family.name + suffix
            extra = {"le"} if suffix == "_bucket" else set()
            labels[name] = set(declared.get(name, declared.get(family.name, ()))) | extra
        for sample in family.samples:
            labels.setdefault(sample.name, set()).update(sample.labels)
    return labels


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """The metric names in a PromQL expression, each with the label names it matches on."""
    expr = re.sub(r"\[[^]]*\]", "", expr)  # ranges
    expr = re.sub(r"\((?:job|tool|endpoint|code|le)(?:, *\w+)*\)", "", expr)  # by (...)
    found = []
    for name, matchers in SELECTOR.findall(expr):
        if name in PROMQL_WORDS or re.fullmatch(r"[0-9.e]+", name):
            continue
        found.append((name, set(MATCHER.findall(matchers or ""))))
    return found


def promql_series(name: str, labels: dict[str, str]) -> str:
    inner = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}}"


async def completed_past(load: Load, count: int) -> None:
    """Wait until the load has completed more than `count` runs (later on a busy machine)."""
    async with asyncio.timeout(60):
        while load.completed <= count:
            await asyncio.sleep(0.05)


async def minutes_of_scrapes(gw: GatewayProcess, load: Load) -> tuple[list[Scraped], int]:
    """Eight scrapes under load, each after a run more has completed (as in a minute of
    Prometheus's: the scrapes are seconds apart, and a busy machine may finish no run in
    a second), one worker SIGKILLed after the fourth. Also how many runs completed around
    the kill: the killed worker's count lives on as it was at its last scrape."""
    scrapes: list[Scraped] = []
    for minute in range(8):
        await completed_past(load, load.completed if scrapes else 0)
        if minute == 3:  # the last scrape the worker answers, then the kill
            victim = (await gw.health())["worker"]["pid"]
            before_kill = load.completed
        scrapes.append((await scrape(gw.url))[1])
        if minute == 3:
            os.kill(victim, signal.SIGKILL)
        if minute == 4:  # a `final` sent before the kill has reached the load by now
            unpublished = load.completed - before_kill
    return scrapes, unpublished


async def settled_scrape(url: str) -> tuple[str, Scraped]:
    """A scrape once no run is active anywhere: the killed worker's runs are durable, and
    a worker alive takes them over (`GATEWAY_TAKEOVER_S`) and runs them to their end."""
    async with asyncio.timeout(120):
        while True:
            text, samples = await scrape(url)
            if not total(samples, "sdk_active_streams"):
                return text, samples
            await asyncio.sleep(0.2)


@needs_promtool
@pytest.mark.timeout(300)
async def test_alert_rules_on_the_series_two_workers_export(tmp_path: Path) -> None:
    pacing = {**DEMO, "GATEWAY_DEMO_PACING_MS": "10"}
    async with redis_server(tmp_path) as redis, two_workers(tmp_path, redis.url, **pacing) as gw:
        load = Load(gw.url, question=HEALTHY)
        async with load.running():
            scrapes, unpublished = await minutes_of_scrapes(gw, load)
        text, settled = await settled_scrape(gw.url)
        scrapes.append(settled)
    last = scrapes[-1]
    exported = exported_labels(text)

    # Every selector of every rule names an exported series and labels it has.
    rules = yaml.safe_load(ALERTS.read_text())["groups"]
    for rule in (r for group in rules for r in group["rules"]):
        for name, labels in selectors(rule["expr"]):
            if name == "up":
                continue
            assert name in exported, f"{rule['alert']}: {name} is not exported"
            assert labels - set(TARGET) <= exported[name], f"{rule['alert']}: {name} {labels}"
    # And the unit tests' invented series look like the exported ones.
    for test in yaml.safe_load(UNIT_TESTS.read_text())["tests"]:
        for series in test["input_series"]:
            name, labels = SELECTOR.findall(series["series"])[0]
            if name != "up":
                assert name in exported, f"{test['name']}: {name}"
                assert set(MATCHER.findall(labels)) - set(TARGET) <= exported[name], series

    # The scrapes as promtool input: a minute apart, then nothing more for 50 minutes.
    kept = {key for key in last if key in counted(last) or key[0] == "sdk_active_streams"}
    input_series = [{"series": promql_series("up", TARGET), "values": "1x60"}]
    for name, pairs in sorted(kept):
        values = [str(s.get((name, pairs), "_")) for s in scrapes]
        input_series.append({
            "series": promql_series(name, {**dict(pairs), **TARGET}),
            "values": " ".join(values) + f" {values[-1]}x50",
        })  # fmt: skip
    runs = total(last, "sdk_runs_total")
    # A run is counted before its `final` is sent, and the killed worker's count lives on
    # as it was at its last scrape: only runs that ended around the kill may be missing.
    assert runs >= load.completed - unpublished > 0
    alerts = re.findall(r"^\s*- alert: (\S+)$", ALERTS.read_text(), re.M)
    quiet = [{"eval_time": "8m", "alertname": a, "exp_alerts": []} for a in alerts]
    no_resets = [  # per name: resets() drops the name, so names may not share a vector
        {"expr": f'sum(resets({name}{{job="{JOB}"}}[1h]))', "eval_time": "58m",
         "exp_samples": [{"labels": "{}", "value": 0}]}
        for name in sorted({name for name, _ in counted(last)})
    ]  # fmt: skip
    unit = {
        "rule_files": [ALERTS.name],
        "evaluation_interval": "1m",
        "tests": [{
            "name": "two workers' real series",
            "interval": "1m",
            "input_series": input_series,
            "promql_expr_test": [*no_resets, {
                "expr": f'sum(sdk_runs_total{{job="{JOB}"}})', "eval_time": "8m",
                "exp_samples": [{"labels": "{}", "value": runs}],
            }],
            "alert_rule_test": [*quiet, {
                "eval_time": "50m", "alertname": "GatewayNoRuns",
                "exp_alerts": [{"exp_labels": {
                    "severity": "warning", "service": JOB, "job": JOB,
                }}],
            }],
        }],
    }  # fmt: skip
    (tmp_path / ALERTS.name).write_text(without_annotations(ALERTS.read_text()))
    (tmp_path / "exported_test.yml").write_text(yaml.safe_dump(unit, sort_keys=False))
    assert "SUCCESS" in promtool("test", "rules", "exported_test.yml", cwd=tmp_path)


def test_selectors_are_read_as_promql_names_them() -> None:
    expr = (
        'sum by (job, tool) (rate(sdk_tool_invocations_total{job="x", outcome!="not_run"}[10m]))'
        " > 0.25 and on (job) up == 1"
    )
    assert selectors(expr) == [
        ("sdk_tool_invocations_total", {"job", "outcome"}),
        ("up", set()),
    ]
