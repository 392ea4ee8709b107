"""The live EDGAR source: one shared aiohttp session, one rate limiter, SEC's errors mapped.

SEC answers failures in a few recognisable ways, each turned into a message the model can
act on:

- 403 (or 429) "Request Rate Threshold Exceeded": throttled. Back off once and retry; if
  it persists, say so (the block lasts about ten minutes).
- 403 "Undeclared Automated Tool": the User-Agent was refused; the operator must set
  SEC_USER_AGENT to "Company Name contact@example.com".
- 403 `<Code>AccessDenied</Code>` (XML) under /Archives: the path does not exist.
- 404 `<Code>NoSuchKey</Code>` (XML) on data.sec.gov: no such CIK / file.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from tools.sec.cache import SharedResponses
from tools.sec.ratelimit import Limiter
from tools.sec.source import SecError, SecHost, SecNotFound, public_url

__all__ = ["LiveSec"]

_RATE_MARKERS = ("Request Rate Threshold Exceeded", "Exceeded the SEC", "Traffic Limit")
_UNDECLARED_MARKER = "Undeclared Automated Tool"


class _Throttled(Exception):
    """Internal: SEC's rate threshold page; the caller decides whether to retry."""


class LiveSec:
    """Talks to www.sec.gov, data.sec.gov and efts.sec.gov (or the configured stand-ins)."""

    label = "live SEC EDGAR"

    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        user_agent: str,
        bases: dict[SecHost, str],
        limiter: Limiter,
        shared: SharedResponses | None = None,
        request_timeout_s: float = 20.0,
        throttle_backoff_s: float = 1.0,
    ) -> None:
        self._session = session
        self._headers = {
            "User-Agent": user_agent,
            "Accept-Encoding": "gzip, deflate",
        }
        self._bases = {host: url.rstrip("/") for host, url in bases.items()}
        self._limiter = limiter
        self._shared = shared  # with Redis: every worker's answers, before asking SEC
        self._timeout = aiohttp.ClientTimeout(total=request_timeout_s)
        self._backoff_s = throttle_backoff_s

    @property
    def www_base(self) -> str:
        return self._bases["www"]

    async def get_json(self, host: SecHost, path: str, params: dict[str, str] | None = None) -> Any:
        body = await self._get(host, path, params)
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise SecError(f"SEC EDGAR sent invalid JSON for {public_url(host, path)}") from exc

    async def get_text(self, host: SecHost, path: str) -> str:
        return (await self._get(host, path, None)).decode("utf-8", errors="replace")

    async def _get(self, host: SecHost, path: str, params: dict[str, str] | None) -> bytes:
        if self._shared is None:
            return await self._fetch(host, path, params)
        body = await self._shared.get(host, path, params)
        if body is None:
            body = await self._fetch(host, path, params)
            await self._shared.put(host, path, params, body)
        return body

    async def _fetch(self, host: SecHost, path: str, params: dict[str, str] | None) -> bytes:
        try:
            return await self._attempt(host, path, params)
        except _Throttled:
            await asyncio.sleep(self._backoff_s)
        try:
            return await self._attempt(host, path, params)
        except _Throttled:
            raise SecError(
                "SEC EDGAR is rate-limiting this server (HTTP 403 'Request Rate Threshold "
                f"Exceeded'); retried once after {self._backoff_s:g} s and was refused again. "
                "SEC lifts the block after about 10 minutes: answer from what you already "
                "have, or try again later."
            ) from None

    async def _attempt(self, host: SecHost, path: str, params: dict[str, str] | None) -> bytes:
        url = self._bases[host] + path
        try:
            async with (
                self._limiter.slot(),
                self._session.get(
                    url, params=params, headers=self._headers, timeout=self._timeout
                ) as resp,
            ):
                body = await resp.read()
                status = resp.status
        except TimeoutError:
            raise SecError(
                f"SEC EDGAR did not answer within {self._timeout.total:g} s "
                f"({public_url(host, path)}); try again."
            ) from None
        except aiohttp.ClientError as exc:
            raise SecError(f"Could not reach SEC EDGAR ({type(exc).__name__}: {exc}).") from exc
        if status == 200:
            return body
        raise _failure(host, path, status, body.decode("utf-8", errors="replace"))


def _failure(host: SecHost, path: str, status: int, body: str) -> Exception:
    where = public_url(host, path)
    if status == 429 or (status == 403 and any(marker in body for marker in _RATE_MARKERS)):
        return _Throttled()
    if status == 403 and _UNDECLARED_MARKER in body:
        return SecError(
            "SEC EDGAR refused the request as coming from an undeclared automated tool: the "
            "configured User-Agent (SEC_USER_AGENT) is not accepted. The operator must set it "
            "to a company name and contact email, e.g. 'Example Corp admin@example.com'."
        )
    if status == 404 or (status == 403 and "AccessDenied" in body):
        return SecNotFound(f"Not found on SEC EDGAR: {where} (HTTP {status}).")
    return SecError(f"SEC EDGAR answered HTTP {status} for {where}; try again later.")
