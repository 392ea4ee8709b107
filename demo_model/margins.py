"""Figures computed from two reported ones of the same period: margins (gross, operating,
net: the first over revenue, as a percentage) and free cash flow (operating cash flow
less capital expenditures). Each answer shows both reported values and their filing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from demo_model.conversation import Conversation, Step
from demo_model.fmt import fiscal_year, money, period, table
from demo_model.periods import CALENDAR, Gated, asked_text, gate
from demo_model.results import Series, as_of, as_series
from demo_model.spans import Span
from demo_model.understand import Question
from demo_model.vocab import METRIC_BY_KEY, Metric

__all__ = ["derived", "derived_compare", "derived_trend", "margin_parts", "pairs", "parts_of"]

FACTS = "get_sec_company_facts"
Pair = tuple[dict[str, Any], dict[str, Any]]
Cite = Callable[[dict[str, Any], int | None], str]


def margin_parts(metric: Metric) -> tuple[Metric, ...]:
    """The reported figures a derived figure is computed from, or the metric itself."""
    if metric.ratio is None:
        return (metric,)
    return tuple(METRIC_BY_KEY[key] for key in metric.ratio)


def _series(conv: Conversation, metric: Metric, who: str | None) -> Series | None:
    for step in conv.done(FACTS):
        same = who is None or step.input.get("company_identifier") == who
        if same and step.input.get("concept") == metric.facts_key:
            return as_series(step)
    return None


def pairs(metric: Metric, top: Series, bottom: Series, kind: str) -> list[Pair]:
    """Values of the same period in both series, newest first."""
    by_period = {(r.get("start"), r["end"]): r for r in getattr(bottom, kind)}
    found = [(r, by_period.get((r.get("start"), r["end"]))) for r in getattr(top, kind)]
    usable = [(a, b) for a, b in found if b is not None]
    return usable if metric.difference else [(a, b) for a, b in usable if b["value"] > 0]


def _value(metric: Metric, pair: Pair) -> str:
    if metric.difference:
        return money(pair[0]["value"] - pair[1]["value"])
    return f"{pair[0]['value'] / pair[1]['value'] * 100:.1f}%"


def _how(metric: Metric, pair: Pair) -> str:
    top, bottom = margin_parts(metric)
    joint = "less" if metric.difference else "on"
    return (
        f"{top.label} of {money(pair[0]['value'])} {joint} {bottom.label} of "
        f"{money(pair[1]['value'])}"
    )


def parts_of(q: Question, conv: Conversation, who: str | None) -> tuple[Series, Series] | None:
    top_metric, bottom_metric = margin_parts(q.metrics[0])
    top, bottom = _series(conv, top_metric, who), _series(conv, bottom_metric, who)
    return (top, bottom) if top is not None and bottom is not None else None


def derived(q: Question, conv: Conversation, cite: Cite, who: str | None = None) -> str:
    """The figure asked for (latest year, a fiscal year, or the latest quarter)."""
    metric = q.metrics[0]
    found = parts_of(q, conv, who)
    if found is None:
        return f"I couldn't compute the {metric.label}: the figures it needs did not come back."
    top, bottom = found
    kind = "quarterly" if q.span.quarter else "annual"
    found_pairs = pairs(metric, top, bottom, kind)
    calendar = _calendar(conv, who or (q.firms[0].ticker if q.firms else None))
    today = as_of(conv, conv.done(FACTS)[0]) if conv.done(FACTS) else conv.today
    gated = gate(q.span, kind, getattr(top, kind), calendar, today)
    pair = next((p for p in found_pairs if p[0] is gated.row), None)
    if pair is None:
        return _cannot(q, top, bottom, kind, gated)
    text = (
        f"**{top.company}**'s {metric.label} was **{_value(metric, pair)}** in "
        f"{gated.label or period(pair[0], kind)}: {_how(metric, pair)}, per its "
        f"{cite(pair[0], top.cik)}."
    )
    sign = "−" if metric.difference else "÷"
    return text + f" (XBRL `{top.concept}` {sign} `{bottom.concept}`.)"


def _calendar(conv: Conversation, who: str | None) -> list[dict[str, Any]] | None:
    """The company's fiscal years, from the calendar call made beside the parts."""
    for step in conv.done(FACTS):
        same = step.input.get("company_identifier") == who
        if same and step.input.get("concept") == CALENDAR:
            s = as_series(step)
            return s.annual if s is not None else None
    return None


def _cannot(q: Question, top: Series, bottom: Series, kind: str, gated: Gated) -> str:
    """Said plainly when the two figures are not both there for the period asked."""
    metric, (top_metric, bottom_metric) = q.metrics[0], margin_parts(q.metrics[0])
    latest = "its latest fiscal year" if kind == "annual" else "its latest quarter"
    wanted = asked_text(q.span, gated.year) if q.span != Span() else latest
    if gated.row is None and gated.miss:
        wanted += f" ({gated.miss})"
    ends = [
        f"its {m.label} through {period(s_rows[0], kind)}" if s_rows else f"no {kind} {m.label}"
        for m, s_rows in ((top_metric, getattr(top, kind)), (bottom_metric, getattr(bottom, kind)))
    ]
    return (
        f"I can't compute the {metric.label} of {top.company} for {wanted}: it needs "
        f"{top_metric.label} and {bottom_metric.label} of the same period, and the data has "
        f"{' and '.join(ends)}. I can give either figure on its own."
    )


def derived_trend(q: Question, conv: Conversation, cite: Cite) -> str:
    """The figure for every fiscal year both parts are reported, oldest first."""
    metric = q.metrics[0]
    found = parts_of(q, conv, None)
    if found is None:
        return f"I couldn't compute the {metric.label}: the figures it needs did not come back."
    top, bottom = found
    by_year = list(reversed(pairs(metric, top, bottom, "annual")))
    if not by_year:
        return _cannot(q, top, bottom, "annual", Gated("annual", None))
    top_m, bottom_m = margin_parts(metric)
    header = ["Fiscal year", "Period ended", metric.label.capitalize(), top_m.label.capitalize(),
              bottom_m.label.capitalize()]  # fmt: skip
    body = [
        [f"FY{fiscal_year(a)}", str(a["end"]), _value(metric, (a, b)), money(a["value"]),
         money(b["value"])]
        for a, b in by_year
    ]  # fmt: skip
    newest = by_year[-1][0]
    return "\n".join([
        f"**{top.company}** — {metric.label} by fiscal year, computed from XBRL "
        f"`{top.concept}` and `{bottom.concept}`:", "", table(header, body), "",
        f"Latest source: its {cite(newest, top.cik)}.",
    ])  # fmt: skip


def derived_compare(q: Question, conv: Conversation, cite: Cite) -> str:
    """The figure of each company, one paragraph each."""
    steps: list[Step] = conv.done(FACTS)
    who = list(dict.fromkeys(str(s.input.get("company_identifier")) for s in steps))
    return "\n\n".join(derived(q, conv, cite, w) for w in who)
