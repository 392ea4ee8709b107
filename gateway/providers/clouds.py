"""The cloud upstreams opened from the settings: the endpoint, the region, the model id and
the credentials each cloud's standard chain finds (a newcomer sets one variable)."""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

import botocore.session

from gateway.providers.bedrock.credentials import AWSCredentials
from gateway.providers.bedrock.provider import BedrockProvider
from gateway.providers.bedrock.provider import endpoint as bedrock_endpoint
from gateway.providers.vertex.auth import GoogleToken, NoGoogleCredentials, load_default
from gateway.providers.vertex.provider import VertexProvider
from gateway.providers.vertex.provider import endpoint as vertex_endpoint
from gateway.settings import Settings

log = logging.getLogger(__name__)


def profile_region() -> str | None:
    """The region of the AWS profile in use (`~/.aws/config`, `AWS_PROFILE`), as boto3 reads it."""
    region = botocore.session.Session().get_config_variable("region")
    return str(region) if region else None


async def open_cloud(
    settings: Settings, kind: Literal["bedrock", "vertex"]
) -> BedrockProvider | VertexProvider:
    """Raises `ValueError` for a configuration no call could go out with (no region for
    Bedrock; no credentials or no project for Vertex)."""
    timeouts = {
        "connect_timeout": settings.gateway_upstream_connect_timeout_s,
        "read_timeout": settings.gateway_upstream_timeout_s,
    }
    if kind == "bedrock":
        return await _bedrock(settings, timeouts)
    return await _vertex(settings, timeouts)


async def _bedrock(settings: Settings, timeouts: dict[str, float]) -> BedrockProvider:
    region = settings.aws_region or await asyncio.to_thread(profile_region)
    if not region:
        raise ValueError(
            "a bedrock upstream needs a region: AWS_REGION (or AWS_DEFAULT_REGION), or "
            "`region` in the AWS profile"
        )
    credentials = await AWSCredentials.from_chain()
    if not credentials.found:
        log.error("bedrock: the AWS standard chain found no credentials; calls will fail")
    url = settings.gateway_bedrock_url or bedrock_endpoint(region)
    return BedrockProvider(url, region, settings.model_of("bedrock"), credentials, **timeouts)


async def _vertex(settings: Settings, timeouts: dict[str, float]) -> VertexProvider:
    try:
        google_credentials, adc_project = await asyncio.to_thread(load_default)
    except NoGoogleCredentials as exc:
        raise ValueError(exc.message) from None
    project = settings.gateway_vertex_project or adc_project
    if not project:
        raise ValueError(
            "a vertex upstream needs a project: ANTHROPIC_VERTEX_PROJECT_ID (or "
            "GATEWAY_VERTEX_PROJECT), or credentials that name one"
        )
    region = settings.vertex_region
    url = settings.gateway_vertex_url or vertex_endpoint(region)
    token = GoogleToken(google_credentials)
    return VertexProvider(url, region, project, settings.model_of("vertex"), token, **timeouts)
