"""Answers across companies or lines: side-by-side figures, a balance sheet, a ranking
from XBRL frames. Every figure is a reported value or a change between two of them."""

from __future__ import annotations

import datetime as dt
from typing import Any

from demo_model.changes import ASKS_GROWTH, fastest
from demo_model.conversation import Conversation, Step
from demo_model.facts_answers import (
    calendar_rows,
    cap,
    failed,
    filing_ref,
    label_of,
    series_steps,
)
from demo_model.fmt import change, fiscal_year, money, period, table
from demo_model.periods import asked_text, gate
from demo_model.results import Series, as_of, as_series, reason_of, rows, text_of, valued
from demo_model.shapes_chat import holdings, what_i_can_answer
from demo_model.spans import Span
from demo_model.understand import Question

__all__ = [
    "BALANCE_SHEET_METRICS",
    "balance_sheet",
    "compare",
    "dated_balance_sheet",
    "overview",
    "rank",
]

Entry = tuple[Series, list[dict[str, Any]]]


def _entries(q: Question, conv: Conversation) -> tuple[list[Entry], list[str]]:
    """Each company's values, newest first from the period asked (through the gate: the
    value of that period or none); and the failures."""
    entries: list[Entry] = []
    failures: list[str] = []
    for step in series_steps(conv):
        s = as_series(step)
        if s is None:
            failures.append(failed(step, q))
            continue
        kind = "instant" if s.instant else "annual"
        history = s.instant or s.annual
        calendar = calendar_rows(conv, step.input.get("company_identifier"))
        gated = gate(q.span, kind, history, calendar, as_of(conv, step))
        if gated.row is not None:
            entries.append((s, history[history.index(gated.row) :]))
        else:
            asked = asked_text(q.span, gated.year)
            failures.append(f"{s.company}: no value for {asked} ({gated.miss}).")
    return entries, failures


def compare(q: Question, conv: Conversation) -> str:
    entries, failures = _entries(q, conv)
    wanted = q.span.fiscal_year and q.span.fiscal_year - q.span.back
    if not entries:
        return "\n\n".join(failures)
    entries.sort(key=lambda e: e[1][0]["value"], reverse=True)
    label, kind = label_of(series_steps(conv)[0]), "instant" if entries[0][0].instant else "annual"
    body = []
    for s, history in entries:
        latest, prev = history[0], _year_before(history, kind)
        moved = change(latest["value"], prev["value"]) if prev else "–"
        body.append([s.company, period(latest, kind), money(latest["value"], s.unit), moved,
                     filing_ref(latest, s.cik)])  # fmt: skip
    top, top_rows = entries[0]
    which = asked_text(q.span, wanted) if q.span != Span() else "latest period"
    # What could not be compared comes first, said plainly: the table is then only part.
    text = [*failures, ""] if failures else []
    text += [
        f"{cap(label)}, {which} of each company (XBRL data):", "",
        table(["Company", "Period", cap(label), "vs. prior year", "Reported in"], body), "",
    ]  # fmt: skip
    if len(entries) > 1 and ASKS_GROWTH.search(q.text):
        text.append(fastest([_growth(s, rows, kind) for s, rows in entries], q.text))
    elif len(entries) > 1:
        largest = money(top_rows[0]["value"], top.unit)
        text.append(f"**{top.company}** reports the largest {label}: {largest}.")
    if len({r[0]["end"][5:] for _, r in entries}) > 1:
        text.append(
            "Their fiscal years end on different dates, so the periods differ (see Period)."
        )
    return "\n".join(text).strip()


def _growth(s: Series, history: list[dict[str, Any]], kind: str) -> tuple[str, str, float | None]:
    latest, prev = history[0], _year_before(history, kind)
    ok = prev is not None and prev["value"] > 0 and latest["value"] >= 0
    moved = latest["value"] / prev["value"] - 1 if ok and prev else None
    return s.company, period(latest, kind), moved


def _year_before(history: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    """The value a year before the first: the next annual one, or a balance a year older
    (never the quarter before, which is not the prior year)."""
    if kind != "instant":
        return history[1] if len(history) > 1 else None
    end = dt.date.fromisoformat(history[0]["end"])
    return next(
        (r for r in history[1:] if 350 <= (end - dt.date.fromisoformat(r["end"])).days <= 380),
        None,
    )


BALANCE_SHEET_METRICS = ("assets", "liabilities", "equity", "cash", "debt")
BALANCE_SHEET = (
    ("total_assets", "Total assets"),
    ("total_liabilities", "Total liabilities"),
    ("stockholders_equity", "Stockholders' equity"),
    ("cash_and_equivalents", "Cash and cash equivalents"),
    ("long_term_debt", "Long-term debt"),
)


def balance_sheet(q: Question, conv: Conversation) -> str:
    step = series_steps(conv)[0]
    data = step.data if isinstance(step.data, dict) and not step.is_error else {}
    metrics, company = data.get("metrics"), data.get("company")
    if not isinstance(metrics, dict) or not isinstance(company, dict):
        who = step.input.get("company_identifier")
        return f"I couldn't get the balance sheet of {who}: {reason_of(step)}"
    body, cited = [], ""
    for key, label in BALANCE_SHEET:
        found = metrics.get(key)
        latest = valued(found.get("latest")) if isinstance(found, dict) else []
        if not latest:
            continue
        row, prev = latest[0], latest[1] if len(latest) > 1 else None
        cited = cited or filing_ref(row, company.get("cik"))
        cells = [label, money(row["value"]), str(row["end"])]
        if prev:
            cells += [money(prev["value"]), str(prev["end"]), change(row["value"], prev["value"])]
        body.append(cells if prev else [*cells, "–", "–", "–"])
    if not body:
        return f"{company.get('name', 'The company')} reports no balance-sheet values in XBRL."
    header = ["Item", "Latest", "As of", "Previous", "As of", "Change"]
    intro = f"**{company.get('name')}** balance sheet, latest reported values (from its {cited}):"
    return "\n".join([intro, "", table(header, body)])


def dated_balance_sheet(q: Question, conv: Conversation) -> str:
    """The balance sheet on the last day of the year asked, each line through the gate."""
    body, cited, company, asked, misses = [], "", "", "", []
    for step in series_steps(conv):
        s = as_series(step)
        if s is None:
            misses.append(failed(step, q))
            continue
        company = company or s.company
        calendar = calendar_rows(conv, step.input.get("company_identifier"))
        gated = gate(q.span, "instant", s.instant, calendar, as_of(conv, step))
        asked = asked or asked_text(q.span, gated.year)
        if gated.row is None:
            misses.append(f"{cap(label_of(step))}: {gated.miss}.")
            continue
        row = gated.row
        cited = cited or f"{period(row, 'instant')}, from its {filing_ref(row, s.cik)}"
        body.append([cap(label_of(step)), money(row["value"], s.unit), str(row["end"])])
    if not body:
        who = company or q.firms[0].label
        return f"I have no balance-sheet values of {who} for {asked or 'that period'}: " + " ".join(
            misses
        )
    intro = f"**{company}** balance sheet at the end of {asked} ({cited}):"
    lines = [intro, "", table(["Item", "Value", "As of"], body)]
    if misses:
        lines += ["", "Not in the data for that date: " + " ".join(misses)]
    return "\n".join(lines)


def rank(q: Question, conv: Conversation) -> str:
    steps = conv.done("get_sec_xbrl_frames")
    merged: dict[Any, tuple[dict[str, Any], Step]] = {}
    for step in steps:
        for row in rows(step, "data"):
            merged.setdefault(row.get("cik"), (row, step))
    failures = [
        f"- `{s.input.get('concept')}` {s.input.get('period')}: {reason_of(s)}"
        for s in steps
        if s.is_error
    ]
    if not merged:
        return "The XBRL frames returned no data:\n" + "\n".join(failures)
    ranked = sorted(merged.values(), key=lambda e: e[0].get("value") or 0, reverse=True)
    ok = next(s for s in steps if not s.is_error)
    unit, label = text_of(ok, "unit", "USD"), q.metrics[0].label
    body = [_rank_row(n, row, step, unit) for n, (row, step) in enumerate(ranked, 1)]
    source = text_of(ok, "source")
    period_ = text_of(ok, "period")
    intro = f"Companies by {label} for {period_} (SEC XBRL frames; source: {source}):"
    text = [intro, "", table(["#", "Company", cap(label), "Period", "Concept", "Accession"], body)]
    if "offline" in source:
        text += ["", "The offline snapshot has XBRL data for only a handful of companies, so "
                     "this ranks those; live EDGAR frames cover every filer."]  # fmt: skip
    return "\n".join(text + failures)


def _rank_row(n: int, row: dict[str, Any], step: Step, unit: str) -> list[str]:
    span = f"{row['start']} to {row['end']}" if row.get("start") else f"at {row.get('end')}"
    value = money(row.get("value") or 0, unit)
    concept = f"`{step.input.get('concept')}`"
    return [str(n), str(row.get("entity")), value, span, concept, str(row.get("accession_number"))]


OVERVIEW = (
    ("revenue", "Revenue"),
    ("gross_profit", "Gross profit"),
    ("operating_income", "Operating income"),
    ("net_income", "Net income"),
    ("eps_diluted", "Diluted EPS"),
    ("operating_cash_flow", "Operating cash flow"),
)


def overview(q: Question, conv: Conversation) -> str:
    """Key figures of the latest fiscal year and the one before, all of the same years."""
    step = series_steps(conv)[0]
    data = step.data if isinstance(step.data, dict) and not step.is_error else {}
    metrics, company = data.get("metrics"), data.get("company")
    if not isinstance(metrics, dict) or not isinstance(company, dict):
        firm = q.firms[0]
        return f"{failed(step, q)}\n\n{holdings(firm)} {what_i_can_answer(firm)}"
    if q.span != Span():
        return _overview_of_year(q, conv, metrics, company)
    years: list[dict[str, Any]] = []
    body = []
    for key, label in OVERVIEW:
        found = metrics.get(key)
        annual = valued(found.get("annual")) if isinstance(found, dict) else []
        years = years or annual[:2]
        if not annual or not years or annual[0]["end"] != years[0]["end"]:
            continue  # never a figure of another year than the table's
        unit = str(found.get("unit") or "USD") if isinstance(found, dict) else "USD"
        prev = annual[1] if len(annual) > 1 and len(years) > 1 else None
        moved = change(annual[0]["value"], prev["value"]) if prev else "–"
        body.append([label, money(annual[0]["value"], unit),
                     money(prev["value"], unit) if prev else "–", moved])  # fmt: skip
    if not body:
        return f"{company.get('name', 'The company')} reports none of the key annual figures."
    heads = [f"FY{fiscal_year(r)}" for r in years] + ["–"] * (2 - len(years))
    intro = (
        f"**{company.get('name')}**, key figures of {period(years[0], 'annual')} and the year "
        f"before (XBRL, from its {filing_ref(years[0], company.get('cik'))}):"
    )
    table_ = table(["Figure", heads[0], heads[1], "Change"], body)
    more = f'For the balance sheet, ask "Show {q.firms[0].label}\'s balance sheet".'
    return "\n".join([intro, "", table_, "", more])


def _overview_of_year(
    q: Question, conv: Conversation, metrics: dict[str, Any], company: dict[str, Any]
) -> str:
    """Key figures of the one year asked, each through the gate; the summary holds the
    latest two fiscal years, so an older one is said to be missing, not replaced."""
    name = company.get("name") or q.firms[0].label
    body, cited, asked, misses = [], "", "", []
    for key, label in OVERVIEW:
        found = metrics.get(key)
        annual = valued(found.get("annual")) if isinstance(found, dict) else []
        gated = gate(q.span, "annual", annual, None, as_of(conv, series_steps(conv)[0]))
        asked = asked or asked_text(q.span, gated.year)
        if gated.row is None:
            misses.append(f"{label.lower()} ({gated.miss})")
            continue
        row = gated.row
        unit = str(found.get("unit") or "USD") if isinstance(found, dict) else "USD"
        cited = cited or f"{period(row, 'annual')}, from its {filing_ref(row, company.get('cik'))}"
        body.append([label, money(row["value"], unit)])
    if not body:
        return (
            f"I have no key figures of **{name}** for {asked}: the summary I read holds its "
            f"latest two fiscal years only ({'; '.join(misses[:1])}). Ask for one figure of "
            f'that year, such as "{q.firms[0].label} revenue {_year_words(q)}".'
        )
    intro = f"**{name}**, key figures of {asked} ({cited}):"
    return "\n".join([intro, "", table(["Figure", "Value"], body)])


def _year_words(q: Question) -> str:
    return f"FY{q.span.fiscal_year}" if q.span.fiscal_year else "last fiscal year"
