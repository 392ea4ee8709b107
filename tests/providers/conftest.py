"""The fake OpenAI server and the official SDK client pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest
from aiohttp.test_utils import TestServer
from pytest_aiohttp import AiohttpServer

from gateway.providers.openai.provider import OpenAIProvider, create_client
from tests.fakes.openai import FakeOpenAI


@pytest.fixture
def fake_openai() -> FakeOpenAI:
    return FakeOpenAI()


@pytest.fixture
async def openai_server(fake_openai: FakeOpenAI, aiohttp_server: AiohttpServer) -> TestServer:
    return await aiohttp_server(fake_openai.app())


@pytest.fixture
async def openai_client(
    openai_server: TestServer, fake_openai: FakeOpenAI
) -> AsyncIterator[openai.AsyncOpenAI]:
    client = create_client(str(openai_server.make_url("/v1")), fake_openai.api_key, 10.0)
    yield client
    await client.close()


@pytest.fixture
def provider(openai_client: openai.AsyncOpenAI) -> OpenAIProvider:
    return OpenAIProvider(openai_client)
