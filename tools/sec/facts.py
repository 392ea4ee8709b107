"""Reading XBRL company facts: key metrics across concept renames, and one concept's history.

A fact is one reported value: `{start?, end, val, accn, fy, fp, form, filed, frame?}`. The
same period is reported again in later filings (comparatives, amendments, restatements).
Which filing's value a period gets, the rule the tools state:

- only periodic reports count while there is one (10-K, 10-Q, 20-F, 40-F, 10-KT, 10-QT and
  their amendments); an 8-K, a proxy or a prospectus repeating a figure never beats them;
- the value as last reported wins (restated values win; ties on the filing date go to the
  later accession number), or, `as_reported`, the value as first reported;
- a period is its dates: `fy`/`fp` describe the filing, not the period, so periods are
  classified by length: 350-380 days a full year, 80-100 days a quarter, any other span
  year-to-date (never a year's or a quarter's value), no start an instant;
- every value names its filing (form, accession, filed) and, where a later filing changed
  it, both the original and the filing that changed it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

__all__ = [
    "KEY_METRICS",
    "PERIODIC_FORMS",
    "Period",
    "find_concept",
    "is_periodic",
    "metric_concept",
    "period_kind",
    "reported",
    "series",
    "summarize",
]

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
# More metric names a concept is found by, outside the key-metrics summary.
MORE_METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cost_of_revenue", ("us-gaap:CostOfRevenue", "us-gaap:CostOfGoodsAndServicesSold")),
)
_TAXONOMY_RANK = {t: i for i, t in enumerate(("us-gaap", "dei", "ifrs-full", "srt"))}


PERIODIC_FORMS = frozenset({"10-K", "10-Q", "20-F", "40-F", "10-KT", "10-QT"})


def is_periodic(form: str | None) -> bool:
    """A periodic report or its amendment ("10-K/A"): the filings a value may come from."""
    return str(form).removesuffix("/A") in PERIODIC_FORMS


def _days(fact: dict[str, Any]) -> int | None:
    if "start" not in fact:
        return None
    return (dt.date.fromisoformat(fact["end"]) - dt.date.fromisoformat(fact["start"])).days


def period_kind(fact: dict[str, Any]) -> str:
    """instant, annual (a full year), quarterly or year_to_date (any other span)."""
    days = _days(fact)
    if days is None:
        return "instant"
    if 350 <= days <= 380:
        return "annual"
    if 80 <= days <= 100:
        return "quarterly"
    return "year_to_date"


def filing(fact: dict[str, Any]) -> dict[str, Any]:
    """The value and the filing it was reported in."""
    return {
        "value": fact["val"],
        "form": fact.get("form"),
        "accession_number": fact.get("accn"),
        "filed": fact.get("filed"),
    }


def history(facts: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One period's reports that count, oldest filing first: the periodic ones, or all
    of them when no periodic report has the period."""
    facts = list(facts)
    periodic = [f for f in facts if is_periodic(f.get("form"))]
    return sorted(periodic or facts, key=lambda f: (f["filed"], f["accn"]))


def restatement(reports: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the original report, the one that changed it to the last value) when they differ."""
    last = reports[-1]["val"]
    if reports[0]["val"] == last:
        return None
    changed = max(i for i, f in enumerate(reports) if f["val"] != last) + 1
    return reports[0], reports[changed]


def reported(facts: Iterable[dict[str, Any]], *, as_reported: bool = False) -> dict[str, Any]:
    """One period's value by the rule: the last periodic report's (or, as_reported, the
    first's), naming its filing and, when restated, the original and the restating one."""
    reports = history(facts)
    row = _row(reports[0] if as_reported else reports[-1])
    change = restatement(reports)
    if change:
        row["originally_reported"] = filing(change[0])
        row["restated_in"] = filing(change[1])
    return row


def _row(fact: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {k: fact[k] for k in ("start", "end") if k in fact}
    row.update(filing(fact))
    if fact.get("frame"):
        row["frame"] = fact["frame"]
    return row


Period = tuple[str | None, str]  # (start, end); an instant has no start


def periods(facts: Iterable[dict[str, Any]], kind: str) -> dict[Period, list[dict[str, Any]]]:
    """The facts of one kind of period, by period."""
    found: dict[Period, list[dict[str, Any]]] = {}
    for fact in facts:
        if period_kind(fact) == kind:
            found.setdefault((fact.get("start"), fact["end"]), []).append(fact)
    return found


def series(
    facts: list[dict[str, Any]], kind: str, *, as_reported: bool = False
) -> list[dict[str, Any]]:
    """One value per period of this kind by the rule, newest period first."""
    by_period = periods(facts, kind)
    newest = sorted(by_period, key=lambda p: (p[1], p[0]), reverse=True)
    return [reported(by_period[p], as_reported=as_reported) for p in newest]


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
    candidates = dict(KEY_METRICS + MORE_METRICS).get(metric.strip().lower().replace(" ", "_"))
    current = _current(facts, candidates) if candidates else None
    return current[0] if current else None


def _metric(
    facts: dict[str, Any], candidates: tuple[str, ...], as_reported: bool
) -> dict[str, Any] | None:
    current = _current(facts, candidates)
    if current is None:
        return None
    name, concept = current
    unit, unit_facts = max(concept["units"].items(), key=lambda u: len(u[1]))
    out: dict[str, Any] = {"concept": name, "label": concept.get("label"), "unit": unit}
    instants = series(unit_facts, "instant", as_reported=as_reported)
    if instants:
        out["latest"] = instants[:2]
    else:
        out["annual"] = series(unit_facts, "annual", as_reported=as_reported)[:2]
        quarters = series(unit_facts, "quarterly", as_reported=as_reported)
        out["latest_quarter"] = next(iter(quarters), None)
    return out


def summarize(facts: dict[str, Any], *, as_reported: bool = False) -> dict[str, Any]:
    """Key metrics with their latest values (two most recent annual values, latest quarter)."""
    metrics = {}
    for metric, candidates in KEY_METRICS:
        found = _metric(facts, candidates, as_reported)
        if found:
            metrics[metric] = found
    return metrics


def find_concept(facts: dict[str, Any], name: str) -> tuple[str, dict[str, Any]] | list[str]:
    """("taxonomy:Concept", data) for a concept name (taxonomy optional, case-insensitive),
    or the names of up to 20 concepts that contain it, as suggestions."""
    taxonomies: dict[str, dict[str, Any]] = facts.get("facts", {})
    wanted_tax, _, wanted = name.strip().rpartition(":")
    order = sorted(taxonomies, key=lambda t: (_TAXONOMY_RANK.get(t, len(_TAXONOMY_RANK)), t))
    for taxonomy in order:
        if wanted_tax and taxonomy.lower() != wanted_tax.lower():
            continue
        for concept, data in taxonomies[taxonomy].items():
            if concept.lower() == wanted.lower():
                return f"{taxonomy}:{concept}", data
    needle = wanted.lower()
    return [f"{t}:{c}" for t in order for c in taxonomies[t] if needle and needle in c.lower()][:20]
