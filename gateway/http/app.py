"""create_app(settings): the only place wiring happens."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import AsyncIterator

from aiohttp import web
from opentelemetry.trace import Tracer, TracerProvider

from gateway import __version__
from gateway.errors import ValidationFailed
from gateway.http import admission, keys, openapi
from gateway.http.auth import authenticate
from gateway.http.cors import add_cors_headers, cors
from gateway.http.handlers import routes
from gateway.http.middleware import answer_errors, observe_requests
from gateway.ops import fleet
from gateway.ops.metrics import Metrics
from gateway.ops.observe import RunObserver
from gateway.ops.telemetry import UnrecordedTracerProvider
from gateway.providers.configured import Upstreams, open_upstreams
from gateway.runs.loop import LoopDeps
from gateway.runs.manager import RunFactory, RunManager
from gateway.runs.planner import RunPlanner
from gateway.runs.run import Run, RunRequest
from gateway.runs.tools import ToolsetLike
from gateway.settings import Settings
from gateway.store.configured import configured_stores


def create_app(
    settings: Settings,
    *,
    toolset: ToolsetLike | None = None,
    metrics: Metrics | None = None,
    tracer_provider: TracerProvider | None = None,
) -> web.Application:
    app = web.Application(
        middlewares=[observe_requests, answer_errors, cors, authenticate],
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
    admission.install(app)  # before the runs' context: it closes after every run has ended
    app.on_response_prepare.append(_nosniff)
    if settings.gateway_cors_origins:
        app.on_response_prepare.append(add_cors_headers)
    app.cleanup_ctx.append(_tools_ctx(toolset))
    app.cleanup_ctx.append(_upstream_ctx)
    app.on_shutdown.append(_end_runs)
    if settings.gateway_gc_freeze:
        app.on_startup.append(_freeze_startup_heap)  # after the cleanup contexts started
    if settings.gateway_fleet_member:  # a supervisor's worker: /metrics adds up all of them
        app.add_routes(fleet.install(app, routes()))
    else:
        app.add_routes(routes())
    app.router.add_get("/openapi.json", openapi.serve, allow_head=False)
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
    """The upstreams (the real API, a configured server, OpenAI-compatible, the demo
    model), the run planner on the primary's model records, and the run manager."""
    settings = app[keys.SETTINGS]
    async with open_upstreams(settings) as upstreams:
        app[keys.UPSTREAMS] = upstreams
        app[keys.PLANNER] = RunPlanner(settings, upstreams.catalog)
        app[keys.RUNS] = _run_manager(app, upstreams)
        try:
            await app[keys.RUNS].open()
            with contextlib.suppress(ValidationFailed):  # logged; each run gets the 400
                await app[keys.PLANNER].record()
            yield
        finally:
            await app[keys.RUNS].shutdown()
            await app[keys.RUNS].close()


def _run_manager(app: web.Application, upstreams: Upstreams) -> RunManager:
    settings = app[keys.SETTINGS]

    def deps(run: Run, request: RunRequest, endpoint: str, parent: object) -> LoopDeps:
        toolset = app[keys.TOOLSET]
        observer = RunObserver(
            tracer=_tracer(app),
            metrics=app[keys.METRICS],
            run_id=run.id,
            session_id=run.session_id,
            endpoint=endpoint,
            model=settings.model,
            tool_names=frozenset(toolset.registry.names()),
            parent=parent,  # type: ignore[arg-type]
            trace_content=settings.gateway_trace_content,
            upstream=upstreams.providers[0].name,
            on_upstream_result=upstreams.health.record,
            caller=request.caller,
            audit=admission.run_audit(app, run),
        )
        return LoopDeps(upstreams.providers, toolset.registry, observer, toolset.services)

    sessions, shared = configured_stores(settings)
    return RunManager(
        RunFactory(deps, app[keys.PLANNER].config),
        sessions,
        grace_s=settings.gateway_resume_grace_s,
        ttl_s=settings.gateway_run_ttl_s,
        max_events=settings.gateway_run_log_max_events,
        shared=shared,
        on_finish=lambda run, usage: app[keys.LIMITS].finished(run.id, usage),
        takeover_s=settings.gateway_takeover_s,
    )


def _tracer(app: web.Application) -> Tracer:
    return app[keys.TRACER]


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
