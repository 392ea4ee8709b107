"""What a cloud lacks is refused with a 400 naming the upstream before any stream, and a
configuration no call could go out with stops the start, naming the variable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from gateway.providers.bedrock.provider import BedrockProvider
from gateway.providers.configured import open_upstreams
from gateway.settings import Settings
from tests.conftest import GatewayFactory
from tests.fakes.bedrock import FakeBedrock
from tests.providers.clouds_support import bare_aws, bare_google, bedrock_settings

DEFAULT_MODEL = Settings.model_fields["sdk_model"].default
"""These tests are about the variables a newcomer sets, so they follow the default model;
that the clouds know it (its ids are the undated `anthropic.<id>` and `<id>`, a record and
a price) is test_clouds_current_models.py's."""


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
        (
            "/api/research",
            {"query": "x", "skills": ["pdf"], "code_execution": True},
            "code_execution",
        ),
        ("/api/batches", {"requests": [{"query": "x"}]}, None),
    ],
)
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
        Settings(
            _env_file=None,
            gateway_upstream="bedrock",
            aws_region="us-east-1",
            anthropic_server_tools="web_search",
        )


async def test_bedrock_without_a_region_stops_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bare_aws(monkeypatch, tmp_path)
    settings = Settings(_env_file=None, gateway_upstream="bedrock")
    # No region yet: the default goes through the global profile (any region has it).
    assert settings.model == f"bedrock/global.anthropic.{DEFAULT_MODEL}"
    with pytest.raises(ValueError, match="AWS_REGION"):
        async with open_upstreams(settings):
            pass


async def test_the_aws_profile_gives_the_region(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A newcomer with AWS set up sets one variable: region and keys come from the profile."""
    bare_aws(monkeypatch, tmp_path)
    (tmp_path / "config").write_text("[default]\nregion = eu-west-3\n")
    (tmp_path / "credentials").write_text(
        "[default]\naws_access_key_id = AKIAPROFILE\naws_secret_access_key = s\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    async with open_upstreams(Settings(_env_file=None, gateway_upstream="bedrock")) as upstreams:
        [bedrock] = upstreams.providers
        assert isinstance(bedrock, BedrockProvider) and bedrock.region == "eu-west-3"
        assert upstreams.urls["bedrock"] == "https://bedrock-runtime.eu-west-3.amazonaws.com"
        assert (await bedrock.credentials.keys()).access_key == "AKIAPROFILE"


def test_the_contract_names_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_UPSTREAM", "vertex")
    monkeypatch.setenv("CLOUD_ML_REGION", "europe-west1")
    monkeypatch.setenv("ANTHROPIC_VERTEX_PROJECT_ID", "acme-research")
    monkeypatch.setenv("AWS_REGION", "eu-central-1")
    monkeypatch.setenv("GATEWAY_FALLBACK_UPSTREAMS", "bedrock")
    settings = Settings(_env_file=None)
    assert settings.upstreams == ("vertex", "bedrock")
    assert settings.gateway_vertex_project == "acme-research"
    assert settings.model == f"vertex/europe-west1/{DEFAULT_MODEL}"
    assert settings.model_of("bedrock") == f"bedrock/eu.anthropic.{DEFAULT_MODEL}"
    monkeypatch.delenv("CLOUD_ML_REGION")
    assert Settings(_env_file=None).model == f"vertex/global/{DEFAULT_MODEL}"


async def test_vertex_without_credentials_stops_the_start(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bare_google(monkeypatch, tmp_path)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    settings = Settings(_env_file=None, gateway_upstream="vertex", gateway_vertex_region="global")
    with pytest.raises(ValueError, match="No Google credentials for Vertex AI"):
        async with open_upstreams(settings):
            pass
