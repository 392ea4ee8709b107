"""Analyst questions kept aside to measure the demo model: 16 the offline snapshot can
answer, 8 it cannot. Written as analysts type them (lowercase, no apostrophes, typos),
not as the demo's own examples; the expected figures were read from the snapshot's
XBRL facts by hand. `score` says whether an answer is right and whether it leads with a
figure of another period or company, the one mistake a reader cannot catch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CASES", "Case", "Verdict", "first_figure", "score"]

FIGURE = re.compile(
    r"-?\$[\d,]+(?:\.\d+)? (?:trillion|billion|million)"
    r"|-?\$[\d,]*\d\.\d+ per share"
    r"|\b\d[\d,]{4,} shares"
    r"|[+-]?\d+(?:\.\d+)?%"
)
# A plain "I cannot answer this from the data I have", in the words the demo might use.
REFUSAL = re.compile(
    r"\b(?:can't|cannot|can not|couldn't|don't have|do not have|doesn't have|does not have|"
    r"has no|have no|holds no|is not in|isn't in|are not in|aren't in|not available|"
    r"no \w+(?: \w+)? (?:for|in|after))\b",
    re.I,
)
# ... and what to ask instead: the demo says what it can answer.
OFFER = re.compile(r"\bI can\b|\bask\b|\bholds?\b|\bit has\b|\bhas (?:its|the|XBRL|filing)", re.I)


@dataclass(frozen=True)
class Case:
    question: str
    answerable: bool
    lead: str | None = None
    """The figure a right answer leads with (its first figure)."""
    expect: tuple[str, ...] = ()
    """Further text a right answer contains (the period, a filing, a name); for a question
    it cannot answer, what the refusal names (what it did not understand or does not hold)."""
    before: tuple[str, ...] = ()
    """Earlier questions of the same session (for follow-ups)."""


@dataclass(frozen=True)
class Verdict:
    right: bool
    wrong_lead: bool
    why: str


CASES: tuple[Case, ...] = (
    # The snapshot can answer these.
    Case("did tesla make money in 2021", True, "$5.52 billion", ("FY2021",)),
    Case("whats nvidias revnue last quarter", True, "$81.6 billion", ("2026-04-26",)),
    Case("apple gross margin", True, "46.9%", ("FY2025",)),
    Case("apple shares outstanding", True, "14,681,140,000 shares", ("2026-01-16",)),
    Case("apple dividend per share", True, "$1.02 per share", ("FY2025",)),
    Case("how much debt does nvidia have", True, "$7.47 billion", ("2026-04-26",)),
    Case("nvda operating margin 2025", True, "62.4%", ("FY2025",)),
    Case("what was alphabets net income in 2023", True, "$73.8 billion", ("FY2023",)),
    Case("marvell r&d expense last year", True, "$2.08 billion", ("FY2026",)),
    Case("snowflake net loss fy2024", True, "-$836.1 million", ("FY2024",)),
    Case("apples operating cash flow in 2024", True, "$118.3 billion", ("FY2024",)),
    Case("and in 2023?", True, "$383.3 billion", ("FY2023",), before=("apple revenue 2022",)),
    Case("tesla 10k filings since 2019", True, None, ("0000950170-23-001409", "10-K")),
    Case("what did metas latest 8-k say", True, None, ("Dina Powell McCormick",)),
    Case("how much did apple spend on buybacks last year", True, "$90.7 billion", ("FY2025",)),
    Case("microsoft recent filings", True, None, ("MICROSOFT CORP", "CIK 789019")),
    # The snapshot cannot answer these: the demo must say so plainly.
    Case("who is nvidia's auditor", False),
    Case("microsoft revenue 2024", False),
    Case("jpmorgan 10-k filings", False),
    Case("tesla revenue 2024", False),
    Case("whats apple stock price", False),
    Case("amazon revenue last year", False),
    Case("how much is the apple ceo paid", False),
    Case("nvidia revenue guidance for next quarter", False),
)


def first_figure(text: str) -> str | None:
    found = FIGURE.search(text)
    return found.group() if found else None


def score(case: Case, answer: str) -> Verdict:
    lead = first_figure(answer)
    if case.answerable:
        if case.lead is not None and lead != case.lead:
            return Verdict(False, lead is not None, f"leads with {lead}, not {case.lead}")
        missing = [e for e in case.expect if e not in answer]
        if missing:
            return Verdict(False, False, f"missing {missing}")
        return Verdict(True, False, "right")
    refusal = REFUSAL.search(answer)
    if refusal is None:
        return Verdict(False, lead is not None, "does not say it cannot answer")
    figure = FIGURE.search(answer)
    if figure is not None and figure.start() < refusal.start():
        return Verdict(False, True, f"leads with {figure.group()} before saying it cannot")
    if not OFFER.search(answer):
        return Verdict(False, False, "says it cannot, but not what it can do instead")
    unnamed = [e for e in case.expect if e.lower() not in answer.lower()]
    if unnamed:  # what was not understood or not held, named
        return Verdict(False, False, f"does not name {unnamed}")
    return Verdict(True, False, "says plainly it cannot")
