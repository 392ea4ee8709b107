"""Answers written from get_sec_company_facts and get_sec_xbrl_frames results. Every
figure is a reported value (formatted) or a change computed from two reported values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.demo.conversation import Conversation, Step
from gateway.demo.fmt import change, fiscal_year, link, money, period, table
from gateway.demo.results import Series, as_series, error_of, rows, text_of
from gateway.demo.shapes_filings import FILINGS, filings_answer
from gateway.demo.understand import Question
from gateway.demo.vocab import METRICS

__all__ = ["Writer", "balance_sheet", "compare", "metric", "rank", "trend"]

Writer = Callable[[Question, Conversation], str]
_LABELS = {m.facts_key: m.label for m in METRICS} | {"eps_basic": "basic EPS"}


def _label(step: Step) -> str:
    return _LABELS.get(str(step.input.get("concept")), str(step.input.get("concept")))


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _filing(row: dict[str, Any], cik: int | None) -> str:
    """ "10-K filed 2025-02-26, accession [0001045810-25-000023](index link)"."""
    accession = str(row.get("accession_number") or "")
    folder = accession.replace("-", "")
    url = f"https://www.sec.gov/Archives/edgar/data/{cik}/{folder}/{accession}-index.html"
    cited = link(url, accession) if cik and accession else accession
    return f"{row.get('form')} filed {row.get('filed')}, accession {cited}"


def _failed(step: Step) -> str:
    who = step.input.get("company_identifier", "")
    return f"I couldn't get the {_label(step)} of {who}: {error_of(step)}"


def _series(conv: Conversation, tool: str = "get_sec_company_facts") -> list[Step]:
    return conv.done(tool)


def metric(q: Question, conv: Conversation) -> str:
    parts = [_metric_part(step, q) for step in _series(conv)]
    return "\n\n".join(parts) + _filings_note(q, conv)


def _metric_part(step: Step, q: Question) -> str:
    s = as_series(step)
    if s is None:
        return _failed(step)
    label, kind = _label(step), "instant" if s.instant else "annual"
    history = s.instant if s.instant else s.annual
    wanted = q.span.fiscal_year if kind == "annual" else None
    pick = next((r for r in history if fiscal_year(r) == wanted), None) if wanted else None
    if pick is None and history:
        pick = history[0]
    if pick is None:
        return f"{s.company} reports {s.concept}, but with no annual or balance-sheet values."
    text = (
        f"**{s.company}** reported {label} of **{money(pick['value'], s.unit)}** "
        f"({period(pick, kind)}), per its {_filing(pick, s.cik)}."
    )
    if wanted and fiscal_year(pick) != wanted:
        text = f"There is no FY{wanted} value in the data. " + text
    older = history[history.index(pick) + 1 :]
    if older:
        prev = older[0]
        text += (
            f" The period before ({period(prev, kind)}) it was {money(prev['value'], s.unit)}, "
            f"a change of {change(pick['value'], prev['value'])}."
        )
    if kind == "annual" and s.quarterly and s.quarterly[0]["end"] > pick["end"]:
        quarter = s.quarterly[0]
        text += (
            f" Most recent quarter: {money(quarter['value'], s.unit)} "
            f"({period(quarter, 'quarterly')}, {quarter.get('form')} filed {quarter.get('filed')})."
        )
    return text + f" (XBRL concept `{s.concept}`.)"


def _filings_note(q: Question, conv: Conversation) -> str:
    listed = conv.done(FILINGS)
    if not listed:
        return ""
    return "\n\nIts recent annual reports, where the figures are published:\n\n" + "\n\n".join(
        filings_answer(step, q) for step in listed
    )


def trend(q: Question, conv: Conversation) -> str:
    found = [(step, as_series(step)) for step in _series(conv)]
    series = [(step, s) for step, s in found if s is not None and s.annual]
    failures = [_failed(step) for step, s in found if s is None]
    if not series:
        return "\n\n".join(failures or ["The data has no annual values."]) + _filings_note(q, conv)
    step, main = series[0]
    annual = _in_span(list(reversed(main.annual)), q)
    label = _label(step)
    lines = [f"**{main.company}** — {label}, fiscal years as reported (XBRL `{main.concept}`):"]
    lines += ["", _trend_table(annual, series, main.unit), "", _trend_summary(annual, main, label)]
    lines.append("")
    if main.quarterly and not q.span.before:
        quarter = main.quarterly[0]
        lines.append(
            f"Most recent quarter: {money(quarter['value'], main.unit)} "
            f"({period(quarter, 'quarterly')}, per its {_filing(quarter, main.cik)})."
        )
    accessions = list(dict.fromkeys(str(r.get("accession_number")) for r in reversed(annual)))
    cited = ", ".join(accessions[:4])
    lines += ["", f"Sources: the latest filing reporting each year (accessions {cited})."]
    return "\n".join([*lines, "", *failures])


def _in_span(annual: list[dict[str, Any]], q: Question) -> list[dict[str, Any]]:
    after, before = q.span.after, q.span.before
    first = after.year if after else 0
    final = before.year if before else 9999
    return [r for r in annual if first <= fiscal_year(r) <= final] or annual


def _trend_table(annual: list[dict[str, Any]], series: list[tuple[Step, Series]], unit: str) -> str:
    extra = [(step, s) for step, s in series[1:]]
    header = ["Fiscal year", "Period ended", _cap(_label(series[0][0])), "Change"]
    header += [_cap(_label(step)) for step, _ in extra]
    body, previous = [], None
    for row in annual:
        cells = [f"FY{fiscal_year(row)}", str(row["end"]), money(row["value"], unit)]
        cells.append(change(row["value"], previous) if previous is not None else "–")
        for _, s in extra:
            same = next((r for r in s.annual if r["end"] == row["end"]), None)
            cells.append(money(same["value"], s.unit) if same else "–")
        body.append(cells)
        previous = row["value"]
    return table(header, body)


def _trend_summary(annual: list[dict[str, Any]], s: Series, label: str) -> str:
    first, last = annual[0], annual[-1]
    if first is last:
        return f"Only one fiscal year is reported: FY{fiscal_year(last)}."
    years = fiscal_year(last) - fiscal_year(first)
    text = (
        f"From FY{fiscal_year(first)} to FY{fiscal_year(last)}, {label} went from "
        f"{money(first['value'], s.unit)} to {money(last['value'], s.unit)} "
        f"({change(last['value'], first['value'])})"
    )
    if years > 1 and first["value"] > 0 and last["value"] > 0:
        cagr = ((last["value"] / first["value"]) ** (1 / years) - 1) * 100
        text += f", about {cagr:+.1f}% a year compounded"
    return text + "."


def compare(q: Question, conv: Conversation) -> str:
    entries, failures = [], []
    wanted = q.span.fiscal_year
    for step in _series(conv):
        s = as_series(step)
        history = (s.instant or s.annual) if s else []
        if wanted and s and not s.instant:
            start = next((i for i, r in enumerate(history) if fiscal_year(r) == wanted), None)
            history = history[start:] if start is not None else []
        if s is None or not history:
            failures.append(_failed(step) if s is None else f"{s.company}: no FY{wanted} value.")
            continue
        entries.append((s, history))
    if not entries:
        return "\n\n".join(failures)
    entries.sort(key=lambda e: e[1][0]["value"], reverse=True)
    label, kind = _label(_series(conv)[0]), "instant" if entries[0][0].instant else "annual"
    body = []
    for s, history in entries:
        latest, prev = history[0], history[1] if len(history) > 1 else None
        moved = change(latest["value"], prev["value"]) if prev else "–"
        body.append([s.company, period(latest, kind), money(latest["value"], s.unit), moved,
                     _filing(latest, s.cik)])  # fmt: skip
    top, top_rows = entries[0]
    which = f"fiscal year {wanted}" if wanted else "latest fiscal year"
    text = [
        f"{_cap(label)}, {which} of each company (XBRL data):", "",
        table(["Company", "Period", _cap(label), "vs. prior year", "Reported in"], body), "",
        f"**{top.company}** reports the largest {label}: {money(top_rows[0]['value'], top.unit)}.",
    ]  # fmt: skip
    if len({r[0]["end"][5:] for _, r in entries}) > 1:
        text.append(
            "Their fiscal years end on different dates, so the periods differ (see Period)."
        )
    return "\n".join([*text, "", *failures] if failures else text)


BALANCE_SHEET = (
    ("total_assets", "Total assets"),
    ("total_liabilities", "Total liabilities"),
    ("stockholders_equity", "Stockholders' equity"),
    ("cash_and_equivalents", "Cash and cash equivalents"),
    ("long_term_debt", "Long-term debt"),
)


def balance_sheet(q: Question, conv: Conversation) -> str:
    step = _series(conv)[0]
    if step.is_error or not isinstance(step.data, dict):
        return _failed(step)
    metrics = step.data.get("metrics") if isinstance(step.data.get("metrics"), dict) else {}
    company = step.data.get("company") if isinstance(step.data.get("company"), dict) else {}
    assert isinstance(metrics, dict) and isinstance(company, dict)
    body, cited = [], ""
    for key, label in BALANCE_SHEET:
        found = metrics.get(key)
        latest = [r for r in found.get("latest") or [] if isinstance(r, dict)] if found else []
        if not latest:
            continue
        row, prev = latest[0], latest[1] if len(latest) > 1 else None
        cited = cited or _filing(row, company.get("cik"))
        cells = [label, money(row["value"]), str(row["end"])]
        if prev:
            cells += [money(prev["value"]), str(prev["end"]), change(row["value"], prev["value"])]
        body.append(cells if prev else [*cells, "–", "–", "–"])
    if not body:
        return f"{company.get('name', 'The company')} reports no balance-sheet values in XBRL."
    header = ["Item", "Latest", "As of", "Previous", "As of", "Change"]
    intro = f"**{company.get('name')}** balance sheet, latest reported values (from its {cited}):"
    return "\n".join([intro, "", table(header, body)])


def rank(q: Question, conv: Conversation) -> str:
    steps = conv.done("get_sec_xbrl_frames")
    merged: dict[Any, tuple[dict[str, Any], Step]] = {}
    for step in steps:
        for row in rows(step, "data"):
            merged.setdefault(row.get("cik"), (row, step))
    failures = [
        f"- `{s.input.get('concept')}` {s.input.get('period')}: {error_of(s)}"
        for s in steps
        if s.is_error
    ]
    if not merged:
        return "The XBRL frames returned no data:\n" + "\n".join(failures)
    ranked = sorted(merged.values(), key=lambda e: e[0].get("value") or 0, reverse=True)
    ok = next(s for s in steps if not s.is_error)
    unit, label = text_of(ok, "unit", "USD"), q.metrics[0].label
    body = []
    for n, (row, step) in enumerate(ranked, 1):
        span = f"{row['start']} to {row['end']}" if row.get("start") else f"at {row.get('end')}"
        concept = f"`{step.input.get('concept')}`"
        value = money(row.get("value") or 0, unit)
        body.append([str(n), str(row.get("entity")), value, span, concept,
                     str(row.get("accession_number"))])  # fmt: skip
    source = text_of(ok, "source")
    period_ = text_of(ok, "period")
    intro = f"Companies by {label} for {period_} (SEC XBRL frames; source: {source}):"
    text = [intro, "", table(["#", "Company", _cap(label), "Period", "Concept", "Accession"], body)]
    if "offline" in source:
        text += ["", "The offline snapshot has XBRL data for only a handful of companies, so "
                     "this ranks those; live EDGAR frames cover every filer."]  # fmt: skip
    return "\n".join(text + failures)
