"""Values derived from sourced figures: growth (yearly or compounded), margin or share,
difference, sum; and across periods (`changes`): the change of an amount, of a ratio in
percentage points, a fiscal Q4 as its year less three quarters.

Only pairs that make sense are tried (not every pair of numbers in the run, which would
find any percentage somewhere). The pool: the sourced figures the answer states near this
one, and the facts of the periods and companies its sentence names. A growth rate: one
concept of one company between a period of the pool and one a year apart (or another of
the pool), and compounded a year between two of those two or more years apart. A margin
or a share: two concepts of one company for the same period, one of them in the pool. A
sum or a difference: two figures the answer states near it (an amount has too many
chance sums otherwise). A change in percentage points ("+1.2 percentage points", "-3 pp")
is only ever such a change, and a percentage never one.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from gateway.figures.changes import (
    Candidate,
    Window,
    amount_changes,
    fourth_quarters,
    point_changes,
)
from gateway.figures.context import Stated as Context
from gateway.figures.extract import Stated
from gateway.figures.index import SourceIndex
from gateway.figures.periods import Span
from gateway.figures.sources import Source

MAX_POOL = 80
OWN_LOOKS = 2
"""Figures of a ratio's pool that look for their own value only, before its candidates
are all made and sorted for the next ones."""
_POINTS = re.compile(r"points?\b|pp\b", re.IGNORECASE)


@dataclass(frozen=True)
class Derived:
    formula: str
    inputs: tuple[Source, ...]
    value: float


ANY: Window = (0.0, math.inf)
"""Every value but NaN (a ratio of two infinite numbers): nothing to sort it among."""


_OWN_POOL = ("%", "x", "points")
"""Kinds whose pool takes in the facts its sentence names: most often one figure's own."""


@dataclass
class Memo:
    """What one answer's check has worked out: each pool's candidate derivations, sorted
    by value. An amount's pool is its paragraph's sourced figures, which every amount of
    the paragraph shares; a ratio's is most often its own, so the first figures asking
    look for their own value only (making no candidate of another value), and the pool's
    candidates are all made only when a third one asks (a pool's growth rates between
    every two facts cost more than two looks for one value each, which skip the series
    whose values are too close to reach it)."""

    asked: Counter[tuple[str, frozenset[int]]] = field(default_factory=Counter)
    candidates: dict[tuple[str, frozenset[int]], Candidates] = field(default_factory=dict)
    series: dict[frozenset[int], list[Series]] = field(default_factory=dict)
    """Each "%" pool's series of facts for growth rates, found once for all its asks."""

    def of(
        self, kind: str, near: list[Source], context: Context, index: SourceIndex, window: Window
    ) -> list[Candidate]:
        """The candidates of `kind` from the pool `near` starts, whose value is in `window`,
        in the order they are made."""
        anchors = [s for s in near if s.period is not None]
        pool = _pool(anchors, context, index) if kind in _OWN_POOL else anchors
        key = (kind, frozenset(id(s) for s in pool))
        found = self.candidates.get(key)
        if found is None:
            series = self.series.get(key[1]) if kind == "%" else []
            if series is None:
                series = self.series[key[1]] = _growth_series(pool, index)
            if kind in _OWN_POOL and self.asked[key] < OWN_LOOKS:
                self.asked[key] += 1
                return list(_candidates(kind, pool, index, window, series))
            made = list(_candidates(kind, pool, index, ANY, series))
            found = self.candidates[key] = Candidates(made)
        return found.within(window)


class Candidates:
    """Candidate derivations by absolute value, each found with two bisections."""

    def __init__(self, made: list[Candidate]) -> None:
        self._made = made
        self._order = sorted(range(len(made)), key=lambda n: abs(made[n][2]))
        self._keys = [abs(made[n][2]) for n in self._order]

    def within(self, window: Window) -> list[Candidate]:
        low, high = window
        found = self._order[bisect_left(self._keys, low) : bisect_right(self._keys, high)]
        return [self._made[n] for n in sorted(found)]


@dataclass(frozen=True)
class Near:
    """The sourced figures near a figure: the one fact each is taken for (`first`), and
    every fact each may be (`every`, for changes between periods)."""

    first: list[Source]
    every: list[Source]


def derive(
    figure: Stated, near: Near, context: Context, index: SourceIndex, memo: Memo
) -> list[Derived]:
    """Every derivation of `figure`'s value (within the rounding it shows) from the sourced
    figures `near` it and the facts its context names."""
    if not isinstance(figure.value, float):
        return []
    low = abs(figure.value) - figure.tolerance * 1.0001 - 1e-12
    high = abs(figure.value) + figure.tolerance * 1.0001 + 1e-12
    return [
        Derived(_formula(how, inputs), inputs, value)
        for kind, pool in _kinds(figure, near, context)
        for how, inputs, value in memo.of(kind, pool, context, index, (low, high))
    ]


def _kinds(figure: Stated, near: Near, context: Context) -> list[tuple[str, list[Source]]]:
    """The kinds of derivation `figure` may be, each with the pool it starts from: a fiscal
    Q4 only where its sentence names a fourth quarter."""
    if figure.unit == "%":
        return [("points", near.every)] if _POINTS.search(figure.text) else [("%", near.first)]
    if figure.unit == "x":
        return [("x", near.first)]
    kinds = [("amount", near.first), ("change", near.every)]
    if any(period.quarter == 4 for period in context.periods):
        kinds.append(("q4", near.every))
    return kinds


def _pool(anchors: list[Source], context: Context, index: SourceIndex) -> list[Source]:
    """The facts derivations start from: the sourced figures near this one, and the facts
    of the periods and companies named."""
    pool = {id(s): s for s in anchors}
    for year in {named.year for named in context.periods}:
        for company, period in index.by_year.get(year, ()):
            if len(pool) >= MAX_POOL:
                break
            if (not context.companies or company in context.companies) and period.within(
                context.periods
            ):
                pool.update((id(s), s) for s in index.by_period[(company, period)])
    return list(pool.values())[:MAX_POOL]


def _candidates(
    kind: str, pool: list[Source], index: SourceIndex, window: Window, series: list[Series]
) -> Iterator[Candidate]:
    if kind in _ACROSS:
        yield from _ACROSS[kind](pool, index, window)
        return
    if kind == "%":
        yield from _growths(series, window)
    if kind not in ("%", "x"):  # sums and differences: of the pool's figures of one period
        stated: dict[tuple[Span | None, str | None], list[Source]] = {}
        for b in pool:
            stated.setdefault((b.period, b.company), []).append(b)
        for a in pool:
            yield from _sums(a, stated[(a.period, a.company)], window)
        return
    for a in pool:
        assert a.period is not None
        same_period = index.by_period.get((a.company, a.period), [])
        yield from _ratios(a, same_period, 100.0 if kind == "%" else 1.0, window)


_ACROSS = {
    "points": point_changes,
    "change": lambda pool, _, window: amount_changes(pool, window),
    "q4": fourth_quarters,
}


Series = tuple[list[Source], list[float]]
"""The facts of one concept of one company in play for growth rates, and their values."""


def _growth_series(pool: list[Source], index: SourceIndex) -> list[Series]:
    """For each concept of each company of the pool, its facts of a period in play or of
    the same period a year before or after (two or more of them)."""
    relevant = {s.period for s in pool if s.period is not None}
    near = {(p.end.year + step, p.days > 300) for p in relevant for step in (-1, 0, 1)}
    series = {(s.company, s.concept or "", s.unit) for s in pool}
    found = []
    for company, concept, unit in sorted(series, key=_series_order):
        facts = index.series(company, concept)
        some = [b for key in near for b in facts.get(key, ()) if b.unit == unit]
        if len(some) > 1:
            found.append((some, [b.value for b in some]))
    return found


def _growths(series: list[Series], window: Window) -> Iterator[Candidate]:
    """One concept of one company between a period in play and the same period a year
    before or after (or another period in play)."""
    for facts, values in series:
        if not _below(values, window[0]):
            yield from _series_growths(facts, window)


def _series_order(key: tuple[str | None, str, str | None]) -> tuple[object, ...]:
    """A series' place among a pool's: by company, concept and unit (not by the order of
    a set of strings, which differs from one process to the next)."""
    company, concept, unit = key
    return (company is None, company or "", concept, unit is None, unit or "")


def _series_growths(series: list[Source], window: Window) -> Iterator[Candidate]:
    """The growth from each fact of `series` to each other of another period, and the
    yearly rate compounded to one two or more years on, in the order of
    permutations(series, 2): the hottest loop of the check, on plain lists."""
    low, high = window
    values = [b.value for b in series]
    ends = [b.period.end for b in series]  # type: ignore[union-attr]
    spans = [(b.period.start, b.period.end) for b in series]  # type: ignore[union-attr]
    for i, a in enumerate(series):
        a_value, a_span, a_end = values[i], spans[i], ends[i]
        for j, b_value in enumerate(values):
            if not b_value or i == j or spans[j] == a_span:
                continue
            growth = (a_value - b_value) / abs(b_value) * 100
            if low <= abs(growth) <= high:
                yield "growth", (a, series[j]), growth
            if a_end.year - ends[j].year >= 2 and a_value > 0 and b_value > 0:
                years = round((a_end - ends[j]).days / 365.25)
                rate = ((a_value / b_value) ** (1 / years) - 1) * 100 if years >= 2 else 0.0
                if years >= 2 and low <= abs(rate) <= high:
                    yield f"cagr{years}", (a, series[j]), rate


def _below(values: list[float], low: float) -> bool:
    """Whether every growth (and every yearly rate compounded) between two of `values`, all
    of one sign, is below `low` percent in size: none is more than the largest size over
    the smallest, less one (a compounded rate is less)."""
    smallest, largest = min(values), max(values)
    if largest < 0:  # losses: the same bound on their sizes
        smallest, largest = -largest, -smallest
    return smallest > 0 and (largest - smallest) / smallest * 100 * (1 + 1e-9) < low


def _ratios(
    a: Source, same_period: list[Source], scale: float, window: Window
) -> Iterator[Candidate]:
    low, high = window
    for b in same_period:
        if b is not a and b.value and b.unit == a.unit:
            ratio = a.value / b.value * scale
            if low <= abs(ratio) <= high:
                yield "ratio", (a, b), ratio


def _sums(a: Source, same_period: list[Source], window: Window) -> Iterator[Candidate]:
    low, high = window
    for b in same_period:
        if b is not a and b.unit == a.unit and b.concept != a.concept:
            if low <= abs(a.value - b.value) <= high:
                yield "difference", (a, b), a.value - b.value
            if low <= abs(a.value + b.value) <= high:
                yield "sum", (a, b), a.value + b.value


def _formula(kind: str, inputs: tuple[Source, ...]) -> str:
    names = [_name(s) for s in inputs]
    if kind == "points":
        return f"{names[0]} ÷ {names[1]} − {names[2]} ÷ {names[3]} (percentage points)"
    if kind == "q4":
        return " − ".join(names)
    name_a, name_b = names[0], names[1]
    if kind == "growth":
        return f"({name_a} − {name_b}) ÷ {name_b}"
    if kind.startswith("cagr"):
        return f"({name_a} ÷ {name_b})^(1/{kind[4:]}) − 1"
    if kind == "ratio":
        return f"{name_a} ÷ {name_b}"
    if kind in ("difference", "change"):
        return f"{name_a} − {name_b}"
    return f"{name_a} + {name_b}"


def _name(source: Source) -> str:
    period = source.period.text() if source.period is not None else ""
    return f"{source.concept or source.tool} {period}".strip()
