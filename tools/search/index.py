"""A local full-text index: SQLite FTS5 over passages of documents, ranked by bm25.

User text never reaches FTS5's query syntax as is: every word or "quoted phrase" becomes a
double-quoted FTS5 string made only of word characters, so `Item 5.02`, `AT&T`, `-`, `*`
or an unbalanced `(` are searched for, never parsed. All terms must match; when that finds
nothing, any term may match (bm25 still ranks passages with more of them first).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["IndexHit", "Passage", "PassageIndex", "fts_query"]

_QUOTED = re.compile(r'"([^"]*)"')
_WORD = re.compile(r"\w+")
# Question words that would make an all-terms query miss; quoted phrases keep them.
_STOPWORDS = frozenset(
    "a an and are as at be by did do does for from has have how in is it its of on "  # noqa: SIM905
    "or the to was were what when where which who why with about".split()
)


@dataclass(frozen=True, slots=True)
class Passage:
    """A piece of one document, where it starts in the document's text, its section."""

    doc: int
    offset: int
    section: str
    text: str


@dataclass(frozen=True, slots=True)
class IndexHit:
    doc: int
    offset: int
    section: str
    snippet: str
    score: float


def fts_query(text: str, operator: str = "AND") -> str | None:
    """An FTS5 MATCH expression for free text, or None when it has no words."""
    terms = []
    for phrase in _QUOTED.findall(text):
        words = _WORD.findall(phrase)
        if words:
            terms.append('"' + " ".join(words) + '"')
    for chunk in _QUOTED.sub(" ", text).split():
        # "5.02" or "AT&T" is one term: its words must be adjacent, as a phrase.
        words = _WORD.findall(chunk)
        if words and not (len(words) == 1 and words[0].lower() in _STOPWORDS):
            terms.append('"' + " ".join(words) + '"')
    if not terms:
        return None
    return f" {operator} ".join(dict.fromkeys(terms))


class PassageIndex:
    """Passages in an in-memory FTS5 table; metadata filters are plain columns."""

    def __init__(self, passages: Iterable[Passage], doc_filters: dict[int, tuple[str, str, int]]):
        # doc_filters: doc -> (form, filed ISO date, cik), for the WHERE clause.
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE passages USING fts5("
            "body, section, doc UNINDEXED, pos UNINDEXED, form UNINDEXED, filed UNINDEXED, "
            "cik UNINDEXED, tokenize = 'porter unicode61')"
        )
        with self._db:
            self._db.executemany(
                "INSERT INTO passages VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((p.text, p.section, p.doc, p.offset, *doc_filters[p.doc]) for p in passages),
            )

    def close(self) -> None:
        self._db.close()

    def search(
        self,
        text: str,
        *,
        limit: int,
        forms: tuple[str, ...] = (),
        date_from: str | None = None,
        date_to: str | None = None,
        cik: int | None = None,
    ) -> list[IndexHit]:
        """Best passages first; raises ValueError when the text has no searchable word."""
        where: list[str] = ["passages MATCH ?"]
        params: list[object] = []
        if forms:
            where.append(f"upper(form) IN ({', '.join('?' * len(forms))})")
            params += [f.upper() for f in forms]
        for clause, value in (("filed >= ?", date_from), ("filed <= ?", date_to), ("cik = ?", cik)):
            if value is not None:
                where.append(clause)
                params.append(value)
        for operator in ("AND", "OR"):
            match = fts_query(text, operator)
            if match is None:
                raise ValueError(f"no searchable words in {text!r}")
            if operator == "OR" and " OR " not in match:
                break  # one term: the OR query is the AND query again
            rows = self._db.execute(
                "SELECT doc, pos, section, snippet(passages, 0, '', '', ' … ', 40), "
                f"bm25(passages, 1.0, 0.5) AS score FROM passages WHERE {' AND '.join(where)} "
                "ORDER BY score LIMIT ?",
                [match, *params, limit],
            ).fetchall()
            if rows:
                return [IndexHit(*row) for row in rows]
        return []
