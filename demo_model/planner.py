"""The next move, from the conversation alone: which tools to call now, or the answer.

Stateless, like a model: every call re-reads the question and the tool results so far.
Each question shape has a `plan(question, conversation)` in a `shapes_*` module that
returns `Next` (tool calls, with a line of reasoning said first) or the answer text. A
plan only uses tools the request offers; with `tool_choice: none` (the wrap-up after the
turn limit) `Conversation.can` is false for every tool, so every plan answers with what
it has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from demo_model import shapes_chat as chat
from demo_model import shapes_documents as documents
from demo_model import shapes_facts as facts
from demo_model import shapes_filings as filings
from demo_model import shapes_search as search
from demo_model.common import Next
from demo_model.companies import CompanyIndex
from demo_model.conversation import Conversation
from demo_model.reply import Call, Reply, Say, Think
from demo_model.understand import Intent, Question, understand

__all__ = ["MAX_TURNS", "respond"]

MAX_TURNS = 8
"""Past this many model calls for one question, answer with what there is."""

Plan = Callable[[Question, Conversation], Next | str]
PLANS: dict[Intent, Plan] = {
    "help": search.plan_help,
    "greeting": chat.plan_greeting,
    "thanks": chat.plan_thanks,
    "unsupported": chat.plan_unsupported,
    "lookup": filings.plan_lookup,
    "unknown_company": filings.plan_unknown,
    "filings": filings.plan_filings,
    "latest_filing": documents.plan_latest,
    "section": documents.plan_section,
    "exec": documents.plan_exec,
    "metric": facts.plan_metric,
    "trend": facts.plan_trend,
    "compare": facts.plan_compare,
    "balance_sheet": facts.plan_balance_sheet,
    "overview": facts.plan_overview,
    "rank": facts.plan_rank,
    "full_text": search.plan_full_text,
    "web": search.plan_web,
}


def respond(conv: Conversation, index: CompanyIndex, *, thinking: bool = False) -> Reply:
    """The next assistant message; with `thinking`, led by a thinking block that states
    what was understood and what comes next (the rules' view, not hidden reasoning)."""
    question = understand(conv.question, index, conv.today, conv.earlier)
    if conv.turns >= MAX_TURNS:
        conv = replace(conv, tools_off=True)
    decided = PLANS[question.intent](question, conv)
    text, calls = (decided.say, decided.calls) if isinstance(decided, Next) else (decided, ())
    think = (Think(explain(question, conv, calls)),) if thinking else ()
    return Reply((*think, Say(text), *calls))


def explain(q: Question, conv: Conversation, calls: tuple[Call, ...]) -> str:
    parts = [f"Question shape: {q.intent.replace('_', ' ')}."]
    if q.firms:
        named = ", ".join(f"{f.label} ({f.ticker}, CIK {f.cik})" for f in q.firms)
        parts.append(f"Companies: {named}.")
    details = [*q.forms, *(m.label for m in q.metrics), *([q.topic.label] if q.topic else [])]
    if details:
        parts.append(f"About: {', '.join(details)}.")
    failed = sum(s.is_error for s in conv.steps)
    parts.append(f"Tool results so far: {len(conv.steps)} ({failed} failed).")
    if calls:
        parts.append("Next: " + ", ".join(c.name for c in calls) + ".")
    else:
        parts.append("Next: answer from the tool results only.")
    return " ".join(parts)
