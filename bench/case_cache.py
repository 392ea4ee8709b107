"""Case 10: what prompt caching saves on a real research run.

A scripted five-round research run (ticker lookup, figures, filing list, a filing's risk
factors, full-text search, then the answer) goes through the gateway with the bundled
offline EDGAR tools, against the test fake of the Messages API counting tokens and cache
reads the way the API does (tests/fakes/prompt_cache.py). It runs twice, caching on and
off, and prices the input tokens as the API bills them: cache writes at 1.25x the base
input price, cache reads at 0.1x.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from bench.run import Bench, Row
from gateway.http.app import create_app
from gateway.settings import Settings
from gateway.sse import parse_frames
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tools import open_toolset
from tools.base import ToolContext
from tools.config import ToolsConfig

WRITE_PRICE, READ_PRICE = 1.25, 0.1
KEYS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


async def prompt_cache(bench: Bench) -> None:
    script = await _script()
    found = {}
    for cache in (False, True):
        found[cache] = await _run(script, cache=cache)
    on, off = found[True], found[False]
    bench.details["prompt_cache"] = {"on": on, "off": off}
    billed_on, billed_off = _billed(on), _billed(off)
    figure = "5-round research run: input billed, full-price token equivalents"
    bench.add(Row("10", figure, billed_on, "tok", "caching off", billed_off, target="report"))
    later = on[1:]  # every call after the first reads what the one before it wrote
    read = sum(u["cache_read_input_tokens"] for u in later)
    share = read / sum(u[k] for u in later for k in KEYS)
    each = ", ".join(f"{u['cache_read_input_tokens'] / sum(u[k] for k in KEYS):.0%}" for u in later)
    bench.add(
        Row(
            "10", "calls 2-6 of that run: share of their input read from the cache",
            share * 100, "%", target=">= 80%", passed=share >= 0.8, note=f"per call: {each}",
        )
    )  # fmt: skip


def _billed(usages: list[dict[str, int]]) -> float:
    return sum(
        u["input_tokens"]
        + WRITE_PRICE * u["cache_creation_input_tokens"]
        + READ_PRICE * u["cache_read_input_tokens"]
        for u in usages
    )


async def _script() -> list[Reply]:
    """The model's side of the run; the filing it reads is the newest the snapshot holds."""
    async with open_toolset(ToolsConfig(), timeout_s=30, max_result_chars=100_000) as toolset:
        ctx = ToolContext(tool_use_id="bench", run_id="bench", services=toolset.services)
        listing = await toolset.registry.call(
            "search_sec_filings", {"company_identifier": "NVDA", "filing_type": "10-K"}, ctx
        )
        for filing in orjson.loads(listing.content)["filings"]:
            read = {"url": filing["url"], "section": "Risk Factors"}
            if not (await toolset.registry.call("get_sec_filing", read, ctx)).is_error:
                break
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_sec_company_tickers", {"search_term": "NVIDIA"}),
        ("search_sec_filings", {"company_identifier": "NVDA", "filing_type": "10-K"}),
        ("get_sec_company_facts", {"company_identifier": "NVDA", "concept": "Revenues"}),
        ("get_sec_filing", read),
        ("search_sec_full_text", {"query": '"supply chain" NVIDIA'}),
    ]
    replies = [Reply([Text(f"Step {n + 1}."), ToolUse(name, args)]) for n, (name, args) in
               enumerate(calls)]  # fmt: skip
    return [*replies, Reply([Text("NVIDIA's revenue grew; its risk factors name supply.")])]


async def _run(script: list[Reply], *, cache: bool) -> list[dict[str, int]]:
    fake = FakeAnthropic([Reply(list(r.blocks)) for r in script], count_tokens=True)
    async with _serve(fake.app()) as upstream:
        settings = Settings(
            _env_file=None, anthropic_api_key="bench", anthropic_base_url=upstream,
            gateway_upstream="anthropic", sdk_model="claude-sonnet-5",
            gateway_prompt_cache=cache, gateway_gc_freeze=False,
        )  # fmt: skip
        async with (
            _serve(create_app(settings)) as gateway,
            aiohttp.ClientSession() as session,
            session.post(f"{gateway}/api/stream", json={"query": "NVIDIA research"}) as response,
        ):
            events = parse_frames(await response.read())
    final = events[-1]
    if final.get("outcome") != "completed":
        raise RuntimeError(f"the cache run did not complete: {final}")
    return [e["usage"] for e in events if e["type"] == "turn_complete"]


@contextlib.asynccontextmanager
async def _serve(app: web.Application) -> AsyncIterator[str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()
