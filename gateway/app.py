"""create_app(settings): the only place wiring happens."""

from __future__ import annotations

import gc
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import anthropic
from aiohttp import web
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import Tracer

from gateway import __version__, keys
from gateway.handlers import routes
from gateway.health import UpstreamHealth
from gateway.loop import LoopConfig, LoopDeps
from gateway.metrics import Metrics
from gateway.middleware import observe_requests
from gateway.model import AnthropicModel, RetryPolicy
from gateway.observe import RunObserver
from gateway.redis_store import RedisStore
from gateway.run import Run, RunRequest
from gateway.runs import RunFactory, RunManager
from gateway.sessions import MemorySessions, SessionStore
from gateway.settings import Settings
from gateway.toolset import ToolsetLike

SYSTEM_PROMPT = """You are a financial research assistant. You answer questions about public \
companies from SEC EDGAR filings and, when useful, the web, using the tools you are given. \
Look things up rather than relying on memory; read the relevant filing section before \
summarising it. In the answer, give figures with their units and periods, and cite the \
filings you used (form, filing date, accession number or link). If the tools find nothing \
or fail, say so plainly. Today's date is {today}."""


def create_app(
    settings: Settings,
    *,
    toolset: ToolsetLike | None = None,
    metrics: Metrics | None = None,
    tracer_provider: TracerProvider | None = None,
) -> web.Application:
    app = web.Application(
        middlewares=[observe_requests], client_max_size=settings.gateway_max_body_bytes
    )
    app[keys.SETTINGS] = settings
    app[keys.METRICS] = metrics or Metrics()
    app[keys.METRICS].build_info.labels(
        __version__, settings.sdk_model, settings.upstream_kind
    ).set(1)
    # Without an injected provider nothing exports: spans keep their ids (for trace_id in
    # the events) but are not recorded.
    provider = tracer_provider or TracerProvider(sampler=ALWAYS_OFF)
    app[keys.TRACER] = provider.get_tracer("research-gateway", __version__)
    app[keys.HEALTH] = UpstreamHealth()
    app[keys.STARTED_AT] = time.monotonic()
    app.cleanup_ctx.append(_tools_ctx(toolset))
    app.cleanup_ctx.append(_upstream_ctx)
    app.on_shutdown.append(_end_runs)
    if settings.gateway_gc_freeze:
        app.on_startup.append(_freeze_startup_heap)  # after the cleanup contexts started
    app.add_routes(routes())
    return app


def _tools_ctx(injected: ToolsetLike | None):  # type: ignore[no-untyped-def]
    async def tools_ctx(app: web.Application) -> AsyncIterator[None]:
        if injected is not None:
            app[keys.TOOLSET] = injected
            yield
            return
        from tools import open_toolset

        settings = app[keys.SETTINGS]
        async with open_toolset(
            settings.tools_config(),
            timeout_s=settings.gateway_tool_timeout_s,
            max_result_chars=settings.gateway_tool_result_max_chars,
        ) as toolset:
            app[keys.TOOLSET] = toolset
            yield

    return tools_ctx


async def _upstream_ctx(app: web.Application) -> AsyncIterator[None]:
    """The SDK client, pointed at the real API, a configured server, or the demo model."""
    settings = app[keys.SETTINGS]
    demo_runner: web.AppRunner | None = None
    base_url = settings.anthropic_base_url
    if settings.upstream_kind == "demo":
        from gateway.demo import create_demo_app

        demo_app = create_demo_app(delay_s=settings.gateway_demo_pacing_ms / 1000)
        demo_runner = web.AppRunner(demo_app, access_log=None)
        await demo_runner.setup()
        site = web.TCPSite(demo_runner, "127.0.0.1", 0)
        await site.start()
        host, port = demo_runner.addresses[0][:2]
        base_url = f"http://{host}:{port}"
    client = anthropic.AsyncAnthropic(
        api_key=settings.anthropic_api_key or "demo-no-key",
        base_url=base_url,
        max_retries=0,  # the gateway retries, and tells the client each time
        timeout=settings.gateway_upstream_timeout_s,
        http_client=anthropic.DefaultAioHttpClient(),
        open_telemetry=False,  # the gateway's own `chat` span already covers the call
    )
    app[keys.UPSTREAM_URL] = str(client.base_url)
    app[keys.RUNS] = _run_manager(app, AnthropicModel(client))
    try:
        await app[keys.RUNS].open()
        yield
    finally:
        await app[keys.RUNS].shutdown()
        await app[keys.RUNS].close()
        await client.close()
        if demo_runner is not None:
            await demo_runner.cleanup()


def _run_manager(app: web.Application, model: AnthropicModel) -> RunManager:
    settings = app[keys.SETTINGS]
    retry = RetryPolicy(
        max_retries=settings.gateway_upstream_max_retries,
        max_total_wait_s=settings.gateway_upstream_max_retry_wait_s,
    )
    system = settings.sdk_system_prompt or SYSTEM_PROMPT.format(
        today=datetime.now(UTC).date().isoformat()
    )

    def config(request: RunRequest) -> LoopConfig:
        thinking = request.thinking_budget
        return LoopConfig(
            model=settings.sdk_model,
            max_tokens=settings.sdk_max_tokens,
            max_turns=request.max_turns or settings.sdk_max_turns,
            system=system,
            thinking_budget=settings.sdk_thinking_budget if thinking is None else thinking,
            allowed_tools=request.tools,
            upstream=settings.upstream_kind,
            retry=retry,
        )

    def deps(run: Run, request: RunRequest, endpoint: str, parent: object) -> LoopDeps:
        toolset = app[keys.TOOLSET]
        observer = RunObserver(
            tracer=_tracer(app),
            metrics=app[keys.METRICS],
            run_id=run.id,
            session_id=run.session_id,
            endpoint=endpoint,
            model=settings.sdk_model,
            tool_names=frozenset(toolset.registry.names()),
            parent=parent,  # type: ignore[arg-type]
            trace_content=settings.gateway_trace_content,
        )
        return LoopDeps(model, toolset.registry, observer, toolset.services)

    sessions, shared = _stores(settings)
    return RunManager(
        RunFactory(config, deps),
        sessions,
        grace_s=settings.gateway_resume_grace_s,
        ttl_s=settings.gateway_run_ttl_s,
        max_events=settings.gateway_run_log_max_events,
        on_end=app[keys.HEALTH].record,
        shared=shared,
        takeover_s=settings.gateway_takeover_s,
    )


def _stores(settings: Settings) -> tuple[SessionStore, RedisStore | None]:
    """Sessions, and the run store shared with other processes: Redis when REDIS_URL is set."""
    if not settings.redis_url:
        return MemorySessions(settings.gateway_session_ttl_s), None
    shared = RedisStore(
        settings.redis_url,
        prefix=settings.redis_key_prefix,
        run_ttl_s=settings.gateway_run_ttl_s,
        max_events=settings.gateway_run_log_max_events,
    )
    return shared.sessions(settings.gateway_session_ttl_s), shared


def _tracer(app: web.Application) -> Tracer:
    return app[keys.TRACER]


async def _freeze_startup_heap(app: web.Application) -> None:
    gc.collect()
    gc.freeze()
    # Young collections every 20,000 allocations instead of 700, and full ones rarely:
    # measured at 1,000 streams, this took events on time from ~88 % to ~100 %.
    gc.set_threshold(20_000, 50, 100)


async def _end_runs(app: web.Application) -> None:
    if keys.RUNS in app:
        await app[keys.RUNS].shutdown()
