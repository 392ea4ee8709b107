"""Claude on Google Cloud Vertex AI: `streamRawPredict` of the publisher model.

The body is the Messages API's without `model` (it is in the URL), with `stream` and the
`anthropic_version` the SDK's `AnthropicVertex` sets; betas go in the `anthropic-beta`
header. The answer is the Messages API's SSE, read as the `anthropic` provider reads it.
Vertex's own refusals (auth, quota, a project without the model) come in Google's error
shape, the model's in the Messages API's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson
from yarl import URL

from gateway.cloud_ids import cloud_id
from gateway.errors import UpstreamFailure
from gateway.providers import cloud_http
from gateway.providers.anthropic.provider import messages_body
from gateway.providers.anthropic.stream import SSEDecoder, TurnTranslator, progress_mode
from gateway.providers.anthropic.transport import answer_failure
from gateway.providers.base import Emit, ModelCall, Turn
from gateway.providers.failures import google_failure
from gateway.providers.http1 import Answer
from gateway.providers.vertex.auth import GoogleToken

# What `anthropic.lib.vertex` puts in the body (the SDK's `ANTHROPIC_API_VERSION`, 2.14.0).
ANTHROPIC_VERSION = "2026-10-21"


def endpoint(region: str) -> str:
    """The SDK's choice: the global endpoint, a multi-region one, or the region's."""
    if region == "global":
        return "https://aiplatform.googleapis.com/v1"
    if region in ("us", "eu"):
        return f"https://aiplatform.{region}.rep.googleapis.com/v1"
    return f"https://{region}-aiplatform.googleapis.com/v1"


class VertexProvider:
    """One `streamRawPredict` per attempt; retries are the caller's."""

    name = "vertex"

    def __init__(
        self,
        base_url: str,
        region: str,
        project: str,
        model: str,
        token: GoogleToken,
        *,
        connect_timeout: float,
        read_timeout: float,
    ) -> None:
        self.base_url = URL(base_url.rstrip("/"))
        self.region = region
        self.project = project
        self.model = model
        self.token = token
        self._http = cloud_http.client_for(self.base_url, connect_timeout, read_timeout)

    def new_turn(self, turn: int) -> TurnTranslator:
        return TurnTranslator(turn)

    def url(self, model: str) -> URL:
        path = f"projects/{self.project}/locations/{self.region}/publishers/anthropic/models"
        return self.base_url.joinpath(*path.split("/")) / f"{model}:streamRawPredict"

    def body(self, call: ModelCall, dropped: Counter[str]) -> dict[str, Any]:
        body = cloud_http.cloud_body(messages_body(call), dropped)
        del body["model"]
        body["anthropic_version"] = ANTHROPIC_VERSION
        body["stream"] = True
        return body

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        if not isinstance(turn, TurnTranslator):
            raise TypeError(f"VertexProvider needs its own turn, got {type(turn).__name__}")
        turn.progress_mode = progress_mode(call.thinking)
        body = self.body(call, turn.dropped)
        headers = {
            "content-type": "application/json",
            "authorization": f"Bearer {await self.token.bearer()}",
        }
        if call.betas and "context_management" in body:  # the only betas a call has
            headers["anthropic-beta"] = ",".join(call.betas)
        if self.token.quota_project:
            headers["x-goog-user-project"] = self.token.quota_project
        url = self.url(cloud_id(call.model))
        data = [orjson.dumps(body)]  # relay empties it as it sends
        del body
        answer = await cloud_http.relay(self._http, url, data, headers, SSEDecoder(), turn, emit)
        if answer is not None:
            raise self._failure(answer)
        turn.finish()
        turn.model = call.model  # the cloud, its region and id (not the Messages API's name)

    def _failure(self, answer: Answer) -> UpstreamFailure:
        body = cloud_http.answer_json(answer)
        failure = google_failure(answer.status, body, answer.headers)
        if failure is None:  # the model's own error, in the Messages API's shape
            failure = answer_failure(answer.status, body, answer.headers)
        if answer.status == 401:
            self.token.refused()  # a retry gets a new token
            failure.retryable = True
        return failure

    async def close(self) -> None:
        await self._http.close()
