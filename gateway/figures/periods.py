"""Periods: the ones a sentence or a question names ("FY2023", "fiscal '23", "Q3 2024",
"ended 2023-09-30", "in 2022"), and whether a reported value's period is one of them.

A fiscal year is named by the calendar year it ends in (NVIDIA's FY2026 ended on
2026-01-25), as SEC's filings do; a retailer's "fiscal 2024" that ended on 2025-02-01 is
FY2025 here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

_MONTHS = "january february march april may june july august september october november december"
_MONTH = {name: n for n, name in enumerate(_MONTHS.split(), 1)}
_PERIOD = re.compile(
    r"(?=[\dQFCJMASOND])\b(?:"  # what each period starts with: most places fail here
    r"\bQ(?P<q>[1-4])\s?(?:FY|CY|fiscal\s)?\s?'?(?P<qy>\d{4}|\d{2})\b"
    r"|\b(?:CY)?(?P<yq>\d{4})\s?Q(?P<q2>[1-4])I?\b"
    r"|\b(?:FY|fiscal(?:\syear)?|CY|calendar(?:\syear)?)\s?'?(?P<fy>\d{4}|\d{2})\b"
    r"|(?P<date>\b(?:19|20)\d{2}-\d{2}-\d{2})\b"
    r"|\b(?P<month>" + "|".join(_MONTH) + r")\s(?P<day>\d{1,2}),\s(?P<my>\d{4})\b"
    r"|(?<![\w$.,-])(?P<year>(?:19|20)\d{2})(?![\w%.,-]|\.\d))",
    re.IGNORECASE,
)
_FILED = re.compile(r"(?:filed|filing|dated|accepted)\W{0,3}(?:on\s)?$", re.IGNORECASE)


@dataclass(frozen=True)
class Named:
    """A period named in text: a year (fiscal or calendar), a quarter of a year, or a day."""

    year: int
    quarter: int = 0
    day: date | None = None


def named(text: str) -> frozenset[Named]:
    """The periods `text` names; a filing's date ("filed 2024-11-01") names none."""
    return frozenset(period for _, period in named_at(text))


def named_at(text: str) -> list[tuple[int, Named]]:
    """Each period `text` names, with where."""
    found = []
    for match in _PERIOD.finditer(text):
        if _FILED.search(text, max(0, match.start() - 14), match.start()):
            continue
        period = _period(match)
        if period is not None:
            found.append((match.start(), period))
    return found


def _period(match: re.Match[str]) -> Named | None:
    groups = match.groupdict()
    if groups["q"]:
        return Named(_year(groups["qy"]), int(groups["q"]))
    if groups["q2"]:
        return Named(int(groups["yq"]), int(groups["q2"]))
    if groups["fy"]:
        return Named(_year(groups["fy"]))
    if groups["date"]:
        try:
            day = date.fromisoformat(groups["date"])
        except ValueError:
            return None
        return Named(day.year, 0, day)
    if groups["month"]:
        try:
            day = date(int(groups["my"]), _MONTH[groups["month"].lower()], int(groups["day"]))
        except ValueError:
            return None
        return Named(day.year, 0, day)
    return Named(int(groups["year"]))


def _year(text: str) -> int:
    return int(text) if len(text) == 4 else 2000 + int(text)


class Span:
    """A reported value's period: `start` None for an instant (a balance-sheet date). Never
    changed once made; a plain class with its own `__init__`, as `Source` is."""

    __slots__ = ("_hash", "days", "end", "series_key", "start")

    def __init__(self, start: date | None, end: date) -> None:
        self.start = start
        self.end = end
        days = 0 if start is None else (end - start).days
        self.days = days  # 0 for an instant
        # Worked out once: an index hashes its periods thousands of times.
        self._hash = hash((start, end))
        # (The year it ends in, longer than 300 days): where a growth rate looks for it.
        self.series_key = (end.year, days > 300)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Span) and self.start == other.start and self.end == other.end

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"Span(start={self.start!r}, end={self.end!r})"

    def within(self, periods: frozenset[Named]) -> bool:
        """Whether this is (one of) the periods named."""
        return any(self._is(period) for period in periods)

    def _is(self, period: Named) -> bool:
        if period.day is not None:
            return self.end == period.day
        if period.quarter:
            return 0 < self.days < 120 and period.year in (self.end.year, self.end.year + 1)
        # A year: a year's flow, or a balance at a year's end (or within that year).
        return self.days == 0 or self.days > 300 if period.year == self.end.year else False

    def text(self) -> str:
        return self.end.isoformat() if self.start is None else f"{self.start}/{self.end}"


@lru_cache(maxsize=4096)
def span(start: str | None, end: str) -> Span | None:
    """A value's period from its `start` and `end` fields (None when they are not dates)."""
    try:
        last = date.fromisoformat(end[:10])
        first = date.fromisoformat(start[:10]) if isinstance(start, str) else None
    except ValueError:
        return None
    return Span(first, last)
