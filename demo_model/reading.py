"""Choosing which filing document to read next, and trying the next one when a document
cannot be read (an offline snapshot holds only some documents; a live EDGAR can fail)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from demo_model.conversation import Conversation, Step
from demo_model.reply import Call
from demo_model.results import Doc, as_doc, reason_of, rows

__all__ = ["READ", "Candidate", "from_hits", "from_list", "next_read", "read_call", "read_say"]

READ = "get_sec_filing"
MAX_READS = 3
MAX_CHARS = 20_000


@dataclass(frozen=True)
class Candidate:
    """A filing document worth reading."""

    filed: str
    form: str
    accession: str
    url: str
    period: str = ""
    items: str = ""


def from_list(steps: list[Step], only_items: str | None = None) -> list[Candidate]:
    """Filings from search_sec_filings results (optionally only 8-Ks with an item)."""
    found = []
    for step in steps:
        for f in rows(step, "filings"):
            if only_items and only_items not in str(f.get("items") or ""):
                continue
            found.append(_candidate(f, "filing_date", "report_date", f.get("items")))
    return found


def from_hits(steps: list[Step], cik: int | None = None) -> list[Candidate]:
    """Primary documents (not exhibits) from search_sec_full_text results."""
    found = []
    for step in steps:
        for hit in rows(step, "hits"):
            if hit.get("document_type") or (cik is not None and hit.get("cik") != cik):
                continue
            found.append(_candidate(hit, "filed", "period", None))
    return found


def _candidate(row: dict[str, Any], filed: str, period: str, items: Any) -> Candidate:
    return Candidate(
        filed=str(row.get(filed) or ""),
        form=str(row.get("form") or ""),
        accession=str(row.get("accession_number") or ""),
        url=str(row.get("url") or ""),
        period=str(row.get(period) or ""),
        items=str(items or ""),
    )


def newest_first(candidates: list[Candidate]) -> list[Candidate]:
    unique = {c.url: c for c in reversed(candidates) if c.url}
    return sorted(unique.values(), key=lambda c: (c.filed, c.accession), reverse=True)


def read_doc(conv: Conversation) -> tuple[Step, Doc] | None:
    """The document read successfully, if any."""
    for step in conv.done(READ):
        doc = as_doc(step)
        if doc is not None:
            return step, doc
    return None


def next_read(candidates: list[Candidate], conv: Conversation) -> Candidate | None:
    """The newest candidate not tried yet, unless one was read or enough attempts failed."""
    reads = conv.done(READ)
    if not conv.can(READ) or read_doc(conv) is not None or len(reads) >= MAX_READS:
        return None
    tried = {str(s.input.get("url")) for s in reads}
    return next((c for c in newest_first(candidates) if c.url not in tried), None)


def read_call(candidate: Candidate, section: str | None, max_chars: int = MAX_CHARS) -> Call:
    args: dict[str, Any] = {"url": candidate.url, "max_chars": max_chars}
    if section:
        args["section"] = section
    return Call(READ, args)


def read_say(candidate: Candidate, conv: Conversation, what: str) -> str:
    filing = f"the {candidate.form} filed {candidate.filed} (accession {candidate.accession})"
    previous = conv.steps[-1] if conv.steps else None
    if previous is not None and previous.name == READ and previous.is_error:
        return f"That document could not be read ({reason(previous)}). I'll try {filing} instead."
    return f"The most recent match is {filing}. I'll read {what}."


def reason(step: Step) -> str:
    """Why a read failed, in a few words ("the offline snapshot does not hold this document")."""
    return reason_of(step)


def failures(conv: Conversation) -> str:
    """Why the documents tried could not be read, one line each."""
    lines = []
    for step in conv.done(READ):
        if step.is_error:
            lines.append(f"- {step.input.get('url')}: {reason(step)}.")
    return "\n".join(lines)


def candidate_for(url: str, candidates: list[Candidate]) -> Candidate | None:
    return next((c for c in candidates if c.url == url), None)
