"""The figure check: each figure of an answer, matched to the run's tool results.

`sourced`: a tool result holds its value (within the rounding the answer shows) for the
company and period it is stated for; `derived`: two sourced values give it (growth,
margin, share, difference, sum); `other_period`: the value is sourced, but for another
period than the one its sentence (or the question) names; `unsourced`: neither.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import permutations
from typing import Any

from gateway.figures import extract
from gateway.figures.context import Contexts
from gateway.figures.context import Stated as Context
from gateway.figures.derive import Derived, Memo, Near, derive
from gateway.figures.index import SourceIndex
from gateway.figures.sources import Source

STATUSES = ("sourced", "derived", "unsourced", "other_period")
_CAMEL = re.compile(r"[A-Z][a-z]+|[A-Z]+(?![a-z])")
_COMMON = frozenset({"and", "by", "in", "of", "to", "the", "net", "used", "from", "for"})
MAX_SOURCES = 3
MAX_ANCHORS = 8


@dataclass
class Checked:
    figure: extract.Stated
    status: str
    sources: list[Source] = field(default_factory=list)
    formula: str | None = None
    anchors: list[Source] = field(default_factory=list, repr=False)
    """The facts a sourced figure may be (for what is derived from it)."""
    value: float | None = None
    """A derived figure's exact value."""

    def public(self) -> dict[str, Any]:
        """As PROTOCOL's `figures` entries."""
        f = self.figure
        value = round(f.value, 10) if isinstance(f.value, float) else f.value
        return {
            "text": f.text,
            "start": f.start,
            "end": f.end,
            "value": value,
            "unit": f.unit,
            "status": self.status,
            "sources": [s.public() for s in self.sources[: self._shown()]],
            "formula": self.formula,
        }

    def _shown(self) -> int:
        """Every input of a formula; at most `MAX_SOURCES` places a value was found."""
        return len(self.sources) if self.formula else MAX_SOURCES


@dataclass
class Report:
    figures: list[Checked]

    def counts(self) -> dict[str, int]:
        counted = Counter(c.status for c in self.figures)
        return {status: counted[status] for status in STATUSES}

    def event_fields(self) -> dict[str, Any]:
        return {"figures": [c.public() for c in self.figures], "counts": self.counts()}


def check(answer: str, index: SourceIndex, question: str = "") -> Report:
    """Check every figure of `answer` against `index`."""
    stated = extract.figures(answer)
    if not stated:
        return Report([])
    contexts = Contexts(answer, question, index.aliases)
    checked = [_direct(f, index, contexts.at(f.start)) for f in stated]
    nears = _nears(checked, contexts)
    memo = Memo()
    for c in checked:
        if c.status in ("sourced", "derived") or c.figure.identifier:
            continue
        near = nears.get(contexts.paragraph(c.figure.start)) or nears[-1]
        _derived(c, index, contexts.at(c.figure.start), near, memo)
    _changes_of_derived(checked, contexts)
    return Report(checked)


def _nears(checked: list[Checked], contexts: Contexts) -> dict[int, Near]:
    """Each paragraph's sourced figures (and all of them, at -1): the fact each is taken
    for, with its values as reported and restated (two figures of a paragraph that would
    be taken for the same fact are taken for different ones where they can be: "$2.10
    billion less $2.10 billion"), and every fact each may be."""
    nears: dict[int, Near] = {}
    for c in checked:
        if not c.anchors:
            continue
        near = nears.setdefault(contexts.paragraph(c.figure.start), Near([], []))
        taken = {(s.concept, s.period) for s in near.first}
        one = next((s for s in c.anchors if (s.concept, s.period) not in taken), c.anchors[0])
        near.first.extend(
            s for s in c.anchors if (s.concept, s.period) == (one.concept, one.period)
        )
        near.every.extend(c.anchors)
    nears[-1] = Near(
        [s for near in nears.values() for s in near.first],
        [s for near in nears.values() for s in near.every],
    )
    return nears


def _direct(figure: extract.Stated, index: SourceIndex, context: Context) -> Checked:
    if figure.identifier:
        found = index.identifiers.get(str(figure.value))
        if found is None:
            return Checked(figure, "unsourced")
        return Checked(figure, "sourced", [found], anchors=_anchors([found]))
    candidates = _candidates(figure, index)
    if context.companies:
        candidates = [s for s in candidates if s.company is None or s.company in context.companies]
    if not candidates:
        return Checked(figure, "unsourced")
    if context.periods:
        right = [s for s in candidates if s.period is None or s.period.within(context.periods)]
        if not right:
            return Checked(figure, "other_period", _best(candidates, context.words))
        candidates = right
    best = _best(candidates, context.words)
    return Checked(figure, "sourced", best, anchors=_anchors([*best, *candidates]))


def _anchors(candidates: list[Source]) -> list[Source]:
    """Up to `MAX_ANCHORS` facts of distinct concept, period or value."""
    found: dict[tuple[str | None, object, float], Source] = {}
    for s in candidates:
        if s.period is not None and len(found) < MAX_ANCHORS:
            found.setdefault((s.concept, s.period, s.value), s)
    return list(found.values())


def _candidates(figure: extract.Stated, index: SourceIndex) -> list[Source]:
    assert isinstance(figure.value, float)
    unit = figure.unit
    percent = unit == "%"
    found: list[Source] = []
    for value, tolerance in ((figure.value, figure.tolerance), *figure.alternatives):
        target = abs(value)
        slack = tolerance * 1.0001 + target * 1e-9
        within = index.between(target - slack, target + slack, percent)
        if unit in ("%", "x", "number"):  # any source's unit fits
            found += within
        elif unit == "shares":  # no amount of money
            found += [s for s in within if s.unit is None or "USD" not in s.unit]
        else:  # an amount of money: no share count
            found += [s for s in within if s.unit != "shares"]
    return found


def _best(sources: list[Source], words: frozenset[str] = frozenset()) -> list[Source]:
    """Facts first (they name concept, period and filing), those whose concept shares the
    most words with the sentence first among them; one per tool call."""
    seen: set[tuple[str, str | None]] = set()
    best = []
    for source in sorted(sources, key=lambda s: (s.period is None, -_shared(s.concept, words))):
        key = (source.tool_use_id, source.accession)
        if key not in seen:
            seen.add(key)
            best.append(source)
    return best[:MAX_SOURCES]


def _shared(concept: str | None, words: frozenset[str]) -> int:
    return len(_concept_words(concept) & words) if concept and words else 0


@lru_cache(maxsize=1024)
def _concept_words(concept: str) -> frozenset[str]:
    """ "us-gaap:NetCashProvidedByUsedInOperatingActivities" -> {"cash", "operating", ...}."""
    name = concept.rpartition(":")[2]
    return frozenset(w.lower() for w in _CAMEL.findall(name)) - _COMMON


def _derived(
    checked: Checked, index: SourceIndex, context: Context, near: Near, memo: Memo
) -> None:
    found = derive(checked.figure, near, context, index, memo)
    if context.companies:
        found = [d for d in found if all(s.company in context.companies for s in d.inputs)]
    if not found:
        return
    if context.periods:
        right = [d for d in found if any(_named(s, context) for s in d.inputs)]
        if not right:
            if checked.status == "unsourced":
                _set(checked, "other_period", found[0])
            return
        found = right
    _set(checked, "derived", found[0])


def _named(source: Source, context: Context) -> bool:
    return source.period is not None and source.period.within(context.periods)


def _set(checked: Checked, status: str, derived: Derived) -> None:
    checked.status = status
    checked.sources = list(derived.inputs)
    checked.formula = derived.formula
    checked.value = derived.value


def _changes_of_derived(checked: list[Checked], contexts: Contexts) -> None:
    """An amount still unsourced may be the change between two derived figures of its
    paragraph made the same way from the same concepts for two periods (free cash flow
    from one year to the next)."""
    made: dict[int, list[tuple[Checked, float]]] = {}
    for c in checked:
        if c.status == "derived" and c.value is not None and c.figure.unit not in ("%", "x"):
            made.setdefault(contexts.paragraph(c.figure.start), []).append((c, c.value))
    for c in checked:
        if c.status != "unsourced" or not isinstance(c.figure.value, float):
            continue
        for (x, later), (y, earlier) in permutations(
            made.get(contexts.paragraph(c.figure.start), []), 2
        ):
            if _same_making(x, y) and _within(c.figure, later - earlier):
                c.status, c.sources = "derived", [*x.sources, *y.sources]
                c.formula = f"({x.formula}) − ({y.formula})"
                break


def _same_making(x: Checked, y: Checked) -> bool:
    """Whether `x` is made as `y` is, from the same concepts, for later periods."""
    ends = [[s.period.end for s in c.sources if s.period] for c in (x, y)]
    return (
        [s.concept for s in x.sources] == [s.concept for s in y.sources]
        and bool(ends[0] and ends[1])
        and min(ends[0]) > max(ends[1])
        and x.figure.unit == y.figure.unit
    )


def _within(figure: extract.Stated, value: float) -> bool:
    assert isinstance(figure.value, float)
    return abs(abs(value) - abs(figure.value)) <= figure.tolerance * 1.0001 + 1e-12
