"""Which companies a question names: names, tickers and CIKs, from SEC's ticker map.

The map is the one the tools package bundles (its offline EDGAR snapshot), so the demo
knows exactly the companies the tools know. Matching is word-based and careful with
everyday words: "target", "block" or "news" only count as companies when written as
names (capitalised, or with a legal suffix), never as plain words of a question.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from demo_model.vocab import ACRONYMS, ALIASES, BRAND_WORDS, LOWER_TICKERS, STOPWORDS
from tools.sec.companies import CompanyDirectory, Listing, name_key
from tools.sec.edgar import Edgar
from tools.sec.offline import OfflineSec

__all__ = ["CompanyIndex", "Firm", "Found", "load_index"]

PREFIX_LISTINGS = 1500  # "Marvell" means Marvell Technology: prefixes of the largest only
_TOKEN = re.compile(r"\$?[A-Za-z0-9]+(?:[&.\-'’][A-Za-z0-9]+)*")
_TICKER = re.compile(r"^[A-Z]{2,5}(?:[.\-][A-Z])?$")
_CIK_NUMBER = re.compile(r"^(?:CIK)?0*(\d{6,10})$", re.I)
# English words one letter off a well-known name: never a misspelt company.
_NEAR_NAMES = frozenset("apply ample metal chose chasm chases goggle googly".split())  # noqa: SIM905
_POSSESSIVE = re.compile(r"[a-z]['’]s$")
_LEGAL = frozenset("inc corp corporation co company ltd plc llc holdings group".split())  # noqa: SIM905


@dataclass(frozen=True)
class Firm:
    """A company the question names, as the ticker map knows it."""

    cik: int
    name: str
    """Its name in SEC's ticker map ("NVIDIA CORP")."""
    ticker: str
    said: str
    """How the question named it ("Nvidia", "TSLA", "CIK 320193")."""

    @property
    def person(self) -> bool:
        """A person who files (a reporting owner), not a company: no ticker."""
        return not self.ticker

    @property
    def label(self) -> str:
        """A readable name for sentences: the name as written ("Nvidia", "Meta"), or the
        tidied SEC name when the question gave a ticker or CIK."""
        if self.person:
            last, first = [*self.name.split(), ""][:2]
            return f"{first.title()} {last.title()}".strip()
        said = re.sub(r"^the\s+", "", self.said.lstrip("$"), flags=re.I)
        as_ticker = said.isupper() and said == self.ticker.upper()
        # Typed in lowercase ("nvidia", "jpmorgan"): SEC's spelling reads better.
        if as_ticker or said[:1].isdigit() or said.upper().startswith("CIK") or said.islower():
            return self.ticker_free_label()
        return said[:1].upper() + said[1:]

    def ticker_free_label(self) -> str:
        words = [w for w in re.split(r"\s+", self.name.strip(" .,")) if w]
        while len(words) > 1 and name_key(words[-1]) == "":
            words.pop()
        text = " ".join(words).rstrip(",")
        return text.title() if text.isupper() and len(text) > 6 else text


@dataclass(frozen=True)
class Found:
    firms: tuple[Firm, ...]
    unknown: tuple[str, ...]
    """Capitalised names that matched no company ("Acme Rockets")."""


@dataclass(frozen=True)
class _Token:
    text: str
    start: int

    @property
    def word(self) -> str:
        return re.sub(r"['’]s$", "", self.text.lstrip("$"))


class CompanyIndex:
    """Name, prefix, ticker and CIK lookups over SEC's ticker map."""

    def __init__(self, directory: CompanyDirectory, people: tuple[Listing, ...] = ()) -> None:
        self.people: dict[str, Listing] = {}
        """People who file (reporting owners: Form 3, 4, 13F), by "first last" and "last"."""
        for person in people:
            last, first = [*person.key.split(), ""][:2]
            self.people.setdefault(f"{first} {last}".strip(), person)
            self.people.setdefault(last, person)
        self.by_key: dict[str, Listing] = {}
        self.by_prefix: dict[str, Listing] = {}
        self.by_ticker: dict[str, Listing] = {}
        self.by_cik: dict[int, Listing] = {}
        for order, x in enumerate(directory.listings):
            self.by_key.setdefault(x.key, x)
            self.by_ticker.setdefault(x.ticker.upper(), x)
            self.by_cik.setdefault(x.cik, x)
            words = x.key.split()
            for n in range(1, len(words)) if order < PREFIX_LISTINGS else ():
                self.by_prefix.setdefault(" ".join(words[:n]), x)

    def find(self, text: str) -> Found:
        tokens = [_Token(m.group(), m.start()) for m in _TOKEN.finditer(text)]
        firms: dict[int, Firm] = {}
        unknown: list[str] = []
        i = 0
        while i < len(tokens):
            for n in (4, 3, 2, 1):
                gram = tokens[i : i + n]
                hit = self._match(gram, tokens[i - 1] if i else None) if len(gram) == n else None
                said = " ".join(t.word for t in gram)
                if hit is None and n == 1:  # "nvidias", "appel": said as meant
                    hit, said = self._loose(said), loose_name(said) or said
                if hit is not None:
                    firms.setdefault(hit.cik, Firm(hit.cik, hit.name, hit.ticker, said))
                    i += n
                    break
            else:
                i = self._unknown_run(tokens, i, unknown)
        return Found(tuple(firms.values()), tuple(unknown))

    def _match(self, gram: list[_Token], before: _Token | None) -> Listing | None:
        words = [t.word for t in gram]
        person = self.people.get(" ".join(words).lower()) if len(gram) <= 2 else None
        if person is not None:
            return person
        if len(gram) == 1 and _POSSESSIVE.search(gram[0].text):
            hit = self._possessive(gram[0])
            if hit is not None:
                return hit
        if len(gram) == 1:
            hit = self._single(gram[0], before)
            if hit is not None:
                return hit
        phrase = " ".join(words).lower()
        key = ALIASES.get(phrase) or name_key(phrase)
        if not key or (
            all(w.lower() in STOPWORDS for w in words) and words[-1].lower() not in _LEGAL
        ):
            return None
        single = len(gram) == 1
        named = _capitalised(gram[-1]) and (before is not None or len(gram) > 1)
        if key in BRAND_WORDS and not named:
            return None  # "the target", "Block the ...": words, not Target Corp or Block, Inc.
        lowercase = single and phrase not in ALIASES and not _capitalised(gram[0])
        if lowercase and key not in self.by_key:
            return None  # a lowercase word is a company only by its whole name ("tesla")
        return self.by_key.get(key) or self.by_prefix.get(key)

    def _possessive(self, token: _Token) -> Listing | None:
        """ "costco's", "palantir's": a lowercase name said as an owner is a company when it
        starts the name of one of the largest listings (never an everyday word)."""
        word = token.word.lower()
        if word in STOPWORDS or len(word) < 3 or word in BRAND_WORDS:
            return None
        key = ALIASES.get(word) or name_key(word)
        return self.by_key.get(key) or self.by_prefix.get(key)

    def _loose(self, word: str) -> Listing | None:
        """A well-known company written loosely: "nvidias", "appel", "microsft"."""
        name = loose_name(word)
        if name is None:
            return None
        key = ALIASES[name]
        return self.by_key.get(key) or self.by_prefix.get(key)

    def _single(self, token: _Token, before: _Token | None) -> Listing | None:
        word = token.word
        cik = _CIK_NUMBER.match(word)
        after_cik = before is not None and before.word.upper() == "CIK"
        if cik and (after_cik or word.upper().startswith("CIK") or len(cik.group(1)) >= 6):
            return self.by_cik.get(int(cik.group(1)))
        if token.text.startswith("$") or (_TICKER.match(word) and word not in ACRONYMS):
            return self.by_ticker.get(word.upper().replace(".", "-"))
        return None

    def _unknown_run(self, tokens: list[_Token], i: int, unknown: list[str]) -> int:
        """Collect a run of capitalised non-words starting at i; return where to go on. A
        possessive word that names nothing known ("acmecorp's") is an unknown name too."""
        token = tokens[i]
        if _POSSESSIVE.search(token.text) and not _plain(token.word) and len(token.word) > 2:
            unknown.append(token.word[:1].upper() + token.word[1:])
            return i + 1
        j = i
        while j < len(tokens) and _capitalised(tokens[j]) and not _plain(tokens[j].word):
            j += 1
        if j > i:
            unknown.append(" ".join(t.word for t in tokens[i:j]))
            return j
        return i + 1


def loose_name(word: str) -> str | None:
    """The alias a word means when it is one letter off it or a possessive without the
    apostrophe ("nvidias" -> "nvidia", "appel" -> "apple"). Only the short list of
    well-known names is tried, so ordinary words are never taken for companies."""
    low = word.lower()
    if word in LOWER_TICKERS:
        return LOWER_TICKERS[word]
    if low in STOPWORDS or low in _NEAR_NAMES or len(low) < 4:
        return None
    if low.endswith("s") and low[:-1] in ALIASES:
        return low[:-1]
    if len(low) < 5:
        return None
    allowed = 1 if len(low) < 8 else 2
    for name in ALIASES:
        if " " not in name and name[0] == low[0] and typo_distance(low, name) <= allowed:
            return name
    return None


def typo_distance(a: str, b: str) -> int:
    """Edits between two words (insert, delete, replace, swap two neighbours)."""
    if abs(len(a) - len(b)) > 2:
        return 3
    previous, row = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if previous is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, previous[j - 2] + 1)
            current.append(cost)
        previous, row = row, current
    return row[-1]


def _capitalised(token: _Token) -> bool:
    return token.word[:1].isupper()


def _plain(word: str) -> bool:
    return word.lower() in STOPWORDS or word.upper() in ACRONYMS or word.isdigit()


async def load_index() -> CompanyIndex:
    """The index over the ticker map bundled with the tools package, and the people whose
    filings (as reporting owners) the offline snapshot holds."""
    directory = await Edgar(OfflineSec()).directory()
    return await asyncio.to_thread(CompanyIndex, directory, snapshot_people(directory))


def snapshot_people(directory: CompanyDirectory) -> tuple[Listing, ...]:
    """Filers of the snapshot with no ticker whose SEC name reads "LAST FIRST [M]": people
    (Warren Buffett files Forms 3, 4 and 13F as "BUFFETT WARREN E")."""
    listed = {x.cik for x in directory.listings}
    people = []
    for held in OfflineSec().manifest["companies"]:
        name = str(held["name"])
        words = name_key(name).split()
        if held["cik"] in listed or not held["submissions"] or not 2 <= len(words) <= 4:
            continue
        if any(w in _LEGAL or len(w) < 2 for w in words[:2]):
            continue
        people.append(Listing(int(held["cik"]), name, "", None, " ".join(words)))
    return tuple(people)
