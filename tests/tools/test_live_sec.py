"""The live client against the fake SEC: headers, caching, SEC's failure answers, the limiter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.tools.conftest import USER_AGENT, FakeSecHosts, call_error, call_ok
from tests.tools.fake_sec import Fault
from tools import Toolset, open_toolset
from tools.sec.live import LiveSec
from tools.sec.ratelimit import RateLimiter
from tools.sec.source import SecError, SecNotFound
from tools.toolset import SEC_REQUESTS_PER_SECOND

APPLE_10K_PATH = "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"


@pytest.fixture
async def client(fake_sec: FakeSecHosts) -> AsyncIterator[LiveSec]:
    """A LiveSec with a short back-off, for the failure paths."""
    async with aiohttp.ClientSession() as session:
        yield LiveSec(
            session,
            user_agent=USER_AGENT,
            bases={
                "www": fake_sec.urls["www"],
                "data": fake_sec.urls["data"],
                "efts": fake_sec.urls["efts"],
            },
            limiter=RateLimiter(SEC_REQUESTS_PER_SECOND),
            request_timeout_s=1.0,
            throttle_backoff_s=0.05,
        )


async def test_every_request_declares_the_agent_and_accepts_gzip(
    live: Toolset, fake_sec: FakeSecHosts
) -> None:
    await call_ok(live, "search_sec_filings", company_identifier="NVDA", limit=1)
    await call_ok(
        live, "get_sec_filing", url="https://www.sec.gov" + APPLE_10K_PATH, max_chars=1_000
    )
    await call_ok(live, "search_sec_full_text", query="apple")
    hosts = {r.host for r in fake_sec.fake.requests}
    assert hosts == {"www", "data", "efts"}
    for request in fake_sec.fake.requests:
        assert request.headers["User-Agent"] == USER_AGENT
        assert "gzip" in request.headers["Accept-Encoding"]


async def test_ticker_maps_and_submissions_are_cached(
    live: Toolset, fake_sec: FakeSecHosts
) -> None:
    for _ in range(3):
        await call_ok(live, "search_sec_filings", company_identifier="Tesla", limit=1)
    await call_ok(live, "search_sec_company_tickers", search_term="tesla")
    assert sorted(fake_sec.fake.paths()) == [
        "/files/company_tickers.json",
        "/files/company_tickers_exchange.json",
        "/submissions/CIK0001318605.json",
    ]


async def test_rate_threshold_backs_off_once_then_succeeds(
    client: LiveSec, fake_sec: FakeSecHosts
) -> None:
    fake_sec.fake.faults = ["rate_limited"]
    data = await client.get_json("data", "/submissions/CIK0000320193.json")
    assert data["name"] == "Apple Inc."
    assert fake_sec.fake.paths() == ["/submissions/CIK0000320193.json"] * 2
    first, second = fake_sec.fake.requests
    assert second.at - first.at >= 0.05


@pytest.mark.parametrize("fault", ["rate_limited", "rate_limited_429"])
async def test_rate_threshold_twice_says_so(
    client: LiveSec, fake_sec: FakeSecHosts, fault: Fault
) -> None:
    fake_sec.fake.faults = [fault, fault]
    with pytest.raises(SecError, match=r"rate-limiting this server.*retried once"):
        await client.get_json("data", "/submissions/CIK0000320193.json")
    assert len(fake_sec.fake.requests) == 2


async def test_rate_threshold_through_the_registry(live: Toolset, fake_sec: FakeSecHosts) -> None:
    fake_sec.fake.faults = ["rate_limited"] * 2
    message = await call_error(live, "get_sec_filing", url="https://www.sec.gov" + APPLE_10K_PATH)
    assert "Request Rate Threshold Exceeded" in message and "10 minutes" in message


async def test_undeclared_user_agent(fake_sec: FakeSecHosts) -> None:
    config = fake_sec.config(sec_user_agent="python-aiohttp research")
    async with open_toolset(config) as toolset:
        message = await call_error(toolset, "search_sec_company_tickers", search_term="AAPL")
    assert "undeclared automated tool" in message and "SEC_USER_AGENT" in message


async def test_access_denied_under_archives_is_not_found(client: LiveSec) -> None:
    with pytest.raises(
        SecNotFound, match=r"Not found on SEC EDGAR: https://www.sec.gov/Archives/.*HTTP 403"
    ):
        await client.get_text("www", "/Archives/edgar/full-index/2099/QTR1/form.gz")


async def test_no_such_key_is_not_found(client: LiveSec) -> None:
    with pytest.raises(
        SecNotFound, match=r"data.sec.gov/submissions/CIK-000000001.json \(HTTP 404\)"
    ):
        await client.get_json("data", "/submissions/CIK-000000001.json")


async def test_queued_faults_reach_each_kind_of_answer(
    client: LiveSec, fake_sec: FakeSecHosts
) -> None:
    fake_sec.fake.faults = ["access_denied", "no_such_key", "undeclared"]
    with pytest.raises(SecNotFound):
        await client.get_text("www", APPLE_10K_PATH)
    with pytest.raises(SecNotFound):
        await client.get_json("data", "/submissions/CIK0000320193.json")
    with pytest.raises(SecError, match="undeclared automated tool"):
        await client.get_json("data", "/submissions/CIK0000320193.json")


async def test_slow_answer_times_out_clearly(client: LiveSec, fake_sec: FakeSecHosts) -> None:
    fake_sec.fake.stall_s = 3.0
    with pytest.raises(SecError, match="did not answer within 1 s"):
        await client.get_json("data", "/submissions/CIK0000320193.json")


async def test_unreachable_host_is_a_tool_failure(fake_sec: FakeSecHosts) -> None:
    config = fake_sec.config(sec_data_url="http://127.0.0.1:9")
    async with open_toolset(config) as toolset:
        message = await call_error(toolset, "search_sec_filings", company_identifier="320193")
    assert "Could not reach SEC EDGAR" in message


async def test_limiter_holds_eight_per_second_under_a_burst(
    client: LiveSec, fake_sec: FakeSecHosts
) -> None:
    paths = [f"/submissions/CIK{cik:010d}.json" for cik in (320193, 789019, 1045810, 1318605)]
    await asyncio.gather(*(client.get_json("data", paths[i % 4]) for i in range(20)))
    arrivals = sorted(r.at for r in fake_sec.fake.requests)
    assert len(arrivals) == 20
    # Any 9 consecutive arrivals span at least a second: at most 8 in any 1 s window.
    spans = [arrivals[i + 8] - arrivals[i] for i in range(len(arrivals) - 8)]
    assert min(spans) >= 1.0, spans
    assert arrivals[-1] - arrivals[0] < 4.0  # three windows of 8: it does not crawl either


async def test_the_toolset_shares_one_limiter_across_hosts(
    live: Toolset, fake_sec: FakeSecHosts
) -> None:
    source = live.services["sec"].source
    assert isinstance(source, LiveSec)
    await asyncio.gather(
        *(source.get_json("efts", "/LATEST/search-index", {"q": "apple"}) for _ in range(4)),
        *(source.get_json("data", "/submissions/CIK0000320193.json") for _ in range(4)),
        *(source.get_text("www", APPLE_10K_PATH) for _ in range(4)),
    )
    arrivals = sorted(r.at for r in fake_sec.fake.requests)
    assert {r.host for r in fake_sec.fake.requests} == {"www", "data", "efts"}
    assert len(arrivals) == 12 and arrivals[8] - arrivals[0] >= 1.0
