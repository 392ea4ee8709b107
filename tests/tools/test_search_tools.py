"""search_sec_full_text (EFTS live, FTS5 offline) and web_search (Exa, offline index)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from email.utils import formatdate
from typing import Any

import pytest
from aiohttp import web
from pytest_aiohttp import AiohttpServer

from tests.tools.conftest import FakeSecHosts, call_error, call_ok
from tests.tools.http_faults import BodyFault, HangUps, body_fault
from tools import ToolsConfig, Toolset, open_toolset

PUNCTUATION_QUERIES = [
    "Item 5.02",
    '"net revenue"',
    "AT&T",
    "supply-chain",
    "risk*",
    "(unbalanced",
    '"unbalanced quote',
    "NEAR(a b) OR NOT AND",
    "col:umn ^ + {x}",
]


async def test_efts_query_and_filters_reach_sec(live: Toolset, fake_sec: FakeSecHosts) -> None:
    result = await call_ok(
        live,
        "search_sec_full_text",
        query="apple",
        forms=["10-K", "8-k"],
        date_from="2025-04-18",
        date_to="2025-04-18",
        cik="320193",
        limit=5,
    )
    sent = fake_sec.fake.requests[-1]
    assert (sent.host, sent.path) == ("efts", "/LATEST/search-index")
    assert sent.query == {
        "q": "apple",
        "forms": "10-K,8-K",
        "dateRange": "custom",
        "startdt": "2025-04-18",
        "enddt": "2025-04-18",
        "ciks": "0000320193",
    }
    assert result["total"] == 100 and result["count"] == 5
    first = result["hits"][0]
    assert first == {
        "form": "424B2",
        "filed": "2025-04-18",
        "company": (
            "BofA Finance LLC  (CIK 0001682472); BANK OF AMERICA CORP /DE/  (CIK 0000070858)"
        ),
        "cik": 1682472,
        "accession_number": "0001918704-25-006778",
        "url": "https://www.sec.gov/Archives/edgar/data/1682472/000191870425006778/form424b2.htm",
    }


async def test_efts_totals_and_empty_answers(live: Toolset) -> None:
    capped = await call_ok(live, "search_sec_full_text", query="ford")
    assert (capped["total"], capped["total_is_lower_bound"]) == (10000, True)
    assert capped["count"] == 10
    one = await call_ok(live, "search_sec_full_text", query="technology phase jon")
    assert one["hits"][0]["period"] == "2024-12-31"
    none = await call_ok(live, "search_sec_full_text", query="fordasfsdfsdf")
    assert none["count"] == 0 and "No filing matches" in none["note"]


async def test_offline_full_text_filters(offline: Toolset) -> None:
    result = await call_ok(offline, "search_sec_full_text", query="Item 5.02", forms=["8-K"])
    assert result["source"].startswith("offline full-text index")
    companies = {h["company"] for h in result["hits"]}
    assert {"NVIDIA CORP", "Meta Platforms, Inc.", "JPMORGAN CHASE & CO"} <= companies
    assert all(h["form"] == "8-K" for h in result["hits"])
    nvidia = await call_ok(
        offline,
        "search_sec_full_text",
        query="variable compensation",
        cik="1045810",
        date_from="2026-01-01",
    )
    assert {h["cik"] for h in nvidia["hits"]} == {1045810}
    assert all(h["filed"] >= "2026-01-01" for h in nvidia["hits"])
    exhibit = next(h for h in nvidia["hits"] if h.get("document_type") == "EX-10.1")
    assert exhibit["url"].endswith("/formxex101xfy27variablecom.htm")


async def test_offline_hit_offset_opens_the_passage(offline: Toolset) -> None:
    result = await call_ok(offline, "search_sec_full_text", query='"Variable Compensation Plan"')
    hit = next(h for h in result["hits"] if h["url"].endswith("nvda-20260302.htm"))
    page = await call_ok(
        offline, "get_sec_filing", url=hit["url"], offset=hit["offset"], max_chars=2_000
    )
    words = [w for w in hit["snippet"].replace("…", " ").split() if len(w) > 3]
    assert words and all(w in page["text"] for w in words[:5])


@pytest.mark.parametrize("query", PUNCTUATION_QUERIES)
async def test_punctuation_never_breaks_the_index(offline: Toolset, query: str) -> None:
    full_text = await call_ok(offline, "search_sec_full_text", query=query)
    assert full_text["count"] >= 0
    web_result = await call_ok(offline, "web_search", query=query)
    assert web_result["count"] >= 0


async def test_cik_filter_must_be_a_cik(offline: Toolset) -> None:
    message = await call_error(offline, "search_sec_full_text", query="revenue", cik="Apple")
    assert "cik must be a CIK number" in message


async def test_query_without_words_is_a_clear_failure(offline: Toolset) -> None:
    for query in ("-", "*", "(", '""'):
        message = await call_error(offline, "web_search", query=query)
        assert "Nothing to search for" in message


async def test_offline_web_search(offline: Toolset) -> None:
    result = await call_ok(offline, "web_search", query="Adobe record revenue", num_results=3)
    assert result["source"].startswith("offline index")
    top = result["results"][0]
    assert top["url"].startswith("https://www.sec.gov/Archives/edgar/data/796343/")
    assert "ADOBE" in top["title"] and top["snippet"]
    assert top["published_date"] == "2023-03-15"
    elsewhere = await call_ok(
        offline, "web_search", query="revenue", include_domains=["reuters.com"]
    )
    assert elsewhere["count"] == 0 and "No results" in elsewhere["note"]
    sec = await call_ok(offline, "web_search", query="revenue", include_domains=["sec.gov"])
    assert sec["count"] > 0


class FakeExa:
    """Exa's POST /search: checks the key, records bodies and when they came, answers or
    fails on demand: `queued` answers (with headers) first, then `answer` every time."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.times: list[float] = []
        self.answer: tuple[int, Any] = (200, None)
        self.queued: list[tuple[int, Any, dict[str, str]]] = []
        self.body_faults: list[BodyFault] = []
        self.hang_ups = HangUps()
        self.stall_s = 0.0

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/search", self.search)
        return app

    async def search(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("x-api-key") != "exa-test-key":
            return web.json_response({"error": "Invalid API key"}, status=401)
        self.bodies.append(await request.json())
        self.times.append(time.monotonic())
        await asyncio.sleep(self.stall_s)
        if self.body_faults:
            return await body_fault(
                request, self.body_faults.pop(0), self.hang_ups, "application/json"
            )
        status, body = self.answer
        headers: dict[str, str] = {}
        if self.queued:
            status, body, headers = self.queued.pop(0)
        if body is None:
            body = {
                "requestId": "r1",
                "results": [
                    {
                        "id": "https://example.com/a",
                        "url": "https://example.com/a",
                        "title": "NVIDIA results",
                        "publishedDate": "2026-02-25T00:00:00.000Z",
                        "author": "Reporter",
                        "text": "NVIDIA   reported\nrecord revenue.",
                    }
                ],
            }
        return web.json_response(body, status=status, headers=headers)


@pytest.fixture
async def exa(aiohttp_server: AiohttpServer) -> AsyncIterator[tuple[FakeExa, Toolset]]:
    fake = FakeExa()
    server = await aiohttp_server(fake.app())
    config = ToolsConfig(
        search_backend="exa", exa_api_key="exa-test-key", exa_base_url=str(server.make_url(""))
    )
    async with open_toolset(config, timeout_s=6.0) as toolset:  # 2 s a request
        yield fake, toolset


async def test_exa_search(exa: tuple[FakeExa, Toolset]) -> None:
    fake, toolset = exa
    result = await call_ok(
        toolset,
        "web_search",
        query="nvidia earnings",
        num_results=3,
        include_domains=["reuters.com"],
    )
    assert fake.bodies == [
        {
            "query": "nvidia earnings",
            "numResults": 3,
            "contents": {"text": {"maxCharacters": 800}},
            "includeDomains": ["reuters.com"],
        }
    ]
    assert result["source"] == "exa"
    assert result["results"] == [
        {
            "title": "NVIDIA results",
            "url": "https://example.com/a",
            "snippet": "NVIDIA reported record revenue.",
            "published_date": "2026-02-25T00:00:00.000Z",
            "author": "Reporter",
        }
    ]
    assert toolset.backends == {"sec": "offline", "search": "exa"}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ((500, {"error": "internal"}), "Exa search failed: HTTP 500"),
        ((429, {"error": "rate limit"}), "Exa search failed: HTTP 429"),
        ((200, {"unexpected": True}), "without a results list"),
    ],
)
async def test_exa_failures_are_errors_not_empty_results(
    exa: tuple[FakeExa, Toolset], answer: tuple[int, Any], expected: str
) -> None:
    fake, toolset = exa
    fake.answer = answer
    message = await call_error(toolset, "web_search", query="anything")
    assert expected in message


async def test_exa_timeout_is_an_error(exa: tuple[FakeExa, Toolset]) -> None:
    fake, toolset = exa
    fake.stall_s = 3.0
    message = await call_error(toolset, "web_search", query="anything")
    assert message == "Exa search timed out after 2 s."


async def test_exa_wrong_key(aiohttp_server: AiohttpServer) -> None:
    server = await aiohttp_server(FakeExa().app())
    config = ToolsConfig(
        search_backend="exa", exa_api_key="wrong", exa_base_url=str(server.make_url(""))
    )
    async with open_toolset(config) as toolset:
        message = await call_error(toolset, "web_search", query="anything")
    assert "HTTP 401" in message and "Invalid API key" in message


THROTTLED = {"error": "rate limit exceeded"}


@pytest.mark.parametrize("status", [429, 503])
async def test_exa_retry_after_in_seconds(exa: tuple[FakeExa, Toolset], status: int) -> None:
    fake, toolset = exa
    fake.queued = [(status, THROTTLED, {"Retry-After": "1"})]
    result = await call_ok(toolset, "web_search", query="nvidia")
    assert result["count"] == 1
    first, second = fake.times
    assert 1.0 <= second - first < 1.8


async def test_exa_retry_after_as_a_date(exa: tuple[FakeExa, Toolset]) -> None:
    fake, toolset = exa
    fake.queued = [(429, THROTTLED, {"Retry-After": formatdate(time.time() + 2, usegmt=True)})]
    result = await call_ok(toolset, "web_search", query="nvidia")
    assert result["count"] == 1
    first, second = fake.times
    assert 0.9 <= second - first < 2.8


async def test_exa_retry_after_past_the_bound_fails_at_once(exa: tuple[FakeExa, Toolset]) -> None:
    fake, toolset = exa
    fake.queued = [(429, THROTTLED, {"Retry-After": "600"})]
    message = await call_error(toolset, "web_search", query="nvidia")
    assert "HTTP 429" in message and "asks to wait 600 s" in message and "(2 s)" in message
    assert len(fake.times) == 1


async def test_exa_throttled_twice_says_so(exa: tuple[FakeExa, Toolset]) -> None:
    fake, toolset = exa
    fake.queued = [(503, THROTTLED, {"Retry-After": "0"})] * 2
    message = await call_error(toolset, "web_search", query="nvidia")
    assert message.startswith("Exa search failed: HTTP 503") and "retried once after 0 s" in message


@pytest.mark.parametrize("fault", ["endless", "declared_huge", "gzip_bomb"])
async def test_exa_answer_over_the_cap_fails_and_is_not_read(
    exa: tuple[FakeExa, Toolset], fault: BodyFault
) -> None:
    fake, toolset = exa
    fake.body_faults = [fault]
    message = await call_error(toolset, "web_search", query="nvidia")
    assert "longer than 1,048,576 bytes (EXA_MAX_BODY_BYTES)" in message
    if fault != "gzip_bomb":
        async with asyncio.timeout(5):
            await fake.hang_ups.event.wait()
    assert (await call_ok(toolset, "web_search", query="nvidia"))["count"] == 1
