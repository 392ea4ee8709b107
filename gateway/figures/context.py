"""What a figure is stated for: the periods and companies its sentence names, else its
paragraph's (a table row names its columns' periods only in the header), else, for
periods, the question's."""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from gateway.figures.periods import Named, named, named_at

_SENTENCE_END = re.compile(r"(?=\s)(?:(?<=[.!?])\s+(?=[A-Z*\[(#|-])|\n)")
_PARAGRAPH_END = re.compile(r"\n\s*\n")
_WORD = re.compile(r"[a-z0-9][\w&-]*")
_LINKS = re.compile(r"(?=[\]h\d])(?:\]\([^)\s]*\)|https?://\S+|\b\d{10}-\d{2}-\d{6}\b)")


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
        found = named_at(self._text)
        self._period_at = [at for at, _ in found]
        self._periods = [period for _, period in found]
        self._cache: dict[int, _Read] = {}
        """Sentence n at n, paragraph n at -1 - n."""
        self._stated: dict[tuple[int, int], Stated] = {}
        """What (sentence, paragraph) states."""

    def at(self, offset: int) -> Stated:
        where = (
            bisect_right(self._sentences, offset) - 1,
            bisect_right(self._paragraphs, offset) - 1,
        )
        found = self._stated.get(where)
        if found is None:  # the figures of a sentence share it
            sentence, paragraph = self._sentence(where[0]), self._paragraph(where[1])
            periods = sentence.periods or paragraph.periods or self._question
            found = Stated(periods, sentence.companies or paragraph.companies, sentence.words)
            self._stated[where] = found
        return found

    def paragraph(self, offset: int) -> int:
        """Which paragraph `offset` is in."""
        return bisect_right(self._paragraphs, offset)

    def _sentence(self, n: int) -> _Read:
        starts = self._sentences
        if n not in self._cache:
            end = starts[n + 1] if n + 1 < len(starts) else len(self._text)
            part = self._text[starts[n] : end]
            words = frozenset(_WORD.findall(part.lower()))
            found = frozenset(self._aliases[w] for w in words if w in self._aliases)
            periods = self._periods[
                bisect_left(self._period_at, starts[n]) : bisect_left(self._period_at, end)
            ]
            self._cache[n] = _Read(frozenset(periods), found, words)
        return self._cache[n]

    def _paragraph(self, n: int) -> _Read:
        """What the sentences of paragraph `n` name together."""
        if -1 - n not in self._cache:
            end = self._paragraphs[n + 1] if n + 1 < len(self._paragraphs) else len(self._text)
            first = bisect_right(self._sentences, self._paragraphs[n]) - 1
            last = bisect_right(self._sentences, end - 1)
            reads = [self._sentence(k) for k in range(first, last)]
            periods = frozenset().union(*(r.periods for r in reads))
            companies = frozenset().union(*(r.companies for r in reads))
            self._cache[-1 - n] = _Read(periods, companies, frozenset())
        return self._cache[-1 - n]


@dataclass(frozen=True)
class _Read:
    periods: frozenset[Named]
    companies: frozenset[str]
    words: frozenset[str]


def _starts(pattern: re.Pattern[str], text: str) -> list[int]:
    return [0, *(m.end() for m in pattern.finditer(text))]
