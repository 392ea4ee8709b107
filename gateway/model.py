"""Calling the model: the SDK makes the request (URL, auth headers, errors), the gateway
reads the raw SSE bytes itself, and a turn is retried when that is safe.

Why not the SDK's event objects: at thousands of events per second per run, building a
pydantic object (and, in the stream helper, a snapshot) per event costs several times what
the rest of the relay does. The SDK still owns everything up to the response body.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anthropic
import httpx2

from gateway.errors import ErrorCode, UpstreamFailure
from gateway.events import Event
from gateway.upstream import SSEDecoder, TurnTranslator, failure_from_error_body

_STATUS_CODES: dict[int, tuple[ErrorCode, bool]] = {
    400: ("VALIDATION_ERROR", False),
    401: ("AUTHENTICATION_ERROR", False),
    403: ("PERMISSION_ERROR", False),
    404: ("NOT_FOUND", False),
    408: ("TIMEOUT_ERROR", True),
    413: ("VALIDATION_ERROR", False),
    429: ("RATE_LIMIT_ERROR", True),
    502: ("NETWORK_ERROR", True),
    503: ("NETWORK_ERROR", True),
    504: ("TIMEOUT_ERROR", True),
    529: ("OVERLOADED_ERROR", True),
}


class ModelClient(Protocol):
    """Streams one Messages API call as the `data` payloads of its SSE events (JSON bytes)."""

    def stream(self, params: dict[str, Any]) -> AsyncIterator[bytes]: ...


class AnthropicModel:
    """The Messages API through the official SDK client (which must have max_retries=0:
    retries are the gateway's, so each one can be reported to the client)."""

    def __init__(self, client: anthropic.AsyncAnthropic) -> None:
        self._client = client

    async def stream(self, params: dict[str, Any]) -> AsyncIterator[bytes]:
        create = self._client.messages.with_streaming_response.create
        try:
            async with create(**params, stream=True) as response:
                decoder = SSEDecoder()
                # Raw: the aiohttp transport has already decompressed the body, and the
                # decoding layer would cost a generator hop per read for nothing.
                async for chunk in response.http_response.aiter_raw():
                    for data in decoder.feed(chunk):
                        yield data
        except anthropic.APIStatusError as exc:
            raise status_failure(exc) from exc
        except (anthropic.APITimeoutError, httpx2.TimeoutException) as exc:
            raise UpstreamFailure(
                "TIMEOUT_ERROR", f"Upstream timed out: {exc}", retryable=True
            ) from exc
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            message = f"Upstream connection failed: {type(exc).__name__}: {exc}".rstrip(": ")
            raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc


def status_failure(exc: anthropic.APIStatusError) -> UpstreamFailure:
    status = exc.status_code
    default, retryable = _STATUS_CODES.get(status, ("UNKNOWN_ERROR", status >= 500))
    failure = failure_from_error_body(exc.body, default)
    failure.code, failure.retryable = default, retryable
    failure.details["upstream_status"] = status
    failure.retry_after_s = _retry_after(exc.response.headers)
    return failure


def _retry_after(headers: httpx2.Headers) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value: str | None = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue  # an HTTP date: fall back to our own backoff
    return None


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded in count and in total wait; `retry-after` wins over our own backoff."""

    max_retries: int = 3
    max_total_wait_s: float = 30.0
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def delay(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return retry_after_s
        backoff: float = min(self.max_delay_s, self.base_delay_s * 2**attempt)
        return backoff * random.uniform(0.8, 1.2)


RetryHook = Callable[[UpstreamFailure, int, float], Event]


async def stream_turn(
    model: ModelClient,
    params: dict[str, Any],
    turn: TurnTranslator,
    policy: RetryPolicy,
    on_retry: RetryHook,
) -> AsyncIterator[Event]:
    """One model call as gateway events; retried while nothing of it reached the client.

    `on_retry(failure, attempt, delay)` makes the `warning` event for each retry.
    """
    waited = 0.0
    for attempt in range(policy.max_retries + 1):
        try:
            async for payload in model.stream(params):
                event = turn.feed_payload(payload)
                if event is not None:
                    yield event
            turn.finish()
            return
        except UpstreamFailure as exc:
            failure = exc  # the `as` name is unbound after the except block
            delay = policy.delay(attempt, failure.retry_after_s)
            last = attempt >= policy.max_retries or waited + delay > policy.max_total_wait_s
            if not failure.retryable or turn.emitted or last:
                raise
        waited += delay
        turn.reset()
        yield on_retry(failure, attempt + 1, delay)
        await asyncio.sleep(delay)
