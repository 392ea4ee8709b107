"""What the bundled EDGAR snapshot holds, per company, as the Markdown table in the README.

    python -m tools.sec.coverage          print the table
    python -m tools.sec.coverage --write  put it into README.md between its markers

Read from the snapshot itself (the filing lists, the XBRL facts, the manifest's documents),
so the README says exactly what an offline run can answer; a test keeps the two equal.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tools.sec.offline import OfflineSec
from tools.sec.source import SecNotFound

__all__ = ["BEGIN", "END", "Holding", "holdings", "readme_with_table", "table"]

BEGIN = "<!-- snapshot table: python -m tools.sec.coverage --write -->"
END = "<!-- end of snapshot table -->"
README = Path(__file__).resolve().parents[2] / "README.md"


@dataclass
class Holding:
    cik: int
    name: str
    filings: str = "–"
    figures: str = "–"
    documents: list[str] = field(default_factory=list)


def _json(source: OfflineSec, path: str) -> Any:
    return orjson.loads(source.read("data", path))


def _filing_list(source: OfflineSec, cik: int) -> str:
    """ "1,005 filings, 2015-03-12 to 2026-02-26" from the submissions file and its pages."""
    data = _json(source, f"/submissions/CIK{cik:010d}.json")
    dates = list(data["filings"]["recent"]["filingDate"])
    for page in data["filings"].get("files", []):
        try:
            dates += _json(source, f"/submissions/{page['name']}")["filingDate"]
        except SecNotFound:
            continue  # a page the snapshot does not bundle: its span is not held
    return f"{len(dates):,} filings, {min(dates)} to {max(dates)}"


def _figures(source: OfflineSec, cik: int) -> str:
    """ "periods through 2025-12-27 (last filed 2026-01-30)" over its us-gaap facts."""
    facts = _json(source, f"/api/xbrl/companyfacts/CIK{cik:010d}.json")
    rows = [
        row
        for concept in facts["facts"].get("us-gaap", {}).values()
        for unit in concept["units"].values()
        for row in unit
    ]
    end, filed = max(r["end"] for r in rows), max(r["filed"] for r in rows)
    return f"periods through {end} (last filed {filed})"


def holdings(source: OfflineSec | None = None) -> list[Holding]:
    """Every company the snapshot holds anything for, by CIK."""
    source = source or OfflineSec()
    manifest: dict[str, Any] = source.manifest
    held = {c["cik"]: Holding(c["cik"], c["name"]) for c in manifest["companies"]}
    for company in manifest["companies"]:
        holding = held[company["cik"]]
        if company["submissions"]:
            holding.filings = _filing_list(source, company["cik"])
        if company["facts"]:
            holding.figures = _figures(source, company["cik"])
    for doc in manifest["documents"]:
        holding = held.setdefault(doc["cik"], Holding(doc["cik"], doc["company"]))
        what = f"{doc['form']} filed {doc['filed']}"
        if doc["type"] == doc["form"] and what not in holding.documents:
            holding.documents.append(what)
    return sorted(held.values(), key=lambda h: h.name.casefold())


def table(source: OfflineSec | None = None) -> str:
    lines = [
        "| company | CIK | filing list | XBRL figures | documents to read |",
        "|---|---|---|---|---|",
    ]
    for h in holdings(source):
        documents = "; ".join(h.documents) or "–"
        lines.append(f"| {h.name} | {h.cik} | {h.filings} | {h.figures} | {documents} |")
    return "\n".join(lines)


def readme_with_table(readme: str, generated: str) -> str:
    """The README text with the table between its markers replaced by `generated`."""
    head, begin, rest = readme.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise ValueError(f"README.md has no {BEGIN} ... {END} markers")
    return f"{head}{BEGIN}\n{generated}\n{END}{tail}"


def main(argv: list[str]) -> int:
    generated = table()
    if argv == ["--write"]:
        README.write_text(readme_with_table(README.read_text("utf-8"), generated), "utf-8")
    else:
        print(generated)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
