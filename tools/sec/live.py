"""The live EDGAR source: one shared aiohttp session, one rate limiter, SEC's errors mapped.

SEC answers failures in a few recognisable ways, each turned into a message the model can
act on:

- 403 (or 429) "Request Rate Threshold Exceeded", and 503: throttled. Back off once (as
  long as `Retry-After` asks, within the tool's bound) and retry; if it persists, say so
  (the rate block lasts about ten minutes).
- 403 "Undeclared Automated Tool": the User-Agent was refused; the operator must set
  SEC_USER_AGENT to "Company Name contact@example.com".
- 403 `<Code>AccessDenied</Code>` (XML) under /Archives: the path does not exist.
- 404 `<Code>NoSuchKey</Code>` (XML) on data.sec.gov: no such CIK / file.

An answer longer than the body cap is not read: the connection is closed and the call fails.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson

from tools.http import BodyTooLarge, read_capped, retry_after_s
from tools.sec.cache import SharedResponses
from tools.sec.ratelimit import Limiter
from tools.sec.source import SecError, SecHost, SecNotFound, public_url

__all__ = ["LiveSec"]

_RATE_MARKERS = ("Request Rate Threshold Exceeded", "Exceeded the SEC", "Traffic Limit")
_UNDECLARED_MARKER = "Undeclared Automated Tool"


class _Throttled(Exception):
    """Internal: SEC's rate threshold page or a 503; the caller decides whether to retry."""

    def __init__(self, status: int, retry_after_s: float | None) -> None:
        super().__init__(status)
        self.status = status
        self.retry_after_s = retry_after_s


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
        max_retry_wait_s: float = 10.0,
        max_body_bytes: int = 64 << 20,
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
        # A retry must still fit in the tool's time: one request's share of it at most.
        self._max_wait_s = min(max_retry_wait_s, request_timeout_s)
        self._max_body = max_body_bytes

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
        except _Throttled as exc:
            first = exc
        wait = first.retry_after_s
        if wait is None:
            wait = min(self._backoff_s, self._max_wait_s)
        elif wait > self._max_wait_s:
            raise SecError(
                f"{_throttled(first.status)} and asks to wait {wait:g} s (Retry-After), longer "
                f"than a tool call may wait ({self._max_wait_s:.3g} s). {_advice(first.status)}"
            ) from None
        await asyncio.sleep(wait)
        try:
            return await self._attempt(host, path, params)
        except _Throttled as exc:
            raise SecError(
                f"{_throttled(exc.status)}; retried once after {wait:g} s and was refused "
                f"again. {_advice(exc.status)}"
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
                body = await read_capped(resp, self._max_body)
                status, retry_after = resp.status, resp.headers.get("Retry-After")
        except BodyTooLarge as exc:
            raise SecError(
                f"SEC EDGAR's answer for {public_url(host, path)} is longer than "
                f"{exc.limit:,} bytes (SEC_MAX_BODY_BYTES) and was not read; use a smaller "
                "document (an exhibit, the filing index) or a narrower tool."
            ) from None
        except TimeoutError:
            raise SecError(
                f"SEC EDGAR did not answer within {self._timeout.total:g} s "
                f"({public_url(host, path)}); try again."
            ) from None
        except aiohttp.ClientError as exc:
            raise SecError(f"Could not reach SEC EDGAR ({type(exc).__name__}: {exc}).") from exc
        if status == 200:
            return body
        text = body.decode("utf-8", errors="replace")
        raise _failure(host, path, status, text, retry_after)


def _throttled(status: int) -> str:
    if status == 503:
        return "SEC EDGAR is unavailable (HTTP 503)"
    page = " 'Request Rate Threshold Exceeded'" if status == 403 else ""
    return f"SEC EDGAR is rate-limiting this server (HTTP {status}{page})"


def _advice(status: int) -> str:
    if status == 503:
        return "Answer from what you already have, or try again later."
    return (
        "SEC lifts the block after about 10 minutes: answer from what you already have, "
        "or try again later."
    )


def _failure(
    host: SecHost, path: str, status: int, body: str, retry_after: str | None
) -> Exception:
    where = public_url(host, path)
    if status in (429, 503) or (status == 403 and any(marker in body for marker in _RATE_MARKERS)):
        return _Throttled(status, retry_after_s(retry_after))
    if status == 403 and _UNDECLARED_MARKER in body:
        return SecError(
            "SEC EDGAR refused the request as coming from an undeclared automated tool: the "
            "configured User-Agent (SEC_USER_AGENT) is not accepted. The operator must set it "
            "to a company name and contact email, e.g. 'Example Corp admin@example.com'."
        )
    if status == 404 or (status == 403 and "AccessDenied" in body):
        return SecNotFound(f"Not found on SEC EDGAR: {where} (HTTP {status}).")
    return SecError(f"SEC EDGAR answered HTTP {status} for {where}; try again later.")
