"""Where the deploy files are, and the PromQL they contain, for the deploy tests."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "research-gateway.json"
ALERTS = DEPLOY / "alerts.yml"
PROMETHEUS_CONFIG = DEPLOY / "prometheus.yml"
JOB = "research-gateway"

# What Grafana would put in place of its variables. `$__rate_interval` and `$__range`
# must span at least two scrapes of whoever runs the query.
GRAFANA_VARIABLES: Mapping[str, str] = {
    "$__rate_interval": "1m",
    "$__interval": "15s",
    "$__range": "5m",
    "${instance}": ".*",
    "$instance": ".*",
}
METRIC_NAME = re.compile(r"\b(?:claude|sdk)_[a-z_]+\b")


@dataclass(frozen=True)
class PanelQuery:
    """One target of one dashboard panel."""

    panel: str
    ref_id: str
    expr: str


def load_dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return data


def panels(dashboard: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, including those folded inside collapsed rows."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def panel_queries(dashboard: Mapping[str, Any]) -> list[PanelQuery]:
    return [
        PanelQuery(panel["title"], target["refId"], target["expr"])
        for panel in panels(dashboard)
        for target in panel.get("targets", [])
    ]


def concrete(expr: str, values: Mapping[str, str] = GRAFANA_VARIABLES) -> str:
    """`expr` with Grafana's variables replaced, longest names first."""
    for name in sorted(values, key=len, reverse=True):
        expr = expr.replace(name, values[name])
    if "$" in expr:
        raise ValueError(f"unknown Grafana variable left in {expr!r}")
    return expr


def metric_names(text: str) -> set[str]:
    """Gateway metric names (`claude_*`, `sdk_*`) mentioned in `text`."""
    return set(METRIC_NAME.findall(text))
