"""Searches ("Which filings mention 'supply chain'?", "What's the latest news on
NVIDIA?") and everything the demo cannot do, which gets a plain list of what it can."""

from __future__ import annotations

import re
from typing import Any

from demo_model.common import Next
from demo_model.conversation import Conversation, Step
from demo_model.fmt import count, link
from demo_model.reading import READ, read_doc
from demo_model.reply import Call
from demo_model.results import reason_of, rows, text_of
from demo_model.shapes_filings import FILINGS, filings_answer, filings_call, unavailable
from demo_model.understand import CUES, Question

__all__ = ["HELP", "plan_full_text", "plan_help", "plan_web"]

FULL_TEXT = "search_sec_full_text"
WEB = "web_search"

HELP = """I'm the **offline demo model** of this gateway: a deterministic, rule-based stand-in \
for Claude (not a language model), so the product works without an Anthropic API key. I \
answer research questions about US public companies by calling the SEC and search tools \
over several turns, and I answer only from what they return.

Questions I understand, for example:

- Filings: "Find Tesla's 10-K filings since 2020", "What has Microsoft filed recently?"
- Reading a filing: "What are Apple's risk factors?", "Summarize NVIDIA's MD&A", \
"What did Tesla's latest 10-Q say?"
- Executive changes (8-K Item 5.02): "Any executive changes at Meta?"
- Figures: "What was Apple's net income last year?", "How has NVIDIA's revenue grown?", \
"Show Apple's EPS history", "Show NVIDIA's balance sheet"
- Comparisons: "Compare revenue of Apple, NVIDIA and Alphabet", "Which companies reported \
the most revenue in CY2023?"
- Lookups and searches: "What is the CIK of Marvell?", "Which filings mention \
'supply chain'?", "Latest news about NVIDIA"

With an `ANTHROPIC_API_KEY` set, the gateway uses Claude instead."""


def plan_help(q: Question, conv: Conversation) -> str:
    if CUES["prices"].search(q.text):
        return (
            "I can't answer that: market prices (share price, market capitalisation, "
            "valuation) are not in SEC filings, and I have no market-data tool. I can answer "
            'from what companies file, for example "What was Apple\'s revenue last year?" or '
            '"Show NVIDIA\'s balance sheet".'
        )
    if q.metrics and not q.firms:
        what = " and ".join(m.label for m in q.metrics[:2])
        words = [w for w in q.unclear if w != q.span.unclear]
        unknown = f" (I didn't recognise “{'”, “'.join(words)}”)" if words else ""
        return (
            f"I can't answer that: I understood a question about {what}, but not which "
            "company it is about: I "
            f"found no company or person I know in it{unknown}, so I give no figure. Name the "
            "company "
            f'("Apple {q.metrics[0].label}", or its ticker, "AAPL"). For a ranking across '
            f'companies, ask "Which companies reported the most {q.metrics[0].label} in CY2024?"'
        )
    if q.unclear:
        said = "”, “".join(q.unclear)
        return (
            f"I didn't understand the period “{said}” (I found no company, and no earlier "
            "question to place it on), so I give no figure for a guessed period. Ask with the "
            'company and the fiscal year ("Apple revenue fiscal 2023").'
        )
    if q.text.strip() and not CUES["help"].search(q.text):
        return "That is outside what I can research. " + HELP
    return HELP


def _quoted(phrase: str) -> str:
    return f'"{phrase}"' if " " in phrase and '"' not in phrase else phrase


def plan_full_text(q: Question, conv: Conversation) -> Next | str:
    phrase = q.phrase or q.text
    if conv.can(FULL_TEXT) and not conv.done(FULL_TEXT):
        args: dict[str, Any] = {"query": _quoted(phrase), "limit": 10}
        if q.forms:
            args["forms"] = list(q.forms)
        if q.span.after:
            args["date_from"] = q.span.after.isoformat()
        if q.span.before:
            args["date_to"] = q.span.before.isoformat()
        if q.firms:
            args["cik"] = str(q.firms[0].cik)
        say = f"I'll run an EDGAR full-text search for “{phrase}”."
        return Next(say, (Call(FULL_TEXT, args),))
    hits = [h for s in conv.done(FULL_TEXT) for h in rows(s, "hits")]
    top = hits[0] if hits else None
    if top and conv.can(READ) and not conv.done(READ) and isinstance(top.get("offset"), int):
        say = (
            f"The top match is {top.get('company')}'s {top.get('form')} filed {top.get('filed')}. "
            "I'll read the passage around it."
        )
        args = {"url": top.get("url"), "offset": top["offset"], "max_chars": 1_500}
        return Next(say, (Call(READ, args),))
    if not conv.done(FULL_TEXT):
        return unavailable(FULL_TEXT, "search the filings' text", conv)
    return _full_text_answer(phrase, conv, hits)


def _full_text_answer(phrase: str, conv: Conversation, hits: list[dict[str, Any]]) -> str:
    step = conv.done(FULL_TEXT)[0]
    if step.is_error:
        return f"The full-text search for “{phrase}” failed: {reason_of(step)}"
    if not hits:
        return f"The full-text search found no filing that mentions “{phrase}”."
    source = text_of(step, "source")
    total = text_of(step, "total")
    found = f"{total} matching documents"
    if total.isdigit():
        found = count(int(total), "matching document")
    lines = [f"EDGAR full-text search for “{phrase}” found {found} (source: {source}):", ""]
    for n, hit in enumerate(hits, 1):
        what = " ".join(str(hit[k]) for k in ("form", "document_type") if hit.get(k))
        cited = link(str(hit.get("url")), str(hit.get("accession_number")))
        snippet = " ".join(str(hit.get("snippet") or "").split())
        lines.append(f"{n}. **{hit.get('company')}** — {what} filed {hit.get('filed')}, "
                     f"accession {cited}: “{snippet}”")  # fmt: skip
    passage = _passage(conv, phrase)
    if passage:
        lines += ["", f"In context, from the top match:\n\n> {passage}"]
    return "\n".join(lines)


def _passage(conv: Conversation, phrase: str) -> str | None:
    found = read_doc(conv)
    if found is None:
        return None
    text = " ".join(found[1].text.split())
    words = phrase.strip('"').lower()
    at = text.lower().find(words)
    if at < 0:
        return None
    before = text.rfind(". ", 0, at)
    start = before + 2 if before >= 0 else 0
    end = text.find(". ", at)
    return text[start : end + 1 if end >= 0 else len(text)].strip()


def _web_query(q: Question) -> str:
    topic = q.phrase or "news"
    if not q.firms:
        return topic
    for firm in q.firms:
        topic = re.sub(rf"\b{re.escape(firm.said)}(?:['’]s)?\b", " ", topic, flags=re.I)
    topic = re.sub(r"\s+", " ", topic).strip(" ,.?") or "news"
    return f"{q.firms[0].label} {topic}"


def plan_web(q: Question, conv: Conversation) -> Next | str:
    query = _web_query(q)
    if not conv.done(WEB) and not conv.done(FILINGS):
        calls = []
        if conv.can(WEB):
            calls.append(Call(WEB, {"query": query, "num_results": 5}))
        if q.firms and conv.can(FILINGS):
            calls.append(filings_call(q.firms[0].ticker, q, "8-K", 5))
        if calls:
            say = f"I'll search the web for “{query}”"
            if len(calls) > 1:
                say += " and, in parallel, list the company's latest 8-K reports (its own news)"
            return Next(say + ".", tuple(calls))
    if not conv.done(WEB) and not conv.done(FILINGS):
        return unavailable(WEB, "search the web", conv)
    parts = [_web_answer(step, query) for step in conv.done(WEB)]
    parts += [
        "The company's latest 8-K reports, from EDGAR:\n\n" + filings_answer(step, q)
        for step in conv.done(FILINGS)
    ]
    return "\n\n".join(parts)


def _web_answer(step: Step, query: str) -> str:
    if step.is_error:
        return f"The web search for “{query}” failed: {reason_of(step)}"
    results = rows(step, "results")
    source = text_of(step, "source")
    lines = []
    if "offline" in source:
        lines += [
            "This demo has no internet access: the web search answered from its offline "
            f"index ({source}), so these are passages of SEC filings, not news articles.",
            "",
        ]
    if not results:
        return "\n".join([*lines, f"The search for “{query}” found nothing."])
    lines.append(f"Top results for “{query}”:")
    for n, r in enumerate(results, 1):
        when = f" ({r['published_date']})" if r.get("published_date") else ""
        snippet = " ".join(str(r.get("snippet") or "").split())
        lines.append(f"{n}. {link(str(r.get('url')), str(r.get('title')))}{when}: “{snippet}”")
    return "\n".join(lines)
