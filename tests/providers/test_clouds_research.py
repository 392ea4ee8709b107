"""A full research run through each cloud, offline: the fakes in front of the demo model
(which researches with the real offline tools: the bundled EDGAR snapshot)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from pytest_aiohttp import AiohttpClient, AiohttpServer

from gateway.http.app import create_app
from gateway.ops.metrics import Metrics
from gateway.providers.configured import open_upstreams
from gateway.settings import Settings
from tests.conftest import stream
from tests.fakes.bedrock import FakeBedrock
from tests.fakes.vertex import FakeVertex
from tests.providers.clouds_support import (
    bare_aws,
    bare_google,
    bedrock_settings,
    phases,
    vertex_settings,
)

QUESTION = "Find Tesla's 10-K filings since 2020"
DEFAULT_MODEL = Settings.model_fields["sdk_model"].default


async def research(client_factory: AiohttpClient, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """A run on the default model (a newcomer sets only the upstream)."""
    values = {"sec_source": "offline", "search_backend": "offline", **settings}
    del values["sdk_model"]
    app = create_app(Settings(_env_file=None, **values), metrics=Metrics(CollectorRegistry()))
    return await stream(await client_factory(app), query=QUESTION)


@pytest.fixture
async def demo_model() -> AsyncIterator[str]:
    """The demo model's Messages API, started as the gateway starts it for `demo`."""
    async with open_upstreams(Settings(_env_file=None, gateway_upstream="demo")) as upstreams:
        yield upstreams.urls["demo"].rstrip("/")


async def test_a_research_run_through_bedrock(
    aiohttp_server: AiohttpServer,
    aiohttp_client: AiohttpClient,
    demo_model: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bare_aws(monkeypatch, tmp_path)
    bedrock = FakeBedrock(model_server=demo_model)
    server = await aiohttp_server(bedrock.app())
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", str(server.make_url("/creds")))
    events = await research(aiohttp_client, bedrock_settings(server))
    final = events[-1]
    assert final["type"] == "final" and final["outcome"] == "completed", final
    assert "10-K" in final["result"]
    assert phases(events, "tool_result") and len(bedrock.accepted) >= 2
    assert final["model"] == f"bedrock/us.anthropic.{DEFAULT_MODEL}"
    assert not bedrock.refusals


async def test_a_research_run_through_vertex(
    aiohttp_server: AiohttpServer,
    aiohttp_client: AiohttpClient,
    demo_model: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    bare_google(monkeypatch, tmp_path)
    vertex = FakeVertex(model_server=demo_model, region="global")
    server = await aiohttp_server(vertex.app())
    key = vertex.write_key(tmp_path, str(server.make_url("/token")))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key))
    settings = vertex_settings(server)
    del settings["gateway_vertex_region"]  # one variable: the region is global unless set
    events = await research(aiohttp_client, settings)
    final = events[-1]
    assert final["type"] == "final" and final["outcome"] == "completed", final
    assert "10-K" in final["result"]
    assert phases(events, "tool_result") and len(vertex.accepted) >= 2
    assert final["model"] == f"vertex/global/{DEFAULT_MODEL}"
    assert not vertex.refusals
