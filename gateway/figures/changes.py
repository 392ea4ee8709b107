"""Derivations across periods: the change of one amount between two periods the answer
states, the change of a ratio in percentage points, and a fiscal Q4 computed as its year
less its first three quarters.

Each is tried only where it makes sense, so that a wrong figure does not find a chance
derivation: a change between two amounts of one concept of one company the answer states
near it; a percentage-point change between two ratios of the same two concepts of one
company for two periods of the same length; a Q4 from a year the answer states and the
three quarters of that year the results hold (no fewer, no more).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import timedelta
from itertools import permutations

from gateway.figures.index import SourceIndex
from gateway.figures.periods import Span
from gateway.figures.sources import Source

Candidate = tuple[str, tuple[Source, ...], float]
Window = tuple[float, float]
"""The absolute values a derivation is looked for within."""
QUARTER_DAYS = 120
YEAR_DAYS = 300


def amount_changes(pool: list[Source], window: Window) -> Iterator[Candidate]:
    """One concept of one company from a period of the pool to a later one (a fall is
    stated as a positive amount as often as a negative one)."""
    for a, b in permutations(pool, 2):
        assert a.period is not None and b.period is not None
        if (
            a.company == b.company
            and a.concept == b.concept
            and a.unit == b.unit
            and a.period.end > b.period.end
            and window[0] <= abs(a.value - b.value) <= window[1]
        ):
            yield "change", (a, b), a.value - b.value


def fourth_quarters(pool: list[Source], index: SourceIndex, window: Window) -> Iterator[Candidate]:
    """A year of the pool less the three quarters before its last one."""
    seen: set[tuple[str | None, str | None, Span]] = set()
    for year in pool:
        assert year.period is not None
        key = (year.company, year.concept, year.period)
        if year.period.days <= YEAR_DAYS or year.period.start is None or key in seen:
            continue
        seen.add(key)
        quarters = _quarters(year, index.facts.get((year.company, year.concept or ""), []))
        if quarters is not None:
            value = year.value - sum(q.value for q in quarters)
            if window[0] <= abs(value) <= window[1]:
                yield "q4", (year, *quarters), value


def _quarters(year: Source, facts: list[Source]) -> tuple[Source, ...] | None:
    """The three quarters of `year` before its last (one fact each), or None."""
    assert year.period is not None and year.period.start is not None
    first, last = year.period.start - timedelta(days=7), year.period.end - timedelta(days=45)
    found: dict[Span, Source] = {}
    for fact in facts:
        span = fact.period
        if (
            span is not None
            and span.start is not None
            and 0 < span.days < QUARTER_DAYS
            and span.start >= first
            and span.end <= last
            and fact.unit == year.unit
        ):
            found.setdefault(span, fact)
    return tuple(found.values()) if len(found) == 3 else None


def point_changes(pool: list[Source], index: SourceIndex, window: Window) -> Iterator[Candidate]:
    """The change, in percentage points, of one ratio (a concept over another of one
    company) between two periods of the same length."""
    ratios: dict[tuple[str | None, str | None, str | None, bool], dict[object, Candidate]] = (
        defaultdict(dict)
    )
    for a in pool:
        assert a.period is not None
        for b in index.by_period.get((a.company, a.period), ()):
            if b is not a and b.value and b.unit == a.unit and b.concept != a.concept:
                key = (a.company, a.concept, b.concept, a.period.days > YEAR_DAYS)
                ratio = a.value / b.value * 100
                ratios[key].setdefault((a.period, round(ratio, 6)), ("ratio", (a, b), ratio))
    for same in ratios.values():
        for (_, later, x), (_, earlier, y) in permutations(same.values(), 2):
            if (
                later[0].period.end > earlier[0].period.end  # type: ignore[union-attr]
                and window[0] <= abs(x - y) <= window[1]
            ):
                yield "points", (*later, *earlier), x - y
