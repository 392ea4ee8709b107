"""get_sec_company_facts and get_sec_xbrl_frames, offline and against the fake SEC."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from tests.tools.conftest import FakeSecHosts, call_error, call_ok
from tools import Toolset
from tools.sec.offline import OfflineSec
from tools.sec.source import SecNotFound


@pytest.fixture(params=["offline", "live"])
def toolset(request: pytest.FixtureRequest) -> Toolset:
    found: Toolset = request.getfixturevalue(request.param)
    return found


async def test_summary_finds_the_revenue_concept_in_use(toolset: Toolset) -> None:
    result = await call_ok(toolset, "get_sec_company_facts", company_identifier="AAPL")
    assert result["company"] == {"name": "Apple Inc.", "cik": 320193}
    metrics = result["metrics"]
    revenue = metrics["revenue"]
    # Apple reported SalesRevenueNet until 2018, Revenues briefly; the current concept wins.
    assert revenue["concept"] == "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    assert revenue["unit"] == "USD"
    latest, prior = revenue["annual"]
    assert (latest["start"], latest["end"], latest["value"]) == (
        "2024-09-29",
        "2025-09-27",
        416161000000,
    )
    assert (prior["end"], prior["value"]) == ("2024-09-28", 391035000000)
    assert revenue["latest_quarter"]["end"] == "2025-12-27"
    assert metrics["eps_diluted"]["unit"] == "USD/shares"
    assert metrics["total_assets"]["latest"][0]["end"] >= "2025-12-27"
    assert "start" not in metrics["total_assets"]["latest"][0]
    assert metrics["shares_outstanding"]["concept"] == "dei:EntityCommonStockSharesOutstanding"
    for name in ("net_income", "total_liabilities", "stockholders_equity", "cash_and_equivalents"):
        assert name in metrics


async def test_concept_history_one_value_per_period(toolset: Toolset) -> None:
    result = await call_ok(
        toolset, "get_sec_company_facts", company_identifier="NVDA", concept="Revenues", limit=40
    )
    assert result["concept"] == "us-gaap:Revenues"
    usd = result["units"]["USD"]
    for kind, days in (("annual", (340, 380)), ("quarterly", (80, 100))):
        periods = [(r["start"], r["end"]) for r in usd[kind]]
        assert len(periods) == len(set(periods)), "one value per period"
        assert [p[1] for p in periods] == sorted((p[1] for p in periods), reverse=True)
        assert all(days[0] <= _days(r) <= days[1] for r in usd[kind])
    assert usd["annual"][0]["value"] == 215938000000


async def test_latest_filing_wins_for_restated_periods(toolset: Toolset) -> None:
    result = await call_ok(
        toolset,
        "get_sec_company_facts",
        company_identifier="AAPL",
        concept="NetIncomeLoss",
        limit=80,
    )
    fy2008 = next(r for r in result["units"]["USD"]["annual"] if r["end"] == "2008-09-27")
    # First filed as 4,834 M in 2009, restated to 6,119 M; the latest filing (2010-10-27) wins.
    assert (fy2008["value"], fy2008["filed"]) == (6119000000, "2010-10-27")
    assert (fy2008["form"], fy2008["accession_number"]) == ("10-K", "0001193125-10-238044")
    assert fy2008["originally_reported"]["value"] == 4834000000
    assert fy2008["restated_in"]["form"] == "10-K/A"
    assert "last reported" in result["rule"]


async def test_as_reported_gives_the_original_value(toolset: Toolset) -> None:
    result = await call_ok(
        toolset,
        "get_sec_company_facts",
        company_identifier="AAPL",
        concept="net_income",
        limit=80,
        as_reported=True,
    )
    fy2008 = next(r for r in result["units"]["USD"]["annual"] if r["end"] == "2008-09-27")
    assert (fy2008["value"], fy2008["filed"], fy2008["form"]) == (4834000000, "2009-10-27", "10-K")
    assert fy2008["restated_in"] == {
        "value": 6119000000,
        "form": "10-K/A",
        "accession_number": "0001193125-10-012091",
        "filed": "2010-01-25",
    }
    assert "first reported" in result["rule"]
    summary = await call_ok(
        toolset, "get_sec_company_facts", company_identifier="GOOGL", as_reported=True
    )
    assert "first reported" in summary["rule"]
    assert all(r["form"] == "10-K" for r in summary["metrics"]["operating_income"]["annual"])


def test_as_reported_is_in_the_schema(offline: Toolset) -> None:
    schema = next(t for t in offline.registry.definitions() if t["name"] == "get_sec_company_facts")
    assert schema["input_schema"]["properties"]["as_reported"]["type"] == "boolean"
    assert "restated" in schema["description"] and "8-K" in schema["description"]


async def test_instant_concept_and_metric_names(toolset: Toolset) -> None:
    result = await call_ok(
        toolset, "get_sec_company_facts", company_identifier="TSLA", concept="total_assets", limit=3
    )
    assert result["concept"] == "us-gaap:Assets"
    assert list(result["units"]["USD"]) == ["instant"]
    assert len(result["units"]["USD"]["instant"]) == 3
    dei = await call_ok(
        toolset,
        "get_sec_company_facts",
        company_identifier="MRVL",
        concept="dei:EntityCommonStockSharesOutstanding",
    )
    assert list(dei["units"]) == ["shares"]


async def test_unknown_concept_suggests_close_ones(toolset: Toolset) -> None:
    message = await call_error(
        toolset, "get_sec_company_facts", company_identifier="NVDA", concept="DeferredRev"
    )
    assert "reports no 'DeferredRev'" in message
    assert "us-gaap:DeferredRevenueCurrent" in message


async def test_company_without_facts(toolset: Toolset) -> None:
    message = await call_error(toolset, "get_sec_company_facts", company_identifier="MSFT")
    assert "No XBRL company facts for CIK 789019" in message


async def test_frames_instant_period_across_companies(toolset: Toolset) -> None:
    result = await call_ok(toolset, "get_sec_xbrl_frames", concept="Assets", period="CY2023Q4I")
    rows = result["data"]
    assert result["total"] == len(rows) == 5
    assert [r["value"] for r in rows] == sorted((r["value"] for r in rows), reverse=True)
    apple = next(r for r in rows if r["cik"] == 320193)
    assert (apple["value"], apple["end"]) == (353514000000, "2023-12-30")
    assert "start" not in apple


async def test_frames_duration_periods(toolset: Toolset) -> None:
    year = await call_ok(
        toolset, "get_sec_xbrl_frames", concept="us-gaap:NetIncomeLoss", period="CY2023"
    )
    assert year["concept"] == "NetIncomeLoss" and year["data"]
    assert all(340 <= _days(r) <= 380 for r in year["data"])
    quarter = await call_ok(
        toolset, "get_sec_xbrl_frames", concept="Revenues", period="cy2024q2", limit=2
    )
    assert quarter["period"] == "CY2024Q2" and quarter["count"] == 2
    assert all(80 <= _days(r) <= 100 for r in quarter["data"])
    eps = await call_ok(
        toolset,
        "get_sec_xbrl_frames",
        concept="EarningsPerShareDiluted",
        period="CY2023",
        unit="USD/shares",
    )
    assert eps["unit"] == "USD/shares" and eps["data"]


async def test_offline_frames_follow_the_rule_and_name_the_filing(offline: Toolset) -> None:
    # EDGAR framed Alphabet's 2015 excess tax benefit from a later 8-K (0); the offline
    # derivation keeps the 10-K's value and says which filing it is.
    result = await call_ok(
        offline,
        "get_sec_xbrl_frames",
        concept="ExcessTaxBenefitFromShareBasedCompensationFinancingActivities",
        period="CY2015",
    )
    alphabet = next(r for r in result["data"] if r["cik"] == 1652044)
    assert (alphabet["value"], alphabet["form"], alphabet["filed"]) == (
        548000000,
        "10-K",
        "2016-02-11",
    )
    restated = await call_ok(
        offline, "get_sec_xbrl_frames", concept="NetIncomeLoss", period="CY2008"
    )
    apple = next(r for r in restated["data"] if r["cik"] == 320193)
    assert (apple["value"], apple["form"]) == (6119000000, "10-K")
    assert apple["originally_reported"]["value"] == 4834000000


async def test_offline_frames_refuse_a_period_edgar_has_not() -> None:
    with pytest.raises(SecNotFound, match="Not a frames period"):
        await OfflineSec().get_json("data", "/api/xbrl/frames/us-gaap/Assets/USD/CY2023Q5.json")


async def test_live_frames_are_edgars_pick(live: Toolset) -> None:
    result = await call_ok(
        live,
        "get_sec_xbrl_frames",
        concept="ExcessTaxBenefitFromShareBasedCompensationFinancingActivities",
        period="CY2015",
    )
    alphabet = next(r for r in result["data"] if r["cik"] == 1652044)
    assert alphabet["value"] == 0 and "form" not in alphabet


async def test_frames_explain_instant_versus_duration(toolset: Toolset) -> None:
    message = await call_error(toolset, "get_sec_xbrl_frames", concept="Assets", period="CY2023")
    assert "CY2023Q4I" in message
    message = await call_error(toolset, "get_sec_xbrl_frames", concept="Assets", period="2023")
    assert "is not CY2023, CY2023Q1 or CY2023Q4I" in message


async def test_live_frames_use_the_frames_api(live: Toolset, fake_sec: FakeSecHosts) -> None:
    await call_ok(
        live,
        "get_sec_xbrl_frames",
        concept="EarningsPerShareBasic",
        period="CY2022",
        unit="USD/shares",
    )
    assert fake_sec.fake.paths("data") == [
        "/api/xbrl/frames/us-gaap/EarningsPerShareBasic/USD-per-shares/CY2022.json"
    ]


def _days(row: dict[str, Any]) -> int:
    return (date.fromisoformat(row["end"]) - date.fromisoformat(row["start"])).days
