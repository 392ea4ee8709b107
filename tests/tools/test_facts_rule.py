"""Which filing's value a period gets (tools/sec/facts.py, tools/sec/frames.py), branch by
branch: real cases from the recorded company facts where EDGAR has one, small made-up
facts (said so) where it has none or a boundary needs pinning."""

from __future__ import annotations

import datetime as dt
import gzip
from functools import cache
from typing import Any

import orjson
import pytest

from tools.sec.facts import (
    find_concept,
    history,
    is_periodic,
    metric_concept,
    period_kind,
    reported,
    restatement,
    series,
    summarize,
)
from tools.sec.fixtures import FIXTURES_DIR
from tools.sec.frames import (
    calendar_period,
    company_frame_row,
    frame_from_facts,
    misfit,
    period_bounds,
)

APPLE, ALPHABET, TESLA, NVIDIA = 320193, 1652044, 1318605, 1045810


@cache
def _company(cik: int) -> dict[str, Any]:
    path = FIXTURES_DIR / f"data.sec.gov/api/xbrl/companyfacts/CIK{cik:010d}.json.gz"
    data: dict[str, Any] = orjson.loads(gzip.decompress(path.read_bytes()))
    return data


def _facts(cik: int, concept: str, unit: str = "USD") -> list[dict[str, Any]]:
    taxonomy, _, name = concept.rpartition(":")
    found: list[dict[str, Any]] = _company(cik)["facts"][taxonomy or "us-gaap"][name]["units"][unit]
    return found


def _period(facts: list[dict[str, Any]], start: str | None, end: str) -> list[dict[str, Any]]:
    return [f for f in facts if f.get("start") == start and f["end"] == end]


def _fact(val: float, filed: str, accn: str, form: str = "10-K", **more: Any) -> dict[str, Any]:
    """A made-up fact (for branches the recorded facts have no case of)."""
    return {"end": "2023-12-31", "val": val, "accn": accn, "form": form, "filed": filed, **more}


def _filing(value: float, form: str, accn: str, filed: str) -> dict[str, Any]:
    return {"value": value, "form": form, "accession_number": accn, "filed": filed}


# --- the forms a value may come from ---------------------------------------------------


@pytest.mark.parametrize(
    "form", ["10-K", "10-K/A", "10-Q", "10-Q/A", "20-F", "20-F/A", "40-F", "10-KT", "10-QT/A"]
)
def test_periodic_reports_and_their_amendments(form: str) -> None:
    assert is_periodic(form)


@pytest.mark.parametrize("form", ["8-K", "8-K/A", "DEF 14A", "424B5", "S-1", "10-K405", "", None])
def test_other_forms_are_not_periodic(form: str | None) -> None:
    assert not is_periodic(form)


# --- period kinds: a year is a full year, never a quarter or a year-to-date -------------


@pytest.mark.parametrize(
    ("days", "kind"),
    [
        (79, "year_to_date"),
        (80, "quarterly"),
        (91, "quarterly"),
        (100, "quarterly"),
        (101, "year_to_date"),
        (181, "year_to_date"),
        (349, "year_to_date"),
        (350, "annual"),
        (364, "annual"),
        (371, "annual"),
        (380, "annual"),
        (381, "year_to_date"),
    ],
)
def test_period_kind_by_length(days: int, kind: str) -> None:
    # Made-up periods at each boundary; real years are 364 or 371 days (52/53 weeks).
    end = dt.date(2024, 6, 30)
    fact = {"start": str(end - dt.timedelta(days=days)), "end": str(end)}
    assert period_kind(fact) == kind
    assert period_kind({"end": str(end)}) == "instant"


def test_a_quarter_inside_a_year_and_a_year_to_date_are_not_the_year() -> None:
    # Tesla's 2012: the full year, its fourth quarter (same end) and, in 2011, a half year.
    income = _facts(TESLA, "NetIncomeLoss")
    annual = {(r["start"], r["end"]) for r in series(income, "annual")}
    quarterly = {(r["start"], r["end"]) for r in series(income, "quarterly")}
    assert ("2012-01-01", "2012-12-31") in annual
    assert ("2012-10-01", "2012-12-31") in quarterly
    assert ("2012-10-01", "2012-12-31") not in annual
    assert ("2012-01-01", "2012-12-31") not in quarterly
    half = ("2011-01-01", "2011-06-30")
    assert _period(income, *half), "the fixture has the year-to-date value"
    assert half not in annual | quarterly
    assert half in {(r["start"], r["end"]) for r in series(income, "year_to_date")}


# --- which report of a period wins --------------------------------------------------------


def test_an_amendment_restates_and_the_last_report_wins() -> None:
    # Apple's FY2008 net income: 4,834 M in the 10-K, 6,119 M in the 10-K/A (a change of
    # revenue recognition), repeated in the next 10-K as a comparative.
    fy2008 = _period(_facts(APPLE, "NetIncomeLoss"), "2007-09-30", "2008-09-27")
    row = reported(fy2008)
    assert row == {
        "start": "2007-09-30",
        "end": "2008-09-27",
        **_filing(6119000000, "10-K", "0001193125-10-238044", "2010-10-27"),
        "frame": "CY2008",
        "originally_reported": _filing(4834000000, "10-K", "0001193125-09-214859", "2009-10-27"),
        "restated_in": _filing(6119000000, "10-K/A", "0001193125-10-012091", "2010-01-25"),
    }
    original = reported(fy2008, as_reported=True)
    assert original["value"] == 4834000000 and original["form"] == "10-K"
    assert "frame" not in original
    assert original["restated_in"] == row["restated_in"]
    assert original["originally_reported"] == row["originally_reported"]


def test_an_amendment_is_the_last_report() -> None:
    # Apple's current assets at FY2008's end: last reported in the 10-K/A itself.
    at_end = _period(_facts(APPLE, "AssetsCurrent"), None, "2008-09-27")
    row = reported(at_end)
    assert (row["value"], row["form"], row["filed"]) == (30006000000, "10-K/A", "2010-01-25")
    assert row["originally_reported"]["form"] == "10-Q"  # a comparative in a 10-Q came first
    assert row["restated_in"]["accession_number"] == row["accession_number"]


def test_a_restated_comparative_names_the_filing_that_changed_it() -> None:
    # Alphabet's 2018 operating income: 26,321 M in the 2018 10-K, 27,524 M in the 2019 10-K
    # (a recast), repeated in the 2020 10-K: the value comes from the last one, the change
    # from the 2019 one.
    year = _period(_facts(ALPHABET, "OperatingIncomeLoss"), "2018-01-01", "2018-12-31")
    row = reported(year)
    assert (row["value"], row["filed"]) == (27524000000, "2021-02-03")
    assert row["originally_reported"] == _filing(
        26321000000, "10-K", "0001652044-19-000004", "2019-02-05"
    )
    assert row["restated_in"]["filed"] == "2020-02-04"
    assert reported(year, as_reported=True)["value"] == 26321000000


def test_an_8k_never_beats_a_periodic_report() -> None:
    # Alphabet's 8-K of 2016-05-03 recast 2015's excess tax benefit to 0; EDGAR's frame
    # takes that 8-K (the last filed), the rule keeps the 10-K's 548 M.
    concept = "ExcessTaxBenefitFromShareBasedCompensationFinancingActivities"
    year = _period(_facts(ALPHABET, concept), "2015-01-01", "2015-12-31")
    assert max(year, key=lambda f: f["filed"])["form"] == "8-K"
    row = reported(year)
    assert (row["value"], row["form"], row["filed"]) == (548000000, "10-K", "2016-02-11")
    assert "originally_reported" not in row and "frame" not in row
    assert reported(year, as_reported=True)["value"] == 548000000


def test_a_period_only_an_8k_reports_comes_from_the_8k() -> None:
    # Apple's other comprehensive income for FY2010 is in an 8-K (a recast) and nowhere else.
    concept = "OtherComprehensiveIncomeLossNetOfTax"
    only = _period(_facts(APPLE, concept), "2009-09-27", "2010-09-25")
    assert len(only) == 1
    row = reported(only)
    assert (row["value"], row["form"], row["frame"]) == (-123000000, "8-K", "CY2010")
    assert reported(only, as_reported=True) == row


def test_a_period_reported_once() -> None:
    facts = _facts(APPLE, "NetIncomeLoss")
    once = [f for f in facts if len(_period(facts, f.get("start"), f["end"])) == 1]
    assert once, "Apple has periods reported in one filing only"
    fact = once[0]
    row = reported([fact])
    assert row["value"] == fact["val"] and row["accession_number"] == fact["accn"]
    assert "originally_reported" not in row and "restated_in" not in row


def test_a_same_day_tie_goes_to_the_later_accession_in_any_order() -> None:
    # Apple filed a 10-Q and a 10-K/A on 2010-01-25 (same values); made-up values show the
    # order decides, not the input order.
    first = _fact(1, "2010-01-25", "0001193125-10-012085", "10-Q")
    second = _fact(2, "2010-01-25", "0001193125-10-012091", "10-K/A")
    for facts in ([first, second], [second, first]):
        assert reported(facts)["value"] == 2
        assert reported(facts, as_reported=True)["value"] == 1
        assert [f["val"] for f in history(facts)] == [1, 2]


def test_history_orders_by_filing_date_before_accession() -> None:
    # Made up: an older filing with a larger accession number (another filer agent).
    old = _fact(1, "2020-01-01", "0009999999-20-000001")
    new = _fact(2, "2021-01-01", "0000000001-21-000001")
    assert [f["val"] for f in history([new, old])] == [1, 2]
    assert reported([new, old])["value"] == 2


def test_restatement_is_the_last_change_and_a_return_is_none() -> None:
    # Made-up sequences of values across filings.
    def facts(*values: int) -> list[dict[str, Any]]:
        return [_fact(v, f"202{i}-01-01", f"a-{i}") for i, v in enumerate(values)]

    assert restatement(facts(1, 1)) is None
    assert restatement(facts(1, 2, 1)) is None  # back to the original
    first, changed = restatement(facts(1, 2, 3, 3)) or ({}, {})
    assert (first["val"], changed["val"], changed["accn"]) == (1, 3, "a-2")
    first, changed = restatement(facts(1, 1, 2)) or ({}, {})
    assert (first["accn"], changed["accn"]) == ("a-0", "a-2")


def test_series_one_value_per_period_newest_first() -> None:
    dividends = _facts(APPLE, "CommonStockDividendsPerShareDeclared", "USD/shares")
    rows = series(dividends, "quarterly", as_reported=True)
    periods = [(r["start"], r["end"]) for r in rows]
    assert len(periods) == len(set(periods))
    assert periods == sorted(periods, key=lambda p: (p[1], p[0]), reverse=True)
    # Q1 FY2013: 2.65 a share as reported, 0.38 after the 7-for-1 split (the 8-K of 2015
    # repeats 0.38 and is not the source).
    q1 = next(r for r in rows if r["start"] == "2012-09-30")
    assert (q1["value"], q1["restated_in"]["value"]) == (2.65, 0.38)
    latest = next(r for r in series(dividends, "quarterly") if r["start"] == "2012-09-30")
    assert (latest["value"], latest["form"], latest["filed"]) == (0.38, "10-K", "2014-10-27")
    assert latest["restated_in"]["filed"] == "2014-07-23"


def test_series_puts_the_same_end_in_start_order() -> None:
    # Made up: two periods ending the same day; the later start (the shorter one) first.
    facts = [
        {**_fact(1, "2024-02-01", "a"), "start": "2023-01-01"},
        {**_fact(2, "2024-02-01", "b"), "start": "2023-01-02"},
    ]
    assert [r["value"] for r in series(facts, "annual")] == [2, 1]
    # and by end first: a period that ends later comes first even if it starts earlier
    longer = {**_fact(3, "2024-02-01", "c"), "start": "2022-12-30", "end": "2024-01-02"}
    assert [r["value"] for r in series([*facts, longer], "annual")] == [3, 2, 1]


def test_summary_as_reported() -> None:
    apple = _company(APPLE)
    latest = summarize(apple)["net_income"]["annual"]
    original = summarize(apple, as_reported=True)["net_income"]["annual"]
    assert [r["end"] for r in latest] == [r["end"] for r in original]
    assert all(r["form"] == "10-K" for r in latest)
    quarter = summarize(apple, as_reported=True)["revenue"]["latest_quarter"]
    assert quarter["form"] == "10-Q" and 80 <= _days(quarter) <= 100


# --- frames: the calendar period a fact fits ----------------------------------------------


@pytest.mark.parametrize(
    ("period", "bounds"),
    [
        ("CY2023", ("annual", "2023-01-01", "2023-12-31")),
        ("CY2024Q1", ("quarterly", "2024-01-01", "2024-03-31")),
        ("CY2023Q2", ("quarterly", "2023-04-01", "2023-06-30")),
        ("CY2023Q3I", ("instant", "2023-07-01", "2023-09-30")),
        ("CY2023Q4I", ("instant", "2023-10-01", "2023-12-31")),
    ],
)
def test_period_bounds(period: str, bounds: tuple[str, str, str]) -> None:
    kind, first, last = period_bounds(period)
    assert (kind, str(first), str(last)) == bounds


@pytest.mark.parametrize("period", ["2023", "CY2023Q5", "CY23", "CY2023I", "cy2023"])
def test_period_bounds_refuses_other_names(period: str) -> None:
    with pytest.raises(ValueError, match="not a calendar period"):
        period_bounds(period)


@pytest.mark.parametrize(
    ("start", "end", "frame"),
    [
        ("2022-09-25", "2023-09-30", "CY2023"),  # Apple's fiscal 2023
        ("2023-01-30", "2024-01-28", "CY2023"),  # NVIDIA's fiscal 2024
        ("2022-02-01", "2023-01-29", "CY2022"),
        ("2023-01-01", "2023-12-31", "CY2023"),
        ("2022-08-01", "2023-07-31", "CY2023"),  # the middle, not the first third
        ("2022-06-01", "2023-05-31", "CY2022"),
        ("2023-02-20", "2023-05-20", "CY2023Q2"),
        ("2023-07-02", "2023-09-30", "CY2023Q3"),  # Apple's fiscal Q4 2023
        ("2023-10-30", "2024-01-28", "CY2023Q4"),  # NVIDIA's fiscal Q4 2024
        ("2023-01-01", "2023-03-31", "CY2023Q1"),
        ("2023-04-01", "2023-06-30", "CY2023Q2"),
        ("2023-01-01", "2023-06-30", None),  # a half year fits no frame
        (None, "2023-12-30", "CY2023Q4I"),
        (None, "2024-01-28", "CY2023Q4I"),  # nearer 12-31 than 03-31
        (None, "2023-02-15", "CY2023Q1I"),  # 44 days before 03-31, 46 after 12-31
        (None, "2013-11-15", "CY2013Q4I"),  # 46 days either way: the later, as EDGAR
        (None, "2023-05-16", "CY2023Q2I"),
        (None, "2023-05-15", "CY2023Q1I"),  # 45 days after 03-31, 46 before 06-30
        (None, "2023-08-15", "CY2023Q3I"),
        (None, "2023-09-30", "CY2023Q3I"),
        (None, "2023-03-31", "CY2023Q1I"),
    ],
)
def test_calendar_period(start: str | None, end: str, frame: str | None) -> None:
    fact = {"end": end} if start is None else {"start": start, "end": end}
    assert calendar_period(fact) == frame


def test_calendar_periods_match_edgars_frames_for_periodic_reports() -> None:
    # Wherever EDGAR framed a 10-K/10-Q fact, the derivation picks that same fact.
    checked = 0
    for cik in (APPLE, NVIDIA, ALPHABET):
        for concept in ("NetIncomeLoss", "Assets", "OperatingIncomeLoss"):
            facts = _facts(cik, concept)
            for fact in facts:
                if fact.get("frame") and is_periodic(fact["form"]):
                    row = company_frame_row(facts, fact["frame"])
                    assert row is not None and row["accession_number"] == fact["accn"], fact
                    assert (row.get("start"), row["end"]) == (fact.get("start"), fact["end"])
                    checked += 1
    assert checked > 300


def test_a_frame_skips_the_8k_edgar_framed() -> None:
    concept = "ExcessTaxBenefitFromShareBasedCompensationFinancingActivities"
    facts = _facts(ALPHABET, concept)
    framed = next(f for f in facts if f.get("frame") == "CY2015")
    assert (framed["form"], framed["val"]) == ("8-K", 0)
    row = company_frame_row(facts, "CY2015")
    assert row is not None and (row["value"], row["form"]) == (548000000, "10-K")


def test_a_frame_takes_the_closest_fit_then_the_later_period() -> None:
    # Made up: periods whose middles all fall in 2023.
    calendar = {**_fact(1, "2024-02-01", "a"), "start": "2023-01-01"}
    shifted = {**_fact(2, "2024-03-01", "b"), "start": "2023-03-01", "end": "2024-02-20"}
    assert company_frame_row([shifted, calendar], "CY2023") == reported([calendar])
    early = {**_fact(3, "2024-02-01", "c"), "start": "2022-12-25", "end": "2023-12-24"}
    late = {**_fact(4, "2024-02-01", "d"), "start": "2023-01-08", "end": "2024-01-07"}
    assert misfit(("2022-12-25", "2023-12-24"), dt.date(2023, 1, 1), dt.date(2023, 12, 31)) == 14
    assert misfit(("2023-01-08", "2024-01-07"), dt.date(2023, 1, 1), dt.date(2023, 12, 31)) == 14
    for facts in ([early, late], [late, early]):
        row = company_frame_row(facts, "CY2023")
        assert row is not None and row["value"] == 4
    assert company_frame_row([early, late], "CY2022") is None
    inner = {**_fact(5, "2024-02-01", "e"), "start": "2023-01-03", "end": "2023-12-29"}
    outer = {**_fact(6, "2024-02-01", "f"), "start": "2022-12-30", "end": "2024-01-02"}
    same_end_early = {**_fact(7, "2024-02-01", "g"), "start": "2022-12-29"}
    same_end_late = {**_fact(8, "2024-02-01", "h"), "start": "2023-01-04"}
    for pair, winner in (([inner, outer], 6), ([same_end_early, same_end_late], 8)):
        for facts in (pair, pair[::-1]):
            row = company_frame_row(facts, "CY2023")
            assert row is not None and row["value"] == winner
    assert company_frame_row([early], "CY2023Q4") is None  # a year is not a quarter


def test_frame_rows_in_edgars_shape_name_the_filing() -> None:
    apple = _company(APPLE)
    income = apple["facts"]["us-gaap"]["NetIncomeLoss"]
    assert frame_from_facts(apple, income, "USD", "CY2008") == [
        {
            "accn": "0001193125-10-238044",
            "cik": APPLE,
            "entityName": "Apple Inc.",
            "start": "2007-09-30",
            "end": "2008-09-27",
            "val": 6119000000,
            "form": "10-K",
            "filed": "2010-10-27",
            "originally_reported": _filing(
                4834000000, "10-K", "0001193125-09-214859", "2009-10-27"
            ),
            "restated_in": _filing(6119000000, "10-K/A", "0001193125-10-012091", "2010-01-25"),
        }
    ]
    assert frame_from_facts(apple, income, "USD", "CY1990") == []
    assert frame_from_facts(apple, income, "EUR", "CY2008") == []
    eps = apple["facts"]["us-gaap"]["EarningsPerShareDiluted"]
    [row] = frame_from_facts(apple, eps, "USD-per-shares", "CY2023")
    assert (row["val"], row["end"], row["form"]) == (6.13, "2023-09-30", "10-K")
    assets = apple["facts"]["us-gaap"]["Assets"]
    [row] = frame_from_facts(apple, assets, "USD", "CY2023Q4I")
    assert (row["end"], row["val"], "start" in row) == ("2023-12-30", 353514000000, False)
    assert "originally_reported" not in row


def test_instant_frames_take_the_nearest_date() -> None:
    # Made up: two instants near the same quarter end.
    near = _fact(1, "2024-02-01", "a", end="2023-12-30")
    far = _fact(2, "2024-02-01", "b", end="2024-01-20")
    row = company_frame_row([far, near], "CY2023Q4I")
    assert row is not None and row["value"] == 1
    assert misfit(("", "2024-01-20"), dt.date(2023, 10, 1), dt.date(2023, 12, 31)) == 20


def _days(row: dict[str, Any]) -> int:
    return (dt.date.fromisoformat(row["end"]) - dt.date.fromisoformat(row["start"])).days


def test_summary_skips_what_a_company_lacks() -> None:
    # Made up: no taxonomy, an empty unit list beside a concept with values.
    assert summarize({}) == {}
    revenue = {"units": {"USD": [{"start": "2023-01-01", **_fact(7, "2024-02-01", "a")}]}}
    facts = {"facts": {"us-gaap": {"Revenues": {"units": {"USD": []}}, "SalesRevenueNet": revenue}}}
    summary = summarize(facts)
    assert summary["revenue"]["concept"] == "us-gaap:SalesRevenueNet"
    assert summary["revenue"]["annual"][0]["value"] == 7
    assert metric_concept(facts, "Revenue") == "us-gaap:SalesRevenueNet"
    assert metric_concept(facts, "net income") is None
    assert metric_concept(facts, "no such metric") is None
    # Apple: SalesRevenueNet until 2018, Revenues briefly, the ASC 606 concept since.
    expected = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    assert metric_concept(_company(APPLE), "revenue") == expected


def test_summary_of_made_up_facts_exactly() -> None:
    # Made up: net income in two units (the one with more facts is the company's), restated
    # for 2022; assets restated at 2022's end, three year ends.
    def year(val: int, end: str, filed: str, accn: str, form: str = "10-K") -> dict[str, Any]:
        start = f"{int(end[:4]) - 1}{end[4:]}"
        return {"start": start, **_fact(val, filed, accn, form, end=end)}

    income = [
        year(9, "2021-12-31", "2022-02-01", "a0"),
        year(10, "2022-12-31", "2023-02-01", "a1"),
        year(12, "2022-12-31", "2024-02-01", "a2"),
        year(20, "2023-12-31", "2024-02-01", "a2"),
        {**year(5, "2023-12-31", "2024-01-20", "q4", "10-Q"), "start": "2023-10-01"},
        {**year(6, "2023-12-31", "2024-04-20", "q5", "10-Q"), "start": "2023-10-01"},
    ]
    assets = [
        _fact(100, "2022-02-01", "a0", end="2021-12-31"),
        _fact(200, "2023-02-01", "a1", end="2022-12-31"),
        _fact(210, "2024-02-01", "a2", end="2022-12-31"),
        _fact(300, "2024-02-01", "a2", end="2023-12-31"),
    ]
    facts = {
        "facts": {
            "us-gaap": {
                "NetIncomeLoss": {
                    "label": "Net Income (Loss)",
                    "units": {"USD": income, "ZAR": [year(1, "2023-12-31", "2024-02-01", "z")]},
                },
                "Assets": {"label": "Assets", "units": {"USD": assets}},
            }
        }
    }
    latest = summarize(facts)
    assert latest["net_income"]["label"] == "Net Income (Loss)"
    assert latest["net_income"]["unit"] == "USD"
    assert [r["value"] for r in latest["net_income"]["annual"]] == [20, 12]
    assert latest["net_income"]["latest_quarter"]["value"] == 6
    assert summarize(facts, as_reported=True)["net_income"]["latest_quarter"]["value"] == 5
    assert metric_concept(facts, " Net Income ") == "us-gaap:NetIncomeLoss"
    assert [r["value"] for r in latest["total_assets"]["latest"]] == [300, 210]
    assert set(latest) == {"net_income", "total_assets"}
    original = summarize(facts, as_reported=True)
    assert [r["value"] for r in original["net_income"]["annual"]] == [20, 10]
    assert [r["value"] for r in original["total_assets"]["latest"]] == [300, 200]
    assert original["total_assets"]["latest"][1]["restated_in"]["value"] == 210


def test_find_concept_prefers_the_standard_taxonomies() -> None:
    # Made up: the same name in three taxonomies, and 25 names that contain "Rev".
    many: dict[str, Any] = {f"Rev{i:02d}": {} for i in range(25)}
    facts = {"facts": {"abc": {"Revenue": {"n": 1}}, "ifrs-full": {"Revenue": {"n": 2}}}}
    assert find_concept(facts, "revenue") == ("ifrs-full:Revenue", {"n": 2})
    assert find_concept(facts, "abc:REVENUE") == ("abc:Revenue", {"n": 1})
    facts["facts"]["us-gaap"] = many
    found = find_concept(facts, "rev")
    assert isinstance(found, list) and len(found) == 20
    assert found[:2] == ["us-gaap:Rev00", "us-gaap:Rev01"]
    facts["facts"]["us-gaap"] = {"Rev": {}}
    assert find_concept(facts, "ev") == ["us-gaap:Rev", "ifrs-full:Revenue", "abc:Revenue"]
    assert find_concept({}, "Revenue") == []
    assert find_concept(facts, "") == []
