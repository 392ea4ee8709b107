"""The time a question is about ("since 2020", "fiscal 2024", "last 3 years", "last
quarter") and how many items it asks for ("the last 5 8-Ks")."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from demo_model.quarters import NamedQuarter, named_quarter

__all__ = ["QUARTER_BEFORE", "Span", "find_limit", "find_span", "two_years", "year_to_year"]

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
    """A quarter, not a year: the latest ("last quarter"), or the one `named`."""
    named: NamedQuarter | None = None
    """A quarter named ("Q2 FY2025", "the quarter ended July 2024", "calendar Q2 2024")."""
    latest_year: bool = False
    """The latest fiscal year ("last fiscal year", "last yr")."""
    back: int = 0
    """Years before the period named (with `latest_year` or `fiscal_year`)."""
    relative: bool = False
    """Said relative to an earlier question ("that year", "the year before")."""
    unclear: str | None = None
    """A period said that cannot be placed ("Q3", "trailing twelve months"): no figure of a
    guessed period is given for it."""

    @property
    def names_year(self) -> bool:
        return bool(self.fiscal_year or self.latest_year or self.calendar_year)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


# Periods that cannot be placed: a quarter with no year (unless a follow-up has one), a
# half, trailing and year-to-date sums (not reported values). A quarter with its year is
# read first (quarters.py).
_UNCLEAR = re.compile(
    r"\bq[1-4]\b(?:\s*(?:fy|cy)?\s*'?(?:19|20)?\d{2}\b)?|\b(?:19|20)\d{2}\s*q[1-4]\b|"
    r"\b(?:first|second|third|fourth|1st|2nd|3rd|4th) (?:fiscal )?quarter\b|"
    r"\bh[12]\b|\b(?:first|second) half\b|\bttm\b|\bltm\b|"
    r"\b(?:six|nine|twelve|6|9|12)[- ]months? (?:period )?(?:ended|ending)\b(?:\s+[\w,]+){0,3}|"
    r"\b(?:trailing|last|past) (?:twelve|12) months\b|\bytd\b|year[- ]to[- ]date|"
    r"\b(?:this|current|next|coming) (?:fiscal )?year\b|\bfy\s*(?:19|20)?\d{2}\s*q[1-4]\b|"
    r"\b(?:the |a )?quarter (?:ended|ending|of|in|for|through)\b(?:\s+[\w-]+){0,2}|"
    r"\b(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december) quarter\b",
    re.I,
)
QUARTER_BEFORE = re.compile(
    r"\b(?:the |a )?quarter (?:before|earlier|prior)(?: that)?\b|"
    r"\b(?:the )?(?:prior|previous|preceding) quarter\b",
    re.I,
)
_SAME = re.compile(r"\b(?:that|same|this) (?:fiscal )?(?:year|period)\b", re.I)
_BEFORE = re.compile(
    r"\b(?:the )?(?:fiscal )?year (?:before|earlier|prior)(?: that)?\b|"
    r"\b(?:a|one) year (?:before|earlier)\b|\b(?:the )?(?:prior|previous|preceding) "
    r"(?:fiscal )?year\b",
    re.I,
)
_LATEST_YEAR = re.compile(
    r"\b(?:last|latest|most recent|past|recent|last reported|last full|last complete[d]?) "
    r"(?:full |complete |reported )?(?:fiscal |financial )?(?:year|fy)\b|"
    r"\b(?:last|latest|most recent) (?:annual|full[- ]year)\b|\blast fy\b",
    re.I,
)
_SHORT_FY = re.compile(r"\b(?:fy|fiscal(?: year)?)\s*['’]?(\d{2})\b(?!\d)", re.I)
_SHORT_YEAR = re.compile(r"(?<![\w$])['’](\d{2})\b")


def unclear_period(text: str) -> str | None:
    """The part of a question naming a period that cannot be placed, as said."""
    found = _UNCLEAR.search(text)
    return found.group().strip() if found else None


def find_span(text: str, today: dt.date) -> Span:
    """The period of a question; relative ones ("that year") are placed by the caller."""
    text = re.sub(r"\byrs?\b", lambda m: "years" if m.group().endswith("s") else "year", text)
    if named := named_quarter(text):
        return Span(quarter=True, named=named)
    if QUARTER_BEFORE.search(text):
        return Span(quarter=True, relative=True, back=1)
    unclear = unclear_period(text)
    if unclear:
        return Span(unclear=unclear)
    found = _find_span(text, today)
    if found != Span():
        return found
    if _SAME.search(text):
        return Span(relative=True)
    if _BEFORE.search(text):
        return Span(relative=True, back=1)
    if _LATEST_YEAR.search(text):
        return Span(latest_year=True)
    return found


def _find_span(text: str, today: dt.date) -> Span:
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
    return _one_year(text)


def _one_year(text: str) -> Span:
    if m := _SHORT_FY.search(text):
        return Span(fiscal_year=2000 + int(m.group(1)))  # "fy23", "FY'23", "fiscal 23"
    if m := re.search(rf"\b{_YEAR}\b", text) or _SHORT_YEAR.search(text):
        y = int(m.group(1)) if len(m.group(1)) == 4 else 2000 + int(m.group(1))
        return Span(dt.date(y, 1, 1), dt.date(y, 12, 31), fiscal_year=y, calendar_year=y)
    return Span()


def find_limit(text: str) -> int | None:
    if m := re.search(rf"\b(?:last|latest|top|first|recent|newest)\s+{_N}\b(?![-\w])", text, re.I):
        return _number(m.group(1))
    return None


_YY = r"'?((?:19|20)\d{2}|\d{2})\b"
_TWO_YEARS = (
    re.compile(rf"\b(?:between|from)\s+(?:fy|fiscal(?: year)?|cy)?\s*{_YY}\s+(?:and|to|through|"
               rf"until|vs\.?|versus)\s+(?:fy|fiscal(?: year)?)?\s*{_YY}", re.I),
    re.compile(rf"\b(?:fy|fiscal(?: year)?)\s*{_YY}\s+(?:to|vs\.?|versus|and)\s+"
               rf"(?:fy|fiscal(?: year)?)?\s*{_YY}", re.I),
)  # fmt: skip
_CHANGE = re.compile(
    r"\bchang|\bris(?:e|en)\b|\brose\b|\bgr[eo]wn?\b|\bgrowth\b|\bincreas|\bdecreas|"
    r"\bdeclin|\bf[ae]ll\b|\bfallen\b|\bdrop|\bhow much (?:did|has|have|was)\b|\bdiffer|"
    r"\bmove|\bjump|\bshr[iau]nk|\bwent\b|\bvs\.?\s|\bversus\b|\bcompare",
    re.I,
)


def year_to_year(text: str, before: Span, span: Span) -> tuple[int, int] | None:
    """ "how much did that grow from fy2024?" after a question on FY2025: the two years."""
    if not (_CHANGE.search(text) and span.fiscal_year and before.fiscal_year) or before.back:
        return None
    a, b = span.fiscal_year - span.back, before.fiscal_year
    return (min(a, b), max(a, b)) if a != b else None


def two_years(text: str) -> tuple[int, int] | None:
    """The two fiscal years of a change asked between them ("how much did revenue rise
    from FY2023 to FY2024", "net income change between 2022 and 2024"), oldest first."""
    if not _CHANGE.search(text):
        return None
    for pattern in _TWO_YEARS:
        if m := pattern.search(text):
            a, b = (int(y) if len(y) == 4 else 2000 + int(y) for y in m.groups())
            return (min(a, b), max(a, b)) if a != b else None
    return None
