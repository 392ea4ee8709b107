"""Margins as percentages: gross, operating or net, computed from two reported figures of
the same period (the numerator and revenue), each shown with its value and filing."""

from __future__ import annotations

from typing import Any

from demo_model.conversation import Conversation, Step
from demo_model.fmt import fiscal_year, money, period
from demo_model.results import Series, as_series
from demo_model.understand import Question
from demo_model.vocab import METRIC_BY_KEY, Metric

__all__ = ["margin", "margin_parts"]

FACTS = "get_sec_company_facts"
Pair = tuple[dict[str, Any], dict[str, Any]]


def margin_parts(metric: Metric) -> tuple[Metric, ...]:
    """The reported figures a margin is computed from, or the metric itself."""
    if metric.ratio is None:
        return (metric,)
    return tuple(METRIC_BY_KEY[key] for key in metric.ratio)


def _series(conv: Conversation, metric: Metric) -> tuple[Step | None, Series | None]:
    for step in conv.done(FACTS):
        if step.input.get("concept") == metric.facts_key:
            return step, as_series(step)
    return None, None


def _pairs(top: list[dict[str, Any]], bottom: list[dict[str, Any]]) -> list[Pair]:
    """Values of the same period in both series, newest first."""
    by_period = {(r.get("start"), r["end"]): r for r in bottom}
    found = [(r, by_period.get((r.get("start"), r["end"]))) for r in top]
    return [(a, b) for a, b in found if b is not None and b["value"] > 0]


def _percent(pair: Pair) -> str:
    return f"{pair[0]['value'] / pair[1]['value'] * 100:.1f}%"


def margin(q: Question, conv: Conversation, cite: Any) -> str:
    """The margin asked for (latest year, a fiscal year, or the latest quarter)."""
    metric = q.metrics[0]
    top_metric, bottom_metric = margin_parts(metric)
    (_, top), (_, bottom) = _series(conv, top_metric), _series(conv, bottom_metric)
    if top is None or bottom is None:
        return f"I couldn't compute the {metric.label}: the figures it needs did not come back."
    kind = "quarterly" if q.span.quarter else "annual"
    pairs = _pairs(getattr(top, kind), getattr(bottom, kind))
    wanted = q.span.fiscal_year if kind == "annual" else None
    if wanted:
        pairs = [p for p in pairs if fiscal_year(p[0]) <= wanted]
    if not pairs or (wanted and fiscal_year(pairs[0][0]) != wanted):
        when = f"fiscal year {wanted}" if wanted else f"any {kind} period"
        return (
            f"The data has no {top_metric.label} and revenue of {top.company} for {when}, so I "
            f"can't give its {metric.label}. I can give the {metric.label} of the years it has: "
            f'ask for "{top.company} {metric.label}".'
        )
    pair = pairs[0]
    text = (
        f"**{top.company}**'s {metric.label} was **{_percent(pair)}** in "
        f"{period(pair[0], kind)}: {top_metric.label} of {money(pair[0]['value'])} on revenue "
        f"of {money(pair[1]['value'])}, per its {cite(pair[0], top.cik)}."
    )
    if len(pairs) > 1:
        text += f" The period before ({period(pairs[1][0], kind)}) it was {_percent(pairs[1])}."
    return text + f" (XBRL `{top.concept}` ÷ `{bottom.concept}`.)"
