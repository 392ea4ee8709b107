"""Streaming Messages API calls, posted on one aiohttp session.

The SDK client is the configuration (base URL, the headers it sends: auth, API version,
its own identification; the timeout), read once. The request itself is one aiohttp POST:
building it through the SDK (an options model, a deep copy of the body, URL parsing and
header merging in httpx2, then the vendored aiohttp transport) cost more CPU than the
rest of a run's start together, and at hundreds of run starts a second that is the
difference between keeping up and falling behind (bench/notes.md).

Failures become `UpstreamFailure`s with the same codes the SDK's exceptions mapped to.
"""

from __future__ import annotations

import urllib.request
from collections.abc import AsyncGenerator, Mapping
from typing import Any

import aiohttp
import anthropic
import orjson
from yarl import URL

from gateway.errors import UpstreamFailure
from gateway.providers.failures import retry_after_s, status_code
from gateway.upstream import SSEDecoder, failure_from_error_body

KEEPALIVE_S = 5.0


class MessagesHTTP:
    """`stream(body)`: the SSE `data` payloads of one streaming call, a list per read."""

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.url = URL(str(client.base_url).rstrip("/") + "/v1/messages")
        headers = {k: v for k, v in client.default_headers.items() if isinstance(v, str)}
        self._headers = headers | {"Content-Type": "application/json"}
        timeout = client.timeout
        seconds = timeout if isinstance(timeout, int | float) or timeout is None else timeout.read
        self._timeout = aiohttp.ClientTimeout(sock_connect=seconds, sock_read=seconds)
        # The environment's proxy, looked up once (aiohttp's `trust_env` does it per request).
        proxies = urllib.request.getproxies()
        bypass = urllib.request.proxy_bypass(self.url.host or "")
        self._proxy = None if bypass else proxies.get(self.url.scheme)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            # No cap on connections (the SDK's pool has 1,000): a streaming call holds its
            # connection for the whole stream, so a cap is a silent queue: the 1,001st live
            # run would wait, without error, for another to end. Concurrency is bounded
            # per key instead (`GATEWAY_MAX_CONCURRENT_RUNS`).
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def stream(self, body: dict[str, Any]) -> AsyncGenerator[list[bytes], None]:
        session = self._open()
        try:
            # The body is not kept in a local: a stream lasts minutes, and the body (tools,
            # system prompt, conversation) would be held that long for nothing.
            async with session.post(
                self.url, data=orjson.dumps(body | {"stream": True}), headers=self._headers,
                proxy=self._proxy,
            ) as response:  # fmt: skip
                if response.status >= 400:
                    raise await _status_failure(response)
                decoder = SSEDecoder()
                async for chunk in response.content.iter_any():
                    payloads = decoder.feed(chunk)
                    if payloads:
                        yield payloads
        except (TimeoutError, aiohttp.ServerTimeoutError) as exc:
            message = f"Upstream timed out: {type(exc).__name__}: {exc}".rstrip(": ")
            raise UpstreamFailure("TIMEOUT_ERROR", message, retryable=True) from exc
        except aiohttp.ClientError as exc:
            message = f"Upstream connection failed: {type(exc).__name__}: {exc}".rstrip(": ")
            raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc


async def _status_failure(response: aiohttp.ClientResponse) -> UpstreamFailure:
    """An error answer (`{"type":"error","error":{...}}`, or anything) as a failure."""
    try:
        body: Any = orjson.loads(await response.read())
    except (TimeoutError, orjson.JSONDecodeError, aiohttp.ClientError):
        body = None
    return answer_failure(response.status, body, response.headers)


def answer_failure(status: int, body: Any, headers: Mapping[str, str]) -> UpstreamFailure:
    """An HTTP error answer of the Messages API as a failure: the code by status, the
    message from the error body, the wait from `retry-after`."""
    default, retryable = status_code(status)
    failure = failure_from_error_body(body, default)
    failure.code, failure.retryable = default, retryable
    failure.details["upstream_status"] = status
    failure.retry_after_s = retry_after_s(headers)
    return failure
