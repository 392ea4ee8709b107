"""The offline search corpus: the bundled filing documents, cut into passages and indexed.

Passages are built from the same text `get_sec_filing` returns, so a hit's `offset` can be
passed straight to it. Converting the documents takes a fraction of a second; the result
is kept for the process, and each toolset builds its own in-memory index from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from tools.base import ToolFailure
from tools.search.index import IndexHit, Passage, PassageIndex
from tools.sec.documents import document_to_text
from tools.sec.fulltext import FullTextHit, FullTextQuery, FullTextResult, FullTextSearch
from tools.sec.offline import SNAPSHOT_DIR, OfflineSec
from tools.sec.sections import headings
from tools.sec.source import public_url

__all__ = ["Document", "IndexFullText", "LocalIndex", "load_corpus", "open_local_index"]

PASSAGE_CHARS = 1_200
# Enough candidate passages that one-hit-per-document still fills a page of results.
_CANDIDATES = 200


@dataclass(frozen=True, slots=True)
class Document:
    url: str
    title: str
    company: str
    cik: int
    form: str
    type: str
    filed: str
    period: str | None
    accession_number: str


def _spans(text: str, size: int) -> Iterator[tuple[int, int]]:
    """(start, end) pieces of about `size` characters, ending at a line or sentence end."""
    start = 0
    while start < len(text):
        end = min(len(text), start + size)
        if end < len(text):
            line_end = text.find("\n", end)
            if 0 <= line_end <= start + 2 * size:
                end = line_end
            else:
                sentence_end = text.rfind(". ", start + size // 2, end)
                end = sentence_end + 1 if sentence_end >= 0 else end
        yield start, end
        start = end
        while start < len(text) and text[start].isspace():
            start += 1


def passages(doc: int, text: str) -> list[Passage]:
    """The passages of one document, each labelled with the item heading it falls under."""
    marks = [(h.start, h.title[:100]) for h in headings(text) if not h.in_contents]
    out = []
    for start, end in _spans(text, PASSAGE_CHARS):
        section = next((title for pos, title in reversed(marks) if pos <= start), "")
        out.append(Passage(doc, start, section, text[start:end].strip()))
    return out


@dataclass(frozen=True)
class Corpus:
    documents: tuple[Document, ...]
    passages: tuple[Passage, ...]


@lru_cache(maxsize=2)
def load_corpus(root: Path = SNAPSHOT_DIR) -> Corpus:
    source = OfflineSec(root)
    documents, all_passages = [], []
    for number, entry in enumerate(source.manifest["documents"]):
        path = entry["path"]
        text = document_to_text(path, source.read("www", path).decode("utf-8", "replace"))
        kind = "" if entry["type"] == entry["form"] else f" {entry['type']}"
        documents.append(
            Document(
                url=public_url("www", path),
                title=f"{entry['company']} {entry['form']}{kind} filed {entry['filed']}",
                company=entry["company"],
                cik=entry["cik"],
                form=entry["form"],
                type=entry["type"],
                filed=entry["filed"],
                period=entry.get("period") or None,
                accession_number=entry["accession"],
            )
        )
        all_passages += passages(number, text)
    return Corpus(tuple(documents), tuple(all_passages))


class LocalIndex:
    """The corpus documents and their passage index."""

    def __init__(self, corpus: Corpus) -> None:
        self.documents = corpus.documents
        filters = {n: (d.form, d.filed, d.cik) for n, d in enumerate(corpus.documents)}
        self.index = PassageIndex(corpus.passages, filters)

    def close(self) -> None:
        self.index.close()


async def open_local_index(root: Path = SNAPSHOT_DIR) -> LocalIndex:
    corpus = await asyncio.to_thread(load_corpus, root)
    return LocalIndex(corpus)


class IndexFullText(FullTextSearch):
    """search_sec_full_text from the local index: one hit per document, best passage shown."""

    label = "offline full-text index of the bundled EDGAR documents"

    def __init__(self, local: LocalIndex) -> None:
        self.local = local

    async def search(self, query: FullTextQuery) -> FullTextResult:
        try:
            found = self.local.index.search(
                query.query,
                limit=_CANDIDATES,
                forms=query.forms,
                date_from=query.date_from,
                date_to=query.date_to,
                cik=query.cik,
            )
        except ValueError as exc:
            raise ToolFailure(
                f"Nothing to search for: {exc}. Use words or a quoted phrase."
            ) from None
        best: dict[int, IndexHit] = {}
        for hit in found:
            best.setdefault(hit.doc, hit)
        hits = [self._hit(h) for h in list(best.values())[: query.limit]]
        return FullTextResult(len(best), False, hits)

    def _hit(self, hit: IndexHit) -> FullTextHit:
        doc = self.local.documents[hit.doc]
        return FullTextHit(
            form=doc.form,
            filed=doc.filed,
            company=doc.company,
            cik=doc.cik,
            accession_number=doc.accession_number,
            url=doc.url,
            period=doc.period,
            document_type=doc.type if doc.type != doc.form else None,
            snippet=hit.snippet,
            offset=hit.offset,
        )
