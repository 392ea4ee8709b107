"""The requests the gateway makes for each cloud are the ones the official SDK's
`AnthropicBedrock` and `AnthropicVertex` make today (anthropic's own request preparation,
called on the same Messages API request): the path, and the body to the byte."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

from anthropic._models import FinalRequestOptions
from anthropic.lib.bedrock._client import _prepare_options as bedrock_prepare
from anthropic.lib.vertex._client import _prepare_options as vertex_prepare

from gateway.cloud_ids import cloud_id
from gateway.providers.anthropic.provider import messages_body
from gateway.providers.base import ModelCall
from gateway.providers.bedrock.credentials import AWSCredentials
from gateway.providers.bedrock.provider import BedrockProvider
from gateway.providers.vertex.auth import GoogleToken
from gateway.providers.vertex.provider import VertexProvider, endpoint

CALL = ModelCall(
    model="",
    max_tokens=1024,
    system="Be brief.",
    system_suffix="Today is a day.",
    messages=[{"role": "user", "content": "What did Tesla file?"}],
    tools=[{"name": "echo", "description": "Echo.", "input_schema": {"type": "object"}}],
    thinking={"type": "adaptive"},
    effort="high",
    cache=True,
)


def sdk(prepare: Any, model: str, **where: Any) -> tuple[str, dict[str, Any]]:
    body = {**messages_body(CALL), "model": model, "stream": True}
    options = FinalRequestOptions.construct(method="post", url="/v1/messages", json_data=body)
    prepared = prepare(options, **where)
    return prepared.url, prepared.json_data


def test_bedrock_as_anthropic_bedrock() -> None:
    name = "bedrock/us.anthropic.claude-haiku-4-5-20251001-v1:0"
    provider = BedrockProvider(
        "https://bedrock-runtime.us-east-1.amazonaws.com",
        "us-east-1",
        name,
        AWSCredentials(lambda: None),
        connect_timeout=1,
        read_timeout=1,
    )
    call = dataclasses.replace(CALL, model=name)
    url, body = sdk(bedrock_prepare, cloud_id(name), custom_headers={})
    assert provider.url(cloud_id(name)).raw_path == url
    assert provider.body(call, Counter()) == body
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-5"
    url, _ = sdk(bedrock_prepare, arn, custom_headers={})
    assert provider.url(arn).raw_path == url  # the ARN's `/` encoded


def test_vertex_as_anthropic_vertex() -> None:
    name = "vertex/us-east5/claude-haiku-4-5@20251001"
    token = GoogleToken(None)
    provider = VertexProvider(
        endpoint("us-east5"), "us-east5", "acme", name, token, connect_timeout=1, read_timeout=1
    )
    call = dataclasses.replace(CALL, model=name)
    url, body = sdk(vertex_prepare, cloud_id(name), project_id="acme", region="us-east5")
    assert provider.url(cloud_id(name)).raw_path == "/v1" + url
    assert provider.body(call, Counter()) == body
    assert str(provider.base_url) == "https://us-east5-aiplatform.googleapis.com/v1"
    assert endpoint("global") == "https://aiplatform.googleapis.com/v1"
