"""Named quarters, placed on the company's own fiscal calendar: a fiscal quarter by number
and year ("Q2 FY2025", "second quarter of fiscal 2024", "Q3 2024" as the company numbers
its quarters), the quarter ended in a month ("the quarter ended July 2024"), and a calendar
quarter ("calendar Q2 2024", "CY2024 Q2") of a company whose fiscal year is not the calendar.

The fiscal calendar is read from the facts' own dates: each full year's start and end
(its annual values), and each quarter's number counted from the start of the fiscal year
it falls in. Quarters after the last reported year belong to the year after it."""

from __future__ import annotations

import calendar as cal
import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from demo_model.fmt import fiscal_year

__all__ = ["MONTH_YEAR", "NamedQuarter", "Placed", "fiscal_quarter", "named_quarter", "place"]

Row = dict[str, Any]
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_ORD = r"(first|second|third|fourth|1st|2nd|3rd|4th)"
_Y = r"'?((?:19|20)?\d{2})\b"
_FY = r"(?:fy|fiscal(?: year)?)\s*"
_CY = r"(?:cy|calendar(?: year)?)\s*"
_Q = r"\bq([1-4])"
# (pattern, kind, which group is the number): kind fiscal, calendar or ended (a month).
_PATTERNS: tuple[tuple[str, str, int], ...] = (
    (rf"{_Q}\s*(?:of\s+)?{_CY}{_Y}", "calendar", 1),
    (rf"\b{_CY}{_Y}\s*q([1-4])\b", "calendar", 2),
    (rf"\bcalendar\s+q([1-4])\s*(?:of\s+)?{_Y}", "calendar", 1),
    (rf"\b{_ORD} calendar quarter (?:of\s+)?{_Y}", "calendar", 1),
    (rf"\b{_ORD} quarter of (?:calendar|cy)\s*{_Y}", "calendar", 1),
    (rf"{_Q}\s*(?:of\s+)?{_FY}{_Y}", "fiscal", 1),
    (rf"\b{_FY}{_Y}\s*q([1-4])\b", "fiscal", 2),
    (rf"\bfiscal\s+q([1-4])\s*(?:of\s+)?{_Y}", "fiscal", 1),
    (rf"\b{_ORD} (?:fiscal )?quarter (?:of\s+)?(?:{_FY})?{_Y}", "fiscal", 1),
    (rf"{_Q}\s*(?:of\s+)?'?((?:19|20)\d{{2}})\b", "fiscal", 1),
    (rf"{_Q}\s*'(\d{{2}})\b", "fiscal", 1),
    (r"\b((?:19|20)\d{2})\s*q([1-4])\b", "fiscal", 2),
    (rf"\b(?:three|3)[- ]months? (?:period )?(?:ended|ending)(?: on| in)?\s+{_MONTH}"
     rf"(?:\s+\d{{1,2}})?,?\s+((?:19|20)\d{{2}})\b", "ended", 1),
    (rf"\bquarter (?:that )?(?:ended|ending)(?: on| in)?\s+{_MONTH}(?:\s+\d{{1,2}})?,?\s+"
     rf"((?:19|20)\d{{2}})\b", "ended", 1),
    (rf"\b{_MONTH}(?:\s+\d{{1,2}})?,?\s+((?:19|20)\d{{2}})\s+quarter\b", "ended", 1),
    (rf"\b{_MONTH} quarter (?:of\s+)?((?:19|20)\d{{2}})\b", "ended", 1),
    (r"\bquarter (?:that )?(?:ended|ending)(?: on)?\s+((?:19|20)\d{2})-(\d{2})-\d{2}\b",
     "ended", 2),
)  # fmt: skip
MONTH_YEAR = re.compile(rf"\b{_MONTH}(?:\s+\d{{1,2}})?,?\s+(?:19|20)\d{{2}}\b", re.I)
"""A month of a year ("June 2025"): no fiscal year, and a figure's period only as a quarter."""
PATTERNS = [(re.compile(p, re.I), kind, n) for p, kind, n in _PATTERNS]


@dataclass(frozen=True)
class NamedQuarter:
    kind: str
    """fiscal (a fiscal year's quarter), calendar (a calendar year's), ended (a month)."""
    number: int
    """The quarter (1-4), or for `ended` the month (1-12)."""
    year: int
    said: str

    def asked(self) -> str:
        """The quarter asked for, in words."""
        if self.kind == "fiscal":
            return f"fiscal Q{self.number} {self.year}"
        if self.kind == "calendar":
            return f"calendar Q{self.number} {self.year}"
        return f"the quarter ended {_MONTHS[self.number - 1].title()} {self.year}"


def _number(word: str) -> int:
    if word.isdigit():
        return int(word)
    if word[0].isdigit():
        return int(word[0])
    return ("first", "second", "third", "fourth").index(word.lower()) + 1


def _month(word: str) -> int:
    return 1 + next(i for i, m in enumerate(_MONTHS) if m.startswith(word.lower()[:3]))


def _year(word: str) -> int:
    return int(word) if len(word) == 4 else 2000 + int(word)


def named_quarter(text: str) -> NamedQuarter | None:
    """The quarter a question names, as said, or None."""
    for pattern, kind, n in PATTERNS:
        if m := pattern.search(text):
            number_word, year_word = m.group(n), m.group(3 - n)
            if kind == "ended" and not number_word.isdigit():
                number = _month(number_word)
            else:
                number = _number(number_word)
            return NamedQuarter(kind, number, _year(year_word), m.group().strip())
    return None


def _date(value: object) -> dt.date:
    return dt.date.fromisoformat(str(value))


def fiscal_years(annual: list[Row]) -> list[tuple[dt.date, dt.date, int]]:
    """(start, end, fiscal year) of every full year reported, oldest first."""
    years = {(_date(r["start"]), _date(r["end"])) for r in annual if r.get("start")}
    return sorted((s, e, fiscal_year({"end": e.isoformat()})) for s, e in years)


def fiscal_quarter(row: Row, years: list[tuple[dt.date, dt.date, int]]) -> tuple[int, int] | None:
    """(fiscal year, quarter number) of a quarter's value, from the years around it."""
    if not years or not row.get("start"):
        return None
    start, end = _date(row["start"]), _date(row["end"])
    slack = dt.timedelta(days=3)
    for s, e, fy in years:
        if s - slack <= start and end <= e + slack:
            return fy, min(4, round((start - s).days / 91) + 1)
    s, e, fy = years[-1]
    if start <= e:
        return None
    ahead = (start - e).days // 364
    begins = e + dt.timedelta(days=1 + 364 * ahead)
    return fy + 1 + ahead, min(4, max(1, round((start - begins).days / 91) + 1))


@dataclass(frozen=True)
class Placed:
    """The value of a named quarter (`row`), what it is called, or why there is none."""

    row: Row | None
    label: str = ""
    miss: str = ""


def place(named: NamedQuarter, quarterly: list[Row], annual: list[Row]) -> Placed:
    """The quarterly value of the quarter named, among one series' rows."""
    years = fiscal_years(annual)
    if named.kind == "ended":
        return _ended(named, quarterly, years)
    if named.kind == "calendar":
        return _calendar(named, quarterly, years)
    for row in quarterly:
        if fiscal_quarter(row, years) == (named.year, named.number):
            return Placed(row, _label(row, years))
    if named.number == 4:
        return Placed(None, miss=(
            "a fourth fiscal quarter is not reported as a quarter of its own: the 10-K "
            f"reports the full fiscal year; ask for fiscal {named.year}"))  # fmt: skip
    return Placed(None, miss=f"no value for {named.asked()} in its quarterly figures")


def _label(row: Row, years: list[tuple[dt.date, dt.date, int]]) -> str:
    found = fiscal_quarter(row, years)
    which = f"fiscal Q{found[1]} FY{found[0]}, " if found else ""
    return f"{which}the quarter from {row['start']} to {row['end']}"


def _ended(named: NamedQuarter, quarterly: list[Row], years: list[Any]) -> Placed:
    for row in quarterly:
        end = _date(row["end"])
        after = end - dt.timedelta(days=7)  # a 52/53-week quarter ends early the next month
        if (end.year, end.month) == (named.year, named.number) or (
            (after.year, after.month) == (named.year, named.number) and end.day <= 7
        ):
            return Placed(row, _label(row, years))
    month = f"{_MONTHS[named.number - 1].title()} {named.year}"
    return Placed(None, miss=f"no quarter ended in {month} in its quarterly figures")


def _calendar(named: NamedQuarter, quarterly: list[Row], years: list[Any]) -> Placed:
    """The fiscal quarter covering most of the calendar quarter (at least two months)."""
    first = dt.date(named.year, 3 * named.number - 2, 1)
    month = 3 * named.number
    last = dt.date(named.year, month, cal.monthrange(named.year, month)[1])

    def overlap(row: Row) -> int:
        return (min(last, _date(row["end"])) - max(first, _date(row["start"]))).days + 1

    best = max((r for r in quarterly if r.get("start")), key=overlap, default=None)
    if best is None or overlap(best) < 60:
        return Placed(None, miss=f"no quarter of its own covers {named.asked()}")
    label = _label(best, years)
    exact = overlap(best) >= 85
    if not exact:
        label += f", the fiscal quarter covering most of {named.asked()}"
    return Placed(best, label)
