"""Build the tools and their shared services for one process, and close them at the end.

    async with open_toolset(config) as toolset:
        ctx = ToolContext(services=toolset.services, tool_use_id=..., run_id=...)
        outcome = await toolset.registry.call(name, raw_input, ctx)

Services, by key: "sec" (`Edgar`), "sec_full_text" (`FullTextSearch`), "web_search"
(`WebSearch`). One aiohttp session serves every live backend (it honours HTTP(S)_PROXY and
NO_PROXY, as the model calls do); one rate limiter every SEC host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
import redis.asyncio as redis

from tools.base import Tool
from tools.config import ToolsConfig
from tools.http import open_session
from tools.registry import ToolRegistry
from tools.search.corpus import IndexFullText, LocalIndex, open_local_index
from tools.search.web import ExaSearch, OfflineWebSearch, WebSearch, WebSearchTool
from tools.sec.cache import SharedResponses
from tools.sec.company_tools import SearchCompanyTickers, SearchFilings
from tools.sec.document_tool import GetFiling
from tools.sec.edgar import Edgar
from tools.sec.fulltext import EftsSearch, FullTextSearch, SearchFullText
from tools.sec.live import LiveSec
from tools.sec.offline import OfflineSec
from tools.sec.ratelimit import Limiter, RateLimiter, SharedRateLimiter
from tools.sec.source import SecSource
from tools.sec.xbrl_tools import GetCompanyFacts, GetXbrlFrames

__all__ = ["SEC_REQUESTS_PER_SECOND", "Toolset", "all_tools", "open_toolset"]

# SEC allows 10 requests/second per user across all its hosts; stay clearly below.
SEC_REQUESTS_PER_SECOND = 8


@dataclass
class Toolset:
    """The registry the loop calls, the services each call gets, the backends in use."""

    registry: ToolRegistry
    services: dict[str, Any]
    backends: dict[str, str]


def all_tools() -> list[Tool[Any]]:
    """Every tool, in the order offered to the model."""
    return [
        SearchCompanyTickers(),
        SearchFilings(),
        GetFiling(),
        GetCompanyFacts(),
        GetXbrlFrames(),
        SearchFullText(),
        WebSearchTool(),
    ]


@asynccontextmanager
async def open_toolset(
    config: ToolsConfig, *, timeout_s: float = 30.0, max_result_chars: int = 100_000
) -> AsyncIterator[Toolset]:
    config.check()
    # One request gets a third of the tool's time, so a throttled retry still fits in it.
    request_timeout_s = max(1.0, timeout_s / 3)
    async with AsyncExitStack() as stack:
        session = None
        if config.sec_source == "live" or config.search_backend == "exa":
            session = await stack.enter_async_context(open_session())
        local = None
        if config.sec_source == "offline" or config.search_backend == "offline":
            local = await open_local_index()
            stack.callback(local.close)
        shared = None
        if config.redis_url and config.sec_source == "live":
            shared = redis.Redis.from_url(config.redis_url, socket_connect_timeout=2.0)
            stack.push_async_callback(shared.aclose)
        source, full_text = _sec_backends(config, session, local, request_timeout_s, shared)
        yield Toolset(
            registry=ToolRegistry(
                all_tools(), timeout_s=timeout_s, max_result_chars=max_result_chars
            ),
            services={
                "sec": Edgar(source),
                "sec_full_text": full_text,
                "web_search": _web_backend(config, session, local, request_timeout_s),
            },
            backends={"sec": config.sec_source, "search": config.search_backend},
        )


def _sec_backends(
    config: ToolsConfig,
    session: aiohttp.ClientSession | None,
    local: LocalIndex | None,
    timeout_s: float,
    shared: redis.Redis | None = None,
) -> tuple[SecSource, FullTextSearch]:
    if config.sec_source == "live" and session is not None:
        limiter: Limiter = RateLimiter(SEC_REQUESTS_PER_SECOND, 1.0)
        responses = None
        if shared is not None:  # one budget and one cache for every process on this Redis
            key = f"{config.redis_key_prefix}sec:limit"
            limiter = SharedRateLimiter(shared, key, SEC_REQUESTS_PER_SECOND, 1.0)
            responses = SharedResponses(shared, config.redis_key_prefix)
        live = LiveSec(
            session,
            user_agent=config.sec_user_agent or "",
            bases={
                "www": config.sec_www_url,
                "data": config.sec_data_url,
                "efts": config.sec_efts_url,
            },
            limiter=limiter,
            shared=responses,
            request_timeout_s=timeout_s,
            max_retry_wait_s=config.max_retry_wait_s,
            max_body_bytes=config.sec_max_body_bytes,
        )
        return live, EftsSearch(live)
    if local is None:
        raise RuntimeError("the offline SEC tools need the local index")
    return OfflineSec(), IndexFullText(local)


def _web_backend(
    config: ToolsConfig,
    session: aiohttp.ClientSession | None,
    local: LocalIndex | None,
    timeout_s: float,
) -> WebSearch:
    if config.search_backend == "exa" and session is not None:
        return ExaSearch(
            session,
            api_key=config.exa_api_key or "",
            base_url=config.exa_base_url,
            timeout_s=timeout_s,
            max_retry_wait_s=config.max_retry_wait_s,
            max_body_bytes=config.exa_max_body_bytes,
        )
    if local is None:
        raise RuntimeError("the offline web_search needs the local index")
    return OfflineWebSearch(local)
