"""EDGAR complete submission text files (`<accession>.txt`): split, and render as text.

Such a file is an SGML envelope: a `<SEC-HEADER>` block, then one `<DOCUMENT>` per file of
the filing (`<TYPE>`, `<SEQUENCE>`, `<FILENAME>`, `<DESCRIPTION>`, `<TEXT>`). Before 2001
the documents are plain text; later ones are HTML, XBRL, and uuencoded images or zips.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tools.sec.htmltext import html_to_text, looks_like_html

__all__ = ["SubmissionDocument", "header_fields", "split_submission", "submission_to_text"]

_DOCUMENT = re.compile(r"<DOCUMENT>(.*?)</DOCUMENT>", re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"^<(TYPE|SEQUENCE|FILENAME|DESCRIPTION)>(.*)$", re.MULTILINE | re.IGNORECASE)
_TEXT = re.compile(r"<TEXT>(.*?)(?:</TEXT>|\Z)", re.DOTALL | re.IGNORECASE)
_HEADER = re.compile(r"<SEC-HEADER>(.*?)</SEC-HEADER>", re.DOTALL | re.IGNORECASE)
_HEADER_FIELD = re.compile(r"^[ \t]*([A-Z][A-Z -]+?):[ \t]*(\S.*?)[ \t]*$", re.MULTILINE)
# Typesetting marks of plain-text filings (page breaks, table column markers).
_LAYOUT_MARK = re.compile(r"</?(PAGE|PRE|TABLE|C|S|CAPTION|FN)>", re.IGNORECASE)
# Types that carry no prose: XBRL, images, spreadsheets, archives, scripts.
_NOT_TEXT = re.compile(r"^(EX-101|GRAPHIC|ZIP|EXCEL|XML|JSON|PDF|XBRL)", re.IGNORECASE)
_HEADER_KEEP = (
    "ACCESSION NUMBER",
    "CONFORMED SUBMISSION TYPE",
    "CONFORMED PERIOD OF REPORT",
    "FILED AS OF DATE",
    "COMPANY CONFORMED NAME",
    "CENTRAL INDEX KEY",
    "ITEM INFORMATION",
)


@dataclass(frozen=True, slots=True)
class SubmissionDocument:
    """One `<DOCUMENT>` of a complete submission file."""

    type: str
    sequence: str
    filename: str
    description: str
    body: str

    @property
    def is_text(self) -> bool:
        return not _NOT_TEXT.match(self.type) and not self.body.lstrip().startswith("begin ")


def split_submission(raw: str) -> list[SubmissionDocument]:
    docs = []
    for match in _DOCUMENT.finditer(raw):
        block = match.group(1)
        text = _TEXT.search(block)
        body_start = text.start() if text else len(block)
        tags = {k.upper(): v.strip() for k, v in _TAG.findall(block[:body_start])}
        docs.append(
            SubmissionDocument(
                type=tags.get("TYPE", ""),
                sequence=tags.get("SEQUENCE", ""),
                filename=tags.get("FILENAME", ""),
                description=tags.get("DESCRIPTION", ""),
                body=text.group(1) if text else "",
            )
        )
    return docs


def header_fields(raw: str) -> list[tuple[str, str]]:
    """`(NAME, value)` pairs of the SGML header, in order (names may repeat)."""
    header = _HEADER.search(raw)
    return [(k.strip(), v) for k, v in _HEADER_FIELD.findall(header.group(1))] if header else []


def document_text(doc: SubmissionDocument) -> str:
    """Readable text of one embedded document: HTML converted, plain text kept as laid out."""
    if looks_like_html(doc.body):
        return html_to_text(doc.body)
    lines = (line.rstrip() for line in _LAYOUT_MARK.sub("", doc.body).splitlines())
    # Plain-text filings align tables with spaces, so inner spacing stays; blank runs go.
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")


def submission_to_text(raw: str) -> str:
    """The header essentials, then every text document under a `=== Document ... ===` line."""
    fields = header_fields(raw)
    parts = [f"{k}: {v}" for k, v in fields if k in _HEADER_KEEP]
    omitted = []
    for doc in split_submission(raw):
        if doc.is_text:
            title = " ".join(x for x in (doc.type, doc.filename, doc.description) if x)
            parts.append(f"\n=== Document {doc.sequence}: {title} ===\n{document_text(doc)}")
        else:
            omitted.append(f"{doc.type} {doc.filename}".strip())
    if omitted:
        parts.append("\n=== Not text, omitted: " + ", ".join(omitted) + " ===")
    return "\n".join(parts).strip()
