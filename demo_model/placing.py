"""Where a question's period sits: the span of one question ("last quarter", "the latest
10-Q", "June 2025" as no fiscal year), and a period said relative to the question before
("that year", "the year before", "the quarter before", "and Q2?"), placed on that
question's period; what cannot be placed is named as not understood."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import replace

from demo_model.quarters import MONTH_YEAR, NamedQuarter
from demo_model.spans import QUARTER_BEFORE, Span, find_span

__all__ = ["period_reason", "placed", "quarter_of_year", "span_of"]

_LAST_QUARTER = re.compile(
    r"\b(?:last|latest|most recent|this|past|previous|recent) quarter\b|"
    r"\bquarterly (?!reports?\b|filings?\b)",
    re.I,
)


def span_of(text: str, today: dt.date, figure: bool, forms: tuple[str, ...]) -> Span:
    latest_quarter = _LAST_QUARTER.search(text) and not QUARTER_BEFORE.search(text)
    span = Span(quarter=True) if latest_quarter else find_span(text, today)
    if span == Span() and figure and forms == ("10-Q",):
        return Span(quarter=True)  # "net income in the latest 10-Q": that form's figures
    month = MONTH_YEAR.search(text) if figure and not (span.quarter or span.unclear) else None
    if month:
        return Span(unclear=month.group())  # "revenue in June 2025" is no fiscal year
    return span


def period_reason(said: str) -> str:
    return (
        f"I didn't understand the period “{said}”: a quarter needs its year, and halves, "
        "trailing and year-to-date sums are not reported values, so I give no figure for a "
        'guessed period. Ask for a fiscal year ("fiscal 2024"), a quarter with its year '
        '("Q2 of fiscal 2025"), "last fiscal year" or "last quarter"'
    )


_BARE_QUARTER = re.compile(r"^(?:q([1-4])|(first|second|third|fourth) (?:fiscal )?quarter)$", re.I)


def quarter_of_year(span: Span, prior: Span) -> Span:
    """A quarter said without its year ("and Q2?"), in the fiscal year asked before."""
    bare = _BARE_QUARTER.match(span.unclear or "")
    year = prior.named.year if prior.named and prior.named.kind == "fiscal" else None
    year = year or (prior.fiscal_year - prior.back if prior.fiscal_year else None)
    if bare is None or year is None:
        return span
    number = int(bare.group(1)) if bare.group(1) else (
        ("first", "second", "third", "fourth").index(bare.group(2).lower()) + 1)  # fmt: skip
    return Span(quarter=True, named=NamedQuarter("fiscal", number, year, bare.group()))


def placed(span: Span, prior: Span | None, text: str) -> Span:
    """A period said relative to the earlier question ("that year", "the year before"),
    placed on that question's period; without one it is named as not understood."""
    if span.quarter:
        return quarter_before(prior, QUARTER_BEFORE.search(text))
    said = _RELATIVE_SAID.search(text)
    words = said.group() if said else "that year"
    if prior is None or prior.unclear or prior.quarter:
        return Span(unclear=prior.unclear if prior and prior.unclear else words)
    if prior.fiscal_year:
        return Span(fiscal_year=prior.fiscal_year - prior.back - span.back)
    if prior.calendar_year:
        y = prior.calendar_year - span.back
        return Span(dt.date(y, 1, 1), dt.date(y, 12, 31), calendar_year=y)
    if prior.after or prior.before:
        return Span(unclear=words)  # a range of years has no single year before it
    return Span(latest_year=True, back=prior.back + span.back)


def quarter_before(prior: Span | None, said: re.Match[str] | None) -> Span:
    """ "the quarter before", placed on the earlier question's quarter (the latest one
    when there is none)."""
    words = said.group() if said else "the quarter before"
    if prior is None or not prior.quarter:
        return Span(quarter=True) if prior is None else Span(unclear=words)
    if prior.named is None:
        return Span(quarter=True, back=prior.back + 1)
    named = prior.named
    step = 3 if named.kind == "ended" else 1
    top = 12 if named.kind == "ended" else 4
    number, year = named.number - step, named.year
    if number < 1:
        number, year = number + top, year - 1
    return Span(quarter=True, named=replace(named, number=number, year=year, said=words))


_RELATIVE_SAID = re.compile(
    r"\b(?:that|same|this) (?:fiscal )?(?:year|period)\b|"
    r"\b(?:the )?(?:fiscal )?year (?:before|earlier|prior)(?: that)?\b|"
    r"\b(?:prior|previous|preceding) (?:fiscal )?year\b",
    re.I,
)
