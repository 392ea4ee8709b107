"""create_app(settings): the only place wiring happens."""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import time
from collections.abc import AsyncIterator

from aiohttp import web
from opentelemetry.trace import TracerProvider

from gateway import __version__, pricing
from gateway.errors import ValidationFailed
from gateway.http import admin, admission, batches, fleet, keys, mcp, openapi
from gateway.http.auth import authenticate
from gateway.http.cors import add_cors_headers, cors
from gateway.http.guard import guard
from gateway.http.handlers import routes
from gateway.http.middleware import answer_errors, observe_requests
from gateway.ops.build import read_build
from gateway.ops.metrics import Metrics
from gateway.ops.telemetry import UnrecordedTracerProvider
from gateway.providers.configured import open_upstreams
from gateway.runs.manager import RunFactory, RunManager
from gateway.runs.planner import RunPlanner
from gateway.runs.run import Run
from gateway.runs.tools import ToolsetLike
from gateway.runs.wiring import RunWiring
from gateway.settings import Settings
from gateway.store.configured import configured_stores, file_owners

log = logging.getLogger(__name__)


def create_app(
    settings: Settings,
    *,
    toolset: ToolsetLike | None = None,
    metrics: Metrics | None = None,
    tracer_provider: TracerProvider | None = None,
) -> web.Application:
    app = web.Application(
        # The guard first after the request's id and error answers: before CORS answers a
        # preflight, before authentication, before any work (guard.py).
        middlewares=[observe_requests, answer_errors, guard, cors, authenticate],
        client_max_size=settings.gateway_max_body_bytes,
    )
    app[keys.SETTINGS] = settings
    app[keys.METRICS] = metrics or Metrics()
    app[keys.METRICS].build_info.labels(__version__, settings.model, settings.upstream_kind).set(1)
    # Without an injected provider nothing exports: spans keep their ids (for trace_id in
    # the events) but are not recorded.
    provider = tracer_provider or UnrecordedTracerProvider()
    app[keys.TRACER] = provider.get_tracer("research-gateway", __version__)
    app[keys.STARTED_AT] = time.monotonic()
    app[keys.PRICES] = pricing.load(settings.gateway_prices_file)  # a bad file stops startup
    if app[keys.PRICES].price(settings.model) is None:
        log.warning("no price for model %s: its runs' total_cost_usd is null", settings.model)
    app[keys.BUILD] = read_build(settings.build_sha, settings.build_timestamp)
    admission.install(app)  # before the runs' context: it closes after every run has ended
    app.on_response_prepare.append(_nosniff)
    if settings.gateway_cors_origins:
        app.on_response_prepare.append(add_cors_headers)
    # Opened in this order and closed in reverse: the runs end before what they use.
    app.cleanup_ctx.append(_tools_ctx(toolset))
    app.cleanup_ctx.append(_mcp_servers_ctx)
    app.cleanup_ctx.append(_upstreams_ctx)
    app.cleanup_ctx.append(_planner_ctx)
    app.cleanup_ctx.append(_runs_ctx)
    app.cleanup_ctx.append(batches.batches_ctx)
    app.on_shutdown.append(_end_runs)
    if settings.gateway_gc_freeze:
        app.on_startup.append(_freeze_startup_heap)  # after the cleanup contexts started
    if settings.gateway_fleet_member:  # a supervisor's worker: /metrics adds up all of them
        app.add_routes(fleet.install(app, [*routes(), *batches.routes()]))
    else:
        app.add_routes([*routes(), *batches.routes()])
    if settings.gateway_mcp_serve:
        mcp.install(app)
    app.router.add_get("/openapi.json", openapi.serve, allow_head=False)
    app.add_routes(admin.routes(settings))
    return app


def _finished(app: web.Application, run: Run, usage: dict[str, int], cost: float | None) -> None:
    """A run's task ended: settle its key's limits and charge its dollars."""
    app[keys.LIMITS].finished(run.id, usage, owner=run.owner)  # one taken over: no ticket
    model = run.model or app[keys.SETTINGS].model
    app[keys.SPEND].charge(run.owner, model, usage, cost)


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


async def _mcp_servers_ctx(app: web.Application) -> AsyncIterator[None]:
    """The configured MCP servers, their tools in the registry while each is up."""
    settings = app[keys.SETTINGS]
    configs = settings.mcp_servers()
    if not configs:  # the SDK is not even imported
        yield
        return
    from tools.mcp.client import McpServers

    servers = McpServers(
        configs,
        app[keys.TOOLSET].registry,
        backoff_s=(settings.gateway_mcp_backoff_s, settings.gateway_mcp_backoff_max_s),
        ping_s=settings.gateway_mcp_ping_s,
        client_version=__version__,
    )
    async with servers:
        app[keys.MCP_SERVERS] = servers
        await servers.settled(settings.gateway_mcp_startup_wait_s)  # for the first runs
        yield


async def _upstreams_ctx(app: web.Application) -> AsyncIterator[None]:
    """The upstreams: the real API, a configured server, OpenAI-compatible, the demo."""
    async with open_upstreams(app[keys.SETTINGS]) as upstreams:
        app[keys.UPSTREAMS] = upstreams
        yield


async def _planner_ctx(app: web.Application) -> AsyncIterator[None]:
    """The run planner, on the primary upstream's model records (read once now)."""
    app[keys.PLANNER] = RunPlanner(app[keys.SETTINGS], app[keys.UPSTREAMS].catalog)
    with contextlib.suppress(ValidationFailed):  # logged; each run gets the 400
        await app[keys.PLANNER].record()
    yield


async def _runs_ctx(app: web.Application) -> AsyncIterator[None]:
    """The stores and the run manager; at the end every run is ended, then the stores
    write what they still hold and close."""
    settings = app[keys.SETTINGS]
    sessions, shared = configured_stores(settings)
    app[keys.FILES] = file_owners(settings, shared)
    wiring = RunWiring(
        settings,
        app[keys.TRACER],
        app[keys.METRICS],
        app[keys.TOOLSET],
        app[keys.UPSTREAMS],
        app.get(keys.AUDIT),
        app[keys.PRICES],
        app[keys.FILES],
    )
    app[keys.RUNS] = runs = RunManager(
        RunFactory(wiring, app[keys.PLANNER].config),
        sessions,
        grace_s=settings.gateway_resume_grace_s,
        ttl_s=settings.gateway_run_ttl_s,
        max_events=settings.gateway_run_log_max_events,
        shared=shared,
        on_finish=functools.partial(_finished, app),
        takeover_s=settings.gateway_takeover_s,
    )
    try:
        await runs.open()
        yield
    finally:
        await runs.shutdown()
        await runs.close()


async def _freeze_startup_heap(app: web.Application) -> None:
    gc.collect()
    gc.freeze()
    # Young collections every 20,000 allocations instead of 700, and full ones rarely:
    # measured at 1,000 streams, this took events on time from ~88 % to ~100 %.
    gc.set_threshold(20_000, 50, 100)


async def _nosniff(request: web.Request, response: web.StreamResponse) -> None:
    # Browsers must not guess a type: a JSON error body is not a page to render.
    response.headers["X-Content-Type-Options"] = "nosniff"


async def _end_runs(app: web.Application) -> None:
    if keys.RUNS in app:
        await app[keys.RUNS].shutdown()
