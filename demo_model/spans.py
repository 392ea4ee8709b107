"""The time a question is about ("since 2020", "fiscal 2024", "last 3 years", "last
quarter") and how many items it asks for ("the last 5 8-Ks")."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

__all__ = ["Span", "find_limit", "find_span"]

_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}  # fmt: skip
_N = r"(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)"
_YEAR = r"((?:19|20)\d{2})"


@dataclass(frozen=True)
class Span:
    """The time a question is about."""

    after: dt.date | None = None
    before: dt.date | None = None
    fiscal_year: int | None = None
    calendar_year: int | None = None
    quarter: bool = False
    """The latest quarter ("last quarter"), not a year."""


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def find_span(text: str, today: dt.date) -> Span:
    def year(m: re.Match[str], group: int = 1) -> int:
        return int(m.group(group))

    if m := re.search(rf"\b(?:between|from)\s+{_YEAR}\s+(?:and|to|through|-)\s+{_YEAR}", text):
        return Span(dt.date(year(m), 1, 1), dt.date(year(m, 2), 12, 31))
    if m := re.search(rf"\b(?:since|from|starting(?: in)?)\s+{_YEAR}\b", text, re.I):
        return Span(after=dt.date(year(m), 1, 1))
    if m := re.search(rf"\bafter\s+{_YEAR}\b", text, re.I):
        return Span(after=dt.date(year(m) + 1, 1, 1))
    if m := re.search(rf"\b(?:before|prior to)\s+{_YEAR}\b", text, re.I):
        return Span(before=dt.date(year(m) - 1, 12, 31))
    if m := re.search(rf"\b(?:last|past)\s+{_N}\s+years?\b", text, re.I):
        n = _number(m.group(1))
        return Span(after=today.replace(year=today.year - n, day=min(today.day, 28)))
    if m := re.search(rf"\b(?:CY|calendar(?: year)?)\s*{_YEAR}\b", text, re.I):
        return Span(dt.date(year(m), 1, 1), dt.date(year(m), 12, 31), calendar_year=year(m))
    if m := re.search(rf"\b(?:FY|fiscal(?: year)?)\s*'?{_YEAR}\b", text, re.I):
        return Span(fiscal_year=year(m))
    if m := re.search(rf"\b{_YEAR}\b", text):
        y = year(m)
        return Span(dt.date(y, 1, 1), dt.date(y, 12, 31), fiscal_year=y, calendar_year=y)
    return Span()


def find_limit(text: str) -> int | None:
    if m := re.search(rf"\b(?:last|latest|top|first|recent|newest)\s+{_N}\b(?![-\w])", text, re.I):
        return _number(m.group(1))
    return None
