"""Reading XBRL company facts: key metrics across concept renames, and one concept's history.

A fact is one reported value: `{start?, end, val, accn, fy, fp, form, filed, frame?}`. The
same period is reported again in later filings (comparatives, restatements); the latest
filing wins. `fy`/`fp` describe the filing, not the period, so periods are classified by
length instead: about a year is annual, about 91 days quarterly, no start an instant.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

__all__ = ["KEY_METRICS", "find_concept", "metric_concept", "series", "summarize"]

# Companies switch concepts over time (Apple: SalesRevenueNet until 2018, then
# RevenueFromContractWithCustomerExcludingAssessedTax); the most recently reported wins.
KEY_METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "revenue",
        (
            "us-gaap:Revenues",
            "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax",
            "us-gaap:RevenueFromContractWithCustomerIncludingAssessedTax",
            "us-gaap:SalesRevenueNet",
            "us-gaap:SalesRevenueGoodsNet",
        ),
    ),
    ("gross_profit", ("us-gaap:GrossProfit",)),
    ("operating_income", ("us-gaap:OperatingIncomeLoss",)),
    ("net_income", ("us-gaap:NetIncomeLoss", "us-gaap:ProfitLoss")),
    ("eps_diluted", ("us-gaap:EarningsPerShareDiluted",)),
    ("eps_basic", ("us-gaap:EarningsPerShareBasic",)),
    ("research_and_development", ("us-gaap:ResearchAndDevelopmentExpense",)),
    ("operating_cash_flow", ("us-gaap:NetCashProvidedByUsedInOperatingActivities",)),
    ("capital_expenditures", ("us-gaap:PaymentsToAcquirePropertyPlantAndEquipment",)),
    ("total_assets", ("us-gaap:Assets",)),
    ("total_liabilities", ("us-gaap:Liabilities",)),
    (
        "stockholders_equity",
        (
            "us-gaap:StockholdersEquity",
            "us-gaap:StockholdersEquityIncludingPortionAttributableToNoncontrollingInterest",
        ),
    ),
    (
        "cash_and_equivalents",
        (
            "us-gaap:CashAndCashEquivalentsAtCarryingValue",
            "us-gaap:CashCashEquivalentsRestrictedCashAndRestrictedCashEquivalents",
        ),
    ),
    ("long_term_debt", ("us-gaap:LongTermDebtNoncurrent", "us-gaap:LongTermDebt")),
    (
        "shares_outstanding",
        ("dei:EntityCommonStockSharesOutstanding", "us-gaap:CommonStockSharesOutstanding"),
    ),
)
_TAXONOMY_ORDER = ("us-gaap", "dei", "ifrs-full", "srt")


def _days(fact: dict[str, Any]) -> int | None:
    if "start" not in fact:
        return None
    return (dt.date.fromisoformat(fact["end"]) - dt.date.fromisoformat(fact["start"])).days


def period_kind(fact: dict[str, Any]) -> str | None:
    days = _days(fact)
    if days is None:
        return "instant"
    if 340 <= days <= 380:
        return "annual"
    if 80 <= days <= 100:
        return "quarterly"
    return None  # year-to-date and other spans


def _row(fact: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {k: fact[k] for k in ("start", "end") if k in fact}
    row.update(value=fact["val"], form=fact.get("form"), filed=fact.get("filed"))
    row.update(accession_number=fact.get("accn"))
    if fact.get("frame"):
        row["frame"] = fact["frame"]
    return row


_PERIODIC_FORMS = ("10-K", "10-Q", "20-F", "40-F", "10-KT", "10-QT")


def _rank(fact: dict[str, Any]) -> tuple[bool, str, str]:
    periodic = str(fact.get("form", "")).split("/")[0] in _PERIODIC_FORMS
    return periodic, fact.get("filed", ""), fact.get("accn", "")


def series(facts: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """One value per period of this kind, newest period first; a periodic report (10-K,
    10-Q, ...) wins over other forms that repeat the value (a proxy, an 8-K), then the
    latest filing wins."""
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for fact in facts:
        if period_kind(fact) != kind:
            continue
        key = (fact.get("start", ""), fact["end"])
        known = latest.get(key)
        if known is None or _rank(fact) >= _rank(known):
            latest[key] = fact
    ordered = sorted(latest.values(), key=lambda f: (f["end"], f.get("start", "")), reverse=True)
    return [_row(f) for f in ordered]


def _lookup(facts: dict[str, Any], qualified: str) -> dict[str, Any] | None:
    taxonomy, _, concept = qualified.partition(":")
    found: dict[str, Any] | None = facts.get("facts", {}).get(taxonomy, {}).get(concept)
    return found


def _latest_end(concept: dict[str, Any]) -> str:
    return max((f["end"] for unit in concept["units"].values() for f in unit), default="")


def _current(
    facts: dict[str, Any], candidates: tuple[str, ...]
) -> tuple[str, dict[str, Any]] | None:
    """The candidate concept reported most recently (the first one wins ties)."""
    present = [(name, c) for name in candidates if (c := _lookup(facts, name)) and c.get("units")]
    return max(present, key=lambda p: _latest_end(p[1])) if present else None


def metric_concept(facts: dict[str, Any], metric: str) -> str | None:
    """The concept behind a key metric name ("revenue" -> the one this company uses)."""
    candidates = dict(KEY_METRICS).get(metric.strip().lower().replace(" ", "_"))
    current = _current(facts, candidates) if candidates else None
    return current[0] if current else None


def _metric(facts: dict[str, Any], candidates: tuple[str, ...]) -> dict[str, Any] | None:
    current = _current(facts, candidates)
    if current is None:
        return None
    name, concept = current
    unit, unit_facts = max(concept["units"].items(), key=lambda u: len(u[1]))
    out: dict[str, Any] = {"concept": name, "label": concept.get("label"), "unit": unit}
    instants = series(unit_facts, "instant")
    if instants:
        out["latest"] = instants[:2]
    else:
        out["annual"] = series(unit_facts, "annual")[:2]
        out["latest_quarter"] = next(iter(series(unit_facts, "quarterly")), None)
    return out


def summarize(facts: dict[str, Any]) -> dict[str, Any]:
    """Key metrics with their latest values (two most recent annual values, latest quarter)."""
    metrics = {}
    for metric, candidates in KEY_METRICS:
        found = _metric(facts, candidates)
        if found:
            metrics[metric] = found
    return metrics


def find_concept(facts: dict[str, Any], name: str) -> tuple[str, dict[str, Any]] | list[str]:
    """("taxonomy:Concept", data) for a concept name (taxonomy optional, case-insensitive),
    or the names of up to 20 concepts that contain it, as suggestions."""
    taxonomies: dict[str, dict[str, Any]] = facts.get("facts", {})
    wanted_tax, _, wanted = name.strip().rpartition(":")
    order = sorted(taxonomies, key=lambda t: (t not in _TAXONOMY_ORDER, t))
    for taxonomy in order:
        if wanted_tax and taxonomy.lower() != wanted_tax.lower():
            continue
        for concept, data in taxonomies[taxonomy].items():
            if concept.lower() == wanted.lower():
                return f"{taxonomy}:{concept}", data
    needle = wanted.lower()
    return [f"{t}:{c}" for t in order for c in taxonomies[t] if needle and needle in c.lower()][:20]
