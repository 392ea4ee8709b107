"""Fixtures for the demo model: a gateway on the demo upstream with the real offline tools,
the demo app on its own, the company index, and the offline toolset to replay tool calls."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pytest_aiohttp import AiohttpClient, AiohttpServer

from demo_model import create_demo_app
from demo_model.companies import CompanyIndex, load_index
from gateway.http.app import create_app
from gateway.settings import Settings
from tools import ToolsConfig, Toolset, open_toolset

Client = TestClient[Any, Any]
DemoFactory = Callable[..., Awaitable[Client]]


@pytest.fixture(scope="session")
def index() -> CompanyIndex:
    return asyncio.run(load_index())


def demo_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "gateway_upstream": "demo",
        "sec_source": "offline",
        "search_backend": "offline",
        "sdk_model": "claude-demo",
        "sdk_max_turns": 10,
        "gateway_resume_grace_s": 0.3,
        "gateway_heartbeat_s": 5.0,
        "gateway_demo_pacing_ms": 0,  # unpaced: the demo tests run about three times faster
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@pytest.fixture
async def make_demo_gateway(aiohttp_client: AiohttpClient) -> DemoFactory:
    async def make(**overrides: Any) -> Client:
        return await aiohttp_client(create_app(demo_settings(**overrides)))

    return make


@pytest.fixture
async def demo_gateway(make_demo_gateway: DemoFactory) -> Client:
    return await make_demo_gateway()


@pytest.fixture
async def demo_server_url(aiohttp_server: AiohttpServer) -> str:
    server: TestServer = await aiohttp_server(create_demo_app(delay_s=0))
    return str(server.make_url("")).rstrip("/")


@pytest.fixture
async def toolset() -> AsyncIterator[Toolset]:
    async with open_toolset(ToolsConfig()) as opened:
        yield opened
