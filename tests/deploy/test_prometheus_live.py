"""A real Prometheus scrapes a real gateway, driven by the fake Anthropic server, while it
serves runs of every kind; then every dashboard query must return data and every alert
rule must load and evaluate without error."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpServer

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.runs.tools import StaticToolset
from gateway.settings import Settings
from gateway.sse import parse_frames
from tests.deploy.dashboards import ALERTS, JOB, concrete, load_dashboard, panel_queries
from tests.deploy.prometheus import (
    PrometheusAPI,
    eventually,
    finite_values,
    running_prometheus,
)
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.batches import BatchRequest, FakeBatches
from tests.fakes.openai import FakeOpenAI
from tests.fakes.openai import Reply as OpenAIReply
from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.registry import ToolRegistry

PROMETHEUS = shutil.which("prometheus")
RUNS_PER_ROUND = 4  # three runs, and a batch of one question
SEVERITIES = {"critical", "warning", "info"}

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(
        PROMETHEUS is None, reason="prometheus not installed (Debian package prometheus)"
    ),
]


class LookupInput(ToolInput):
    ticker: str
    """The company's ticker."""


class Lookup(Tool[LookupInput]):
    """Look a company up by ticker."""

    name = "lookup"
    input_model = LookupInput

    async def run(self, args: LookupInput, ctx: ToolContext) -> str:
        return f"{args.ticker}: ACME Corporation, CIK 0000000001"


class NoInput(ToolInput):
    pass


class Broken(Tool[NoInput]):
    """A tool whose backend is down."""

    name = "broken"
    input_model = NoInput

    async def run(self, args: NoInput, ctx: ToolContext) -> str:
        raise ToolFailure("The backend is unavailable")


class Slow(Tool[NoInput]):
    """A tool slower than its timeout."""

    name = "slow"
    input_model = NoInput

    async def run(self, args: NoInput, ctx: ToolContext) -> str:
        await asyncio.sleep(30)
        return "too late"


TIME_SERVER = {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time"]}


def script() -> list[Reply]:
    """What the model answers during one round of `run_round`, in order."""
    return [
        # Run 1, /api/stream: one tool succeeds and one fails, the next call is rate limited
        # and retried, then the model calls a tool with bad input and one that does not
        # exist, and answers on its third turn.
        Reply(
            [
                Text("Let me look."),
                ToolUse("lookup", {"ticker": "ACME"}),
                ToolUse("broken", {}),
                ToolUse("time__get_current_time", {"timezone": "UTC"}),
            ],  # an MCP server's tool
            cache_read=120,
            cache_creation=40,
        ),
        Reply(status=429, error_type="rate_limit_error", headers={"retry-after": "0"}),
        Reply([ToolUse("lookup", {"symbol": "ACME"}), ToolUse("no_such_tool", {})]),
        # Its answer states a figure no tool gave (the figure check counts it unsourced).
        Reply([Text("ACME is a company with revenue of $1.2 billion.")], cache_read=200),
        # Run 2, /api/research with max_turns 2: a tool times out, the model still wants
        # tools at the limit, the wrap-up call answers.
        Reply([ToolUse("lookup", {"ticker": "ACME"}), ToolUse("slow", {})]),
        Reply([ToolUse("lookup", {"ticker": "ACME"})]),
        Reply([Text("Out of turns: ACME is a company.")]),
        # Run 3, /api/stream: the model API rejects the key; the fallback upstream too.
        Reply(status=401, error_type="authentication_error"),
    ]


def fallback_script() -> list[OpenAIReply]:
    """What the fallback upstream answers during one round: run 3's call, refused."""
    return [OpenAIReply(status=401, error_type="invalid_request_error")]


async def stream(client: aiohttp.ClientSession, url: str, body: Any) -> list[dict[str, Any]]:
    async with client.post(url + "/api/stream", json=body) as response:
        assert response.status == 200, await response.text()
        return parse_frames(await response.read())


async def run_round(
    client: aiohttp.ClientSession, url: str, fake: FakeAnthropic, fallback: FakeOpenAI
) -> None:
    """Three runs (completed, max_turns, failed after a fallback), a batch of one
    question, a bad request, and the short routes."""
    fake.add(*script())
    fallback.add(*fallback_script())
    final = (await stream(client, url, {"query": "What is ACME?"}))[-1]
    assert (final["type"], final["outcome"], final["turns"]) == ("final", "completed", 3)

    body = {"query": "Research ACME", "max_turns": 2}
    async with client.post(url + "/api/research", json=body) as response:
        assert response.status == 200, await response.text()
        assert (await response.json())["outcome"] == "max_turns"

    error = (await stream(client, url, {"query": "Anything"}))[-1]
    assert error["type"] == "error"
    assert error["error"]["code"] == "AUTHENTICATION_ERROR"

    async with client.post(url + "/api/stream", json={"max_turns": "many"}) as response:
        assert response.status == 400
    await run_batch(client, url)
    for path in ("/api/tools", "/health"):
        async with client.get(url + path) as response:
            await response.read()
    assert not fake.replies and not fallback.replies, "every scripted reply is used"


def batch_answer(request: BatchRequest) -> Reply:
    return Reply([Text("ACME is a company.")])


async def run_batch(client: aiohttp.ClientSession, url: str) -> None:
    async with client.post(url + "/api/batches", json={"questions": ["What is ACME?"]}) as response:
        assert response.status == 202, await response.text()
        batch_id = (await response.json())["batch_id"]
    async with asyncio.timeout(20):
        while True:
            async with client.get(f"{url}/api/batches/{batch_id}") as response:
                progress = await response.json()
            if progress["state"] == "ended":
                break
            await asyncio.sleep(0.05)
    assert progress["counts"] == {"completed": 1}, progress


TEST_PRICES = Path(__file__).resolve().parents[1] / "fixtures" / "prices-test-model.json"


def settings(upstream: TestServer, fallback: TestServer, fallback_key: str) -> Settings:
    return Settings(
        _env_file=None,
        anthropic_api_key="sk-test",
        anthropic_base_url=str(upstream.make_url("")).rstrip("/"),
        gateway_upstream="anthropic",
        gateway_fallback_upstreams=("openai",),
        openai_base_url=str(fallback.make_url("/v1")),
        openai_api_key=fallback_key,
        openai_model="gpt-test",
        gateway_upstream_max_retry_wait_s=5.0,
        gateway_resume_grace_s=5.0,
        sdk_max_turns=5,
        sdk_system_prompt="You are a test.",
        sdk_model="claude-test-model",
        redis_url=None,
        gateway_prices_file=str(TEST_PRICES),  # the fake's model priced: the cost panel has data
        gateway_mcp_servers=orjson.dumps([TIME_SERVER]).decode(),
        gateway_batch_poll_s=0.05,
    )


async def gateway_target_up(prometheus: PrometheusAPI) -> bool | None:
    targets = (await prometheus.get("/api/v1/targets"))["activeTargets"]
    ours = [t for t in targets if t["labels"]["job"] == JOB]
    return True if ours and all(t["health"] == "up" for t in ours) else None


async def runs_scraped(prometheus: PrometheusAPI, count: int) -> bool | None:
    values = finite_values(await prometheus.query(f'sum(sdk_runs_total{{job="{JOB}"}})'))
    return True if values == [count] else None


async def wait_for_runs(prometheus: PrometheusAPI, count: int) -> None:
    await eventually(lambda: runs_scraped(prometheus, count), f"{count} runs scraped")


async def evaluated_rules(prometheus: PrometheusAPI) -> list[dict[str, Any]] | None:
    groups = (await prometheus.get("/api/v1/rules", type="alert"))["groups"]
    rules: list[dict[str, Any]] = [rule for group in groups for rule in group["rules"]]
    return rules if rules and all(rule["health"] != "unknown" for rule in rules) else None


async def has_data(prometheus: PrometheusAPI, expr: str) -> list[float] | None:
    return finite_values(await prometheus.query(expr)) or None


async def check_dashboard(prometheus: PrometheusAPI) -> None:
    dashboard = load_dashboard()
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", variable["definition"])
        assert match, variable["definition"]
        samples = await prometheus.query(match[1])
        assert any(match[2] in sample["metric"] for sample in samples), variable["name"]
    for query in panel_queries(dashboard):
        expr = concrete(query.expr)
        await eventually(
            partial(has_data, prometheus, expr),
            f"data for panel {query.panel!r} ({query.ref_id}): {expr}",
            timeout_s=20,
        )


async def check_alert_rules(prometheus: PrometheusAPI) -> None:
    rules = await eventually(lambda: evaluated_rules(prometheus), "every rule to be evaluated")
    expected = re.findall(r"^\s*- alert: (\S+)$", ALERTS.read_text(), re.M)
    assert sorted(rule["name"] for rule in rules) == sorted(expected)
    for rule in rules:
        name = rule["name"]
        assert rule["health"] == "ok", f"{name}: {rule.get('lastError')}"
        assert rule["duration"] > 0, f"{name} has no for:"
        assert rule["labels"].get("severity") in SEVERITIES, name
        assert rule["annotations"].get("summary"), name
        assert len(rule["annotations"].get("description", "")) > 40, name
        await prometheus.query(rule["query"])


@pytest.mark.timeout(180)
async def test_every_panel_has_data_and_every_alert_evaluates(
    tmp_path: Any, aiohttp_server: AiohttpServer
) -> None:
    assert PROMETHEUS is not None
    fake, fallback = FakeAnthropic(), FakeOpenAI()
    batches = FakeBatches(batch_answer, messages=fake)  # the Batches API on the same server
    upstream = await aiohttp_server(batches.app(), host="127.0.0.1")
    second = await aiohttp_server(fallback.app(), host="127.0.0.1")
    registry = ToolRegistry([Lookup(), Broken(), Slow()], timeout_s=0.2)
    toolset = StaticToolset(registry, backends={"test": "local"})
    config = settings(upstream, second, fallback.api_key)
    app = create_app(config, toolset=toolset, metrics=Metrics(CollectorRegistry()))
    gateway = await aiohttp_server(app, host="127.0.0.1")
    url = str(gateway.make_url("")).rstrip("/")

    target = f"127.0.0.1:{gateway.port}"
    async with (
        running_prometheus(PROMETHEUS, tmp_path, target) as prometheus,
        aiohttp.ClientSession() as client,
    ):
        await eventually(lambda: gateway_target_up(prometheus), "the gateway target to be up")
        # Two rounds, each scraped: a series counts for rate() only once it has changed
        # between two scrapes.
        for done in (RUNS_PER_ROUND, 2 * RUNS_PER_ROUND):
            await run_round(client, url, fake, fallback)
            await wait_for_runs(prometheus, done)
        await check_alert_rules(prometheus)
        await check_dashboard(prometheus)
