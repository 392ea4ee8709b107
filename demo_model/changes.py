"""The change in one figure between two named fiscal years ("How much did Alphabet's
revenue rise from FY2023 to FY2025?"): both reported values through the period gate, the
difference and the percentage, each input with its period and filing; or, when either
year is not in the data, which one is missing, and no figure."""

from __future__ import annotations

import re
from typing import Any

from demo_model.conversation import Conversation
from demo_model.facts_answers import (
    calendar_rows,
    failed,
    filing_ref,
    filings_note,
    label_of,
    series_steps,
)
from demo_model.fmt import change, fiscal_year, money
from demo_model.margins import margin_parts, pairs, parts_of
from demo_model.periods import Gated, gate
from demo_model.results import Series, as_of, as_series
from demo_model.spans import Span
from demo_model.understand import Question

__all__ = ["ASKS_GROWTH", "change_answer", "fastest"]


def change_answer(q: Question, conv: Conversation) -> str:
    assert q.years is not None
    broken = [failed(s, q) for s in series_steps(conv) if s.is_error]
    if broken:
        return "\n\n".join(broken[:1]) + filings_note(q, conv)
    if q.metrics[0].ratio:
        return _derived_change(q, conv, q.years)
    return _change(q, conv, q.years) + filings_note(q, conv)


def _change(q: Question, conv: Conversation, years: tuple[int, int]) -> str:
    steps = series_steps(conv)
    s = as_series(steps[0]) if steps else None
    if s is None:
        return failed(steps[0], q) if steps else "The figures did not come back."
    kind = "instant" if s.instant else "annual"
    history = s.instant or s.annual
    calendar = calendar_rows(conv, steps[0].input.get("company_identifier"))
    today = as_of(conv, steps[0])
    gated = [gate(Span(fiscal_year=y), kind, history, calendar, today) for y in years]
    label, (first, last) = label_of(steps[0]), years
    if gated[0].row is None or gated[1].row is None:
        return _missing(s, label, years, gated, kind)
    old, new = gated[0].row, gated[1].row
    moved = new["value"] - old["value"]
    verb = "rose" if moved > 0 else "fell" if moved < 0 else "was unchanged"
    pct = change(new["value"], old["value"])
    by = f" by **{money(abs(moved), s.unit)}**" + (f" ({pct})" if pct != "n/m" else "")
    return (
        f"**{s.company}**'s {label} {verb}{by if moved else ''} from FY{first} to FY{last}: "
        f"from {_cited(old, s, kind)} to {_cited(new, s, kind)}. "
        f"(XBRL concept `{s.concept}`; the change is the FY{last} value less the FY{first} one.)"
    )


def _derived_change(q: Question, conv: Conversation, years: tuple[int, int]) -> str:
    """A margin, a ratio or free cash flow in both years, each from its two parts."""
    metric, (top_m, bottom_m) = q.metrics[0], margin_parts(q.metrics[0])
    found = parts_of(q, conv, None)
    if found is None:
        return f"I couldn't compute the {metric.label}: the figures it needs did not come back."
    top, bottom = found
    by_year = {fiscal_year(a): (a, b) for a, b in pairs(metric, top, bottom, "annual")}
    lacking = [y for y in years if y not in by_year]
    if lacking:
        return (
            f"I can't compute the change in {top.company}'s {metric.label} from fiscal year "
            f"{years[0]} to fiscal year {years[1]}: it needs {top_m.label} and "
            f"{bottom_m.label} of both years, and there are not both for fiscal year "
            f"{' or '.join(map(str, lacking))}."
        )
    (a0, b0), (a1, b1) = by_year[years[0]], by_year[years[1]]
    if metric.difference:
        old, new = a0["value"] - b0["value"], a1["value"] - b1["value"]
        verb = "rose" if new > old else "fell" if new < old else "was unchanged"
        lead = (
            f"**{top.company}**'s {metric.label} {verb} by **{money(abs(new - old))}** from "
            f"FY{years[0]} to FY{years[1]}, from {money(old)} to {money(new)}"
        )
    else:
        old, new = a0["value"] / b0["value"] * 100, a1["value"] / b1["value"] * 100
        lead = (
            f"**{top.company}**'s {metric.label} went from {old:.1f}% to **{new:.1f}%** from "
            f"FY{years[0]} to FY{years[1]}, {new - old:+.1f} percentage points"
        )
    joint = "less" if metric.difference else "on"

    def how(a: dict[str, Any], b: dict[str, Any]) -> str:
        return (f"{top_m.label} of {money(a['value'])} {joint} {bottom_m.label} of "
                f"{money(b['value'])} ({_cited(a, top, 'annual').split(' (', 1)[1]}")  # fmt: skip

    return f"{lead}: FY{years[0]} {how(a0, b0)}; FY{years[1]} {how(a1, b1)}."


def _cited(row: dict[str, Any], s: Series, kind: str) -> str:
    when = f"at {row['end']}, the end of FY{fiscal_year(row)}" if kind == "instant" else (
        f"FY{fiscal_year(row)}, ended {row['end']}")  # fmt: skip
    return f"{money(row['value'], s.unit)} ({when}, per its {filing_ref(row, s.cik)})"


def _missing(s: Series, label: str, years: tuple[int, int], gated: list[Gated], kind: str) -> str:
    lacking = [
        f"fiscal year {y}" + ("" if f"fiscal year {y}" in g.miss else f" ({g.miss})")
        for y, g in zip(years, gated, strict=True)
        if not g.row
    ]
    held = s.instant or s.annual
    span = ""
    if held:
        span = (
            f" Its {label} in the data runs from FY{fiscal_year(held[-1])} to "
            f"FY{fiscal_year(held[0])}; ask for a change between two of those years."
        )
    return (
        f"I can't compute the change in {s.company}'s {label} from fiscal year {years[0]} to "
        f"fiscal year {years[1]}: it needs the value of both years, and there is no value for "
        f"{' or '.join(lacking)}.{span}"
    )


ASKS_GROWTH = re.compile(
    r"\b(?:grew|grow(?:s|ing)?|growth|increased?|rose|risen)\b[^?.]{0,20}\b(?:fastest|quickest|"
    r"most|faster|the least|slowest|slower)\b|\b(?:fastest|quickest|slowest|highest|lowest|"
    r"biggest|best|strongest|weakest) (?:revenue |sales |earnings |income )?(?:growth|grower)",
    re.I,
)
"""Which of the companies compared grew fastest (or slowest): a part of its own."""


def fastest(moves: list[tuple[str, str, float | None]], text: str) -> str:
    """The answer to "which grew fastest?" from each company's change on its prior year:
    (company, period, change as a ratio or None when there is no prior year to compare)."""
    slow = re.search(r"slow|least|lowest|weakest", text, re.I)
    known = [m for m in moves if m[2] is not None]
    unknown = [name for name, _, moved in moves if moved is None]
    if not known:
        return "I can't say which grew fastest: no company has the prior year's value here."
    name, when, moved = (min if slow else max)(known, key=lambda m: m[2] or 0.0)
    assert moved is not None
    word = "slowest" if slow else "fastest"
    text = f"**{name}** grew {word}: {moved * 100:+,.1f}% in {when}, on the fiscal year before."
    if unknown:
        text += f" ({', '.join(unknown)}: no prior year to compare, so not ranked.)"
    return text
