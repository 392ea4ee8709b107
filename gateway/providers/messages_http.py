"""Streaming Messages API calls, posted by the gateway's own HTTP/1.1 client.

The SDK client is the configuration (base URL, the headers it sends: auth, API version,
its own identification; the timeout), read once. The request itself is one POST on
`http1.HTTP1Client`: building it through the SDK (an options model, a deep copy of the
body, URL parsing and header merging in httpx2, then the vendored aiohttp transport) cost
more CPU than the rest of a run's start together, and reading the answer through any
client that wakes a task per read cost half of what relaying a paced event does
(bench/notes.md). The body's SSE `data` payloads are handed on from the socket's callback.

Failures become `UpstreamFailure`s with the same codes the SDK's exceptions mapped to.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import anthropic
import orjson
from yarl import URL

from gateway.errors import UpstreamFailure
from gateway.providers.failures import retry_after_s, status_code
from gateway.providers.http1 import Answer, HTTP1Client
from gateway.upstream import SSEDecoder, failure_from_error_body

OnPayloads = Callable[[list[bytes]], None]


class MessagesHTTP:
    """`stream(body, on_payloads)`: one streaming call; its SSE `data` payloads go to
    `on_payloads`, a list per read, as they arrive."""

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self.url = URL(str(client.base_url).rstrip("/") + "/v1/messages")
        headers = {k: v for k, v in client.default_headers.items() if isinstance(v, str)}
        self._headers = headers | {"Content-Type": "application/json"}
        timeout = client.timeout
        seconds = timeout if isinstance(timeout, int | float) or timeout is None else timeout.read
        # The environment's proxy, looked up once.
        proxies = urllib.request.getproxies()
        bypass = urllib.request.proxy_bypass(self.url.host or "")
        proxy = None if bypass else proxies.get(self.url.scheme)
        # No cap on connections: a streaming call holds its connection for the whole
        # stream, so a cap is a silent queue: the 1,001st live run would wait, without
        # error, for another to end. Concurrency is bounded per key instead
        # (`GATEWAY_MAX_CONCURRENT_RUNS`).
        self._http = HTTP1Client(
            connect_timeout=seconds, read_timeout=seconds, proxy=URL(proxy) if proxy else None
        )

    async def close(self) -> None:
        await self._http.close()

    async def stream(self, body: dict[str, Any], on_payloads: OnPayloads) -> None:
        decoder = SSEDecoder()

        def on_body(chunk: bytes) -> None:
            payloads = decoder.feed(chunk)
            if payloads:
                on_payloads(payloads)

        data = orjson.dumps(body | {"stream": True})
        try:
            answer = await self._http.post(self.url, data, self._headers, on_body)
        except TimeoutError as exc:
            raise UpstreamFailure(
                "TIMEOUT_ERROR", f"Upstream timed out: {exc}", retryable=True
            ) from exc
        except OSError as exc:
            message = f"Upstream connection failed: {type(exc).__name__}: {exc}".rstrip(": ")
            raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc
        if answer is not None:
            raise _status_failure(answer)


def _status_failure(answer: Answer) -> UpstreamFailure:
    """An error answer (`{"type":"error","error":{...}}`, or anything) as a failure."""
    try:
        body: Any = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        body = None
    return answer_failure(answer.status, body, answer.headers)


def answer_failure(status: int, body: Any, headers: Mapping[str, str]) -> UpstreamFailure:
    """An HTTP error answer of the Messages API as a failure: the code by status, the
    message from the error body, the wait from `retry-after`."""
    default, retryable = status_code(status)
    failure = failure_from_error_body(body, default)
    failure.code, failure.retryable = default, retryable
    failure.details["upstream_status"] = status
    failure.retry_after_s = retry_after_s(headers)
    return failure
