"""The Prometheus config and the alert rules pass promtool, and every alert fires in the
situation it is for and stays quiet in the ones it is not (tests/deploy/alerts_test.yml).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.deploy.dashboards import ALERTS, DEPLOY, PROMETHEUS_CONFIG

PROMTOOL = shutil.which("promtool")
UNIT_TESTS = Path(__file__).with_name("alerts_test.yml")

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


@needs_promtool
def test_config_is_valid_and_loads_the_rules() -> None:
    output = promtool("check", "config", PROMETHEUS_CONFIG.name, cwd=DEPLOY)
    assert "1 rule files found" in output


@needs_promtool
def test_rules_are_valid() -> None:
    promtool("check", "rules", ALERTS.name, cwd=DEPLOY)


def without_annotations(rules: str) -> str:
    """`rules` with every `annotations:` block (and the lines indented under it) removed."""
    kept: list[str] = []
    block_indent: int | None = None
    for line in rules.splitlines():
        indent = len(line) - len(line.lstrip())
        if block_indent is not None and (not line.strip() or indent > block_indent):
            continue
        block_indent = indent if line.strip() == "annotations:" else None
        if block_indent is None:
            kept.append(line)
    return "\n".join(kept) + "\n"


def test_every_alert_has_a_firing_unit_test() -> None:
    alerts = re.findall(r"^\s*- alert: (\S+)$", ALERTS.read_text(), re.M)
    fired = re.findall(
        r"^\s*alertname: (\S+)\n\s*exp_alerts:\n\s*- exp_labels:", UNIT_TESTS.read_text(), re.M
    )
    assert len(alerts) >= 10
    assert set(alerts) <= set(fired)


@needs_promtool
def test_alerts_fire_when_they_should(tmp_path: Path) -> None:
    # promtool compares annotations verbatim; the tests are about when alerts fire, so
    # they run against the same rules without annotations.
    stripped = without_annotations(ALERTS.read_text())
    assert "summary:" not in stripped
    assert stripped.count("- alert: ") == ALERTS.read_text().count("- alert: ")
    (tmp_path / ALERTS.name).write_text(stripped)
    shutil.copy(UNIT_TESTS, tmp_path / UNIT_TESTS.name)
    output = promtool("test", "rules", UNIT_TESTS.name, cwd=tmp_path)
    assert "SUCCESS" in output
