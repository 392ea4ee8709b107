"""Questions answered by reading filings: a 10-K section ("What are Apple's risk
factors?", "Summarize NVIDIA's MD&A"), executive changes (8-K Item 5.02), and "What did
Tesla's latest 8-K say?". Plan: confirm the company, list or search its filings, read the
newest readable document, answer from its text."""

from __future__ import annotations

from demo_model.common import Next, confirmed, ident, lookup_step
from demo_model.conversation import Conversation
from demo_model.digest import (
    item_points,
    lead_sentences,
    risk_headlines,
    table_rows,
    topic_points,
)
from demo_model.fmt import count, fiscal_year, link
from demo_model.reading import (
    Candidate,
    candidate_for,
    failures,
    from_hits,
    from_list,
    next_read,
    read_call,
    read_doc,
    read_say,
)
from demo_model.reply import Call
from demo_model.results import Doc
from demo_model.shapes_filings import FILINGS, filing_table, filings_call, span_text, unavailable
from demo_model.understand import Question

__all__ = ["plan_exec", "plan_latest", "plan_section"]

FULL_TEXT = "search_sec_full_text"
ITEM_502 = "Departure of Directors or Certain Officers"
# What to read of the latest filing of a form: MD&A for periodic reports, all of an 8-K.
_LATEST_SECTION = {"10-K": "Item 7", "10-Q": "Item 2"}


def plan_section(q: Question, conv: Conversation) -> Next | str:
    assert q.topic is not None
    topic, form = q.topic, q.forms[0] if q.forms else q.topic.form
    first = lookup_step(q, conv)
    if first is not None:
        return first
    firm = q.firms[0]
    wanted = q.span.fiscal_year - q.span.back if q.span.fiscal_year else None
    if conv.can(FILINGS) and not conv.done(FILINGS):
        say = f"{confirmed(q.firms, conv)}I'll find its recent {form} filings{span_text(q.span)}."
        return Next(say, (filings_call(ident(firm, conv), q, form, 10 if wanted else 3),))
    candidates = from_list(conv.done(FILINGS))
    if wanted:  # only the report of the fiscal year asked, never a neighbour's
        candidates = [
            c for c in candidates if c.period and fiscal_year({"end": c.period}) == wanted
        ]
    section = topic.section if form == topic.form else None
    target = next_read(candidates, conv)
    if target is not None:
        what = f"its {section or form} ({topic.label})"
        return Next(read_say(target, conv, what), (read_call(target, section),))
    if not conv.done(FILINGS):
        return unavailable(FILINGS, "find the filing to read", conv)
    of_year = f" of FY{wanted}" if wanted else ""
    return _document_answer(q, conv, candidates, f"{topic.label} ({section or form}){of_year}")


def plan_exec(q: Question, conv: Conversation) -> Next | str:
    first = lookup_step(q, conv)
    if first is not None:
        return first
    firm = q.firms[0]
    if not conv.done(FILINGS) and not conv.done(FULL_TEXT):
        calls = _exec_searches(q, conv)
        if calls:
            say = (
                f"{confirmed(q.firms, conv)}Executive and board changes are reported in 8-K "
                "Item 5.02. I'll list the company's 8-Ks and search their text for that item."
            )
            return Next(say, calls)
    listed = from_list(conv.done(FILINGS), only_items="5.02")
    candidates = listed + from_hits(conv.done(FULL_TEXT), firm.cik)
    target = next_read(candidates, conv)
    if target is not None:
        return Next(read_say(target, conv, "its Item 5.02"), (read_call(target, "Item 5.02"),))
    answer = _document_answer(q, conv, candidates, "executive and director changes (Item 5.02)")
    if listed:
        answer += "\n\nAll 8-Ks in EDGAR's list that report Item 5.02:\n\n" + _table(listed)
    return answer


def _exec_searches(q: Question, conv: Conversation) -> tuple[Call, ...]:
    firm = q.firms[0]
    calls = []
    if conv.can(FILINGS):
        calls.append(filings_call(ident(firm, conv), q, "8-K", 40))
    if conv.can(FULL_TEXT):
        args: dict[str, object] = {"query": f'"{ITEM_502}"', "forms": ["8-K"], "cik": str(firm.cik)}
        if q.span.after:
            args["date_from"] = q.span.after.isoformat()
        if q.span.before:
            args["date_to"] = q.span.before.isoformat()
        calls.append(Call(FULL_TEXT, args))
    return tuple(calls)


def plan_latest(q: Question, conv: Conversation) -> Next | str:
    first = lookup_step(q, conv)
    if first is not None:
        return first
    firm, form = q.firms[0], q.forms[0]
    section = _LATEST_SECTION.get(form)
    if conv.can(FILINGS) and not conv.done(FILINGS):
        say = f"{confirmed(q.firms, conv)}I'll list its most recent {form} filings."
        return Next(say, (filings_call(ident(firm, conv), q, form, 5),))
    listed = from_list(conv.done(FILINGS))
    candidates = listed + from_hits(conv.done(FULL_TEXT), firm.cik)
    tried = len(conv.done("get_sec_filing"))
    target = next_read(candidates, conv) if tried < 2 or conv.done(FULL_TEXT) else None
    if target is not None:
        what = f"its {section}" if section else "the document"
        size = 8_000 if section is None else 20_000
        return Next(read_say(target, conv, what), (read_call(target, section, size),))
    if conv.can(FULL_TEXT) and not conv.done(FULL_TEXT) and read_doc(conv) is None:
        say = (
            f"The newest {form} documents are not readable here, so I'll search the filing "
            f"text for {firm.label}'s {form}s that are."
        )
        args = {"query": firm.label, "forms": [form], "cik": str(firm.cik)}
        return Next(say, (Call(FULL_TEXT, args),))
    what = f"the {form}{span_text(q.span)}" if q.span.after else f"the latest {form}"
    answer = _document_answer(q, conv, candidates, what)
    if listed:
        answer += f"\n\nThe {form} filings in EDGAR's list, newest first:\n\n" + _table(listed)
    return answer


def _table(candidates: list[Candidate]) -> str:
    return filing_table([
        {"filing_date": c.filed, "form": c.form, "report_date": c.period,
         "accession_number": c.accession, "url": c.url, "items": c.items}
        for c in candidates[:10]
    ])  # fmt: skip


def _document_answer(
    q: Question, conv: Conversation, candidates: list[Candidate], what: str
) -> str:
    company = _company_name(q, conv)
    found = read_doc(conv)
    if found is None:
        if not candidates and conv.tools_off:
            return f"I ran out of turns before I could find and read {what} for {company}."
        if not candidates:
            return f"I found no filing with {what} for {company}{span_text(q.span)}."
        tried = failures(conv)
        why = f" The documents I tried:\n\n{tried}" if tried else ""
        return (
            f"I found {count(len(candidates), 'filing')} of {company} with {what}, but could "
            f"not read any of them here, so I can't say what they contain.{why}"
        )
    _, doc = found
    filing = candidate_for(doc.url, candidates)
    skipped = sum(1 for s in conv.done("get_sec_filing") if s.is_error)
    return _intro(company, what, doc, filing, skipped) + "\n\n" + _digest(q, doc)


def _company_name(q: Question, conv: Conversation) -> str:
    for step in conv.done(FILINGS):
        company = step.data.get("company") if isinstance(step.data, dict) else None
        if isinstance(company, dict) and company.get("name"):
            return f"**{company['name']}**"
    return f"**{q.firms[0].label}**"


def _intro(company: str, what: str, doc: Doc, filing: Candidate | None, skipped: int) -> str:
    source = link(doc.url, filing.accession if filing else "document")
    when = f"{filing.form} filed {filing.filed}" if filing else "filing"
    period = ""
    if filing and filing.period:
        period = (
            f" (event date {filing.period})"
            if filing.form.startswith("8-K")
            else (f" for the period ended {filing.period}")
        )
    heading = f" — “{doc.heading}”" if doc.heading else ""
    size = f"{doc.total_chars:,} characters; I read the first {len(doc.text):,}"
    if doc.next_offset is None:
        size = f"{doc.total_chars:,} characters, read in full"
    note = ""
    if skipped:
        note = f" ({skipped} newer document{'s' if skipped > 1 else ''} could not be read here.)"
    return f"{company}, {what}: from the {when}{period}, accession {source}{heading}; {size}.{note}"


def _digest(q: Question, doc: Doc) -> str:
    if q.topic is not None and q.topic.key == "risk":
        lines, category = [], None
        for cat, headline in risk_headlines(doc.text):
            if cat and cat != category:
                lines += ["", f"**{cat}**", ""]
                category = cat
            lines.append(f"- {headline}")
        if lines:
            return "The risk factors it leads with:\n" + "\n".join(lines)
    points = item_points(doc.text) if doc.section is None or "." in (doc.section or "") else []
    if points:
        out = [f"- **{h}** — {' '.join(s) or '(no text under this item)'}" for h, s in points]
        rows = table_rows(doc.text, r"officer|president|chief|director")
        if rows:
            out += ["", "People named in its tables:", "", *(f"- {r}" for r in rows)]
        return "What it says:\n\n" + "\n".join(out)
    topics = topic_points(doc.text)
    if topics:
        return "Its main points:\n\n" + "\n".join(f"- **{h}**: {s}" for h, s in topics)
    prose = [ln for ln in doc.text.splitlines() if len(ln) > 80][:3]
    return "It begins:\n\n" + "\n\n".join(f"> {lead_sentences(p, 2)}" for p in prose)
