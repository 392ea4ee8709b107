"""What a figure is stated for: the periods and companies its sentence names, else its
paragraph's (a table row names its columns' periods only in the header), else, for
periods, the question's."""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from gateway.figures.periods import Named, named

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*\[(#|-])|\n")
_PARAGRAPH_END = re.compile(r"\n\s*\n")
_WORD = re.compile(r"[a-z0-9][\w&-]*")
_LINKS = re.compile(r"\]\([^)\s]*\)|https?://\S+|\b\d{10}-\d{2}-\d{6}\b")


@dataclass(frozen=True)
class Stated:
    periods: frozenset[Named]
    """Empty: no period named anywhere (any period will do)."""
    companies: frozenset[str]
    """CIKs named; empty: none named (any company will do)."""
    words: frozenset[str] = frozenset()
    """The sentence's words, lowercase (to prefer the concept it names among sources)."""


class Contexts:
    """The context of any offset of an answer; each sentence read once."""

    def __init__(self, text: str, question: str, aliases: dict[str, str]) -> None:
        self._text = _LINKS.sub(lambda m: " " * len(m.group()), text)
        self._aliases = aliases
        self._question = named(question)
        self._sentences = _starts(_SENTENCE_END, self._text)
        self._paragraphs = _starts(_PARAGRAPH_END, self._text)
        self._cache: dict[tuple[int, int], _Read] = {}

    def at(self, offset: int) -> Stated:
        sentence = self._read(self._sentences, offset)
        paragraph = self._read(self._paragraphs, offset)
        periods = sentence.periods or paragraph.periods or self._question
        return Stated(periods, sentence.companies or paragraph.companies, sentence.words)

    def paragraph(self, offset: int) -> int:
        """Which paragraph `offset` is in."""
        return bisect_right(self._paragraphs, offset)

    def _read(self, starts: list[int], offset: int) -> _Read:
        n = bisect_right(starts, offset)
        start = starts[n - 1] if n else 0
        end = starts[n] if n < len(starts) else len(self._text)
        key = (start, end)
        if key not in self._cache:
            part = self._text[start:end]
            words = frozenset(_WORD.findall(part.lower()))
            found = frozenset(self._aliases[w] for w in words if w in self._aliases)
            self._cache[key] = _Read(named(part), found, words)
        return self._cache[key]


@dataclass(frozen=True)
class _Read:
    periods: frozenset[Named]
    companies: frozenset[str]
    words: frozenset[str]


def _starts(pattern: re.Pattern[str], text: str) -> list[int]:
    return [0, *(m.end() for m in pattern.finditer(text))]
