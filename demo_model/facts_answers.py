"""Answers written from get_sec_company_facts and get_sec_xbrl_frames results. Every
figure is a reported value (formatted) or a change computed from two reported values."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from demo_model.conversation import Conversation, Step
from demo_model.fmt import change, fiscal_year, link, money, period, table
from demo_model.fourth import fourth_quarter
from demo_model.margins import derived
from demo_model.periods import CALENDAR, Gated, asked_text, gate
from demo_model.reply import Call
from demo_model.results import NOT_REPORTED, Series, as_of, as_series, held_note, reason_of, text_of
from demo_model.shapes_filings import FILINGS, filings_answer
from demo_model.understand import Question
from demo_model.vocab import METRICS

FACTS = "get_sec_company_facts"

__all__ = [
    "CALENDAR",
    "FACTS",
    "Writer",
    "calendar_call",
    "calendar_rows",
    "cap",
    "failed",
    "filing_ref",
    "label_of",
    "metric",
    "series_steps",
    "trend",
]

Writer = Callable[[Question, Conversation], str]
_LABELS = {m.facts_key: m.label for m in METRICS} | {"eps_basic": "basic EPS"}


def label_of(step: Step) -> str:
    concept = step.input.get("concept")
    return _LABELS.get(str(concept), str(concept)) if concept else "key figures"


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def filing_ref(row: dict[str, Any], cik: int | None) -> str:
    """ "10-K filed 2025-02-26, accession [0001045810-25-000023](index link)"."""
    accession = str(row.get("accession_number") or "")
    folder = accession.replace("-", "")
    url = f"https://www.sec.gov/Archives/edgar/data/{cik}/{folder}/{accession}-index.html"
    cited = link(url, accession) if cik and accession else accession
    return f"{row.get('form')} filed {row.get('filed')}, accession {cited}"


def failed(step: Step, q: Question | None = None) -> str:
    who = str(step.input.get("company_identifier", ""))
    named = next((f.label for f in q.firms if who in (str(f.cik), f.ticker)), who) if q else who
    asked = ""
    if q is not None and (q.span.names_year or q.span.quarter):
        year = q.span.fiscal_year - q.span.back if q.span.fiscal_year else None
        asked = f" for {asked_text(q.span, year)}"
    text = f"I couldn't get the {label_of(step)} of {named}{asked}: {reason_of(step)}."
    if reason_of(step) == NOT_REPORTED:
        text += f" Ask for a figure {named} reports, such as its revenue or net income."
    return text + held_note(step, "XBRL figures")


def calendar_call(identifier: str, limit: int) -> Call:
    return Call(FACTS, {"company_identifier": identifier, "concept": CALENDAR, "limit": limit})


def calendar_rows(
    conv: Conversation, who: object, kind: str = "annual"
) -> list[dict[str, Any]] | None:
    """The company's annual periods (or its quarters), from the calendar call made for it."""
    for step in conv.done(FACTS):
        if step.input.get("concept") == CALENDAR and step.input.get("company_identifier") == who:
            s = as_series(step)
            return list(getattr(s, kind)) if s is not None else None
    return None


def series_steps(conv: Conversation, tool: str = FACTS) -> list[Step]:
    """The figures asked for (not the calendar calls made to place them)."""
    return [s for s in conv.done(tool) if s.input.get("concept") != CALENDAR]


def metric(q: Question, conv: Conversation) -> str:
    if q.metrics and q.metrics[0].ratio is not None:
        steps = series_steps(conv)
        broken = [failed(s, q) for s in steps if s.is_error]
        parts = broken[:1] if broken else [derived(q, conv, filing_ref)]
    else:
        parts = [_metric_part(step, q, conv) for step in series_steps(conv)]
    return "\n\n".join(parts) + filings_note(q, conv)


_DID_IT = re.compile(
    r"^\W*(?:did|was|is|were|has|does)\b.*\b(?:money|profitable|black|red)\b", re.I
)


def _pick(s: Series, q: Question) -> tuple[str, list[dict[str, Any]]]:
    """Which values answer the question: the latest quarter, balance-sheet dates, years."""
    if q.span.quarter and s.quarterly:
        return "quarterly", s.quarterly
    return ("instant", s.instant) if s.instant else ("annual", s.annual)


def _metric_part(step: Step, q: Question, conv: Conversation) -> str:
    s = as_series(step)
    if s is None:
        return failed(step, q)
    kind, history = _pick(s, q)
    who = step.input.get("company_identifier")
    calendar, quarters = calendar_rows(conv, who), calendar_rows(conv, who, "quarterly")
    gated = gate(q.span, kind, history, calendar, as_of(conv, step), quarters)
    pick = gated.row
    if pick is None:
        computed = fourth_quarter(gated.quarter, s, calendar, label_of(step), filing_ref)
        return computed or _missing(s, step, q, gated)
    loss = " (a loss)" if pick["value"] < 0 and s.unit == "USD" else ""
    text = (
        f"**{s.company}** reported {label_of(step)} of **{money(pick['value'], s.unit)}**{loss} "
        f"({when(pick, kind, gated)}), per its {filing_ref(pick, s.cik)}."
    )
    if _DID_IT.search(q.text) and s.unit == "USD":
        text = ("No, a loss: " if pick["value"] < 0 else "Yes: ") + text
    return text + _change(s, history, pick, kind) + f" (XBRL concept `{s.concept}`.)"


def when(row: dict[str, Any], kind: str, gated: Gated) -> str:
    """The period of a value, in the words of the question's period."""
    if kind == "instant" and gated.year:
        return f"at {row['end']}, the end of FY{gated.year}"
    return gated.label or period(row, kind)


def _missing(s: Series, step: Step, q: Question, gated: Gated) -> str:
    """Said plainly: the period asked for is not in the data (and why), what the data
    covers, and no figure at all."""
    where = "the offline snapshot" if "offline" in text_of(step, "source") else "the XBRL data"
    label, asked = label_of(step), asked_text(q.span, gated.year)
    text = f"I have no {label} of {s.company} for {asked}: {gated.miss}."
    if s.instant:
        return text + (
            f" In {where}, its {label} is reported at dates from {s.instant[-1]['end']} to "
            f"{s.instant[0]['end']}."
        )
    if not s.annual:
        return text + f" {cap(where)} has no annual {label} for {s.company}."
    newest, oldest = s.annual[0], s.annual[-1]
    last_end = max([newest["end"], *(r["end"] for r in s.quarterly[:1])])
    return text + (
        f" In {where}, its annual {label} runs from FY{fiscal_year(oldest)} to "
        f"FY{fiscal_year(newest)}, and its figures for {s.company} end with the period ended "
        f"{last_end}. I can answer for any of those years: ask for "
        f'"{s.company} {label} FY{fiscal_year(newest)}".'
    )


def _change(s: Series, history: list[dict[str, Any]], pick: dict[str, Any], kind: str) -> str:
    """The change on the period before, as a percentage: no figure of another period."""
    older = history[history.index(pick) + 1 :]
    if not older or kind == "instant":
        return ""
    prev = older[0] if kind == "annual" else _year_ago(pick, older)
    if prev is None:
        return ""
    if kind == "annual" and fiscal_year(prev) != fiscal_year(pick) - 1:
        return ""
    moved = change(pick["value"], prev["value"])
    if moved == "n/m":
        return ""
    return f" That is a change of {moved} on {period(prev, kind)}."


def _year_ago(pick: dict[str, Any], older: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The same quarter a year earlier (a fourth quarter is missing from the quarters)."""
    end = dt.date.fromisoformat(str(pick["end"]))
    return next(
        (r for r in older if 357 <= (end - dt.date.fromisoformat(str(r["end"]))).days <= 371),
        None,
    )


def filings_note(q: Question, conv: Conversation) -> str:
    listed = conv.done(FILINGS)
    if not listed:
        return ""
    return "\n\nIts recent annual reports, where the figures are published:\n\n" + "\n\n".join(
        filings_answer(step, q) for step in listed
    )


def trend(q: Question, conv: Conversation) -> str:
    found = [(step, as_series(step)) for step in series_steps(conv)]
    series = [(step, s) for step, s in found if s is not None and s.annual]
    failures = [failed(step, q) for step, s in found if s is None]
    if not series:
        return "\n\n".join(failures or ["The data has no annual values."]) + filings_note(q, conv)
    step, main = series[0]
    annual = _in_span(list(reversed(main.annual)), q)
    label = label_of(step)
    lines = [f"**{main.company}** — {label}, fiscal years as reported (XBRL `{main.concept}`):"]
    lines += ["", _trend_table(annual, series, main.unit), "", _trend_summary(annual, main, label)]
    lines.append("")
    if main.quarterly and not q.span.before:
        quarter = main.quarterly[0]
        lines.append(
            f"Most recent quarter: {money(quarter['value'], main.unit)} "
            f"({period(quarter, 'quarterly')}, per its {filing_ref(quarter, main.cik)})."
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
    header = ["Fiscal year", "Period ended", cap(label_of(series[0][0])), "Change"]
    header += [cap(label_of(step)) for step, _ in extra]
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
