"""Questions about reported figures, answered from XBRL data: one figure ("What was
Apple's net income last year?"), its history ("How has NVIDIA's revenue grown?", EPS
history), several companies side by side (one call per company, in parallel), a balance
sheet (one call per line, in parallel), and a ranking across companies (XBRL frames)."""

from __future__ import annotations

import datetime as dt

from demo_model import compare_answers, facts_answers
from demo_model.changes import change_answer
from demo_model.common import Next, firm_names, ident
from demo_model.conversation import Conversation
from demo_model.facts_answers import calendar_call
from demo_model.margins import derived_compare, derived_trend, margin_parts
from demo_model.periods import wants_calendar
from demo_model.reply import Call
from demo_model.shapes_filings import FILINGS, filings_call, unavailable
from demo_model.understand import Question
from demo_model.vocab import METRIC_BY_KEY, Metric

__all__ = [
    "plan_balance_sheet",
    "plan_compare",
    "plan_metric",
    "plan_overview",
    "plan_rank",
    "plan_trend",
]

FACTS = "get_sec_company_facts"
FRAMES = "get_sec_xbrl_frames"
MAX_CALLS = 8


def _facts_call(identifier: str, metric: Metric, limit: int) -> Call:
    args = {"company_identifier": identifier, "concept": metric.facts_key, "limit": limit}
    return Call(FACTS, args)


def _labels(metrics: tuple[Metric, ...] | list[Metric]) -> str:
    names = [m.label for m in metrics]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _fallback(q: Question, conv: Conversation) -> Next | None:
    """When the XBRL data is not available, list the annual reports the figures are in."""
    done = conv.done(FACTS)
    if not done or not all(s.is_error for s in done) or conv.done(FILINGS):
        return None
    if not conv.can(FILINGS):
        return None
    say = (
        "The XBRL figures aren't available for this company. I'll list its recent annual "
        "reports instead, where the figures are published."
    )
    return Next(say, (filings_call(ident(q.firms[0], conv), q, "10-K", 5),))


def plan_metric(q: Question, conv: Conversation) -> Next | str:
    metrics = q.metrics[:1] if q.metrics[0].ratio else q.metrics[:3]
    if conv.can(FACTS) and not conv.done(FACTS):
        parts = [p for m in metrics for p in margin_parts(m)]
        say = f"I'll fetch {q.firms[0].label}'s reported {_labels(parts)} from its XBRL data"
        if metrics[0].ratio:
            say += f" and compute its {metrics[0].label} from them"
        calls = tuple(_facts_call(q.firms[0].ticker, m, _limit(q, conv)) for m in parts)
        if any(wants_calendar(q.span, m.instant) or (q.years and m.instant) for m in parts):
            say += ", and the end dates of its fiscal years, to place the year's last day"
            calls += (calendar_call(q.firms[0].ticker, _calendar_limit(q)),)
        return Next(say + ".", calls)
    write = change_answer if q.years else facts_answers.metric
    return _fallback(q, conv) or _answer_or_unavailable(q, conv, write)


def _limit(q: Question, conv: Conversation) -> int:
    """Periods enough to reach any fiscal year the data holds: sixteen years of annual
    values, or sixteen years of balance-sheet dates (up to four a year). One limit per
    kind, so the same figure is the same call whichever year is asked."""
    if q.span.named:
        return QUARTER_LIMIT
    return INSTANT_LIMIT if any(m.instant for m in q.metrics) else FLOW_LIMIT


FLOW_LIMIT, INSTANT_LIMIT, QUARTER_LIMIT = 16, 64, 80


def _calendar_limit(q: Question) -> int:
    """The fiscal years, and for a balance at a named quarter's end its quarters too."""
    return QUARTER_LIMIT if q.span.named and any(m.instant for m in q.metrics) else FLOW_LIMIT


def _derived(q: Question, conv: Conversation, write: facts_answers.Writer) -> Next | str:
    """A margin or free cash flow: both reported parts for each company, in parallel."""
    metric, firms = q.metrics[0], q.firms[: MAX_CALLS // 2]
    if conv.can(FACTS) and not conv.done(FACTS):
        parts = margin_parts(metric)
        years = max(_years(q, conv.today), _limit(q, conv))
        calls = tuple(_facts_call(f.ticker, m, years) for f in firms for m in parts)
        if wants_calendar(q.span, False):
            calls += tuple(calendar_call(f.ticker, FLOW_LIMIT) for f in firms)
        say = (
            f"I'll fetch the {_labels(parts)} of {firm_names(firms)} from XBRL, in parallel, "
            f"and compute the {metric.label} from them."
        )
        return Next(say, calls)
    failed = [facts_answers.failed(s) for s in conv.done(FACTS) if s.is_error]
    return "\n\n".join(failed) if failed else _answer_or_unavailable(q, conv, write)


def plan_trend(q: Question, conv: Conversation) -> Next | str:
    if q.metrics[0].ratio:
        return _derived(q, conv, lambda q, c: derived_trend(q, c, facts_answers.filing_ref))
    metrics = list(q.metrics[:2])
    if metrics[0].key == "eps":
        metrics = [metrics[0], _basic_eps()]
    years = _years(q, conv.today)
    if conv.can(FACTS) and not conv.done(FACTS):
        say = (
            f"I'll pull {q.firms[0].label}'s {_labels(metrics)} history from its XBRL data, "
            f"{years} years of annual values and the recent quarters."
        )
        return Next(say, tuple(_facts_call(q.firms[0].ticker, m, years) for m in metrics))
    return _fallback(q, conv) or _answer_or_unavailable(q, conv, facts_answers.trend)


def _basic_eps() -> Metric:
    eps = METRIC_BY_KEY["eps"]
    return Metric("eps_basic", "basic EPS", "eps_basic", eps.concepts[1:], eps.unit,
                  False, eps.pattern)  # fmt: skip


def _years(q: Question, today: dt.date) -> int:
    start = q.span.after.year if q.span.after else None
    return min(20, max(2, today.year - start + 1)) if start else 6


def plan_compare(q: Question, conv: Conversation) -> Next | str:
    metric = q.metrics[0]
    if metric.ratio:
        return _derived(q, conv, lambda q, c: derived_compare(q, c, facts_answers.filing_ref))
    if conv.can(FACTS) and not conv.done(FACTS):
        limit = _limit(q, conv) if q.span.names_year else 3
        firms = q.firms[: MAX_CALLS // 2]
        calls = tuple(_facts_call(f.ticker, metric, limit) for f in firms)
        if wants_calendar(q.span, metric.instant):
            calls += tuple(calendar_call(f.ticker, FLOW_LIMIT) for f in firms)
        say = (
            f"I'll fetch the {metric.label} of {firm_names(q.firms)} from their XBRL data, "
            "one request per company, in parallel."
        )
        return Next(say, calls)
    return _answer_or_unavailable(q, conv, compare_answers.compare)


def plan_overview(q: Question, conv: Conversation) -> Next | str:
    if conv.can(FACTS) and not conv.done(FACTS):
        say = f"I'll fetch the key figures {q.firms[0].label} reports in its XBRL data."
        return Next(say, (Call(FACTS, {"company_identifier": q.firms[0].ticker}),))
    return _answer_or_unavailable(q, conv, compare_answers.overview)


def plan_balance_sheet(q: Question, conv: Conversation) -> Next | str:
    if q.span.names_year and not q.span.quarter:
        return _dated_balance_sheet(q, conv)
    if conv.can(FACTS) and not conv.done(FACTS):
        say = (
            f"I'll fetch the key figures {q.firms[0].label} reports in XBRL; the summary "
            "includes the latest balance-sheet values."
        )
        return Next(say, (Call(FACTS, {"company_identifier": q.firms[0].ticker}),))
    return _answer_or_unavailable(q, conv, compare_answers.balance_sheet)


def _dated_balance_sheet(q: Question, conv: Conversation) -> Next | str:
    """The balance sheet at the end of a year: each line's history and the fiscal calendar,
    in parallel, and the values dated on that year's last day."""
    firm, limit = q.firms[0], INSTANT_LIMIT
    if conv.can(FACTS) and not conv.done(FACTS):
        lines = [METRIC_BY_KEY[key] for key in compare_answers.BALANCE_SHEET_METRICS]
        calls = tuple(_facts_call(firm.ticker, m, limit) for m in lines)
        say = (
            f"I'll fetch each line of {firm.label}'s balance sheet from its XBRL data and the "
            "end dates of its fiscal years, in parallel, to read the values on the year's last day."
        )
        return Next(say, (*calls, calendar_call(firm.ticker, FLOW_LIMIT)))
    return _answer_or_unavailable(q, conv, compare_answers.dated_balance_sheet)


def plan_rank(q: Question, conv: Conversation) -> Next | str:
    metric = q.metrics[0]
    year = q.span.calendar_year or q.span.fiscal_year or conv.today.year - 1
    done = conv.done(FRAMES)
    if conv.can(FRAMES) and not done:
        return Next(_rank_say(metric, year), _frame_calls(metric, year))
    if conv.can(FRAMES) and all(s.is_error for s in done) and len(done) == len(metric.concepts):
        earlier = year - 1
        say = f"SEC has no frame for CY{year} yet; I'll try calendar {earlier} instead."
        return Next(say, _frame_calls(metric, earlier))
    return _answer_or_unavailable(q, conv, compare_answers.rank, FRAMES)


def _rank_say(metric: Metric, year: int) -> str:
    concepts = " and ".join(metric.concepts)
    both = ", both in parallel, since companies use either" if len(metric.concepts) > 1 else ""
    return (
        f"I'll rank companies by {metric.label} for calendar {year} with SEC's XBRL frames "
        f"({concepts}{both})."
    )


def _frame_calls(metric: Metric, year: int) -> tuple[Call, ...]:
    period = f"CY{year}Q4I" if metric.instant else f"CY{year}"
    return tuple(
        Call(FRAMES, {"concept": c, "period": period, "unit": metric.unit, "limit": 10})
        for c in metric.concepts
    )


def _answer_or_unavailable(
    q: Question, conv: Conversation, write: facts_answers.Writer, tool: str = FACTS
) -> str:
    if not conv.done(tool):
        return unavailable(tool, "fetch the reported figures", conv)
    return write(q, conv)
