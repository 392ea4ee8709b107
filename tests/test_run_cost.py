"""What a run start no longer redoes: the parts that are the same for every run are made
once and shared, and a feature the run does not use costs it nothing."""

from __future__ import annotations

import logging
import time

from gateway.http.access_log import AccessLog
from gateway.http.logs import LOG_FORMAT, SecondsFormatter
from gateway.providers.anthropic.catalog import ModelRecord, StaticCatalog
from gateway.providers.plan import today_text
from gateway.runs.planner import MAX_PLANS, RunPlanner
from gateway.runs.run import RunRequest
from gateway.settings import Settings

QUERY = [{"role": "user", "content": "hi"}]
RECORD = ModelRecord(
    id="claude-x",
    source="models_api",
    lifecycle="active",
    max_tokens=8_000,
    max_input_tokens=200_000,
    thinking_adaptive=True,
    thinking_budget=True,
    efforts=frozenset({"low", "high"}),
    structured_outputs=True,
)


def planner(record: ModelRecord = RECORD) -> tuple[RunPlanner, StaticCatalog]:
    catalog = StaticCatalog(record)
    settings = Settings(_env_file=None, anthropic_api_key="k", sdk_model=record.id)
    return RunPlanner(settings, catalog), catalog


async def test_runs_asking_the_same_share_one_plan() -> None:
    runs, _ = planner()
    first = await runs.config(RunRequest(QUERY))
    again = await runs.config(RunRequest(QUERY, max_turns=3))
    assert again.plan is first.plan
    assert again.max_turns == 3
    other = await runs.config(RunRequest(QUERY, thinking="adaptive", effort="low"))
    assert other.plan is not first.plan
    assert other.plan.thinking != first.plan.thinking
    assert other.plan.effort == "low"


async def test_a_new_model_record_is_planned_anew() -> None:
    runs, catalog = planner()
    first = await runs.config(RunRequest(QUERY))
    catalog.record = ModelRecord(id="claude-x", lifecycle="deprecated", retires_at="2027-01-31")
    after = await runs.config(RunRequest(QUERY))
    assert after.plan is not first.plan
    assert after.plan.effort is None  # the new record takes none
    assert len(after.plan.notices) == 1
    assert "model_deprecated" in str(after.plan.notices[0])
    assert (await runs.config(RunRequest(QUERY))).plan.notices == after.plan.notices


async def test_a_requests_own_schema_is_never_shared() -> None:
    runs, _ = planner()
    one = {"type": "json_schema", "schema": {"type": "object"}}
    two = {"type": "json_schema", "schema": {"type": "array"}}
    first = await runs.config(RunRequest(QUERY, output_format=one))
    second = await runs.config(RunRequest(QUERY, output_format=two))
    assert first.plan.output_schema == {"type": "object"}
    assert second.plan.output_schema == {"type": "array"}
    assert (await runs.config(RunRequest(QUERY))).plan.output_schema is None


async def test_the_plans_kept_are_bounded() -> None:
    runs, _ = planner()
    for budget in range(2_000, 2_000 + 3 * MAX_PLANS):
        plan = (await runs.config(RunRequest(QUERY, thinking=budget))).plan
        assert plan.thinking == {"type": "enabled", "budget_tokens": budget}
    assert len(runs._plans) <= MAX_PLANS


def test_the_log_time_is_logging_own_formatted_once_a_second() -> None:
    ours, plain = SecondsFormatter(LOG_FORMAT), logging.Formatter(LOG_FORMAT)
    times = (1.7e9, 1.7e9 + 0.25, 1.7e9 + 0.999, 1.7e9 + 1.5, 1.7e9 + 0.5, 1.8e9 + 0.75)
    for created in times:
        record = logging.makeLogRecord({"msg": "m", "created": created, "key": "-"})
        record.msecs = (created - int(created)) * 1000
        assert ours.format(record) == plain.format(record)
        assert ours.formatTime(record, "%H") == plain.formatTime(record, "%H")


def test_the_access_line_start_is_formatted_once_a_second() -> None:
    access = AccessLog(logging.getLogger("test.access"), "")
    for when in (1_700_000_000.1, 1_700_000_000.9, 1_700_000_001.0, 1_600_000_000.5):
        expected = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(when))
        assert access._started(when) == expected


async def test_the_date_line_is_todays() -> None:
    runs, _ = planner()
    assert (await runs.config(RunRequest(QUERY))).date == today_text()
