"""What a cloud lacks is refused with a 400 naming the upstream before any stream, and a
configuration no call could go out with stops the start, naming the variable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from gateway.providers.configured import open_upstreams
from gateway.settings import Settings
from tests.conftest import GatewayFactory
from tests.fakes.bedrock import FakeBedrock
from tests.providers.clouds_support import bare_aws, bare_google, bedrock_settings


@pytest.fixture
async def bedrock_server(
    aiohttp_server: AiohttpServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> TestServer:
    bare_aws(monkeypatch, tmp_path)
    return await aiohttp_server(FakeBedrock().app())


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/stream", {"query": "x", "code_execution": True}, "code_execution"),
        ("/api/research", {"query": "x", "skills": ["pdf"], "code_execution": True},
         "code_execution"),
        ("/api/batches", {"requests": [{"query": "x"}]}, None),
    ],
)  # fmt: skip
async def test_what_bedrock_lacks_is_a_400_naming_it(
    make_gateway: GatewayFactory,
    bedrock_server: TestServer,
    path: str,
    body: dict[str, Any],
    field: str | None,
) -> None:
    client = await make_gateway(**bedrock_settings(bedrock_server))
    response = await client.post(path, json=body)
    assert response.status == 400
    assert response.content_type == "application/json"  # before any SSE header
    error = (await response.json())["error"]
    assert error["code"] == "VALIDATION_ERROR" and "bedrock" in error["message"]
    assert error["details"]["upstream"] == "bedrock"


def test_server_tools_without_the_messages_api_stop_the_start() -> None:
    with pytest.raises(ValueError, match="ANTHROPIC_SERVER_TOOLS=web_search"):
        Settings(_env_file=None, gateway_upstream="bedrock", aws_region="us-east-1",
                 anthropic_server_tools="web_search")  # fmt: skip


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"gateway_upstream": "bedrock"}, "AWS_REGION"),
        ({"gateway_upstream": "vertex"}, "CLOUD_ML_REGION"),
        ({"anthropic_api_key": "k", "gateway_fallback_upstreams": "vertex"}, "CLOUD_ML_REGION"),
    ],
)
def test_a_cloud_without_its_region_stops_the_start(
    values: dict[str, Any], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "CLOUD_ML_REGION", "GATEWAY_VERTEX_REGION"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match=message):
        Settings(_env_file=None, **values)


def test_the_contract_names_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_UPSTREAM", "vertex")
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "acme-research")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    monkeypatch.setenv("GATEWAY_FALLBACK_UPSTREAMS", "bedrock")
    settings = Settings(_env_file=None)
    assert settings.upstreams == ("vertex", "bedrock")
    assert settings.gateway_vertex_project == "acme-research"
    assert settings.model == "vertex/europe-west1/claude-sonnet-5"
    assert settings.model_of("bedrock") == "bedrock/eu.anthropic.claude-sonnet-5"


async def test_vertex_without_credentials_stops_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bare_google(monkeypatch, tmp_path)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    settings = Settings(_env_file=None, gateway_upstream="vertex", gateway_vertex_region="global")
    with pytest.raises(ValueError, match="No Google credentials for Vertex AI"):
        async with open_upstreams(settings):
            pass
