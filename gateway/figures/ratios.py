"""Ratios (margins, shares, multiples) of a fact to the other facts of its company and
period, looked up for one figure's value: each period's facts sorted by size once per
check, so a figure finds the few that give its value with two bisections per fact of its
pool, rather than working out every ratio of the pool."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from operator import itemgetter

from gateway.figures.changes import Candidate
from gateway.figures.index import SourceIndex
from gateway.figures.periods import Span
from gateway.figures.sources import Source

Table = tuple[list[float], list[tuple[int, Source]]]
_SLACK = 1e-9
"""Relative widening of the bisected range: each ratio found is checked exactly."""


@dataclass
class Ratios:
    """One check's tables: (company, period) -> its facts' absolute values, sorted, and
    the facts with their place in the index's list (ratios come out in that order)."""

    tables: dict[tuple[str | None, Span], Table] = field(default_factory=dict)

    def within(
        self, pool: list[Source], index: SourceIndex, scale: float, low: float, high: float
    ) -> list[Candidate]:
        """Each `a ÷ b × scale` in [low, high] (absolute): `a` of the pool, `b` a fact of
        its company and period in the same unit; in the order of `pool`, then of `b`."""
        found: list[Candidate] = []
        for a in pool:
            assert a.period is not None
            same = index.by_period.get((a.company, a.period), [])
            if not a.value or low <= 0:  # every `b` may do: tried one by one
                found += [c for c in ratios(a, same, scale) if low <= abs(c[2]) <= high]
                continue
            keys, rows = self._table((a.company, a.period), same)
            top = abs(a.value) * scale
            start = bisect_left(keys, top / high * (1 - _SLACK))
            stop = bisect_right(keys, top / low * (1 + _SLACK))
            near = [b for _, b in sorted(rows[start:stop], key=itemgetter(0))]
            found += [c for c in ratios(a, near, scale) if low <= abs(c[2]) <= high]
        return found

    def _table(self, key: tuple[str | None, Span], same: list[Source]) -> Table:
        if key not in self.tables:
            rows = sorted(enumerate(same), key=lambda row: abs(row[1].value))
            self.tables[key] = ([abs(b.value) for _, b in rows], rows)
        return self.tables[key]


def ratios(a: Source, same_period: list[Source], scale: float) -> list[Candidate]:
    """`a ÷ b × scale` for each `b` of `same_period` in `a`'s unit (and not `a`)."""
    value, unit = a.value, a.unit
    return [
        ("ratio", (a, b), value / b.value * scale)
        for b in same_period
        if b is not a and b.value and b.unit == unit
    ]
