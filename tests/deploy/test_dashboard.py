"""The dashboard is well-formed Grafana JSON, has the panels operators need, and every
metric it or an alert names is one the gateway really defines."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry

from gateway.ops.metrics import Metrics
from tests.deploy.dashboards import (
    ALERTS,
    concrete,
    load_dashboard,
    metric_names,
    panel_queries,
    panels,
)

REQUIRED_PANELS = {
    "Runs by outcome",
    "Active streams",
    "Turns per run",
    "Tool calls by tool and outcome",
    "Tool latency",
    "Run duration",
    "Time to first event",
    "Tokens by type",
    "Upstream retries and errors",
    "HTTP requests by route and status",
    "Cost by model and key",
    "Unsourced figures share by model",
}
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


def exported_names() -> set[str]:
    """Every series name the gateway's registry can export."""
    names: set[str] = set()
    for family in Metrics(CollectorRegistry()).registry.collect():
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def test_dashboard_is_grafana_json() -> None:
    dashboard = load_dashboard()
    assert dashboard["uid"] == "research-gateway"
    assert 36 <= dashboard["schemaVersion"] <= 41
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["current"]["value"] == "prometheus"
    ids = [panel["id"] for panel in panels(dashboard)]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


def test_panels_use_the_prometheus_datasource_and_fit_the_grid() -> None:
    taken: set[tuple[int, int]] = set()
    for panel in panels(load_dashboard()):
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        cells = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & taken, f"{panel['title']} overlaps another panel"
        taken |= cells
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        assert panel.get("description"), panel["title"]
        for target in [panel, *panel["targets"]]:
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_required_panels_are_there() -> None:
    titles = {query.panel for query in panel_queries(load_dashboard())}
    assert titles >= REQUIRED_PANELS


def test_every_expression_uses_known_variables_only() -> None:
    for query in panel_queries(load_dashboard()):
        concrete(query.expr)


def test_every_metric_named_exists_in_the_gateway() -> None:
    exported = exported_names()
    dashboard_metrics: set[str] = set()
    for query in panel_queries(load_dashboard()):
        dashboard_metrics |= metric_names(query.expr)
    alert_metrics = metric_names(ALERTS.read_text())
    assert dashboard_metrics - exported == set()
    assert alert_metrics - exported == set()
    # Everything the loop records is on the dashboard somewhere.
    unused = {name for name in exported if name.startswith("sdk_")} - dashboard_metrics
    assert all(name.endswith(("_sum", "_count")) for name in unused), unused


def _targets(panel: dict[str, Any]) -> list[str]:
    return [target["expr"] for target in panel.get("targets", [])]


def test_quantile_panels_aggregate_by_le() -> None:
    for panel in panels(load_dashboard()):
        for expr in _targets(panel):
            if "histogram_quantile" in expr:
                assert "le)" in expr or "le," in expr, f"{panel['title']}: {expr}"
