"""What the enclosing objects of a JSON value in a tool result say about it: the tool call,
the concept, unit, company, form and filing (an XBRL fact's own fields come on top)."""

from __future__ import annotations

from typing import Any, Protocol

from gateway.figures.sources import Source


class Indexer(Protocol):
    """What `Where.inside` tells the index about as it goes: companies and filings."""

    def add_company(self, cik: str, name: object, where: Where | None = None) -> None: ...

    def identify(self, identifier: str, source: Source) -> None: ...


class Where:
    """What the enclosing objects of a JSON value say about it. Never changed once made; a
    plain class with its own `__init__`, as `Source` is."""

    __slots__ = ("accession", "company", "concept", "form", "tool", "tool_use_id", "unit")

    def __init__(
        self,
        tool_use_id: str,
        tool: str,
        concept: str | None = None,
        unit: str | None = None,
        company: str | None = None,
        form: str | None = None,
        accession: str | None = None,
    ) -> None:
        self.tool_use_id = tool_use_id
        self.tool = tool
        self.concept = concept
        self.unit = unit
        self.company = company
        self.form = form
        self.accession = accession

    def with_unit(self, unit: str) -> Where:
        return _replace(self, unit=unit)

    def with_company(self, company: str | None) -> Where:
        return self if company == self.company else _replace(self, company=company)

    def inside(self, node: dict[str, Any], index: Indexer) -> Where:
        changes: dict[str, Any] = {}
        company = node.get("company")
        if isinstance(company, dict) and company.get("cik") is not None:
            changes["company"] = str(company["cik"]).lstrip("0")
            index.add_company(changes["company"], company.get("name"), self)
        elif node.get("cik") is not None and str(node["cik"]).isdigit():
            changes["company"] = str(node["cik"]).lstrip("0")
            index.add_company(changes["company"], node.get("entity") or node.get("name"), self)
        concept = node.get("concept")
        if isinstance(concept, str):
            taxonomy = node.get("taxonomy")
            changes["concept"] = (
                f"{taxonomy}:{concept}"
                if isinstance(taxonomy, str) and ":" not in concept
                else concept
            )
        if isinstance(node.get("unit"), str):
            changes["unit"] = node["unit"]
        if isinstance(node.get("form"), str):
            changes["form"] = node["form"]
        accession = node.get("accession_number") or node.get("accn") or node.get("accessionNumber")
        if isinstance(accession, str):
            changes["accession"] = accession
            index.identify(accession, Source(self.tool_use_id, self.tool, 0.0, accession=accession))
        return _replace(self, **changes) if changes else self


def _replace(where: Where, **changes: Any) -> Where:
    """`where` with some of what the objects say changed (never the tool call)."""
    get = changes.get
    return Where(
        where.tool_use_id,
        where.tool,
        get("concept", where.concept),
        get("unit", where.unit),
        get("company", where.company),
        get("form", where.form),
        get("accession", where.accession),
    )
