"""The Prometheus config and the alert rules pass promtool, and every alert fires in the
situation it is for and stays quiet in the ones it is not (tests/deploy/alerts_test.yml).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.dashboards import ALERTS, DEPLOY, PROMETHEUS_CONFIG

PROMTOOL = shutil.which("promtool")
UNIT_TESTS = Path(__file__).with_name("alerts_test.yml")
SEVERITIES = {"critical", "warning", "info"}

needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package prometheus)"
)


def promtool(*args: str, cwd: Path) -> str:
    assert PROMTOOL is not None
    result = subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


def alert_groups() -> list[dict[str, Any]]:
    yaml = pytest.importorskip("yaml")
    groups: list[dict[str, Any]] = yaml.safe_load(ALERTS.read_text())["groups"]
    return groups


def alert_rules() -> list[dict[str, Any]]:
    return [rule for group in alert_groups() for rule in group["rules"]]


@needs_promtool
def test_config_is_valid_and_loads_the_rules() -> None:
    output = promtool("check", "config", PROMETHEUS_CONFIG.name, cwd=DEPLOY)
    assert "1 rule files found" in output


@needs_promtool
def test_rules_are_valid() -> None:
    promtool("check", "rules", ALERTS.name, cwd=DEPLOY)


def test_every_alert_has_for_severity_and_text() -> None:
    rules = alert_rules()
    assert len(rules) >= 10
    for rule in rules:
        name = rule["alert"]
        assert rule.get("for"), f"{name} has no for:"
        assert rule["labels"]["severity"] in SEVERITIES, name
        assert rule["annotations"]["summary"].strip(), name
        assert len(rule["annotations"]["description"]) > 40, name
    names = [rule["alert"] for rule in rules]
    assert len(names) == len(set(names)), "duplicate alert names"


def test_every_alert_has_a_firing_unit_test() -> None:
    yaml = pytest.importorskip("yaml")
    spec = yaml.safe_load(UNIT_TESTS.read_text())
    fired = {
        case["alertname"]
        for test in spec["tests"]
        for case in test["alert_rule_test"]
        if case.get("exp_alerts")
    }
    assert {rule["alert"] for rule in alert_rules()} <= fired


@needs_promtool
def test_alerts_fire_when_they_should(tmp_path: Path) -> None:
    # promtool compares annotations verbatim; the tests are about when alerts fire, so
    # they run against the same rules without annotations (JSON is valid YAML).
    groups = alert_groups()
    for group in groups:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    (tmp_path / "alerts.yml").write_text(json.dumps({"groups": groups}))
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    output = promtool("test", "rules", UNIT_TESTS.name, cwd=tmp_path)
    assert "SUCCESS" in output
