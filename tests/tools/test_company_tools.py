"""search_sec_company_tickers and search_sec_filings, offline and against the fake SEC."""

from __future__ import annotations

import pytest

from tests.tools.conftest import FakeSecHosts, call, call_error, call_ok
from tools import Toolset


@pytest.fixture(params=["offline", "live"])
def toolset(request: pytest.FixtureRequest) -> Toolset:
    """Each test runs on both backends: same data, one code path above the source."""
    found: Toolset = request.getfixturevalue(request.param)
    return found


async def test_ticker_lookup_puts_exact_matches_first(toolset: Toolset) -> None:
    result = await call_ok(toolset, "search_sec_company_tickers", search_term="apple")
    first = result["matches"][0]
    assert (first["ticker"], first["cik"], first["match"]) == ("AAPL", 320193, "name")
    assert first["exchange"] == "Nasdaq"
    kinds = [m["match"] for m in result["matches"]]
    assert kinds == sorted(kinds, key=["name", "name prefix", "name contains"].index)
    assert result["source"] in ("offline snapshot", "live SEC EDGAR")


@pytest.mark.parametrize(
    ("term", "ticker"),
    [("AAPL", "AAPL"), ("nvda", "NVDA"), ("0001318605", "TSLA"), ("brk.b", "BRK-B")],
)
async def test_ticker_lookup_by_ticker_or_cik(toolset: Toolset, term: str, ticker: str) -> None:
    result = await call_ok(toolset, "search_sec_company_tickers", search_term=term)
    assert result["matches"][0]["ticker"] == ticker


async def test_exchange_filter(toolset: Toolset) -> None:
    result = await call_ok(
        toolset, "search_sec_company_tickers", search_term="apple", exchange="NYSE"
    )
    assert [m["ticker"] for m in result["matches"]][:1] == ["APLE"]
    assert {m["exchange"] for m in result["matches"]} == {"NYSE"}


async def test_ticker_lookup_says_how_to_get_more(toolset: Toolset) -> None:
    result = await call_ok(toolset, "search_sec_company_tickers", search_term="bank", limit=3)
    assert len(result["matches"]) == 3
    assert result["total_matches"] > 3
    assert "raise limit" in result["note"]


async def test_filings_by_form_newest_first(toolset: Toolset) -> None:
    result = await call_ok(
        toolset, "search_sec_filings", company_identifier="Apple", filing_type="10-K", limit=3
    )
    assert result["company"] == {"name": "Apple Inc.", "cik": 320193, "tickers": ["AAPL"]}
    filings = result["filings"]
    assert [f["filing_date"] for f in filings] == ["2025-10-31", "2024-11-01", "2023-11-03"]
    assert filings[1] == {
        "form": "10-K",
        "filing_date": "2024-11-01",
        "report_date": "2024-09-28",
        "accession_number": "0000320193-24-000123",
        "url": "https://www.sec.gov/Archives/edgar/data/320193/000032019324000123/aapl-20240928.htm",
        "description": "10-K",
    }
    assert "more filings match" in result["notes"][0]


async def test_date_range_reaches_teslas_older_page(toolset: Toolset) -> None:
    result = await call_ok(
        toolset,
        "search_sec_filings",
        company_identifier="TSLA",
        filing_type="10-K",
        date_after="2016-01-01",
        date_before="2019-12-31",
    )
    dates = [f["filing_date"] for f in result["filings"]]
    # 2018 and 2019 are in filings.recent; 2016 and 2017 only on the -001 page.
    assert dates == ["2019-02-19", "2018-02-23", "2017-03-01", "2016-02-24"]
    assert result["older_pages_read"] == ["CIK0001318605-submissions-001.json"]


async def test_recent_dates_do_not_read_older_pages(toolset: Toolset) -> None:
    result = await call_ok(
        toolset, "search_sec_filings", company_identifier="TSLA", date_after="2025-01-01"
    )
    assert "older_pages_read" not in result
    assert all(f["filing_date"] >= "2025-01-01" for f in result["filings"])


async def test_amendments_on_request(toolset: Toolset) -> None:
    args = {"company_identifier": "1318605", "filing_type": "10-K", "date_before": "2012-12-31"}
    plain = await call_ok(toolset, "search_sec_filings", **args)
    assert [f["form"] for f in plain["filings"]] == ["10-K", "10-K"]
    both = await call_ok(toolset, "search_sec_filings", include_amendments=True, **args)
    assert [f["form"] for f in both["filings"]] == ["10-K/A", "10-K", "10-K"]
    only = await call_ok(
        toolset, "search_sec_filings", company_identifier="TSLA", filing_type="10-K/A"
    )
    assert {f["form"] for f in only["filings"]} == {"10-K/A"}
    assert len(only["filings"]) == 5  # four recent, one on the older page


async def test_8k_filings_list_their_items(toolset: Toolset) -> None:
    result = await call_ok(
        toolset, "search_sec_filings", company_identifier="NVDA", filing_type="8-K", limit=20
    )
    assert result["filings"] and all(f["form"] == "8-K" for f in result["filings"])
    assert any("5.02" in f.get("items", "") for f in result["filings"])


async def test_ambiguous_name_lists_candidates(toolset: Toolset) -> None:
    message = await call_error(toolset, "search_sec_filings", company_identifier="Micro")
    assert "matches" in message and "MICROSOFT CORP (MSFT; CIK 789019)" in message
    assert "ticker or CIK" in message


async def test_unknown_company(toolset: Toolset) -> None:
    message = await call_error(
        toolset, "search_sec_filings", company_identifier="Zyxwv Nonexistent Holdings"
    )
    assert "No company matches" in message


async def test_filer_without_ticker_by_cik(toolset: Toolset) -> None:
    result = await call_ok(
        toolset, "search_sec_filings", company_identifier="315090", filing_type="4", limit=2
    )
    assert result["company"]["name"] == "BUFFETT WARREN E"
    assert [f["form"] for f in result["filings"]] == ["4", "4"]


async def test_dates_out_of_order_are_invalid_input(toolset: Toolset) -> None:
    outcome = await call(
        toolset,
        "search_sec_filings",
        company_identifier="AAPL",
        date_after="2020-01-01",
        date_before="2019-01-01",
    )
    assert outcome.error_type == "invalid_input"
    assert "date_after is later than date_before" in outcome.content


async def test_unknown_cik_offline_names_the_snapshot(offline: Toolset) -> None:
    message = await call_error(offline, "search_sec_filings", company_identifier="19617")
    assert "No EDGAR filer with CIK 19617" in message
    assert "offline EDGAR snapshot" in message and "Apple Inc. (CIK 320193)" in message


async def test_unknown_cik_live_is_no_such_key(live: Toolset, fake_sec: FakeSecHosts) -> None:
    message = await call_error(live, "search_sec_filings", company_identifier="CIK0000000001")
    assert "No EDGAR filer with CIK 1" in message and "HTTP 404" in message
    assert fake_sec.fake.paths("data") == ["/submissions/CIK0000000001.json"]
