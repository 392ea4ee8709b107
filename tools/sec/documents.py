"""Turn any EDGAR Archives body into readable text, whatever its format.

Complete submission files (`.txt` with an SGML envelope), HTML and inline XBRL, plain text,
and directory listings (`index.json`) all come out as text a model can read and page.
"""

from __future__ import annotations

import re

import orjson

from tools.sec.htmltext import html_to_text, looks_like_html
from tools.sec.submission import submission_to_text

__all__ = ["accession_number", "document_to_text", "filing_folder"]

_ENVELOPE = re.compile(r"<(SEC-DOCUMENT|DOCUMENT)>", re.IGNORECASE)
_ACCESSION = re.compile(r"^(\d{10})-?(\d{2})-?(\d{6})$")


def document_to_text(path: str, body: str) -> str:
    if path.endswith(".json"):
        return orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2).decode()
    if path.endswith(".txt") and _ENVELOPE.search(body[:5000]):
        return submission_to_text(body)
    if looks_like_html(body):
        return html_to_text(body)
    return "\n".join(line.rstrip() for line in body.splitlines()).strip()


def accession_number(text: str) -> str:
    """The dashed form of an accession number given with or without dashes; else ValueError."""
    match = _ACCESSION.match(text.strip())
    if not match:
        raise ValueError(f"Not an accession number: {text!r} (expected 0000320193-24-000123).")
    return "-".join(match.groups())


def filing_folder(cik: int, accession: str) -> str:
    """The Archives folder path of one filing (accession in the dashed form)."""
    return f"/Archives/edgar/data/{cik}/{accession.replace('-', '')}"
