"""From a question to what it asks: the kind of question, companies, forms, dates, metrics,
the filing section, a search phrase. Rules, not a language model; the planner decides
the tool calls from this."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field, replace
from typing import Literal

from demo_model.companies import CompanyIndex, Firm
from demo_model.phrasing import DECLINED, GREETING, THANKS, correct, unsupported_reason
from demo_model.placing import period_reason, placed, quarter_of_year, span_of
from demo_model.spans import Span, find_limit, two_years, year_to_year
from demo_model.vocab import (
    ACRONYMS,
    FORMS,
    METRICS,
    STOPWORDS,
    TOPICS,
    Metric,
    Topic,
    share_of_revenue,
)

__all__ = ["Intent", "Question", "Span", "understand"]

Intent = Literal[
    "help", "greeting", "thanks", "unsupported", "lookup", "unknown_company", "filings",
    "latest_filing", "section", "exec", "metric", "trend", "compare", "balance_sheet", "rank",
    "overview", "full_text", "web",
]  # fmt: skip
CHAT: frozenset[Intent] = frozenset({"help", "greeting", "thanks", "unsupported"})
NEEDS_FIRM: frozenset[Intent] = frozenset(
    {
        "filings",
        "latest_filing",
        "section",
        "exec",
        "metric",
        "trend",
        "compare",
        "balance_sheet",
        "overview",
    }
)
_CUES = {
    "help": r"^\W*(?:hi|hello|hey|help|what can you do)\b",
    "full_text": r"\bmention(?:s|ed|ing)?\b|full[- ]text|\bcontain(?:s|ing)? the (?:word|phrase)|"
    r"\bsearch\b[^\"“']*[\"“']|\bfilings? (?:that )?(?:say|saying)\b|"
    r"\b(?:filings?|10-?[kq]s?|8-?ks?|reports?|disclosures?) (?:that )?"
    r"(?:discuss(?:es|ing)?|talk(?:s|ing)? about|refer(?:s|ring)? to|cit(?:e|es|ing))\b",
    "web": r"\bnews\b|\bweb\b|headlines?|articles?|\bonline\b|internet|press coverage",
    "lookup": r"\bcik\b|\bticker\b|\bsymbol\b|which exchange|look ?up|\bidentif",
    "rank": r"which compan|\btop \d|\brank|\blargest\b|\bbiggest\b|\bhighest\b|\bmost\b",
    "balance_sheet": r"balance sheet|financial position",
    "trend": r"\bgr[eo]wn?\b|growth|trend|history|historical|over (?:the|time)|evolv|"
    r"year[- ]over[- ]year|by year|each year|\bchang|since",
    "latest": r"\blatest\b|most recent|\blast\b|\bnewest\b|\brecent",
    "read": r"\bsays?\b|\babout\b|\bsummar|\bread\b|\bwhat (?:was|is) in\b|\bdisclose|"
    r"\bannounce|\bwhat did\b",
    "prices": r"market cap|stock price|share price|\bvaluation\b|price target|trading at",
    "overview": r"\bhow (?:did|does|is|was) .{1,40} (?:do|doing|perform|performing|going)\b|"
    r"\bresults\b|\bfinancials\b|\bfundamentals\b|key (?:figures|metrics|numbers)|"
    r"\boverview\b|tell me about|\bsummary of\b",
}
CUES = {k: re.compile(v, re.I) for k, v in _CUES.items()}
_FOLLOW_UP = re.compile(
    r"^\W*(?:and|what about|how about|same (?:thing |one )?for|likewise for|now for|"
    r"ditto for|repeat (?:that |it )?for)\b|\b(?:its|it|their|they|the company|same company)\b|"
    r"\b(?:did|has|have|was) (?:that|this) (?:grow|grew|grown|rise|rose|risen|change|fall|fell|"
    r"increase|decrease|decline|drop|move)|"
    r"^\W*(?:in |for )?(?:fy|fiscal |cy)?\s*(?:19|20)\d{2}\W*$|"
    r"^\W*(?:in |for )?(?:fy|fiscal )\s*'?\d{2}\W*$",
    re.I,
)


@dataclass(frozen=True)
class Question:
    text: str
    intent: Intent
    firms: tuple[Firm, ...] = ()
    unknown: tuple[str, ...] = ()
    forms: tuple[str, ...] = ()
    metrics: tuple[Metric, ...] = ()
    topic: Topic | None = None
    span: Span = field(default_factory=Span)
    phrase: str | None = None
    limit: int | None = None
    reason: str | None = None
    """Why the demo cannot answer (intent `unsupported`)."""
    unclear: tuple[str, ...] = ()
    """Parts of the question not understood, as said (a period it cannot place)."""
    years: tuple[int, int] | None = None
    """The two fiscal years of a change asked between them ("from FY2023 to FY2024")."""


def understand(
    text: str, index: CompanyIndex, today: dt.date, earlier: tuple[str, ...] = ()
) -> Question:
    text = correct(text)
    found = index.find(text)
    firms, unknown = found.firms, found.unknown
    metrics, topic, forms = find_metrics(text), find_topic(text), find_forms(text)
    span = span_of(text, today, bool(metrics), forms)
    # "what's the R&D spend?" after a question on Apple; never "costco revenue" or a ranking
    alone = not (firms or unknown or _unclear(text, Span(), True) or _cue("rank", text))
    alone = alone and bool(metrics)
    follow_up = bool(earlier) and (bool(_FOLLOW_UP.search(text)) or span.relative or alone)
    before = understand(earlier[-1], index, today, earlier[:-1]) if follow_up else None
    if span.relative:
        span = placed(span, before.span if before else None, text)
    if before is not None and span.unclear:
        span = quarter_of_year(span, before.span)  # "and Q2?" after a question on FY2024
    if before is not None and not (metrics or topic or forms) and before.intent not in CHAT:
        return _carry_on(before, text, firms, span)  # "and in 2022?", "what about NVIDIA?"
    if before is not None and not firms and not unknown:
        firms = before.firms or _firms_from(earlier, index)  # "And its net income?"
    if before is not None and metrics and span == Span() and before.metrics:
        span = before.span  # "and its cash then?": the period carries as the company does
    reason = unsupported_reason(text, bool(metrics))
    intent = _intent(text, bool(firms), metrics, topic, forms)
    if reason and (firms or reason.startswith(DECLINED)):
        intent = "unsupported"
    intent, reason = _settle(intent, reason, firms, unknown, metrics, span)
    years = two_years(text) if metrics and not span.quarter else None
    if before is not None and years is None and span == before.span and metrics:
        years = before.years  # "and its net income?" after a change between two years
    if years and intent == "trend":
        intent = "metric"  # "how much did revenue rise between 2023 and 2025": that change
    return Question(
        text=text,
        intent=intent,
        firms=firms,
        unknown=unknown,
        forms=forms,
        metrics=metrics,
        topic=topic,
        span=span,
        phrase=find_phrase(text) if intent in ("full_text", "web") else None,
        limit=find_limit(text),
        reason=reason,
        unclear=_unclear(text, span, intent == "help" and bool(metrics) and not firms),
        years=years if intent == "metric" else None,
    )


def _unclear(text: str, span: Span, no_firm: bool) -> tuple[str, ...]:
    """What was not understood: a period it cannot place; for a figure of no company
    found, the words left once the figure's and the period's are set aside ("costco")."""
    said = (span.unclear,) if span.unclear else ()
    if not no_firm:
        return said
    rest = text
    for pattern in [m.pattern for m in METRICS] + [p for _, p in FORMS]:
        rest = pattern.sub(" ", rest)
    words = [re.sub(r"['’]s$", "", w) for w in re.findall(r"[A-Za-z][\w&.'’-]{2,}", rest)]
    left = [w for w in words if w.lower() not in STOPWORDS and w.upper() not in ACRONYMS]
    return (*said, *dict.fromkeys(w for w in left if not any(c.isdigit() for c in w)))


def _settle(
    intent: Intent, reason: str | None, firms: tuple[Firm, ...], unknown: tuple[str, ...],
    metrics: tuple[Metric, ...], span: Span,
) -> tuple[Intent, str | None]:  # fmt: skip
    """The shape once every part is accounted for: what cannot be answered says why."""
    if intent in FIGURES and firms and all(f.person for f in firms):
        return "unsupported", PERSON_FIGURES
    intent = _by_span(intent, span)
    if intent == "rank" and metrics[0].ratio:
        return "unsupported", "I compute margins one company at a time"
    if intent == "rank" and span.fiscal_year and not span.calendar_year:
        return "unsupported", RANK_FISCAL
    if intent in NEEDS_FIRM | {"lookup"} and not firms:
        intent = "unknown_company" if unknown else "help"
    if intent in ("metric", "trend") and len(firms) > 1:
        intent = "compare"
    if intent == "compare" and len(firms) < 2:
        intent = "metric"
    declined = bool(reason and reason.startswith(DECLINED))
    if span.unclear and not declined and (intent in FIGURES or (metrics and intent != "help")):
        return "unsupported", period_reason(span.unclear)
    return intent, reason


def _by_span(intent: Intent, span: Span) -> Intent:
    """One figure or its history, by the period: one year asks for one figure."""
    if intent not in ("metric", "trend"):
        return intent
    if span.named:
        return "metric"  # "revenue growth in Q2 FY2025": that quarter's figure
    if span.after and span.before and _one_year(span):
        return "metric"  # "revenue growth in 2023": that year's figure and its change
    if span.after:
        return "trend"  # "revenue between 2019 and 2022", "since 2020"
    if span.fiscal_year or span.latest_year:
        return "metric"  # "rev growth y/y last fiscal year": one year and its change
    return intent


def _one_year(span: Span) -> bool:
    return bool(span.after and span.before and span.after.year == span.before.year)


FIGURES: frozenset[Intent] = frozenset(
    {"metric", "trend", "compare", "balance_sheet", "overview", "rank"}
)
PERSON_FIGURES = (
    "reported figures (XBRL) are companies', and a person files none; for a person who "
    'files I can list the filings ("Warren Buffett\'s Form 4s")'
)
RANK_FISCAL = (
    "SEC's XBRL frames rank companies by calendar period, and fiscal years differ from company "
    'to company, so I won\'t rank by a fiscal year; ask for a calendar year ("in CY2023")'
)


def _carry_on(before: Question, text: str, firms: tuple[Firm, ...], span: Span) -> Question:
    """A follow-up that names only a new period or company: the earlier question again."""
    firms = firms or before.firms
    intent = before.intent
    if intent == "compare" and len(firms) < 2:
        intent = "metric"
    years = year_to_year(text, before.span, span) if intent == "metric" else None
    span = span if span != Span() else before.span
    if years:
        return replace(before, text=text, firms=firms, span=span, years=years)
    reason = before.reason
    if span.unclear and intent in FIGURES:
        intent, reason = "unsupported", period_reason(span.unclear)
    unclear = (span.unclear,) if span.unclear else ()
    return replace(
        before, text=text, intent=intent, firms=firms, span=span, reason=reason, unclear=unclear
    )


def _cue(name: str, text: str) -> bool:
    return bool(CUES[name].search(text))


def _intent(
    text: str, has_firm: bool, metrics: tuple[Metric, ...], topic: Topic | None,
    forms: tuple[str, ...],
) -> Intent:  # fmt: skip
    if GREETING.match(text):
        return "greeting"
    if THANKS.match(text):
        return "thanks"
    if (_cue("help", text) and not (has_firm or metrics or topic or forms)) or _cue("prices", text):
        return "help"
    # "What risks does Apple mention?" asks for a section; "mention 'tariffs'" searches.
    quoted = re.search(r"[\"“'‘]\w", text)
    if _cue("full_text", text) and (topic is None or not has_firm or quoted):
        return "full_text"
    if _cue("web", text):
        return "web"
    if _cue("lookup", text) and not (metrics or topic or forms):
        return "lookup"
    if metrics and _cue("rank", text) and not has_firm:
        return "rank"
    if topic is not None:
        return "exec" if topic.key == "exec" else "section"
    return _figures_or_filings(text, has_firm, metrics, forms)


def _figures_or_filings(
    text: str, has_firm: bool, metrics: tuple[Metric, ...], forms: tuple[str, ...]
) -> Intent:
    if _cue("balance_sheet", text) or sum(m.instant for m in metrics) >= 2:
        return "balance_sheet"
    if metrics:
        return _metric_intent(text, has_firm)
    if forms or re.search(r"\bfil(?:ings?|ed)\b|\breports?\b|\bdocuments?\b", text, re.I):
        read = _cue("read", text) and not find_limit(text)
        return "latest_filing" if len(forms) == 1 and read else "filings"
    if has_firm and (_cue("overview", text) or len(text.split()) <= 2):
        return "overview"  # "How did Apple do last year?", or just "Tesla"
    return "unsupported" if has_firm else "help"


def _metric_intent(text: str, has_firm: bool) -> Intent:
    if not has_firm:  # a figure of no company named: which one is not understood
        return "rank" if _cue("rank", text) else "metric"
    if re.search(r"\bcompar|\bvs\.?\s|\bversus\b|\bagainst\b", text, re.I):
        return "compare"
    return "trend" if CUES["trend"].search(text) else "metric"


def _firms_from(earlier: tuple[str, ...], index: CompanyIndex) -> tuple[Firm, ...]:
    for text in reversed(earlier):
        firms = index.find(text).firms
        if firms:
            return firms
    return ()


def find_metrics(text: str) -> tuple[Metric, ...]:
    found: list[tuple[int, Metric]] = []
    rest = text
    for metric in METRICS:
        for match in metric.pattern.finditer(rest):
            found.append((match.start(), metric))
        rest = metric.pattern.sub(lambda m: " " * len(m.group()), rest)
    unique = dict.fromkeys(m for _, m in sorted(found, key=lambda f: f[0]))
    return share_of_revenue(tuple(unique), text)


def find_topic(text: str) -> Topic | None:
    return next((t for t in TOPICS if t.pattern.search(text)), None)


def find_forms(text: str) -> tuple[str, ...]:
    return tuple(form for form, pattern in FORMS if pattern.search(text))


def find_phrase(text: str) -> str | None:
    """The words to search for: a quoted phrase, or what follows "mention"/"news about"."""
    if m := re.search(r"[\"“'‘]([^\"”'’]{2,80})[\"”'’]", text):
        return m.group(1).strip()
    after = (
        r"(?:mention(?:s|ed|ing)?|discuss(?:es|ing)?|talk(?:s|ing)? about|refer(?:s|ring)? to|"
        r"cit(?:e|es|ing)|news (?:about|on|for)|about|for|on)\s+(.+?)\s*(?:\?|$|\bin\b)"
    )
    if m := re.search(after, text, re.I):
        return m.group(1).strip(" .?!")
    return None
