"""The current models (Sonnet 5.5, Opus 5.5, Haiku 5.5) against a fake that applies their
documented rules (tests/fakes/current_models.py): the notes between tool calls reach the
client, thinking "off" shows no reasoning, and each run costs the published price."""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import pytest
from aiohttp.test_utils import TestServer

from gateway import pricing
from gateway.settings import Settings
from tests.conftest import GatewayFactory, stream
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, Thinking, ToolUse
from tests.fakes.current_models import DISPLAY_BETA

NOTE = "Let me pull NVIDIA's filings first."
REASONING = "The user wants revenue; the 10-K has it, so I should look there."
# Published prices, USD per million tokens (input, output, 5-minute cache write, cache
# read): platform.claude.com/docs/en/about-claude/pricing and the models' pages.
PUBLISHED = {
    "claude-sonnet-5-5": (2.0, 10.0, 2.5, 0.10),
    "claude-opus-5-5": (4.0, 20.0, 5.0, 0.20),
    "claude-haiku-5-5": (0.10, 0.50, 0.125, 0.01),
}
TURNS: list[dict[str, Any]] = [
    {"input_tokens": 1_000, "output_tokens": 200, "cache_read": 0, "cache_creation": 3_000},
    {"input_tokens": 300, "output_tokens": 500, "cache_read": 3_000, "cache_creation": 400},
]


def published_cost(model: str) -> float:
    inp, out, write, read = PUBLISHED[model]
    total: float = sum(
        t["input_tokens"] * inp + t["output_tokens"] * out + t["cache_creation"] * write
        + t["cache_read"] * read
        for t in TURNS
    )  # fmt: skip
    return total / 1_000_000


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def notes_and_reasoning(events: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The text of each thinking block as the client saw it, by its kind."""
    notes: list[str] = []
    reasoning: list[str] = []
    current: list[str] | None = None
    for event in events:
        if event["type"] == "thinking_start":
            current = notes if event["kind"] == "progress" else reasoning
            current.append("")
        elif event["type"] == "thinking" and current is not None:
            current[-1] += event["text"]
    return notes, reasoning


def research_script(fake: FakeAnthropic, model: str) -> None:
    """A reasoning block, a note, a tool call; then the answer. Haiku 5.5 with thinking
    off writes its note as text."""
    first: list[Any] = [Thinking(REASONING), Thinking(NOTE, progress=True)]
    if model == "claude-haiku-5-5":
        first = [Text(NOTE)]
    fake.add(
        Reply([*first, ToolUse("echo", {"text": "NVDA"})], **TURNS[0]),
        Reply([Text("Revenue was $130.5 billion.")], **TURNS[1]),
    )


@pytest.mark.parametrize("model", sorted(PUBLISHED))
async def test_a_research_run_shows_its_notes_and_costs_the_published_price(
    make_gateway: GatewayFactory, fake: FakeAnthropic, model: str
) -> None:
    client = await make_gateway(sdk_model=model)  # thinking off: the default
    research_script(fake, model)
    events = await stream(client, query="NVIDIA revenue?")
    final = events[-1]
    assert final["type"] == "final" and final["outcome"] == "completed", final
    notes, reasoning = notes_and_reasoning(events)
    if model == "claude-haiku-5-5":
        assert (notes, reasoning) == ([], [])
        assert fake.requests[0]["thinking"] == {"type": "disabled"}
        assert final["result"].startswith(NOTE)
    else:
        assert notes == [NOTE] and reasoning == []  # thinking off: no reasoning shown
        assert final["result"] == "Revenue was $130.5 billion."
    # The note comes before the tool card it introduces.
    types = [(e["type"], e.get("phase")) for e in events]
    first_tool = types.index(("tool_call", "tool_start"))
    note_at = next(i for i, e in enumerate(events) if e["type"] in ("thinking", "delta"))
    assert note_at < first_tool
    assert final["total_cost_usd"] == pytest.approx(published_cost(model), abs=1e-12)
    body = fake.requests[1]
    sent = body["messages"][1]["content"]
    assert any(b["type"] == "tool_use" for b in sent)  # the turn went back as produced
    if model != "claude-haiku-5-5":
        thinking = [b for b in sent if b["type"] == "thinking"]
        # Opus 5.5's reasoning stayed omitted; Sonnet 5.5 between tools did not reason.
        omitted = [""] if model == "claude-opus-5-5" else []
        assert [b["thinking"] for b in thinking] == [*omitted, NOTE]


async def test_sonnet_5_5_off_is_between_tools_and_opus_5_5_off_is_display_updates(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    for model, thinking, beta in (
        ("claude-sonnet-5-5", {"type": "between_tools"}, False),
        ("claude-opus-5-5", {"type": "adaptive", "display": "updates"}, True),
    ):
        client = await make_gateway(sdk_model=model)
        fake.add(Reply([Text("ok")]))
        events = await stream(client, query="q")
        assert events[-1]["type"] == "final", events[-1]
        assert fake.requests[-1]["thinking"] == thinking
        betas = fake.headers[-1].get("anthropic-beta", "")
        assert (DISPLAY_BETA in betas) is beta


async def test_sonnet_5_5_at_max_effort_uses_display_updates(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """`between_tools` is a 400 at xhigh and max: the notes come through "updates"."""
    client = await make_gateway(sdk_model="claude-sonnet-5-5", sdk_effort="max")
    research_script(fake, "claude-sonnet-5-5")
    events = await stream(client, query="q")
    assert events[-1]["type"] == "final", events[-1]
    assert fake.requests[0]["thinking"] == {"type": "adaptive", "display": "updates"}
    assert notes_and_reasoning(events) == ([NOTE], [])


async def test_thinking_on_shows_reasoning_and_notes_apart(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-opus-5-5")
    fake.add(
        Reply([Thinking(REASONING), ToolUse("echo", {"text": "a"}),
               Thinking(NOTE, progress=True), ToolUse("echo", {"text": "b"})]),
        Reply([Text("done")]),
    )  # fmt: skip
    events = await stream(client, query="q", thinking=True)
    assert events[-1]["type"] == "final", events[-1]
    assert fake.requests[0]["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert notes_and_reasoning(events) == ([NOTE], [REASONING])
    fake.add(Reply([Thinking(REASONING), ToolUse("echo", {"text": "a"}),
                    Thinking(NOTE, progress=True), ToolUse("echo", {"text": "b"})]),
             Reply([Text("done")]))  # fmt: skip
    response = await client.post("/api/research", json={"query": "q", "thinking": True})
    body = await response.json()
    kinds = [(b["kind"], b["thinking"]) for b in body["thinkingBlocks"]]
    assert kinds == [("reasoning", REASONING), ("progress", NOTE)]


async def test_the_fake_omits_thinking_text_by_default_and_wants_the_beta(
    fake_server: TestServer, fake: FakeAnthropic
) -> None:
    """The SDK as the oracle: without a display that shows them, Opus 5.5's notes are
    empty (the stream goes quiet); "updates" without its beta is refused."""
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url=str(fake_server.make_url("")).rstrip("/"), max_retries=0
    )
    fake.add(Reply([Thinking(NOTE, progress=True), Text("ok")]))
    params: Any = {"model": "claude-opus-5-5", "max_tokens": 1000,
                   "messages": [{"role": "user", "content": "q"}]}  # fmt: skip
    try:
        async with client.messages.stream(**params) as sdk_stream:
            message = await sdk_stream.get_final_message()
        assert message.content[0].type == "thinking" and message.content[0].thinking == ""
        updates: Any = {"type": "adaptive", "display": "updates"}
        with pytest.raises(anthropic.BadRequestError, match="thinking-display-updates"):
            async with client.beta.messages.stream(
                **params, thinking=updates, betas=["compact-2026-01-12"]
            ) as refused:
                await refused.get_final_message()
    finally:
        await client.close()


async def test_a_long_haiku_5_5_call_is_priced_at_the_higher_tier(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-haiku-5-5")
    # 90,000 input + 20,000 cache reads: 110,000 prompt tokens, over 100,000.
    fake.add(Reply([Text("long")], input_tokens=90_000, cache_read=20_000, output_tokens=1_000))
    events = await stream(client, query="q")
    # Every class at five times: 90,000*0.50 + 20,000*0.05 + 1,000*2.50 per million.
    expected = (90_000 * 0.50 + 20_000 * 0.05 + 1_000 * 2.50) / 1_000_000
    assert events[-1]["total_cost_usd"] == pytest.approx(expected, abs=1e-12)
    table = pricing.shipped()
    short = {"input_tokens": 99_000, "cache_read_input_tokens": 1_000, "output_tokens": 1_000}
    assert table.cost("claude-haiku-5-5", short) == pytest.approx(
        (99_000 * 0.10 + 1_000 * 0.01 + 1_000 * 0.50) / 1_000_000
    )


def test_inference_geo_and_batch_multiply_the_token_prices() -> None:
    table = pricing.shipped()
    usage = {"input_tokens": 1_000_000, "output_tokens": 1_000_000}
    assert table.cost("claude-opus-5-5", usage) == pytest.approx(24.0)
    us = {**usage, pricing.geo_key("us"): 1}
    assert table.cost("claude-opus-5-5", us) == pytest.approx(24.0 * 1.1)
    assert table.cost("claude-opus-5-5", us, batch=True) == pytest.approx(24.0 * 1.1 * 0.5)
    # Fast mode: Opus 5.5 at $8 / $40 (build-with-claude/fast-mode).
    fast = {**usage, pricing.FAST_KEY: 1}
    assert table.cost("claude-opus-5-5", fast) == pytest.approx(48.0)


async def test_usage_says_where_and_how_fast_a_call_ran(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway(sdk_model="claude-opus-5-5")
    fake.add(Reply([Text("ok")], input_tokens=1_000, output_tokens=100,
                   usage_extra={"inference_geo": "us", "speed": "fast"}))  # fmt: skip
    events = await stream(client, query="q")
    expected = (1_000 * 4.0 + 100 * 20.0) / 1_000_000 * 1.1 * 2.0
    assert events[-1]["total_cost_usd"] == pytest.approx(expected, abs=1e-12)


def test_a_price_file_with_tiers_and_an_old_one_both_parse() -> None:
    old = pricing.PriceTable.parse(
        {"models": {"m": {"input": 1, "output": 2, "cache_write_5m": 1, "cache_read": 0.1}}}
    )
    assert old.geo_multipliers == {} and old.models["m"].tiers == ()
    tiered = pricing.PriceTable.parse({"models": {"m": {
        "input": 1, "output": 2, "cache_write_5m": 1, "cache_read": 0.1,
        "tiers": [{"above_prompt_tokens": 10, "input": 5, "output": 10, "cache_write_5m": 5,
                   "cache_read": 0.5}],
    }}})  # fmt: skip
    assert tiered.cost("m", {"input_tokens": 11, "output_tokens": 1}) == pytest.approx(65e-6)
    with pytest.raises(ValueError, match="above_prompt_tokens"):
        pricing.PriceTable.parse(
            {
                "models": {
                    "m": {
                        "input": 1,
                        "output": 2,
                        "cache_write_5m": 1,
                        "cache_read": 0.1,
                        "tiers": [{}],
                    }
                }
            }
        )


async def test_the_default_is_the_current_sonnet_and_a_legacy_model_is_named(
    make_gateway: GatewayFactory, fake: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    assert Settings(_env_file=None).sdk_model == "claude-sonnet-5-5"
    current = await make_gateway(sdk_model="claude-sonnet-5-5")
    record = (await (await current.get("/health")).json())["model_record"]
    assert record["legacy"] is False and record["note"] is None
    assert record["thinking"] == ["adaptive", "between_tools"]
    with caplog.at_level(logging.WARNING, logger="gateway.providers.anthropic.catalog"):
        legacy = await make_gateway(sdk_model="claude-sonnet-5")
    record = (await (await legacy.get("/health")).json())["model_record"]
    assert record["legacy"] is True and record["current_model"] == "claude-sonnet-5-5"
    assert record["note"] == (
        "claude-sonnet-5 is legacy (no retirement date yet): the current model is claude-sonnet-5-5"
    )
    assert any("claude-sonnet-5 is legacy" in r.getMessage() for r in caplog.records)
    deprecated = await make_gateway(sdk_model="claude-sonnet-4-5-20250929")
    record = (await (await deprecated.get("/health")).json())["model_record"]
    assert record["note"] == (
        "claude-sonnet-4-5-20250929 is deprecated, retires 2026-11-30: set SDK_MODEL to a "
        "current model"
    )
