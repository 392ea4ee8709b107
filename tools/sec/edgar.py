"""EDGAR as the tools see it: companies, filing lists, facts, frames and document text.

One object per toolset, over either source. It owns the caches: ticker maps and
submissions for a TTL (they change daily at most), converted documents in a small LRU
(an accession's documents never change, and a model pages through the same one).
"""

from __future__ import annotations

import asyncio
from typing import Any

from tools.sec.cache import LruCache, TtlCache
from tools.sec.companies import Company, CompanyDirectory
from tools.sec.documents import document_to_text
from tools.sec.source import SecNotFound, SecSource

__all__ = ["Edgar"]

TICKERS_PATH = "/files/company_tickers.json"
EXCHANGE_PATH = "/files/company_tickers_exchange.json"


class Edgar:
    def __init__(
        self,
        source: SecSource,
        *,
        tickers_ttl_s: float = 6 * 3600,
        submissions_ttl_s: float = 600,
        documents_cached: int = 8,
    ) -> None:
        self.source = source
        self._tickers = TtlCache(tickers_ttl_s, max_entries=1)
        self._submissions = TtlCache(submissions_ttl_s, max_entries=64)
        self._documents: LruCache[str] = LruCache(documents_cached)

    @property
    def label(self) -> str:
        return self.source.label

    async def directory(self) -> CompanyDirectory:
        async def load() -> CompanyDirectory:
            tickers, exchange = await asyncio.gather(
                self.source.get_json("www", TICKERS_PATH),
                self.source.get_json("www", EXCHANGE_PATH),
            )
            return await asyncio.to_thread(CompanyDirectory, tickers, exchange)

        return await self._tickers.get("directory", load)

    async def resolve(self, identifier: str) -> Company:
        return (await self.directory()).resolve(identifier)

    async def submissions(self, cik: int) -> dict[str, Any]:
        """The submissions JSON: entity header plus `filings.recent` and `filings.files`."""
        return await self._cached_json(self._submissions, f"/submissions/CIK{cik:010d}.json", cik)

    async def submissions_page(self, name: str) -> dict[str, Any]:
        """An older-filings page named in `filings.files` (bare columns)."""
        return await self._cached_json(self._submissions, f"/submissions/{name}", None)

    async def company_facts(self, cik: int) -> dict[str, Any]:
        # Not cached: a large company's facts are tens of MB once parsed.
        try:
            data: dict[str, Any] = await self.source.get_json(
                "data", f"/api/xbrl/companyfacts/CIK{cik:010d}.json"
            )
        except SecNotFound as exc:
            raise SecNotFound(f"No XBRL company facts for CIK {cik}. {exc}") from exc
        return data

    async def frame(self, taxonomy: str, concept: str, unit: str, period: str) -> dict[str, Any]:
        path = f"/api/xbrl/frames/{taxonomy}/{concept}/{unit.replace('/', '-per-')}/{period}.json"
        data: dict[str, Any] = await self.source.get_json("data", path)
        return data

    async def document(self, path: str) -> str:
        """Readable text of an Archives document (HTML, iXBRL, .txt submission, JSON)."""
        text = self._documents.get(path)
        if text is None:
            body = await self.source.get_text("www", path)
            text = await asyncio.to_thread(document_to_text, path, body)
            self._documents.put(path, text)
        return text

    async def _cached_json(self, cache: TtlCache, path: str, cik: int | None) -> dict[str, Any]:
        async def load() -> dict[str, Any]:
            try:
                data: dict[str, Any] = await self.source.get_json("data", path)
            except SecNotFound as exc:
                if cik is None:
                    raise
                raise SecNotFound(f"No EDGAR filer with CIK {cik}. {exc}") from exc
            return data

        return await cache.get(path, load)
