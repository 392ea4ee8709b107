"""A fourth fiscal quarter, which no filing reports on its own: the 10-K gives the year and
the 10-Qs the first three quarters, so the fourth is the year less those three, computed
only when all four reported values are there, and shown with each of them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from demo_model.fmt import fiscal_year, money
from demo_model.quarters import NamedQuarter, fiscal_quarter, fiscal_years
from demo_model.results import Series

__all__ = ["fourth_quarter"]

Row = dict[str, Any]
Cite = Callable[[Row, int | None], str]


def fourth_quarter(
    named: NamedQuarter | None, s: Series, calendar: list[Row] | None, label: str, cite: Cite
) -> str | None:
    """The answer for a fiscal Q4 of a flow in dollars, or None when it can't be computed."""
    if named is None or named.kind != "fiscal" or named.number != 4 or s.unit != "USD":
        return None
    year = next((r for r in s.annual if fiscal_year(r) == named.year), None)
    if year is None or s.instant:
        return None
    years = fiscal_years(calendar or s.annual)
    found: dict[int, Row] = {}
    for row in s.quarterly:
        placed = fiscal_quarter(row, years)
        if placed is not None and placed[0] == named.year:
            found.setdefault(placed[1], row)
    if sorted(found) != [1, 2, 3] or found[1].get("start") != year.get("start"):
        return None
    value = year["value"] - sum(found[n]["value"] for n in (1, 2, 3))
    three = "; ".join(
        f"{money(found[n]['value'])} (fiscal Q{n}, quarter ended {found[n]['end']}, per its "
        f"{cite(found[n], s.cik)})"
        for n in (1, 2, 3)
    )
    return (
        f"**{s.company}**'s {label} for fiscal Q4 FY{named.year} (the quarter ended "
        f"{year['end']}) was **{money(value)}**, computed as its FY"
        f"{named.year} {label} of {money(year['value'])} (FY{named.year}, ended {year['end']}, "
        f"per its {cite(year, s.cik)}) less its first three quarters: {three}. A 10-K reports "
        f"the year, not its fourth quarter, so this is the year less the three quarters its "
        f"10-Qs report. (XBRL concept `{s.concept}`.)"
    )
