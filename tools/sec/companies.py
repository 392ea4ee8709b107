"""Companies by ticker, CIK or name, from SEC's two ticker files.

`company_tickers.json` is ordered roughly by market cap; `company_tickers_exchange.json`
adds the exchange. Matching is exact first (ticker, CIK, normalised name), then prefixes;
a name that fits several companies is an error listing them, never a silent pick.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tools.base import ToolFailure

__all__ = ["Company", "CompanyDirectory", "Listing", "parse_cik"]

_CIK = re.compile(r"^(?:CIK)?\s*0*(\d{1,10})$", re.IGNORECASE)
_STATE_SUFFIX = re.compile(r"\s*/[A-Z]{2,3}/?\s*$")  # "BANK OF AMERICA CORP /DE/"
_LEGAL_SUFFIXES = frozenset(
    "inc incorporated corp corporation co company ltd limited plc llc lp sa nv ag the".split()  # noqa: SIM905
)
# Match kinds, best first; the rank orders search results.
MATCH_KINDS = (
    "ticker",
    "cik",
    "name",
    "ticker prefix",
    "name prefix",
    "name words",
    "name contains",
)


@dataclass(frozen=True, slots=True)
class Listing:
    """One ticker of one company."""

    cik: int
    name: str
    ticker: str
    exchange: str | None
    key: str  # normalised name, for matching


@dataclass(frozen=True, slots=True)
class Company:
    cik: int
    name: str | None
    tickers: tuple[str, ...]


def parse_cik(text: str) -> int | None:
    match = _CIK.match(text.strip())
    return int(match.group(1)) if match else None


def name_key(name: str) -> str:
    """Matching key of a name: "JPMorgan Chase & Co." -> "jpmorgan chase"."""
    words = re.findall(r"[a-z0-9]+", _STATE_SUFFIX.sub("", name).casefold())
    while words and words[-1] in _LEGAL_SUFFIXES:
        words.pop()
    while words and words[0] == "the":
        words.pop(0)
    return " ".join(words)


def _ticker_key(ticker: str) -> str:
    return ticker.strip().upper().replace(".", "-").replace("/", "-")


class CompanyDirectory:
    """All listed companies; built once per ticker-file download."""

    def __init__(self, tickers: dict[str, Any], exchange: dict[str, Any]) -> None:
        fields = exchange.get("fields", [])
        rows = [dict(zip(fields, row, strict=False)) for row in exchange.get("data", [])]
        exchanges = {(r["cik"], r["ticker"]): r.get("exchange") for r in rows}
        seen: set[tuple[int, str]] = set()
        self.listings: list[Listing] = []
        for entry in tickers.values():
            self._add(entry["cik_str"], entry["title"], entry["ticker"], exchanges, seen)
        for row in rows:  # tickers only the exchange file knows
            self._add(row["cik"], row["name"], row["ticker"], exchanges, seen)

    def _add(
        self,
        cik: int,
        name: str,
        ticker: str,
        exchanges: dict[tuple[int, str], str | None],
        seen: set[tuple[int, str]],
    ) -> None:
        if (cik, ticker) in seen:
            return
        seen.add((cik, ticker))
        listing = Listing(int(cik), name, ticker, exchanges.get((cik, ticker)), name_key(name))
        self.listings.append(listing)

    def by_cik(self, cik: int) -> list[Listing]:
        return [x for x in self.listings if x.cik == cik]

    def search(self, term: str, exchange: str | None = None) -> list[tuple[Listing, str]]:
        """Every listing matching `term`, best match kind first, then by market-cap order."""
        query = _Query(term)
        ranked = []
        for order, listing in enumerate(self.listings):
            if exchange and (listing.exchange or "").casefold() != exchange.casefold():
                continue
            kind = query.match(listing)
            if kind is not None:
                ranked.append((MATCH_KINDS.index(kind), order, listing, kind))
        ranked.sort(key=lambda r: (r[0], r[1]))
        return [(listing, kind) for _, _, listing, kind in ranked]

    def resolve(self, identifier: str) -> Company:
        """Exactly one company for a CIK, ticker or name; ToolFailure otherwise."""
        cik = parse_cik(identifier)
        if cik is not None:
            return self._company(cik)
        matches = self.search(identifier)
        for kinds in (("ticker",), ("name",), ("name prefix", "name words")):
            ciks = list(dict.fromkeys(x.cik for x, kind in matches if kind in kinds))
            if len(ciks) == 1:
                return self._company(ciks[0])
            if len(ciks) > 1:
                raise ToolFailure(self._ambiguous(identifier, ciks))
        raise ToolFailure(
            f"No company matches {identifier!r} by ticker, CIK or name in SEC's ticker list. "
            "Try search_sec_company_tickers with part of the name, or pass the CIK."
        )

    def _company(self, cik: int) -> Company:
        listings = self.by_cik(cik)
        name = listings[0].name if listings else None
        return Company(cik, name, tuple(x.ticker for x in listings))

    def _ambiguous(self, identifier: str, ciks: list[int]) -> str:
        shown = []
        for cik in ciks[:8]:
            company = self._company(cik)
            shown.append(f"{company.name} ({', '.join(company.tickers)}; CIK {cik})")
        more = f" and {len(ciks) - 8} more" if len(ciks) > 8 else ""
        return (
            f"{identifier!r} matches {len(ciks)} companies: {'; '.join(shown)}{more}. "
            "Call again with the ticker or CIK of the one you mean."
        )


class _Query:
    """A search term normalised once, matched against every listing."""

    def __init__(self, term: str) -> None:
        self.ticker = _ticker_key(term)
        self.key = name_key(term)
        self.cik = parse_cik(term)
        self.words = [re.compile(rf"\b{re.escape(w)}") for w in self.key.split()]

    def match(self, listing: Listing) -> str | None:
        """The best kind of match, or None."""
        ticker = _ticker_key(listing.ticker)
        if self.ticker and ticker == self.ticker:
            return "ticker"
        if self.cik is not None and self.cik == listing.cik:
            return "cik"
        if not self.key:
            return None
        if listing.key == self.key:
            return "name"
        if len(self.ticker) >= 2 and ticker.startswith(self.ticker):
            return "ticker prefix"
        if (listing.key + " ").startswith(self.key + " "):
            return "name prefix"
        if all(w.search(listing.key) for w in self.words):
            return "name words"
        return "name contains" if self.key in listing.key else None
