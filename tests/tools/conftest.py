"""Fixtures for the tools: the fake SEC hosts, live and offline toolsets, and a network guard."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from pytest_aiohttp import AiohttpServer

from tests.tools.fake_sec import HOST_DIRS, FakeSec
from tools import ToolContext, ToolOutcome, ToolsConfig, Toolset, open_toolset
from tools.sec.fixtures import FIXTURES_DIR, unpack

USER_AGENT = "Research Gateway Tests tests@example.com"


def _loopback(host: Any) -> bool:
    if host in ("localhost", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def no_network_off_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any name lookup or connection to a non-loopback address fails the test."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _loopback(host):
            raise AssertionError(f"tools tests must not resolve {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
            raise AssertionError(f"tools tests must not connect to {address!r}")
        real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    yield


@pytest.fixture(scope="session")
def fixtures_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's SEC fixtures, unpacked once per test session."""
    return unpack(FIXTURES_DIR, tmp_path_factory.mktemp("sec-fixtures"))


@dataclass
class FakeSecHosts:
    fake: FakeSec
    urls: dict[str, str]

    def config(self, **overrides: Any) -> ToolsConfig:
        values: dict[str, Any] = {
            "sec_source": "live",
            "sec_user_agent": USER_AGENT,
            "sec_www_url": self.urls["www"],
            "sec_data_url": self.urls["data"],
            "sec_efts_url": self.urls["efts"],
        }
        values.update(overrides)
        return ToolsConfig(**values)


@pytest.fixture
async def fake_sec(fixtures_dir: Path, aiohttp_server: AiohttpServer) -> FakeSecHosts:
    """Three servers, one per SEC host, sharing one request log."""
    fake = FakeSec(fixtures_dir)
    urls: dict[str, str] = {}
    for host in HOST_DIRS:
        server = await aiohttp_server(fake.app(host))
        urls[host] = str(server.make_url("")).rstrip("/")
    return FakeSecHosts(fake, urls)


@pytest.fixture
async def live(fake_sec: FakeSecHosts) -> AsyncIterator[Toolset]:
    async with open_toolset(fake_sec.config(), timeout_s=10.0) as toolset:
        yield toolset


@pytest.fixture
async def offline() -> AsyncIterator[Toolset]:
    async with open_toolset(ToolsConfig(), timeout_s=10.0) as toolset:
        yield toolset


async def call(toolset: Toolset, name: str, **tool_input: Any) -> ToolOutcome:
    ctx = ToolContext(tool_use_id="toolu_test", run_id="run_test", services=toolset.services)
    return await toolset.registry.call(name, tool_input, ctx)


async def call_ok(toolset: Toolset, name: str, **tool_input: Any) -> dict[str, Any]:
    """The parsed JSON result of a call that must succeed."""
    outcome = await call(toolset, name, **tool_input)
    assert not outcome.is_error, outcome.content
    result: dict[str, Any] = orjson.loads(outcome.content)
    return result


async def call_error(toolset: Toolset, name: str, **tool_input: Any) -> str:
    """The message of a call that must fail as a ToolFailure."""
    outcome = await call(toolset, name, **tool_input)
    assert outcome.is_error, outcome.content
    assert outcome.error_type == "tool_failure", (outcome.error_type, outcome.content)
    return outcome.content
