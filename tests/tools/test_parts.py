"""Small parts on their own: FTS5 query building, the company directory, limiter, caches."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from tools.base import ToolFailure
from tools.search.index import Passage, PassageIndex, fts_query
from tools.sec.cache import LruCache, TtlCache
from tools.sec.companies import CompanyDirectory, name_key
from tools.sec.ratelimit import RateLimiter


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Item 5.02", '"Item" AND "5 02"'),
        ('"net revenue" growth', '"net revenue" AND "growth"'),
        ("AT&T", '"AT T"'),
        ("what are the risk factors?", '"risk" AND "factors"'),
        ('NEAR(a b) OR "x', '"NEAR a" AND "b" AND "x"'),
        ("-", None),
        ('* ( ) "" ^', None),
    ],
)
def test_fts_query_quotes_every_term(text: str, expected: str | None) -> None:
    assert fts_query(text) == expected


@pytest.fixture
def index() -> Iterator[PassageIndex]:
    passages = [
        Passage(0, 0, "Item 1A. Risk Factors", "Supply chain risk and AT&T contracts."),
        Passage(0, 40, "Item 7. MD&A", "Net revenue grew 10% in fiscal 2024."),
        Passage(1, 0, "Item 5.02", "Item 5.02 Departure of Directors; the net result."),
        Passage(2, 0, "", "Revenue from services, not net revenue alone."),
    ]
    filters = {
        0: ("10-K", "2024-11-01", 1),
        1: ("8-K", "2026-03-06", 2),
        2: ("10-Q", "2025-07-24", 3),
    }
    built = PassageIndex(passages, filters)
    yield built
    built.close()


def test_index_ranks_and_filters(index: PassageIndex) -> None:
    hits = index.search('"net revenue"', limit=10)
    assert sorted((h.doc, h.offset) for h in hits) == [(0, 40), (2, 0)]
    assert [h.score for h in hits] == sorted(h.score for h in hits)  # bm25: lower is better
    assert any("Net revenue grew" in h.snippet for h in hits)
    assert [h.doc for h in index.search("revenue", limit=10, forms=("10-q",))] == [2]
    assert [h.doc for h in index.search("revenue", limit=10, date_to="2025-01-01")] == [0]
    assert [h.doc for h in index.search("item 5.02", limit=10, cik=2)] == [1]
    assert index.search("AT&T", limit=10)[0].doc == 0


def test_index_falls_back_to_any_term(index: PassageIndex) -> None:
    hits = index.search("departure unicorn", limit=10)
    assert [h.doc for h in hits] == [1]


def test_index_refuses_text_without_words(index: PassageIndex) -> None:
    with pytest.raises(ValueError, match="no searchable words"):
        index.search("(*)", limit=5)


TICKERS = {
    "0": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."},
    "1": {"cik_str": 1418121, "ticker": "APLE", "title": "Apple Hospitality REIT, Inc."},
    "2": {"cik_str": 19617, "ticker": "JPM", "title": "JPMORGAN CHASE & CO"},
    "3": {"cik_str": 19617, "ticker": "JPM-PD", "title": "JPMORGAN CHASE & CO"},
    "4": {"cik_str": 70858, "ticker": "BAC", "title": "BANK OF AMERICA CORP /DE/"},
    "5": {"cik_str": 927971, "ticker": "BMO", "title": "BANK OF MONTREAL /CAN/"},
}
EXCHANGE = {
    "fields": ["cik", "name", "ticker", "exchange"],
    "data": [
        [320193, "Apple Inc.", "AAPL", "Nasdaq"],
        [70858, "BANK OF AMERICA CORP /DE/", "BAC", "NYSE"],
        [1067983, "BERKSHIRE HATHAWAY INC", "BRK-B", "NYSE"],
    ],
}


def test_name_keys() -> None:
    assert name_key("JPMorgan Chase & Co.") == "jpmorgan chase"
    assert name_key("BANK OF AMERICA CORP /DE/") == "bank of america"
    assert name_key("The Walt Disney Company") == "walt disney"


def test_directory_merges_both_ticker_files() -> None:
    directory = CompanyDirectory(TICKERS, EXCHANGE)
    assert [x.ticker for x in directory.listings] == [
        "AAPL", "APLE", "JPM", "JPM-PD", "BAC", "BMO", "BRK-B"
    ]  # fmt: skip
    assert directory.by_cik(70858)[0].exchange == "NYSE"
    assert directory.by_cik(927971)[0].exchange is None


@pytest.mark.parametrize(
    ("identifier", "cik"),
    [
        ("apple", 320193),
        ("AAPL", 320193),
        ("jpmorgan", 19617),
        ("JPM.PD", 19617),
        ("CIK0000070858", 70858),
        ("brk/b", 1067983),
        ("99999", 99999),
    ],
)
def test_directory_resolves_exactly(identifier: str, cik: int) -> None:
    assert CompanyDirectory(TICKERS, EXCHANGE).resolve(identifier).cik == cik


def test_directory_refuses_to_guess() -> None:
    directory = CompanyDirectory(TICKERS, EXCHANGE)
    with pytest.raises(ToolFailure, match=r"'bank' matches 2 companies: BANK OF AMERICA"):
        directory.resolve("bank")
    with pytest.raises(ToolFailure, match="No company matches 'pear'"):
        directory.resolve("pear")


async def test_rate_limiter_spaces_a_burst() -> None:
    limiter = RateLimiter(4, per=0.2)
    loop = asyncio.get_running_loop()
    starts: list[float] = []

    async def one() -> None:
        async with limiter:
            starts.append(loop.time())

    await asyncio.gather(*(one() for _ in range(10)))
    assert all(b - a >= 0.2 - 1e-3 for a, b in zip(starts, starts[4:], strict=False))
    assert starts[-1] - starts[0] < 1.0  # three windows, not ten


def test_rate_limiter_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RateLimiter(0)


async def test_ttl_cache_loads_once_and_expires() -> None:
    now = [0.0]
    cache = TtlCache(10, clock=lambda: now[0])
    loads = 0

    async def load() -> int:
        nonlocal loads
        loads += 1
        await asyncio.sleep(0)
        return loads

    assert await asyncio.gather(*(cache.get("k", load) for _ in range(5))) == [1] * 5
    now[0] = 11.0
    assert await cache.get("k", load) == 2


def test_lru_cache_keeps_the_recent() -> None:
    cache: LruCache[str] = LruCache(2)
    cache.put("a", "1")
    cache.put("b", "2")
    assert cache.get("a") == "1"
    cache.put("c", "3")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == ("1", None, "3")
