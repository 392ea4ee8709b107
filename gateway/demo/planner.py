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

from gateway.demo import shapes_documents as documents
from gateway.demo import shapes_facts as facts
from gateway.demo import shapes_filings as filings
from gateway.demo import shapes_search as search
from gateway.demo.common import Next
from gateway.demo.companies import CompanyIndex
from gateway.demo.conversation import Conversation
from gateway.demo.reply import Reply, Say
from gateway.demo.understand import Intent, Question, understand

__all__ = ["MAX_TURNS", "respond"]

MAX_TURNS = 8
"""Past this many model calls for one question, answer with what there is."""

Plan = Callable[[Question, Conversation], Next | str]
PLANS: dict[Intent, Plan] = {
    "help": search.plan_help,
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
    "rank": facts.plan_rank,
    "full_text": search.plan_full_text,
    "web": search.plan_web,
}


def respond(conv: Conversation, index: CompanyIndex) -> Reply:
    question = understand(conv.question, index, conv.today, conv.earlier)
    if conv.turns >= MAX_TURNS:
        conv = replace(conv, tools_off=True)
    decided = PLANS[question.intent](question, conv)
    if isinstance(decided, Next) and decided.calls:
        return Reply((Say(decided.say), *decided.calls))
    return Reply((Say(decided if isinstance(decided, str) else decided.say),))
