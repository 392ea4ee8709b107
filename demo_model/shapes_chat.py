"""Answers without tools: a greeting, thanks, and a plain "I can't answer that" that says
why, what the offline snapshot holds for the company asked about, and what to ask
instead. No figure and no date appears here: those only ever come from tool results."""

from __future__ import annotations

import re
from functools import cache

from demo_model.common import firm_names
from demo_model.companies import Firm
from demo_model.conversation import Conversation
from demo_model.understand import Question
from tools.sec.offline import OfflineSec

__all__ = ["holdings", "plan_greeting", "plan_thanks", "plan_unsupported", "what_i_can_answer"]

GREETING = (
    "Hello! I'm the offline demo model: I answer questions about US public companies from "
    "SEC filings and XBRL figures, calling the tools and citing what they return. Try "
    '"What was Apple\'s revenue last year?", "Show NVIDIA\'s balance sheet" or '
    '"Find Tesla\'s 10-K filings since 2020".'
)


def plan_greeting(q: Question, conv: Conversation) -> str:
    return GREETING


_BYE = re.compile(r"\bbye\b|goodbye|see (?:you|ya)|\blater\b|have a (?:good|nice)", re.I)


def plan_thanks(q: Question, conv: Conversation) -> str:
    if _BYE.search(q.text):
        return "You're welcome. Goodbye!"
    return "You're welcome. Ask another question whenever you like."


@cache
def _snapshot() -> dict[int, tuple[bool, bool, tuple[str, ...]]]:
    """Per CIK: has a filing list, has XBRL figures, the forms of its readable filings
    (newest first, one per filing)."""
    manifest = OfflineSec().manifest
    filed: dict[int, dict[str, tuple[str, str]]] = {}
    for doc in manifest["documents"]:
        filed.setdefault(doc["cik"], {})[doc["accession"]] = (doc["filed"], doc["form"])
    forms = {cik: tuple(f for _, f in sorted(by.values(), reverse=True))
             for cik, by in filed.items()}  # fmt: skip
    held = {c["cik"]: (c["submissions"], c["facts"], forms.get(c["cik"], ()))
            for c in manifest["companies"]}  # fmt: skip
    for cik, readable in forms.items():
        held.setdefault(cik, (False, False, readable))
    return held


def _held(firm: Firm) -> tuple[bool, bool, tuple[str, ...]]:
    return _snapshot().get(firm.cik, (False, False, ()))


def holdings(firm: Firm) -> str:
    """What the offline snapshot holds for a company, in words (no dates, no figures)."""
    filings, figures, readable = _held(firm)
    if not (filings or figures or readable):
        return f"The offline snapshot holds nothing for {firm.label}."
    n = len(readable)
    parts = [
        "its filing list" if filings else "no filing list",
        "its XBRL figures" if figures else "no XBRL figures",
        f"the documents of {n} filing{'s' if n != 1 else ''}" if n else "no filing documents",
    ]
    return f"For {firm.label}, the offline snapshot holds " + ", ".join(parts) + "."


def what_i_can_answer(firm: Firm) -> str:
    filings, figures, readable = _held(firm)
    asks = []
    if figures:
        asks += [f"\"What was {firm.label}'s revenue last year?\"",
                 f"\"Show {firm.label}'s balance sheet\""]  # fmt: skip
    if filings:
        asks.append(f'"What has {firm.label} filed recently?"')
    if readable:
        asks.append(f'"What did {firm.label}\'s latest {readable[0]} say?"')
    if not asks:
        return "I can answer questions about the companies the snapshot holds, such as Apple."
    return "I can answer, for example: " + ", ".join(asks) + "."


def plan_unsupported(q: Question, conv: Conversation) -> str:
    who = firm_names(q.firms)
    why = (
        f": {q.reason}"
        if q.reason
        else (
            ". I answer questions about filings (lists, what a filing says, risk factors, MD&A, "
            "executive changes) and reported figures (revenue, income, margins, EPS, dividends, "
            "debt, cash flow, balance sheet)"
        )
    )
    about = f" about {who}" if who else ""
    lines = [f"I can't answer that{about}{why}."]
    if not q.firms:
        lines.append(GREETING.split(". Try ", 1)[-1].join(["I can answer, for example, ", ""]))
    lines += [f"{holdings(f)} {what_i_can_answer(f)}" for f in q.firms[:3]]
    return "\n\n".join(lines)
