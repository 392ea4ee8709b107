"""The tools' HTTP: the environment's proxy (HTTP_PROXY, NO_PROXY) taken as the model calls
take it, `Retry-After` read in both of its forms, the limits' settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from email.utils import formatdate

import pytest
from pytest_aiohttp import AiohttpServer

from gateway.settings import Settings
from tests.tools.conftest import FakeSecHosts, call_ok
from tests.tools.fake_proxy import ForwardProxy
from tests.tools.test_search_tools import FakeExa
from tools import ToolsConfig, open_toolset
from tools.http import retry_after_s

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
async def proxy(aiohttp_server: AiohttpServer, monkeypatch: pytest.MonkeyPatch) -> ForwardProxy:
    """A forward proxy on loopback, named in HTTP_PROXY; no other proxy setting left."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    fake = ForwardProxy()
    server = await aiohttp_server(fake.app())
    monkeypatch.setenv("HTTP_PROXY", str(server.make_url("")).rstrip("/"))
    return fake


async def test_sec_calls_go_through_the_environment_proxy(
    proxy: ForwardProxy, fake_sec: FakeSecHosts
) -> None:
    async with open_toolset(fake_sec.config(), timeout_s=10.0) as toolset:
        found = await call_ok(toolset, "search_sec_filings", company_identifier="AAPL", limit=1)
    assert found["filings"]
    sent = {fake_sec.urls[r.host] + r.path for r in fake_sec.fake.requests}
    assert len(sent) == 3 and set(proxy.targets) == sent  # tickers, exchange, submissions


async def test_no_proxy_is_honoured(
    proxy: ForwardProxy, fake_sec: FakeSecHosts, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "internal.example, 127.0.0.1")
    async with open_toolset(fake_sec.config(), timeout_s=10.0) as toolset:
        await call_ok(toolset, "search_sec_filings", company_identifier="AAPL", limit=1)
    assert len(fake_sec.fake.requests) == 3 and proxy.targets == []


@pytest.fixture
async def exa_url(aiohttp_server: AiohttpServer) -> AsyncIterator[str]:
    server = await aiohttp_server(FakeExa().app())
    yield str(server.make_url("")).rstrip("/")


async def test_exa_goes_through_the_environment_proxy(proxy: ForwardProxy, exa_url: str) -> None:
    config = ToolsConfig(search_backend="exa", exa_api_key="exa-test-key", exa_base_url=exa_url)
    async with open_toolset(config) as toolset:
        result = await call_ok(toolset, "web_search", query="nvidia")
    assert result["count"] == 1 and proxy.targets == [exa_url + "/search"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", 0.0),
        ("120", 120.0),
        (" 7 ", 7.0),
        (formatdate(1_000_030, usegmt=True), 30.0),
        (formatdate(999_000, usegmt=True), 0.0),  # already past
        (None, None),
        ("", None),
        ("-5", None),
        ("1.5", None),  # delay-seconds are whole
        ("²", None),
        ("soon", None),
        ("Wed, 21 Oct 2015 07:28:00 -0000", None),  # no zone: not an HTTP-date
    ],
)
def test_retry_after_forms(value: str | None, expected: float | None) -> None:
    assert retry_after_s(value, now=1_000_000) == expected


def test_settings_reach_the_tools() -> None:
    settings = Settings(
        _env_file=None,
        sec_max_body_bytes=5_000_000,
        exa_max_body_bytes=200_000,
        gateway_tool_max_retry_wait_s=4.5,
    )
    config = settings.tools_config()
    assert (config.sec_max_body_bytes, config.exa_max_body_bytes) == (5_000_000, 200_000)
    assert config.max_retry_wait_s == 4.5
    defaults = Settings(_env_file=None).tools_config()
    assert (defaults.sec_max_body_bytes, defaults.exa_max_body_bytes) == (64 << 20, 1 << 20)


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"sec_max_body_bytes": 10}, "SEC_MAX_BODY_BYTES"),
        ({"exa_max_body_bytes": 0}, "EXA_MAX_BODY_BYTES"),
        ({"max_retry_wait_s": -1.0}, "GATEWAY_TOOL_MAX_RETRY_WAIT_S"),
        ({"max_retry_wait_s": float("nan")}, "GATEWAY_TOOL_MAX_RETRY_WAIT_S"),
    ],
)
def test_bad_limits_name_their_setting(overrides: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        ToolsConfig(**overrides).check()  # type: ignore[arg-type]
