"""Prompt caching on the wire: each call reads the previous call's prefix from the cache,
as the fake counts it the way the API does, and the cache figures reach every reader."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp.test_utils import TestServer

from gateway.ops.metrics import Metrics
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tests.fakes.prompt_cache import PromptCache
from tests.test_metrics import value


@pytest.fixture
def fake() -> FakeAnthropic:
    return FakeAnthropic(count_tokens=True)


INPUT_KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def five_rounds(fake: FakeAnthropic) -> None:
    for n in range(5):
        fake.add(Reply([Text(f"Round {n}."), ToolUse("big", {"size": 4_000 + n})]))
    fake.add(Reply([Text("Done.")]))


async def test_later_calls_read_their_prefix_from_the_cache(
    make_gateway: GatewayFactory, fake: FakeAnthropic, metrics: Metrics
) -> None:
    client = await make_gateway(sdk_max_turns=10)
    five_rounds(fake)
    events = await stream(client, query="research")
    usages = [e["usage"] for e in events if e["type"] == "turn_complete"]
    assert len(usages) == 6
    totals = [sum(u[k] for k in INPUT_KEYS) for u in usages]
    # Call 1 is too short to cache (under 1,024 tokens); call 2 writes its whole prompt;
    # from then on each call reads exactly what the call before it sent.
    assert usages[0]["cache_read_input_tokens"] == usages[0]["cache_creation_input_tokens"] == 0
    assert usages[1]["cache_creation_input_tokens"] > 0
    for before, usage in zip(totals[1:], usages[2:], strict=False):
        assert usage["cache_read_input_tokens"] == before
    assert all(u["input_tokens"] < 30 for u in usages[1:])  # only the uncached tail is billed
    final = events[-1]["usage"]
    assert final["cache_read_input_tokens"] == sum(u["cache_read_input_tokens"] for u in usages)
    read = value(
        metrics, "claude_cache_read_tokens_total", model="claude-test-model", upstream="anthropic"
    )
    assert read == final["cache_read_input_tokens"]


async def test_no_breakpoints_when_caching_is_off(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(gateway_prompt_cache=False, sdk_max_turns=10)
    five_rounds(fake)
    events = await stream(client, query="research")
    assert all(e["usage"]["cache_read_input_tokens"] == 0
               for e in events if e["type"] == "turn_complete")  # fmt: skip
    assert "cache_control" not in str(fake.requests)


async def test_nothing_that_changes_comes_before_a_breakpoint(
    make_gateway: GatewayFactory, fake: FakeAnthropic, fake_server: TestServer
) -> None:
    client = await make_gateway()
    fake.add(Reply([Text("a")]), Reply([Text("b")]))
    await stream(client, query="x")
    await stream(client, query="y")
    first, second = fake.requests
    assert first["tools"] == second["tools"] and "cache_control" in first["tools"][-1]
    assert first["system"][0] == second["system"][0] and "cache_control" in first["system"][0]
    date = first["system"][1]
    assert "cache_control" not in date and date["text"].startswith("Today's date is")


def test_the_fake_cache_counts_like_the_api() -> None:
    cache = PromptCache(min_tokens=10)
    system = [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral"}}]

    def body(*texts: str) -> dict[str, Any]:
        blocks: list[list[dict[str, Any]]] = [[{"type": "text", "text": t}] for t in texts]
        blocks[-1][-1]["cache_control"] = {"type": "ephemeral"}
        messages = [{"role": "user", "content": content} for content in blocks]
        return {"model": "m", "system": system, "messages": messages}

    first = cache.account(body("a" * 400))
    assert first["cache_read_input_tokens"] == 0 and first["cache_creation_input_tokens"] > 0
    second = cache.account(body("a" * 400, "b" * 400))
    assert second["cache_read_input_tokens"] == sum(first.values())  # the marker moved: a hit
    changed = cache.account({**body("a" * 400), "model": "other"})
    assert changed["cache_read_input_tokens"] == 0
    too_many = body("a", "b", "c", "d", "e")
    for message in too_many["messages"]:
        message["content"][-1]["cache_control"] = {"type": "ephemeral"}
    with pytest.raises(ValueError, match="maximum of 4"):
        cache.account(too_many)
