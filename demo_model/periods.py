"""The one gate every single-period figure goes through: the period a question asks for,
placed on the company's own fiscal calendar (the end dates of its annual values), and the
value of exactly that period, or none. A figure of another period cannot come out of here:
what does not match is a miss, said as such, never the nearest value.

Fiscal years are named by the year they end in (Apple's FY2023 ended 2023-09-30, NVIDIA's
FY2025 on 2025-01-26); a balance-sheet value "at the end of FY2023" is the one dated on
that year's last day; a calendar year matches only a fiscal year that runs January to
December."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from demo_model.fmt import fiscal_year
from demo_model.quarters import NamedQuarter, fiscal_quarter, fiscal_years, place
from demo_model.spans import Span

__all__ = ["CALENDAR", "Gated", "asked_text", "gate", "target_year", "wants_calendar"]

Row = dict[str, Any]
CALENDAR = "us-gaap:NetIncomeLoss"
"""Asked beside a figure when its period needs placing: the end dates of the company's
fiscal years are the periods of its annual net income."""
STALE_DAYS = 730
"""A "last fiscal year" older than this (from today) is not the last one: the data stops
early (Tesla's figures in the offline snapshot end in 2022)."""


@dataclass(frozen=True)
class Gated:
    """The value of the period asked (`row`), or why there is none (`miss`)."""

    kind: str
    """annual, quarterly or instant."""
    row: Row | None
    miss: str = ""
    year: int | None = None
    """The fiscal year the question asked for, once placed."""
    label: str = ""
    """A named quarter's period in words ("fiscal Q2 FY2025, the quarter from ... to ...")."""
    quarter: NamedQuarter | None = None
    """The fiscal quarter asked for, once placed (named, or counted back from the latest)."""


def wants_calendar(span: Span, instant: bool) -> bool:
    """The company's fiscal calendar is needed for the last fiscal year (which one it is
    is the company's, not one figure's: a figure no longer reported would otherwise make
    an older year "the last"), and for a balance-sheet value of a year (its last day)."""
    if span.named or (span.quarter and span.back):
        return True  # its fiscal quarters are counted from its fiscal years' starts
    if span.quarter or span.unclear:
        return False
    return bool(span.latest_year) or (instant and bool(span.fiscal_year))


def target_year(span: Span, annual: list[Row], today: dt.date | None = None) -> int | None:
    """The fiscal year asked for: named, or counted back from the latest reported one."""
    if span.fiscal_year:
        return span.fiscal_year - span.back
    if span.latest_year and annual:
        latest = annual[0]
        if today and (today - dt.date.fromisoformat(latest["end"])).days > STALE_DAYS:
            return None
        return fiscal_year(latest) - span.back
    return None


def asked_text(span: Span, year: int | None) -> str:
    """The period asked for, in words (for the answer's first sentence and its misses)."""
    if span.named:
        return span.named.asked()
    if span.quarter:
        return (
            "the latest quarter" if not span.back else f"{span.back} quarter(s) before the latest"
        )
    if year:
        return f"fiscal year {year}"
    if span.calendar_year:
        return f"calendar year {span.calendar_year}"
    if span.latest_year:
        return "the last fiscal year"
    return "the latest period"


def gate(
    span: Span,
    kind: str,
    rows: list[Row],
    calendar: list[Row] | None = None,
    today: dt.date | None = None,
    quarters: list[Row] | None = None,
) -> Gated:
    """The row of the period asked, among one series' rows of `kind` (newest first).
    `calendar`: the company's annual rows (for balance-sheet values of a fiscal year)."""
    if span.unclear:
        return Gated(kind, None, f"I didn't understand the period “{span.unclear}”")
    if span.quarter and kind == "instant" and span.named:
        return _quarter_end(span.named, rows, calendar or [], quarters or [])
    if span.quarter:
        return _quarter(span, kind, rows, calendar)
    if kind == "instant":
        return _instant(span, rows, calendar, today)
    if span.calendar_year and not span.fiscal_year:
        found = next((r for r in rows if _calendar_year(r) == span.calendar_year), None)
        miss = "" if found else _not_calendar(span.calendar_year, rows)
        return Gated(kind, found, miss)
    if not (span.fiscal_year or span.latest_year):
        return Gated(kind, rows[0] if rows else None, "" if rows else "no value")
    year = target_year(span, calendar if span.latest_year and calendar else rows, today)
    if year is None:
        return Gated(kind, None, _stale(calendar or rows))
    found = next((r for r in rows if fiscal_year(r) == year), None)
    return Gated(kind, found, "" if found else f"no value for fiscal year {year}", year)


def _quarter(span: Span, kind: str, rows: list[Row], calendar: list[Row] | None) -> Gated:
    """The latest quarter's value (a balance: the latest 10-Q's), or the quarter named."""
    if kind == "annual":
        return Gated(kind, None, "a quarter is not an annual value")
    if span.named is None:
        found = next((r for r in rows if str(r.get("form")).startswith("10-Q")), None)
        found = found or (rows[0] if rows and kind != "instant" else None)
        if found is not None and span.back:
            return _back(span, kind, found, rows, calendar)
        return Gated(kind, found, "" if found else "no quarterly value")
    placed = place(span.named, rows, calendar or [])
    return Gated(kind, placed.row, placed.miss, label=placed.label, quarter=span.named)


def _quarter_end(
    named: NamedQuarter, rows: list[Row], annual: list[Row], quarters: list[Row]
) -> Gated:
    """A balance at a named quarter's last day (the company's quarters placed on its
    calendar; a fiscal Q4 ends with the year)."""
    placed = place(named, quarters, annual)
    end, label = (placed.row["end"], placed.label) if placed.row else (None, "")
    if end is None and named.kind == "fiscal" and named.number == 4:
        end = next((r["end"] for r in annual if fiscal_year(r) == named.year), None)
        label = f"fiscal Q4 FY{named.year}, the end of the fiscal year"
    if end is None:
        return Gated("instant", None, placed.miss or f"no quarter placed for {named.asked()}")
    found = next((r for r in rows if r["end"] == end), None)
    miss = "" if found else f"no value at the end of {named.asked()} ({end})"
    return Gated("instant", found, miss, label=f"at {end}, the end of {label}", quarter=named)


def _back(span: Span, kind: str, latest: Row, rows: list[Row], calendar: list[Row] | None) -> Gated:
    """A quarter counted back from the latest one, named on the fiscal calendar."""
    placed = fiscal_quarter(latest, fiscal_years(calendar or []))
    if placed is None or kind == "instant":
        return Gated(kind, None, "its fiscal calendar did not place the latest quarter")
    fy, number = placed
    number -= span.back
    while number < 1:
        fy, number = fy - 1, number + 4
    named = NamedQuarter("fiscal", number, fy, "")
    found = place(named, rows, calendar or [])
    return Gated(kind, found.row, found.miss, label=found.label, quarter=named)


def _instant(
    span: Span, rows: list[Row], calendar: list[Row] | None, today: dt.date | None
) -> Gated:
    if span.calendar_year and not span.fiscal_year:
        y = span.calendar_year
        found = next((r for r in rows if r["end"][:4] == str(y) and r["end"][5:] >= "12-24"), None)
        return Gated("instant", found, "" if found else f"no value at the end of calendar {y}")
    if not (span.fiscal_year or span.latest_year):
        return Gated("instant", rows[0] if rows else None, "" if rows else "no value")
    if not calendar:
        return Gated("instant", None, "its fiscal calendar did not come back")
    year = target_year(span, calendar, today)
    if year is None:
        return Gated("instant", None, _stale(calendar))
    year_end = next((r["end"] for r in calendar if fiscal_year(r) == year), None)
    if year_end is None:
        return Gated("instant", None, f"no fiscal year {year} in its reported years", year)
    found = next((r for r in rows if r["end"] == year_end), None)
    miss = "" if found else f"no value at the end of fiscal year {year} ({year_end})"
    return Gated("instant", found, miss, year)


def _calendar_year(row: Row) -> int | None:
    """The calendar year a fiscal year is, when it runs January to December."""
    start, end = str(row.get("start") or ""), str(row["end"])
    if start[5:] <= "01-07" and end[5:] >= "12-24" and start[:4] == end[:4]:
        return int(end[:4])
    return None


def _not_calendar(year: int, rows: list[Row]) -> str:
    if rows and _calendar_year(rows[0]) is None:
        return (
            f"its fiscal year does not follow the calendar (FY{fiscal_year(rows[0])} ended "
            f"{rows[0]['end']}), so there is no calendar {year} value; ask for a fiscal year"
        )
    return f"no value for calendar {year}"


def _stale(rows: list[Row]) -> str:
    if not rows:
        return "the data has no annual values"
    latest = rows[0]
    return (
        f"its reported figures stop early: the latest annual value here is "
        f"FY{fiscal_year(latest)} (ended {latest['end']}), not the last fiscal year"
    )
