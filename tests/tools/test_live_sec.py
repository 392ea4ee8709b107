"""The live client against the fake SEC: headers, caching, SEC's failure answers, the limiter,
`Retry-After`, answers too long to read."""

from __future__ import annotations

import asyncio
import gzip
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from email.utils import formatdate
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.tools.conftest import USER_AGENT, FakeSecHosts, call_error, call_ok
from tests.tools.fake_sec import HOST_DIRS, Fault
from tests.tools.http_faults import BodyFault
from tools import Toolset, open_toolset
from tools.sec.live import LiveSec
from tools.sec.ratelimit import RateLimiter
from tools.sec.source import SecError, SecNotFound
from tools.toolset import SEC_REQUESTS_PER_SECOND

APPLE_10K_PATH = "/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm"
APPLE_SUBMISSIONS = "/submissions/CIK0000320193.json"
CAP = 1 << 20  # below the Apple 10-K (1.5 MB), above the submissions and the 10-K gzipped


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


def live_sec(session: aiohttp.ClientSession, fake_sec: FakeSecHosts, **options: Any) -> LiveSec:
    """A LiveSec on the fake hosts with a short back-off, for the failure paths."""
    defaults: dict[str, Any] = {"request_timeout_s": 1.0, "throttle_backoff_s": 0.05}
    return LiveSec(
        session,
        user_agent=USER_AGENT,
        bases={host: fake_sec.urls[host] for host in HOST_DIRS},
        limiter=RateLimiter(SEC_REQUESTS_PER_SECOND),
        **(defaults | options),
    )


@pytest.fixture
def client(session: aiohttp.ClientSession, fake_sec: FakeSecHosts) -> LiveSec:
    return live_sec(session, fake_sec)


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


def gap(fake_sec: FakeSecHosts) -> float:
    first, second = fake_sec.fake.requests
    return second.at - first.at


async def test_retry_after_in_seconds_sets_the_back_off(
    client: LiveSec, fake_sec: FakeSecHosts
) -> None:
    fake_sec.fake.faults, fake_sec.fake.retry_after = ["rate_limited_429"], "1"
    data = await client.get_json("data", APPLE_SUBMISSIONS)
    assert data["name"] == "Apple Inc."
    assert 1.0 <= gap(fake_sec) < 1.8  # not the 0.05 s back-off of its own


async def test_retry_after_as_a_date_on_a_503(
    session: aiohttp.ClientSession, fake_sec: FakeSecHosts
) -> None:
    client = live_sec(session, fake_sec, request_timeout_s=5.0)
    fake_sec.fake.faults = ["unavailable"]
    fake_sec.fake.retry_after = formatdate(time.time() + 3, usegmt=True)  # whole seconds
    data = await client.get_json("data", APPLE_SUBMISSIONS)
    assert data["name"] == "Apple Inc."
    assert 1.9 <= gap(fake_sec) < 3.8


async def test_a_503_twice_says_so(client: LiveSec, fake_sec: FakeSecHosts) -> None:
    fake_sec.fake.faults = ["unavailable", "unavailable"]
    with pytest.raises(SecError, match=r"unavailable \(HTTP 503\); retried once after 0.05 s"):
        await client.get_json("data", APPLE_SUBMISSIONS)


async def test_retry_after_past_the_bound_fails_at_once(
    client: LiveSec, fake_sec: FakeSecHosts
) -> None:
    fake_sec.fake.faults, fake_sec.fake.retry_after = ["rate_limited_429"], "120"
    started = time.monotonic()
    with pytest.raises(
        SecError, match=r"asks to wait 120 s \(Retry-After\), longer than a tool call may wait"
    ):
        await client.get_json("data", APPLE_SUBMISSIONS)
    assert time.monotonic() - started < 0.9 and len(fake_sec.fake.requests) == 1


async def test_retry_after_through_the_registry_is_bounded_by_the_tool_timeout(
    fake_sec: FakeSecHosts,
) -> None:
    fake_sec.fake.faults, fake_sec.fake.retry_after = ["unavailable"], "5"
    # A 6 s tool: one request's share is 2 s, so a 5 s wait does not fit.
    async with open_toolset(fake_sec.config(), timeout_s=6.0) as toolset:
        message = await call_error(
            toolset, "get_sec_filing", url="https://www.sec.gov" + APPLE_10K_PATH
        )
    assert "HTTP 503" in message and "asks to wait 5 s" in message and "(2 s)" in message


@contextmanager
def no_slot_left(client: LiveSec) -> Iterator[None]:
    yield
    limiter = client._limiter
    assert isinstance(limiter, RateLimiter) and limiter.in_flight == 0


@pytest.mark.parametrize("fault", ["endless", "declared_huge", "gzip_bomb"])
async def test_an_answer_over_the_cap_fails_and_is_not_read(
    session: aiohttp.ClientSession, fake_sec: FakeSecHosts, fault: BodyFault
) -> None:
    client = live_sec(session, fake_sec, max_body_bytes=CAP)
    fake_sec.fake.body_faults = [fault]
    with (
        no_slot_left(client),
        pytest.raises(
            SecError, match=r"longer than 1,048,576 bytes \(SEC_MAX_BODY_BYTES\) and was not read"
        ),
    ):
        await client.get_text("data", APPLE_SUBMISSIONS)
    if fault != "gzip_bomb":  # that one was sent whole (8 kB); the others hung up on
        async with asyncio.timeout(5):
            await fake_sec.fake.hang_ups.event.wait()
    # The session goes on: the next answer is read as usual.
    assert (await client.get_json("data", APPLE_SUBMISSIONS))["name"] == "Apple Inc."


async def test_the_cap_counts_the_decoded_body(fake_sec: FakeSecHosts, fixtures_dir: Path) -> None:
    document = (fixtures_dir / HOST_DIRS["www"] / APPLE_10K_PATH.lstrip("/")).read_bytes()
    assert len(gzip.compress(document)) < CAP < len(document)  # sent gzipped, under the cap
    config = fake_sec.config(sec_max_body_bytes=CAP)
    async with open_toolset(config, timeout_s=10.0) as toolset:
        message = await call_error(
            toolset, "get_sec_filing", url="https://www.sec.gov" + APPLE_10K_PATH
        )
        assert "SEC_MAX_BODY_BYTES" in message and "aapl-20240928.htm" in message
        found = await call_ok(toolset, "search_sec_filings", company_identifier="AAPL", limit=1)
        assert found["filings"]
    assert "gzip" in fake_sec.fake.requests[0].headers["Accept-Encoding"]
