"""The configured upstreams, opened: one provider per kind (its SDK client, and for the demo
its in-process server), in the order a model call tries them, with each one's health and
the primary's model catalogue."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import anthropic
from aiohttp import web

from gateway.providers.anthropic.catalog import ModelCatalog, ModelRecord, StaticCatalog
from gateway.providers.anthropic.files import FilesAPI
from gateway.providers.anthropic.provider import AnthropicProvider
from gateway.providers.base import Provider
from gateway.providers.cloud_models import cloud_record
from gateway.providers.clouds import open_cloud
from gateway.providers.health import UpstreamsHealth
from gateway.providers.openai.provider import OpenAIProvider, create_client
from gateway.settings import Settings, UpstreamKind


@dataclass
class Upstreams:
    providers: list[Provider]
    catalog: ModelCatalog | StaticCatalog
    """Model records of the primary upstream: what every run is planned against."""
    health: UpstreamsHealth
    urls: dict[str, str]
    files: FilesAPI | None = None
    """The Files API of the `anthropic` upstream, where code execution's files are."""


@contextlib.asynccontextmanager
async def open_upstreams(settings: Settings) -> AsyncIterator[Upstreams]:
    async with contextlib.AsyncExitStack() as stack:
        providers: list[Provider] = []
        catalogs: dict[str, ModelCatalog | StaticCatalog] = {}
        urls: dict[str, str] = {}
        files = None
        for kind in settings.upstreams:
            provider, catalog, url = await _open(stack, settings, kind)
            providers.append(provider)
            catalogs[kind] = catalog
            urls[kind] = url
            if kind == "anthropic" and isinstance(provider, AnthropicProvider):
                files = FilesAPI(provider.client)
        yield Upstreams(
            providers,
            catalogs[settings.upstream_kind],
            UpstreamsHealth(settings.upstreams),
            urls,
            files,
        )


async def _open(
    stack: contextlib.AsyncExitStack, settings: Settings, kind: UpstreamKind
) -> tuple[Provider, ModelCatalog | StaticCatalog, str]:
    timeout = settings.gateway_upstream_timeout_s
    model = settings.model_of(kind)
    if kind == "bedrock" or kind == "vertex":
        cloud = await open_cloud(settings, kind)
        stack.push_async_callback(cloud.close)
        return cloud, StaticCatalog(cloud_record(model)), str(cloud.base_url)
    if kind == "openai":
        client = create_client(settings.openai_base_url, settings.openai_api_key, timeout)
        stack.push_async_callback(client.close)
        # Chat Completions has no model records: plan by what every such server takes.
        record = ModelRecord(model, model, "active", "provider", structured_outputs=True)
        return OpenAIProvider(client, model), StaticCatalog(record), str(client.base_url)
    base_url = settings.anthropic_base_url
    if kind == "demo":
        base_url = await _start_demo(stack, settings)
    messages = anthropic.AsyncAnthropic(
        api_key=settings.anthropic_api_key or "demo-no-key",
        base_url=base_url,
        max_retries=0,  # the gateway retries, and tells the client each time
        timeout=anthropic.Timeout(timeout, connect=settings.gateway_upstream_connect_timeout_s),
        http_client=anthropic.DefaultAioHttpClient(),
        open_telemetry=False,  # the gateway's own `chat` span already covers the call
    )
    stack.push_async_callback(messages.close)
    provider = AnthropicProvider(messages, model, kind)
    stack.push_async_callback(provider.close)
    return provider, ModelCatalog(messages), str(messages.base_url)


async def _start_demo(stack: contextlib.AsyncExitStack, settings: Settings) -> str:
    """The demo model's server, on a free loopback port for as long as the app runs."""
    from demo_model import create_demo_app

    runner = web.AppRunner(
        create_demo_app(delay_s=settings.gateway_demo_pacing_ms / 1000), access_log=None
    )
    await runner.setup()
    stack.push_async_callback(runner.cleanup)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return f"http://{host}:{port}"
