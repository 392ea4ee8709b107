"""The Messages API as a provider (the real API, any server speaking it, or the demo model).

The official SDK client is the configuration (URL, auth and version headers, timeout) and
reads the model records; a streaming call is posted by `messages_http` and its raw SSE
bytes are read by the gateway itself, translated and emitted from the socket's callback.
Why not the SDK's request and event objects: at hundreds of run starts and thousands of
events a second, building its request (see `messages_http`) and a pydantic object per
event (and, in the stream helper, a snapshot) cost several times what the rest of the
relay does.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import anthropic

from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.anthropic.request import cached_tools, system_blocks, with_breakpoint
from gateway.providers.anthropic.stream import TurnTranslator, progress_mode
from gateway.providers.anthropic.transport import MessagesHTTP, OnPayloads, answer_failure
from gateway.providers.base import Emit, ModelCall, Turn
from gateway.providers.plan import offered_tools


class AnthropicProvider:
    """Messages API calls as configured by an `anthropic.AsyncAnthropic`, one attempt each
    (retries are the caller's, so each one can be reported to the client)."""

    def __init__(self, client: anthropic.AsyncAnthropic, model: str, name: str = "anthropic"):
        self._client = client
        self._http = MessagesHTTP(client)
        self.model = model
        self.name = name

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """The configured SDK client (its other endpoints: model records, batches, files)."""
        return self._client

    def new_turn(self, turn: int) -> TurnTranslator:
        return TurnTranslator(turn)

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        if not isinstance(turn, TurnTranslator):
            raise TypeError(f"AnthropicProvider needs its own turn, got {type(turn).__name__}")

        turn.progress_mode = progress_mode(call.thinking)

        def on_payloads(payloads: list[bytes]) -> None:
            batch: list[Event] = []
            try:
                turn.feed_payloads(payloads, batch)
            finally:
                if batch:  # on a failure too: what preceded it in this read was relayed
                    emit(batch)

        await self.stream(messages_body(call), on_payloads, betas=call.betas)
        turn.finish()

    def stream(
        self, params: dict[str, Any], on_payloads: OnPayloads, *, betas: tuple[str, ...] = ()
    ) -> Coroutine[Any, Any, None]:
        """One call: its SSE `data` payloads (JSON bytes) to `on_payloads`, a list per
        read of the body, from the socket's callback. Not a coroutine itself, so that no
        frame holds `params` while the answer streams (`MessagesHTTP.stream`)."""
        headers = {"anthropic-beta": ",".join(betas)} if betas else None
        return self._http.stream(params, on_payloads, headers)

    async def close(self) -> None:
        await self._http.close()


def messages_body(call: ModelCall) -> dict[str, Any]:
    """The Messages API request body for `call` (the SDK adds `stream`)."""
    suffix = {"type": "text", "text": call.system_suffix} if call.system_suffix else None
    params: dict[str, Any] = {
        "model": call.model,
        "max_tokens": call.max_tokens,
        "messages": with_breakpoint(call.messages) if call.cache else call.messages,
        "system": system_blocks(call.system, suffix, cache=call.cache),
    }
    tools = offered_tools(call.tools, call.server_tools)
    if tools:
        params["tools"] = cached_tools(tools, cache=call.cache)
        # The wrap-up call keeps the definitions (the history mentions the tools) but
        # may not use them, so the client still gets an answer.
        params["tool_choice"] = {"type": call.tool_choice}
        if not call.parallel_tools and call.tool_choice != "none":
            params["tool_choice"]["disable_parallel_tool_use"] = True
    if call.thinking is not None:
        params["thinking"] = call.thinking
    config: dict[str, Any] = {}
    if call.effort is not None:
        config["effort"] = call.effort
    if call.output_schema is not None:
        config["format"] = {"type": "json_schema", "schema": call.output_schema}
    if config:
        params["output_config"] = config
    if call.context_management is not None:
        params["context_management"] = call.context_management
    if call.container is not None:
        params["container"] = call.container
    return params


def status_failure(exc: anthropic.APIStatusError) -> UpstreamFailure:
    """The SDK's status error as the same failure `messages_http` makes of the answer."""
    return answer_failure(exc.status_code, exc.body, exc.response.headers)
