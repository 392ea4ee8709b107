"""Derivations across periods: a change between two years stated before its inputs, a
ratio's change in percentage points, a fiscal Q4 as its year less three quarters, and a
change between two derived figures; each wrong one is caught."""

from __future__ import annotations

from gateway import figures
from tests.figures.support import APPLE_GROSS, APPLE_REVENUE, FACTS, conversation, facts_result
from tests.figures.test_check import APPLE, statuses

NET_INCOME = facts_result(
    320193,
    "Apple Inc.",
    "us-gaap:NetIncomeLoss",
    [
        ("2024-09-29", "2025-09-27", 112010000000),
        ("2024-09-29", "2024-12-28", 36330000000),
        ("2024-12-29", "2025-03-29", 24780000000),
        ("2025-03-30", "2025-06-28", 23434000000),
    ],
)
CASH_FLOW = facts_result(
    320193,
    "Apple Inc.",
    "us-gaap:NetCashProvidedByUsedInOperatingActivities",
    [("2024-09-29", "2025-09-27", 111482000000), ("2023-10-01", "2024-09-28", 118254000000)],
)
CAPEX = facts_result(
    320193,
    "Apple Inc.",
    "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment",
    [("2024-09-29", "2025-09-27", 12715000000), ("2023-10-01", "2024-09-28", 9447000000)],
)
AAPL = {"company_identifier": "AAPL"}
QUARTERS = conversation((FACTS, NET_INCOME, AAPL), (FACTS, APPLE_REVENUE, AAPL))
CASH = conversation((FACTS, CASH_FLOW, AAPL), (FACTS, CAPEX, AAPL), (FACTS, APPLE_GROSS, AAPL))


def test_a_change_stated_before_its_inputs() -> None:
    rise = (
        "Apple's revenue rose by {} from FY2024 to FY2025: from $391.0 billion to $416.2 billion."
    )
    assert statuses(rise.format("$25.1 billion"))["$25.1 billion"] == "derived"
    assert statuses(rise.format("$25.6 billion"))["$25.6 billion"] == "unsourced"
    fall = (
        "Apple's revenue fell by {} from FY2024 to FY2023, from $391.0 billion to $383.3 billion."
    )
    assert statuses(fall.format("$7.75 billion"))["$7.75 billion"] == "derived"
    assert statuses(fall.format("-$7.75 billion"))["-$7.75 billion"] == "derived"
    assert statuses(fall.format("$8.75 billion"))["$8.75 billion"] == "unsourced"
    report = figures.check(rise.format("$25.1 billion"), figures.build(APPLE))
    assert report.figures[0].formula == (
        "us-gaap:Revenues 2024-09-29/2025-09-27 − us-gaap:Revenues 2023-10-01/2024-09-28"
    )


def test_a_change_in_percentage_points() -> None:
    said = (
        "Apple's gross margin went from 46.2% to 46.9% from FY2024 to FY2025, {}: gross profit"
        " of $180.7 billion on revenue of $391.0 billion, then $195.2 billion on $416.2 billion."
    )
    for right in ("+0.7 percentage points", "+0.7 pp", "0.7 percentage point"):
        assert statuses(said.format(right))[right] == "derived", right
    for wrong in ("+1.7 percentage points", "+2.3 pp"):
        assert statuses(said.format(wrong))[wrong] == "unsourced", wrong
    report = figures.check(said.format("+0.7 percentage points"), figures.build(APPLE))
    points = next(c for c in report.figures if c.figure.text == "+0.7 percentage points")
    assert points.formula is not None and points.formula.endswith("(percentage points)")
    assert len(points.sources) == 4
    # A growth rate is never a change in points: 46.9 - 46.2 is no growth on anything here.
    assert statuses(said.format("+0.7%"))["+0.7%"] == "unsourced"


def test_a_fourth_quarter_computed_from_its_year() -> None:
    said = (
        "Apple's net income for fiscal Q4 FY2025 (the quarter ended 2025-09-27) was {}, "
        "computed as its FY2025 net income of $112.0 billion less $36.3 billion, $24.8 billion "
        "and $23.4 billion."
    )
    found = figures.check(said.format("$27.5 billion"), figures.build(QUARTERS)).figures[0]
    assert found.status == "derived" and len(found.sources) == 4
    assert found.formula is not None and found.formula.count("−") == 3
    assert [s["period"] for s in found.public()["sources"]] == [
        "2024-09-29/2025-09-27",
        "2024-09-29/2024-12-28",
        "2024-12-29/2025-03-29",
        "2025-03-30/2025-06-28",
    ]
    # The year less two quarters (a quarter forgotten) is wrong.
    assert statuses(said.format("$50.9 billion"), QUARTERS)["$50.9 billion"] == "unsourced"
    # Without a fourth quarter named, the same value is not taken for one.
    year = "Apple's net income in FY2025 was $27.5 billion; it was $112.0 billion for the year."
    assert statuses(year, QUARTERS)["$27.5 billion"] == "unsourced"


def test_a_change_between_two_derived_figures() -> None:
    said = (
        "Apple's free cash flow fell by {} from FY2024 to FY2025, from $108.8 billion to $98.8 "
        "billion: FY2024 operating cash flow of $118.3 billion less capital expenditures of "
        "$9.4 billion; FY2025 operating cash flow of $111.5 billion less capital expenditures "
        "of $12.7 billion."
    )
    found = statuses(said.format("$10.0 billion"), CASH)
    assert found["$108.8 billion"] == found["$98.8 billion"] == "derived"
    assert found["$10.0 billion"] == "derived"
    assert statuses(said.format("$11.0 billion"), CASH)["$11.0 billion"] == "unsourced"


def test_formulas_read_later_less_earlier() -> None:
    said = (
        "Apple's gross margin went from 46.2% to 46.9% from FY2024 to FY2025, +0.7 percentage "
        "points: gross profit of $180.7 billion on revenue of $391.0 billion, then $195.2 billion "
        "on $416.2 billion."
    )
    report = figures.check(said, figures.build(APPLE))
    points = next(c for c in report.figures if c.figure.text == "+0.7 percentage points")
    assert points.formula == (
        "us-gaap:GrossProfit 2024-09-29/2025-09-27 ÷ us-gaap:Revenues 2024-09-29/2025-09-27 − "
        "us-gaap:GrossProfit 2023-10-01/2024-09-28 ÷ us-gaap:Revenues 2023-10-01/2024-09-28 "
        "(percentage points)"
    )
