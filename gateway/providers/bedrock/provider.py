"""Claude on Amazon Bedrock: InvokeModelWithResponseStream on the region's runtime endpoint.

The body is the Messages API's as Bedrock takes it: no `model` (it is in the path) and no
`stream` (the operation streams), `anthropic_version` as the SDK's `AnthropicBedrock` sets
it, the call's betas in `anthropic_beta`. The request is signed with SigV4 (service
`bedrock`); the answer is an AWS event stream whose `chunk` frames carry the Messages API
events, fed to the same translator as the Messages API's SSE.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import orjson
from yarl import URL

from gateway.cloud_ids import cloud_id
from gateway.providers import cloud_http
from gateway.providers.anthropic.provider import messages_body
from gateway.providers.anthropic.stream import TurnTranslator, progress_mode
from gateway.providers.base import Emit, ModelCall, Turn
from gateway.providers.bedrock.credentials import AWSCredentials
from gateway.providers.bedrock.eventstream import EventStreamDecoder
from gateway.providers.bedrock.sigv4 import sign
from gateway.providers.failures import EXPIRED_TOKEN, aws_answer_failure

# What `anthropic.lib.bedrock` puts in the body (the SDK's `ANTHROPIC_API_VERSION`, 2.14.0).
ANTHROPIC_VERSION = "2026-10-21"
SERVICE = "bedrock"
_HEADERS = {"content-type": "application/json", "accept": "application/vnd.amazon.eventstream"}


def endpoint(region: str) -> str:
    return f"https://bedrock-runtime.{region}.amazonaws.com"


class BedrockProvider:
    """One InvokeModelWithResponseStream per attempt; retries are the caller's."""

    name = "bedrock"

    def __init__(
        self,
        base_url: str,
        region: str,
        model: str,
        credentials: AWSCredentials,
        *,
        connect_timeout: float,
        read_timeout: float,
    ) -> None:
        self.base_url = URL(base_url.rstrip("/"))
        self.region = region
        self.model = model
        self.credentials = credentials
        self._http = cloud_http.client_for(self.base_url, connect_timeout, read_timeout)

    def new_turn(self, turn: int) -> TurnTranslator:
        return TurnTranslator(turn)

    def url(self, model: str) -> URL:
        """The model id encoded as the SDK encodes it (an ARN's `/` too, `:` as it is)."""
        path = f"/model/{quote(model, safe=':;')}/invoke-with-response-stream"
        return URL(str(self.base_url) + path, encoded=True)

    def body(self, call: ModelCall, dropped: Counter[str]) -> dict[str, Any]:
        body = cloud_http.cloud_body(messages_body(call), dropped)
        del body["model"]
        body["anthropic_version"] = ANTHROPIC_VERSION
        if call.betas and "context_management" in body:  # the only betas a call has
            body["anthropic_beta"] = list(call.betas)
        return body

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        if not isinstance(turn, TurnTranslator):
            raise TypeError(f"BedrockProvider needs its own turn, got {type(turn).__name__}")
        turn.progress_mode = progress_mode(call.thinking)
        url = self.url(cloud_id(call.model))
        data = [orjson.dumps(self.body(call, turn.dropped))]  # relay empties it as it sends
        keys = await self.credentials.keys()
        now = datetime.now(UTC)
        headers = _HEADERS | sign(url, data[0], _HEADERS, keys, self.region, SERVICE, now)
        answer = await cloud_http.relay(
            self._http, url, data, headers, EventStreamDecoder(), turn, emit
        )
        if answer is not None:
            failure = aws_answer_failure(
                answer.status, cloud_http.answer_json(answer), answer.headers
            )
            if failure.details.get("upstream_type") == EXPIRED_TOKEN:
                self.credentials.expired()  # the retry reads them again
            raise failure
        turn.finish()
        turn.model = call.model  # the cloud and its id (not the Messages API's name)

    async def close(self) -> None:
        await self._http.close()
