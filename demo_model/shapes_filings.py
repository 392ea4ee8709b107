"""Company lookups and filing lists: "What is the CIK of Marvell?", "Find Tesla's 10-K
filings since 2020", "What has Microsoft filed recently?", and unknown companies."""

from __future__ import annotations

from collections import Counter
from typing import Any

from demo_model.common import LOOKUP, Next, confirmed, firm_names, ident, lookup_step
from demo_model.conversation import Conversation, Step
from demo_model.fmt import count, link, table
from demo_model.reply import Call
from demo_model.results import held_note, reason_of, rows, text_of
from demo_model.shapes_chat import holdings, what_i_can_answer
from demo_model.understand import Question, Span

__all__ = ["FILINGS", "filings_call", "plan_filings", "plan_lookup", "plan_unknown", "span_text"]

FILINGS = "search_sec_filings"
MAX_ROWS = 20


def plan_lookup(q: Question, conv: Conversation) -> Next | str:
    step = lookup_step(q, conv)
    if step is not None:
        return Next(f"I'll search SEC's company ticker list for {firm_names(q.firms)}.", step.calls)
    if not conv.done(LOOKUP):
        return unavailable(LOOKUP, "look companies up", conv)
    return "\n\n".join(_lookup_answer(s) for s in conv.done(LOOKUP))


def _lookup_answer(step: Step) -> str:
    term = step.input.get("search_term", "")
    if step.is_error:
        return f"The ticker lookup for “{term}” failed: {reason_of(step)}"
    matches = rows(step, "matches")
    if not matches:
        return f"SEC's ticker list has no company matching “{term}”."
    best = matches[0]
    same = [m for m in matches if m.get("cik") == best.get("cik")]
    others = [m for m in matches if m.get("cik") != best.get("cik")][:4]
    tickers = ", ".join(str(m.get("ticker")) for m in same)
    exchange = f", listed on {best['exchange']}" if best.get("exchange") else ""
    text = (
        f"**{best.get('name')}**: CIK **{best.get('cik')}**, ticker{'s' if len(same) > 1 else ''} "
        f"{tickers}{exchange} (matched by {best.get('match', 'name')} in SEC's ticker list)."
    )
    if others:
        listed = "; ".join(
            f"{m.get('name')} ({m.get('ticker')}, CIK {m.get('cik')})" for m in others
        )
        text += f"\n\nOther matches for “{term}”: {listed}."
    return text


def plan_unknown(q: Question, conv: Conversation) -> Next | str:
    term = q.unknown[0]
    if conv.can(LOOKUP) and not conv.done(LOOKUP):
        say = f"I don't recognise “{term}”; let me search SEC's company ticker list for it."
        return Next(say, (Call(LOOKUP, {"search_term": term}),))
    step = next(iter(conv.done(LOOKUP)), None)
    if step is None:
        return (
            f"I don't recognise “{term}” as a company, and I can't search SEC's ticker list here."
        )
    if step.is_error:
        return f"I couldn't search SEC's ticker list for “{term}”: {reason_of(step)}"
    matches = rows(step, "matches")
    if not matches:
        return (
            f"I found nothing: SEC's company ticker list has no company matching “{term}”, so "
            "there are no filings or figures I can report. Check the spelling, or ask with the "
            "company's ticker or CIK."
        )
    listed = "\n".join(
        f"- {m.get('name')}: ticker {m.get('ticker')}, CIK {m.get('cik')}" for m in matches[:5]
    )
    return (
        f"“{term}” is not an exact company name in SEC's ticker list. Close matches:\n\n{listed}"
        "\n\nAsk again with one of these tickers and I'll look up its filings or figures."
    )


def span_text(span: Span) -> str:
    if span.after and span.before:
        return f" filed between {span.after} and {span.before}"
    if span.after:
        return f" filed since {span.after}"
    if span.before:
        return f" filed up to {span.before}"
    return ""


def filings_call(ident_: str, q: Question, form: str | None, limit: int) -> Call:
    args: dict[str, Any] = {"company_identifier": ident_, "limit": limit}
    if form:
        args["filing_type"] = form
    if q.span.after:
        args["date_after"] = q.span.after.isoformat()
    if q.span.before:
        args["date_before"] = q.span.before.isoformat()
    return Call(FILINGS, args)


def plan_filings(q: Question, conv: Conversation) -> Next | str:
    first = lookup_step(q, conv)
    if first is not None:
        return first
    forms = ", ".join(q.forms) or None
    if conv.can(FILINGS) and not conv.done(FILINGS):
        limit = q.limit or (MAX_ROWS if q.span.after or q.span.before else 10)
        calls = tuple(filings_call(ident(f, conv), q, forms, limit) for f in q.firms)
        what = f"{forms} filings" if forms else "most recent filings"
        say = f"{confirmed(q.firms, conv)}Now I'll list {_their(q)} {what}{span_text(q.span)}."
        return Next(say.strip(), calls)
    if not conv.done(FILINGS):
        return unavailable(FILINGS, "list filings", conv)
    answer = "\n\n".join(filings_answer(s, q) for s in conv.done(FILINGS))
    if q.unclear:  # said, not silently dropped: the list is not limited to that period
        said = "”, “".join(q.unclear)
        answer = (
            f"I didn't understand the period “{said}”, so these are the latest filings, "
            'not limited to it (ask with years: "since 2024", "in 2025").\n\n' + answer
        )
    missing = [s for s in conv.done(FILINGS) if "offline snapshot" in reason_of(s)]
    for firm in q.firms if missing and len(missing) == len(conv.done(FILINGS)) else ():
        answer += f"\n\n{holdings(firm)} {what_i_can_answer(firm)}"
    return answer


def _their(q: Question) -> str:
    return "their" if len(q.firms) > 1 else "its"


def filings_answer(step: Step, q: Question) -> str:
    who = step.input.get("company_identifier", "")
    if step.is_error:
        named = next((f.label for f in q.firms if who in (str(f.cik), f.ticker)), who)
        return f"I couldn't list the filings of {named}: {reason_of(step)}." + held_note(
            step, "filing lists"
        )
    company = step.data.get("company", {}) if isinstance(step.data, dict) else {}
    name = f"**{company.get('name', who)}** (CIK {company.get('cik', who)})"
    form = step.input.get("filing_type")
    of_form = f" of form {form}" if form else ""
    span = _span_of(step)
    found = rows(step, "filings")
    notes = " ".join(str(n) for n in step.data.get("notes", [])) if found else ""
    if not found:
        source = text_of(step, "source")
        return f"{name}: no filings{of_form}{span} in EDGAR's list (source: {source})."
    listed = f"{count(len(found), 'filing')}{of_form}{span}"
    lines = [f"{name}: {listed}, newest first:", "", filing_table(found)]
    if not form:
        counts = Counter(str(f.get("form")) for f in found)
        lines += ["", "By form: " + ", ".join(f"{k} ×{v}" for k, v in counts.most_common()) + "."]
    if notes:
        lines += ["", notes]
    return "\n".join(lines)


def _span_of(step: Step) -> str:
    after, before = step.input.get("date_after"), step.input.get("date_before")
    if after and before:
        return f" filed between {after} and {before}"
    return f" filed since {after}" if after else (f" filed up to {before}" if before else "")


def filing_table(found: list[dict[str, Any]]) -> str:
    items = any(f.get("items") for f in found)
    header = ["Filed", "Form", "Period", "Accession number", *(["Items"] if items else [])]
    body = []
    for f in found[:MAX_ROWS]:
        row = [
            str(f.get("filing_date", "")),
            str(f.get("form", "")),
            str(f.get("report_date") or "–"),
            link(str(f.get("url", "")), str(f.get("accession_number", ""))),
        ]
        body.append(row + ([str(f.get("items") or "–")] if items else []))
    return table(header, body)


def unavailable(tool: str, what: str, conv: Conversation) -> str:
    if conv.tools_off:
        return f"I ran out of turns before I could {what}, so I have no results to report."
    return (
        f"I can't {what} in this conversation: the `{tool}` tool is not available to me here, "
        "and I only answer from what the tools return."
    )
