"""web_search: Exa's search API when configured, else the local index of bundled filings."""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from pydantic import Field

from tools.base import Tool, ToolContext, ToolFailure, ToolInput
from tools.common import dump, service
from tools.http import BodyTooLarge, read_capped, retry_after_s
from tools.search.corpus import LocalIndex

__all__ = ["ExaSearch", "OfflineWebSearch", "WebResult", "WebSearch", "WebSearchTool"]

SNIPPET_CHARS = 800


@dataclass(frozen=True, slots=True)
class WebResult:
    title: str
    url: str
    snippet: str
    published_date: str | None = None
    author: str | None = None
    offset: int | None = None  # offline hits: where the passage starts in get_sec_filing text


class WebSearch:
    """A web search backend; `label` names it in results."""

    label: str = ""

    async def search(
        self, query: str, num_results: int, include_domains: list[str]
    ) -> list[WebResult]:
        raise NotImplementedError


class ExaSearch(WebSearch):
    """POST {base}/search with the x-api-key header; any failure is a ToolFailure. A 429 or
    503 is retried once, after `Retry-After` when it asks for no longer than the bound."""

    label = "exa"

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        api_key: str,
        base_url: str,
        timeout_s: float,
        max_retry_wait_s: float = 10.0,
        max_body_bytes: int = 1 << 20,
        throttle_backoff_s: float = 1.0,
    ) -> None:
        self._session = session
        self._url = base_url.rstrip("/") + "/search"
        self._headers = {"x-api-key": api_key, "Content-Type": "application/json"}
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self._max_wait_s = min(max_retry_wait_s, timeout_s)  # a retry still fits the tool's time
        self._max_body = max_body_bytes
        self._backoff_s = throttle_backoff_s

    async def search(
        self, query: str, num_results: int, include_domains: list[str]
    ) -> list[WebResult]:
        body: dict[str, Any] = {
            "query": query,
            "numResults": num_results,
            "contents": {"text": {"maxCharacters": SNIPPET_CHARS}},
        }
        if include_domains:
            body["includeDomains"] = include_domains
        data = await self._post(body)
        results = data.get("results")
        if not isinstance(results, list):
            raise ToolFailure("Exa search answered without a results list; try again later.")
        return [_exa_result(r) for r in results if isinstance(r, dict)]

    async def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        status, raw, retry_after = await self._attempt(body)
        retried = ""
        if status in (429, 503):
            wait = retry_after_s(retry_after)
            if wait is None:
                wait = min(self._backoff_s, self._max_wait_s)
            elif wait > self._max_wait_s:
                raise ToolFailure(
                    f"Exa search is refusing requests for now (HTTP {status}) and asks to wait "
                    f"{wait:g} s (Retry-After), longer than a tool call may wait "
                    f"({self._max_wait_s:.3g} s); try again later."
                )
            await asyncio.sleep(wait)
            status, raw, retry_after = await self._attempt(body)
            retried = f" (retried once after {wait:g} s)"
        if status != 200:
            detail = raw.decode("utf-8", errors="replace")[:300]
            raise ToolFailure(f"Exa search failed: HTTP {status}: {detail}{retried}")
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ToolFailure(f"Exa search sent invalid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ToolFailure("Exa search answered without a results list; try again later.")
        return data

    async def _attempt(self, body: dict[str, Any]) -> tuple[int, bytes, str | None]:
        """One POST: status, body (capped) and the `Retry-After` header."""
        try:
            async with self._session.post(
                self._url, json=body, headers=self._headers, timeout=self._timeout
            ) as resp:
                raw = await read_capped(resp, self._max_body)
                return resp.status, raw, resp.headers.get("Retry-After")
        except BodyTooLarge as exc:
            raise ToolFailure(
                f"Exa search sent an answer longer than {exc.limit:,} bytes "
                "(EXA_MAX_BODY_BYTES); it was not read. Try again with fewer results."
            ) from None
        except TimeoutError:
            raise ToolFailure(f"Exa search timed out after {self._timeout.total:g} s.") from None
        except aiohttp.ClientError as exc:
            raise ToolFailure(f"Exa search failed: {type(exc).__name__}: {exc}") from None


def _exa_result(raw: dict[str, Any]) -> WebResult:
    highlights = raw.get("highlights") or []
    text = raw.get("text") or " … ".join(str(h) for h in highlights)
    return WebResult(
        title=raw.get("title") or raw.get("url", ""),
        url=raw.get("url", ""),
        snippet=" ".join(str(text).split())[:SNIPPET_CHARS],
        published_date=raw.get("publishedDate"),
        author=raw.get("author"),
    )


class OfflineWebSearch(WebSearch):
    """Search without the web: passages of the SEC filings bundled with the tools."""

    label = "offline index of bundled SEC filings (no web access)"

    def __init__(self, local: LocalIndex) -> None:
        self.local = local

    async def search(
        self, query: str, num_results: int, include_domains: list[str]
    ) -> list[WebResult]:
        if include_domains and not any(_covers(d, "www.sec.gov") for d in include_domains):
            return []  # everything here is on www.sec.gov
        try:
            hits = self.local.index.search(query, limit=num_results)
        except ValueError as exc:
            raise ToolFailure(
                f"Nothing to search for: {exc}. Use words or a quoted phrase."
            ) from None
        results = []
        for hit in hits:
            doc = self.local.documents[hit.doc]
            title = f"{doc.title}: {hit.section}" if hit.section else doc.title
            results.append(
                WebResult(title, doc.url, hit.snippet, doc.filed, doc.company, hit.offset)
            )
        return results


def _covers(domain: str, host: str) -> bool:
    domain = (urlsplit(domain).hostname or domain).lower().strip(".")
    return host == domain or host.endswith("." + domain)


class WebSearchInput(ToolInput):
    query: str = Field(min_length=1, max_length=500)
    """What to search for, in words; "quoted phrases" are kept together."""

    num_results: int = Field(default=5, ge=1, le=20)
    """How many results to return."""

    include_domains: list[str] | None = Field(default=None, max_length=20)
    """Only results from these domains, e.g. ["sec.gov", "reuters.com"]."""


class WebSearchTool(Tool[WebSearchInput]):
    """Search the web for news, company information and other public pages. Returns title,
    URL, publication date and a text snippet for each result."""

    name = "web_search"
    input_model = WebSearchInput

    async def run(self, args: WebSearchInput, ctx: ToolContext) -> str:
        backend = service(ctx, "web_search", WebSearch)
        domains = [d.strip() for d in args.include_domains or [] if d.strip()]
        results = await backend.search(args.query, args.num_results, domains)
        out: dict[str, Any] = {
            "source": backend.label,
            "query": args.query,
            "count": len(results),
            "results": [{k: v for k, v in asdict(r).items() if v is not None} for r in results],
        }
        if not results:
            out["note"] = "No results; try other words or fewer domain filters."
        return dump(out)
