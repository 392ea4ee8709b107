"""Case 11: what compaction saves on a long research run.

A scripted run that pages through the 10-Ks of the bundled offline filings, ten pages
of 60,000 characters goes through the gateway against the test fake of the Messages
API, which counts tokens and compacts the way the API does (tests/fakes/context.py). It
runs twice on the same model (a 1M-token window, so the run fits either way): with
`GATEWAY_CONTEXT=off`, and with compaction past 60,000 input tokens. Input billed counts
every call's input (cache reads and writes priced as the API bills them: 0.1x, 1.25x),
plus compaction's own tokens (reported apart by the API, added to the run's usage).
Measured: compaction sends 0.44 of the tokens, yet bills 1.12 of the run without it when
the prompt cache is on: the uncompacted run reads its growing prefix at a tenth of the
price, while each compaction is a full-price read of the whole context plus a new,
uncached prefix after it. Compaction is for runs that would not fit, not a saving.
"""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from bench.case_cache import KEYS, _billed, _serve
from bench.run import Bench, Row
from gateway.http.app import create_app
from gateway.settings import Settings
from gateway.sse import parse_frames
from tests.fakes.anthropic import FakeAnthropic, Reply, Text, ToolUse
from tools import open_toolset
from tools.base import ToolContext
from tools.config import ToolsConfig

TRIGGER = 60_000
COMPANIES = ("NVDA", "AAPL", "MSFT", "AMZN", "GOOGL", "META")
READS = 10
PAGE = 60_000


async def compaction(bench: Bench) -> None:
    script = await _script()
    off = await _run(script, "off")
    on = await _run(script, "compact")
    bench.details["compaction"] = {"on": on, "off": off}
    billed_on, billed_off = _billed(on["usages"]), _billed(off["usages"])
    tokens_on, tokens_off = _tokens(on["usages"]), _tokens(off["usages"])
    rounds = len(script) - 1
    bench.add(Row(
        "11", f"{rounds}-round run paging through 10-Ks: input tokens sent", tokens_on, "tok",
        "compaction off", tokens_off, target="report",
        note=f"compactions: {on['compactions']}, their own tokens included",
    ))  # fmt: skip
    bench.add(Row(
        "11", "the same run: input billed, full-price token equivalents (cache priced)",
        billed_on, "tok", "compaction off", billed_off, target="report",
        note="prompt caching on in both: compaction re-bills the summarised prefix",
    ))  # fmt: skip


def _tokens(usages: list[dict[str, int]]) -> int:
    return sum(u[key] for u in usages for key in KEYS)


async def _script() -> list[Reply]:
    reads: list[dict[str, Any]] = []
    async with open_toolset(ToolsConfig(), timeout_s=30, max_result_chars=100_000) as toolset:
        ctx = ToolContext(tool_use_id="bench", run_id="bench", services=toolset.services)
        for company in COMPANIES:
            listing = await toolset.registry.call(
                "search_sec_filings", {"company_identifier": company, "filing_type": "10-K"}, ctx
            )
            if listing.is_error:
                continue
            for filing in orjson.loads(listing.content)["filings"]:
                offset: int | None = 0
                while offset is not None and len(reads) < READS:  # page through it
                    read = {"url": filing["url"], "offset": offset, "max_chars": PAGE}
                    page = await toolset.registry.call("get_sec_filing", read, ctx)
                    if page.is_error:
                        break
                    reads.append(read)
                    offset = orjson.loads(page.content).get("next_offset")
    reads = reads[:READS]
    replies = [Reply([Text(f"Reading {n + 1}."), ToolUse("get_sec_filing", read)])
               for n, read in enumerate(reads)]  # fmt: skip
    return [*replies, Reply([Text("The filings, compared.")])]


async def _run(script: list[Reply], mode: str) -> dict[str, Any]:
    fake = FakeAnthropic([Reply(list(r.blocks)) for r in script], count_tokens=True)
    async with _serve(fake.app()) as upstream:
        settings = Settings(
            _env_file=None, anthropic_api_key="bench", anthropic_base_url=upstream,
            gateway_upstream="anthropic", sdk_model="claude-sonnet-5", gateway_gc_freeze=False,
            sdk_max_turns=len(script) + 1, gateway_context=mode,
            gateway_context_trigger_tokens=TRIGGER,
        )  # fmt: skip
        async with (
            _serve(create_app(settings)) as gateway,
            aiohttp.ClientSession() as session,
            session.post(f"{gateway}/api/stream", json={"query": "Compare"}) as response,
        ):
            events = parse_frames(await response.read())
    final = events[-1]
    if final.get("outcome") != "completed":
        raise RuntimeError(f"the compaction run did not complete: {final}")
    return {
        "usages": [e["usage"] for e in events if e["type"] == "turn_complete"],
        "compactions": sum(1 for e in events if e["type"] == "context_edited"),
    }
