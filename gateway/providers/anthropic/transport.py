"""Streaming Messages API calls, posted by the gateway's own HTTP/1.1 client.

The SDK client is the configuration (base URL, the headers it sends: auth, API version,
its own identification; the timeout), read once. The request itself is one POST on
`http1.HTTP1Client`: building it through the SDK (an options model, a deep copy of the
body, URL parsing and header merging in httpx2, then the vendored aiohttp transport) cost
more CPU than the rest of a run's start together, and reading the answer through any
client that wakes a task per read cost half of what relaying a paced event does
(bench/notes.md). The body's SSE `data` payloads are handed on from the socket's callback.

Failures become `UpstreamFailure`s with the same codes the SDK's exceptions mapped to,
`x-should-retry` obeyed as the SDK obeys it, and the upstream's `request-id` in their
details. Unlike the SDK, a redirect is not followed: it is an error with its status.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anthropic
import orjson
from yarl import URL

from gateway.errors import UpstreamFailure
from gateway.providers.anthropic.stream import SSEDecoder, failure_from_error_body
from gateway.providers.failures import retry_after_s, should_retry, status_code
from gateway.providers.http1 import Answer, HTTP1Client, header_block

OnPayloads = Callable[[list[bytes]], None]


class MessagesHTTP:
    """`stream(body, on_payloads)`: one streaming call; its SSE `data` payloads go to
    `on_payloads`, a list per read, as they arrive."""

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        """Raises `ValueError` for a configuration no request could go out with: a header
        (the API key among them) with a CR, LF or NUL, or a proxy that is not http(s)://."""
        self.url = URL(str(client.base_url).rstrip("/") + "/v1/messages")
        headers = {k: v for k, v in client.default_headers.items() if isinstance(v, str)}
        # Checked and formatted once: the same for every call.
        self._headers = header_block(headers | {"Content-Type": "application/json"})
        timeout = client.timeout
        if isinstance(timeout, anthropic.Timeout):  # the SDK's default: connect 5 s, read 600 s
            connect, read = timeout.connect, timeout.read
        else:
            connect = read = timeout
        # The environment's proxy, looked up once; a bare `host:port` is an http:// one, as
        # urllib takes it.
        proxies = urllib.request.getproxies()
        bypass = urllib.request.proxy_bypass(self.url.host or "")
        proxy = None if bypass else proxies.get(self.url.scheme)
        if proxy and "://" not in proxy:
            proxy = f"http://{proxy}"
        # No cap on connections: a streaming call holds its connection for the whole
        # stream, so a cap is a silent queue: the 1,001st live run would wait, without
        # error, for another to end. Concurrency is bounded per key instead
        # (`GATEWAY_MAX_CONCURRENT_RUNS`).
        self._http = HTTP1Client(
            connect_timeout=connect, read_timeout=read, proxy=URL(proxy) if proxy else None
        )

    async def close(self) -> None:
        await self._http.close()

    def stream(
        self,
        body: dict[str, Any],
        on_payloads: OnPayloads,
        extra_headers: Mapping[str, str] | None = None,
    ) -> Coroutine[Any, Any, None]:
        """Not a coroutine itself: `body` is serialised here, so no frame of the call
        holds it, or the copies made to build it (the breakpoints' message and tool
        lists), while the answer streams (~1.3 KB a stream in the bench)."""
        decoder = SSEDecoder()
        received: dict[str, str] = {}  # the answer's headers, for its request-id
        head_whole = False

        def on_body(chunk: bytes) -> None:
            nonlocal head_whole
            if not head_whole:  # a streamed answer's headers are read: keep what is needed
                head_whole = True
                _keep_request_id(received)
            payloads = decoder.feed(chunk)
            if payloads:
                on_payloads(payloads)

        # a call's own headers (its betas) checked and formatted with it
        headers = self._headers + header_block(extra_headers) if extra_headers else self._headers
        # The body inline, in no local: the client lets go of it at the answer's first
        # byte instead of holding it (~10 KB) for the whole stream.
        posted = self._http.post(
            self.url, orjson.dumps(body | {"stream": True}), headers, on_body, received
        )
        return _answered(posted, received)


async def _answered(posted: Coroutine[Any, Any, Answer | None], received: dict[str, str]) -> None:
    """The call posted, to its end; its failures as `UpstreamFailure`s."""
    try:
        answer = await posted
    except UpstreamFailure as exc:  # the stream's own `error` event
        _with_request_id(exc, received)
        raise
    except TimeoutError as exc:
        timeout = UpstreamFailure("TIMEOUT_ERROR", f"Upstream timed out: {exc}", retryable=True)
        raise _with_request_id(timeout, received) from exc
    except OSError as exc:
        message = f"Upstream connection failed: {type(exc).__name__}: {exc}".rstrip(": ")
        lost = UpstreamFailure("NETWORK_ERROR", message, retryable=True)
        raise _with_request_id(lost, received) from exc
    if answer is not None:
        raise _status_failure(answer)


def _status_failure(answer: Answer) -> UpstreamFailure:
    """An error answer (`{"type":"error","error":{...}}`, or anything) as a failure."""
    try:
        body: Any = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        body = None
    failure = answer_failure(answer.status, body, answer.headers)
    if 300 <= answer.status < 400 or answer.status == 101:
        location = answer.headers.get("location")
        to = f" to {location}" if location else ""
        failure.message = f"Upstream answered HTTP {answer.status}{to}: not followed"
    elif not answer.complete and body is None:
        failure.message = f"Upstream answered HTTP {answer.status}; its body was cut short"
    return failure


def answer_failure(status: int, body: Any, headers: Mapping[str, str]) -> UpstreamFailure:
    """An HTTP error answer of the Messages API as a failure: the code by status, the
    message from the error body, the wait from `retry-after`, and as the SDK does, the
    upstream's `x-should-retry` over the status's own retry decision."""
    default, retryable = status_code(status)
    failure = failure_from_error_body(body, default)
    failure.code, failure.retryable = default, should_retry(headers, retryable)
    failure.details["upstream_status"] = status
    failure.retry_after_s = retry_after_s(headers)
    request_id = headers.get("request-id")
    if request_id is None and isinstance(body, dict):  # the error body carries it too
        request_id = body.get("request_id")
    if isinstance(request_id, str) and request_id:
        failure.details["upstream_request_id"] = request_id
    return failure


def _keep_request_id(headers: dict[str, str]) -> None:
    """Of a streamed answer's headers, only its `request-id` is read again (for a failure
    mid-answer): the Messages API sends ~25, a few KB a stream for as long as it is open."""
    request_id = headers.get("request-id")
    headers.clear()
    if request_id is not None:
        headers["request-id"] = request_id


def _with_request_id(failure: UpstreamFailure, headers: Mapping[str, str]) -> UpstreamFailure:
    request_id = headers.get("request-id")
    if request_id:
        failure.details.setdefault("upstream_request_id", request_id)
    return failure
