"""Pick filings out of the columnar submissions JSON, across its older pages when needed.

`filings.recent` holds the latest ~1,000 filings; `filings.files` names older pages, each
with the date span it covers. A page is fetched only when the asked date range reaches
into its span and the recent list did not already give enough filings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tools.sec.edgar import Edgar
from tools.sec.source import SecNotFound, public_url

__all__ = ["FilingQuery", "collect_filings", "filing_row"]


@dataclass(frozen=True)
class FilingQuery:
    forms: frozenset[str] | None  # upper-case form types, None for any
    include_amendments: bool
    date_after: str | None  # inclusive ISO dates
    date_before: str | None
    limit: int

    def wants(self, row: dict[str, Any]) -> bool:
        filed = row["filingDate"]
        if self.date_after and filed < self.date_after:
            return False
        if self.date_before and filed > self.date_before:
            return False
        if self.forms is None:
            return True
        form = str(row["form"]).upper()
        return form in self.forms or (
            self.include_amendments and form.endswith("/A") and form[:-2] in self.forms
        )

    def reaches(self, page: dict[str, Any]) -> bool:
        """Whether an older page's span overlaps the asked dates."""
        return (not self.date_after or page.get("filingTo", "9999") >= self.date_after) and (
            not self.date_before or page.get("filingFrom", "0000") <= self.date_before
        )


@dataclass
class Collected:
    rows: list[dict[str, Any]] = field(default_factory=list)
    pages_read: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def iter_rows(columns: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    keys = list(columns)
    for values in zip(*(columns[k] for k in keys), strict=False):
        yield dict(zip(keys, values, strict=True))


async def collect_filings(
    edgar: Edgar, submissions: dict[str, Any], query: FilingQuery
) -> Collected:
    found = Collected()
    recent = submissions["filings"]["recent"]
    found.rows = [row for row in iter_rows(recent) if query.wants(row)]
    oldest_recent = min(recent["filingDate"], default="")
    if not query.date_after or query.date_after < oldest_recent:
        await _read_older_pages(edgar, submissions["filings"].get("files", []), query, found)
    found.rows.sort(key=lambda r: (r["filingDate"], r["accessionNumber"]), reverse=True)
    return found


async def _read_older_pages(
    edgar: Edgar, pages: list[dict[str, Any]], query: FilingQuery, found: Collected
) -> None:
    for page in pages:
        if len(found.rows) >= query.limit:
            return
        if not query.reaches(page):
            continue
        try:
            columns = await edgar.submissions_page(page["name"])
        except SecNotFound:
            url = public_url("data", f"/submissions/{page['name']}")
            found.notes.append(
                f"Older filings page {url} ({page.get('filingFrom')} to {page.get('filingTo')}) "
                f"is not available from the {edgar.label}; filings in that span are missing."
            )
            continue
        found.pages_read.append(page["name"])
        found.rows += [row for row in iter_rows(columns) if query.wants(row)]


def filing_row(cik: int, row: dict[str, Any]) -> dict[str, Any]:
    """One filing as the model sees it, with the URL of its primary document."""
    folder = f"/Archives/edgar/data/{cik}/{row['accessionNumber'].replace('-', '')}"
    # Ownership forms name an XSL-rendered HTML view ("xslF345X05/doc.xml"), readable as is.
    document = row.get("primaryDocument") or ""
    url = f"{folder}/{document}" if document else f"{folder}/{row['accessionNumber']}-index.html"
    entry = {
        "form": row["form"],
        "filing_date": row["filingDate"],
        "report_date": row.get("reportDate") or None,
        "accession_number": row["accessionNumber"],
        "url": public_url("www", url),
        "description": row.get("primaryDocDescription") or None,
    }
    if row.get("items"):
        entry["items"] = row["items"]
    return entry
