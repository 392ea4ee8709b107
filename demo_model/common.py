"""What every question shape's plan shares: the `Next` move, the company lookup step,
and how a confirmed company is named to the other tools."""

from __future__ import annotations

from dataclasses import dataclass

from demo_model.companies import Firm
from demo_model.conversation import Conversation, Step
from demo_model.reply import Call
from demo_model.results import rows
from demo_model.understand import Question

__all__ = ["LOOKUP", "Next", "confirmed", "firm_names", "ident", "last", "lookup_step"]

LOOKUP = "search_sec_company_tickers"


@dataclass(frozen=True)
class Next:
    """Tool calls for this turn, and the line of reasoning said before them."""

    say: str
    calls: tuple[Call, ...]


def firm_names(firms: tuple[Firm, ...] | list[Firm]) -> str:
    names = [f.label for f in firms]
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def lookup_step(q: Question, conv: Conversation) -> Next | None:
    """First confirm each company's CIK in SEC's ticker list, when that tool is offered."""
    firms = [f for f in q.firms if not f.person]  # people are not in the ticker list
    if not conv.can(LOOKUP) or conv.done(LOOKUP) or not firms:
        return None
    calls = tuple(Call(LOOKUP, {"search_term": _term(f)}) for f in firms)
    plural = "s" if len(firms) > 1 else ""
    say = f"I'll look up {firm_names(firms)} in SEC's company list to confirm the CIK{plural}."
    return Next(say, calls)


def _term(firm: Firm) -> str:
    return firm.ticker if firm.said[:1].isdigit() or firm.said.upper() == "CIK" else firm.said


def looked_up(firm: Firm, conv: Conversation) -> dict[str, object] | None:
    """The ticker-list match for this company, if a lookup returned it."""
    for step in conv.done(LOOKUP):
        for match in rows(step, "matches"):
            if match.get("cik") == firm.cik:
                return match
    return None


def ident(firm: Firm, conv: Conversation) -> str:
    """How to name the company to the other tools: its CIK once confirmed, else its ticker."""
    match = looked_up(firm, conv)
    if match is not None:
        return str(match["cik"])
    return firm.ticker or str(firm.cik)


def confirmed(firms: tuple[Firm, ...], conv: Conversation) -> str:
    """ "Tesla, Inc. is CIK 1318605 (TSLA, Nasdaq)." for the companies a lookup returned."""
    parts = []
    for firm in firms:
        match = looked_up(firm, conv)
        if match is not None:
            where = ", ".join(str(match[k]) for k in ("ticker", "exchange") if match.get(k))
            parts.append(f"{match.get('name')} is CIK {match['cik']} ({where})")
    return ("; ".join(parts) + ". ") if parts else ""


def last(steps: list[Step]) -> Step | None:
    return steps[-1] if steps else None
