"""What Node's own clients and scripts read: `system_init`, `final`'s Node fields, the
cost of a run (hand-computed from the published prices), the dollar budget, `/health`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gateway import pricing
from gateway.http import keys
from gateway.ops.metrics import Metrics
from tests.access_support import REDIS_URL, redis_prefix, settled
from tests.conftest import GatewayFactory, read_events, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse

__all__ = ["redis_prefix"]  # the fixture, used by name

# Two calls with cache writes and reads: the tool round writes the prefix, the answer reads it.
TOOL_TURN: dict[str, Any] = {
    "input_tokens": 100, "output_tokens": 50, "cache_read": 0, "cache_creation": 2000
}  # fmt: skip
ANSWER_TURN: dict[str, Any] = {
    "input_tokens": 20, "output_tokens": 300, "cache_read": 2000, "cache_creation": 150
}  # fmt: skip
CHECKOUT = str(Path(__file__).resolve().parents[1])
# By hand, USD per million tokens from gateway/prices.json (input, output, 5m write, read):
#   claude-sonnet-5  2, 10, 2.50, 0.20
#     turn 1: 100*2 + 50*10 + 2000*2.5           = 5700    -> 0.0057
#     turn 2: 20*2 + 300*10 + 2000*0.2 + 150*2.5 = 3815    -> 0.003815
#   claude-opus-5    5, 25, 6.25, 0.50
#     turn 1: 500 + 1250 + 12500                 = 14250   -> 0.01425
#     turn 2: 100 + 7500 + 1000 + 937.5          = 9537.5  -> 0.0095375
SONNET = (0.0057, 0.003815)
OPUS = (0.01425, 0.0095375)


def script(fake: FakeAnthropic) -> None:
    fake.add(
        Reply([Text("Looking it up."), ToolUse("echo", {"text": "q"})], **TOOL_TURN),
        Reply([Text("The answer.")], **ANSWER_TURN),
    )


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


@pytest.mark.parametrize(("model", "costs"), [("claude-sonnet-5", SONNET), ("claude-opus-5", OPUS)])
async def test_cost_of_a_run_with_cache_reads_and_writes(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics, model: str,
    costs: tuple[float, float],
) -> None:  # fmt: skip
    client = await make_gateway(sdk_model=model)
    script(fake)
    events = await stream(client, query="what does it cost")
    turns = of_type(events, "turn_complete")
    assert [t["cost_usd"] for t in turns] == pytest.approx(list(costs), abs=1e-12)
    final = events[-1]
    assert final["total_cost_usd"] == pytest.approx(sum(costs), abs=1e-12)
    labels = {"model": model, "key": "anonymous"}
    assert metrics.registry.get_sample_value("claude_cost_usd_total", labels) == pytest.approx(
        sum(costs), abs=1e-12
    )
    # /api/research folds the same cost.
    script(fake)
    response = await client.post("/api/research", json={"query": "again"})
    body = await response.json()
    assert body["total_cost_usd"] == pytest.approx(sum(costs), abs=1e-12)
    assert body["subtype"] == "success" and body["is_error"] is False and body["num_turns"] == 2


async def test_a_model_without_a_price_says_so(make_gateway: GatewayFactory, fake: FakeAnthropic,
                                              metrics: Metrics) -> None:  # fmt: skip
    client = await make_gateway()  # claude-test-model: in no price table
    script(fake)
    events = await stream(client, query="x")
    assert [t["cost_usd"] for t in of_type(events, "turn_complete")] == [None, None]
    assert events[-1]["total_cost_usd"] is None
    assert metrics.registry.get_sample_value(
        "claude_cost_usd_total", {"model": "claude-test-model", "key": "anonymous"}
    ) is None  # fmt: skip


async def test_a_prices_file_adds_and_overrides(
    make_gateway: GatewayFactory, fake: FakeAnthropic, tmp_path: Path
) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"models": {
        "claude-test-model": {"input": 1, "output": 2, "cache_write_5m": 3, "cache_read": 4},
    }}))  # fmt: skip
    client = await make_gateway(gateway_prices_file=str(prices))
    script(fake)
    events = await stream(client, query="x")
    # turn 1: 100*1 + 50*2 + 2000*3 = 6200; turn 2: 20 + 600 + 2000*4 + 150*3 = 9070
    assert events[-1]["total_cost_usd"] == pytest.approx(0.01527, abs=1e-12)
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"models": {"m": {"input": -1, "output": 1, "cache_write_5m": 1, "cache_read": 1}}}'
    )
    with pytest.raises(ValueError, match="GATEWAY_PRICES_FILE"):
        await make_gateway(gateway_prices_file=str(bad))


def test_price_table_by_hand() -> None:
    table = pricing.shipped()
    assert table.source.startswith("https://platform.claude.com/") and table.retrieved
    usage = dict.fromkeys(
        ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"),
        1_000_000,
    )
    assert table.cost("claude-sonnet-5", usage) == pytest.approx(2 + 10 + 0.2 + 2.5)
    # Batch: half the token prices.
    assert table.cost("claude-sonnet-5", usage, batch=True) == pytest.approx(
        (2 + 10 + 0.2 + 2.5) / 2
    )
    # 1-hour writes at their own price; server-side searches at $10 per 1,000.
    usage_1h = {**usage, pricing.CACHE_WRITE_1H_KEY: 400_000, pricing.WEB_SEARCH_KEY: 3}
    assert table.cost("claude-opus-5", usage_1h) == pytest.approx(
        5 + 25 + 0.5 + 0.6 * 6.25 + 0.4 * 10 + 0.03
    )
    # A dated id is priced as its alias; an unknown model has no price.
    assert table.cost("claude-haiku-4-5-20251001", usage) == pytest.approx(1 + 5 + 0.1 + 1.25)
    assert table.cost("gpt-9", usage) is None
    assert pricing.add_cost(0.5, None) is None and pricing.add_cost(0.5, 0.25) == 0.75


async def test_system_init_and_final_fields(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-sonnet-5")
    fake.add(Reply([Text("Hi.")]))
    events = await stream(client, query="hi")
    info, init = events[0], events[1]
    assert init["type"] == "system_init"
    assert {k: init[k] for k in ("session_id", "tools", "model")} == {
        "session_id": info["session_id"], "tools": info["tools"], "model": "claude-sonnet-5"
    }  # fmt: skip
    assert init["seq"] == 2
    final = events[-1]
    assert final["subtype"] == "success" and final["is_error"] is False
    assert final["num_turns"] == final["turns"] == 1


async def test_subtypes_of_max_turns_and_cancel(make_gateway: GatewayFactory,
                                                fake: FakeAnthropic) -> None:  # fmt: skip
    client = await make_gateway(sdk_model="claude-sonnet-5")
    fake.add(Reply([ToolUse("echo", {"text": "a"})]), Reply([Text("Wrapped up.")]))
    events = await stream(client, query="x", max_turns=1)
    final = events[-1]
    assert final["outcome"] == "max_turns"
    assert final["subtype"] == "error_max_turns" and final["is_error"] is True
    assert final["num_turns"] == 2
    fake.add(Reply([Text("slow " * 200, chunk=5)], delay_s=0.01))
    response = await client.post("/api/stream", json={"query": "y"})
    cancelled = False
    seen: list[dict[str, Any]] = []
    async for line in response.content:
        if line.startswith(b"data: "):
            seen.append(json.loads(line[6:]))
            if seen[-1]["type"] == "delta" and not cancelled:
                cancelled = True
                await client.post(f"/api/runs/{seen[-1]['run_id']}/cancel")
    final = seen[-1]
    assert final["outcome"] == "cancelled"
    assert final["subtype"] == "error_during_execution" and final["is_error"] is True
    # The cut-off call reported no usage: the run's cost is what completed, here nothing.
    assert final["total_cost_usd"] == 0.0


async def test_daily_usd_budget(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    client = await make_gateway(sdk_model="claude-sonnet-5", gateway_daily_usd_budget=0.005)
    script(fake)
    events = await stream(client, query="first")  # costs 0.009515: starts under, crosses it
    await settled(client, events[-1]["run_id"])
    await client.app[keys.SPEND].settled()
    response = await client.post("/api/stream", json={"query": "second"})
    assert response.status == 429
    body = await response.json()
    assert body["error"]["code"] == "RATE_LIMIT_ERROR"
    assert body["error"]["details"]["limit"] == "daily_usd"
    assert int(response.headers["Retry-After"]) >= 1
    health = await (await client.get("/health")).json()
    assert health["dependencies"]["rate_limiter"]["daily_usd"] == 0.005
    assert health["feature_flags"]["usd_budget"] is True


async def test_daily_usd_budget_in_redis(
    make_gateway: GatewayFactory, fake: FakeAnthropic, redis_prefix: str
) -> None:
    shared = dict(sdk_model="claude-sonnet-5", gateway_daily_usd_budget=0.005,
                  redis_url=REDIS_URL, redis_key_prefix=redis_prefix)  # fmt: skip
    first, second = await make_gateway(**shared), await make_gateway(**shared)
    script(fake)
    events = await stream(first, query="first")
    await settled(first, events[-1]["run_id"])
    await first.app[keys.SPEND].settled()
    response = await second.post("/api/research", json={"query": "on the other replica"})
    assert response.status == 429
    assert (await response.json())["error"]["details"]["limit"] == "daily_usd"


async def test_health_carries_what_nodes_operators_read(make_gateway: GatewayFactory) -> None:
    client = await make_gateway(
        sdk_model="claude-sonnet-5", gateway_env="production", build_sha="abc123",
        build_timestamp="2026-11-27T00:00:00Z", gateway_rate_limit_per_min=30,
    )  # fmt: skip
    body = await (await client.get("/health")).json()
    assert body["environment"] == "production"
    assert body["build"] == {"commit": "abc123", "version": body["version"],
                             "timestamp": "2026-11-27T00:00:00Z"}  # fmt: skip
    from importlib import metadata

    assert body["sdk_version"] == metadata.version("anthropic")
    flags = body["feature_flags"]
    assert flags["prompt_cache"] is True and flags["rate_limits"] is True
    assert flags["usd_budget"] is False and flags["cost"] is True
    deps = body["dependencies"]
    assert deps["upstream"]["anthropic"]["status"] == "healthy"
    assert deps["rate_limiter"]["per_minute"] == 30 and deps["rate_limiter"]["store"] == "memory"
    assert deps["circuit_breaker"]["anthropic"]["state"] == "closed"


async def test_health_commit_from_the_checkout(make_gateway: GatewayFactory) -> None:
    body = await (await (await make_gateway()).get("/health")).json()
    proc = await asyncio.create_subprocess_exec(
        "git", "-C", CHECKOUT, "rev-parse", "HEAD",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    head = (await proc.communicate())[0].decode().strip()
    assert body["build"]["commit"] == head and body["build"]["timestamp"]
    assert body["environment"] == "development"


async def test_a_failed_run_folds_the_cost_of_its_completed_turns(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-sonnet-5", gateway_upstream_max_retries=0)
    fake.add(
        Reply([ToolUse("echo", {"text": "a"})], **TOOL_TURN),
        Reply(status=400, error_type="invalid_request_error"),
    )
    response = await client.post("/api/stream", json={"query": "x"})
    events = await read_events(response)
    assert events[-1]["type"] == "error"
    from gateway.fold import fold

    assert fold(events)["total_cost_usd"] == pytest.approx(0.0057, abs=1e-12)


async def test_searches_hour_writes_and_the_batch_tier_are_priced(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-sonnet-5")
    searched = {"server_tool_use": {"web_search_requests": 3, "web_fetch_requests": 0},
                "cache_creation": {"ephemeral_1h_input_tokens": 1000,
                                   "ephemeral_5m_input_tokens": 1000}}  # fmt: skip
    fake.add(
        Reply([Text("Searched.")], input_tokens=100, output_tokens=10, cache_creation=2000,
              usage_extra=searched),
        Reply([Text("Batched.")], input_tokens=100, output_tokens=10,
              usage_extra={"service_tier": "batch"}),
    )  # fmt: skip
    first = (await stream(client, query="a"))[-1]
    # 100*2 + 10*10 + 1000*2.5 (5m) + 1000*4 (1h) = 6800 -> 0.0068; 3 searches at $10/1000
    assert first["total_cost_usd"] == pytest.approx(0.0068 + 0.03, abs=1e-12)
    assert first["usage"][pricing.WEB_SEARCH_KEY] == 3
    second = (await stream(client, query="b"))[-1]
    assert second["total_cost_usd"] == pytest.approx((100 * 2 + 10 * 10) / 1e6 / 2, abs=1e-12)
