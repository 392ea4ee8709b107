"""An OpenAI-compatible upstream (OpenAI, OpenRouter, vLLM, Ollama, LiteLLM, Azure) over
the Chat Completions streaming API.

The official SDK makes the request (URL, auth headers, status errors); the gateway reads
the raw SSE bytes itself, as it does for the Messages API. Measured on one 20,000-delta
stream (bench/openai_read.py), CPU per text delta: 3.8 µs read raw into `ChatTurn`,
105 µs through the SDK's chunk objects, 222 µs through its stream helper.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator

import aiohttp
import httpx2
import openai

from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.anthropic.stream import SSEDecoder
from gateway.providers.base import Emit, ModelCall, Turn
from gateway.providers.failures import failure_from_error_object, retry_after_s
from gateway.providers.openai.chat import MaxTokensField, chat_body
from gateway.providers.openai.stream import ChatTurn

_DONE = b"[DONE]"


NO_KEY = "no-key"


def create_client(
    base_url: str | None, api_key: str | None, timeout_s: float
) -> openai.AsyncOpenAI:
    """The SDK client for an upstream: aiohttp transport, no retries of its own.

    Local servers (vLLM, Ollama) take any key but the SDK insists on one; OpenAI's own
    API without a key is a configuration error, said at startup rather than per call.
    """
    if api_key is None and base_url is None:
        raise ValueError("OPENAI_API_KEY is required to use OpenAI's API")
    return openai.AsyncOpenAI(
        api_key=api_key or NO_KEY,
        base_url=base_url,
        max_retries=0,
        timeout=timeout_s,
        http_client=openai.DefaultAioHttpClient(),
    )


class OpenAIProvider:
    """Chat Completions through `openai.AsyncOpenAI`. Its own retries are turned off:
    retries are the caller's, so each one can be reported to the client."""

    name = "openai"

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str = "",
        *,
        max_tokens_field: MaxTokensField = "max_completion_tokens",
    ) -> None:
        self.model = model
        self._client = client.with_options(max_retries=0)  # shares the client's connections
        self._max_tokens_field: MaxTokensField = max_tokens_field

    def new_turn(self, turn: int) -> ChatTurn:
        return ChatTurn(turn)

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        """One HTTP attempt: emit the stream's events, a list per read, and fill `turn`."""
        if not isinstance(turn, ChatTurn):
            raise TypeError(f"OpenAIProvider needs its own turn, got {type(turn).__name__}")
        body, turn.dropped = chat_body(call, max_tokens_field=self._max_tokens_field)
        # Closed here, not when the collector finds it: its HTTP response goes with it.
        async with contextlib.aclosing(self._payloads(body)) as reads:
            async for payloads in reads:
                batch: list[Event] = []
                try:
                    for data in payloads:
                        if data != _DONE:
                            batch += turn.feed_payload(data)
                finally:
                    if batch:  # on a failure too: what preceded it in this read was relayed
                        emit(batch)
        turn.finish()

    async def _payloads(self, body: dict[str, object]) -> AsyncGenerator[list[bytes], None]:
        """The SSE `data` payloads, a list per read of the body."""
        create = self._client.chat.completions.with_streaming_response.create
        try:
            async with create(**body) as response:  # type: ignore[call-overload]
                decoder = SSEDecoder()
                # Raw: the aiohttp transport has already decompressed the body. Read on
                # past `[DONE]` to the end of the body, so the connection can be reused.
                async for chunk in response.http_response.aiter_raw():
                    payloads = decoder.feed(chunk)
                    if payloads:
                        yield payloads
        except openai.APIStatusError as exc:
            raise status_failure(exc) from exc
        except (openai.APIConnectionError, httpx2.TransportError) as exc:
            raise connection_failure(exc) from exc


def connection_failure(exc: Exception) -> UpstreamFailure:
    """A timeout or a failed connection. The SDK's aiohttp transport reports a refused
    connection as a connect *timeout*; the aiohttp error underneath tells them apart."""
    timeout = isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException)
    cause = exc.__cause__
    while cause is not None:
        if isinstance(cause, aiohttp.ClientConnectorError):
            timeout = False
        cause = cause.__cause__
    if timeout:
        return UpstreamFailure("TIMEOUT_ERROR", f"Upstream timed out: {exc}", retryable=True)
    message = f"Upstream connection failed: {type(exc).__name__}: {exc}".rstrip(": ")
    return UpstreamFailure("NETWORK_ERROR", message, retryable=True)


def status_failure(exc: openai.APIStatusError) -> UpstreamFailure:
    """An HTTP error answer as a failure; `exc.body` is the error object inside
    OpenAI's `{"error": {...}}` (the SDK unwraps it)."""
    failure = failure_from_error_object(exc.body, exc.status_code)
    failure.retry_after_s = retry_after_s(exc.response.headers)
    return failure
