"""HTTP in and out. Validation happens before any SSE header; a stream is a reader of the
run's log from some `seq` on, so a first stream and a re-attach are the same code."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web
from opentelemetry import context as otel_context
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from gateway import __version__, sse
from gateway.errors import GatewayError, ValidationFailed
from gateway.fold import fold
from gateway.http import admission, files, keys
from gateway.http.access_log import LEFT, STREAM
from gateway.http.auth import caller_of
from gateway.http.body import body_from_query, json_response, parse_run_request, read_json_body
from gateway.http.ownership import check_owner
from gateway.http.writer import CHUNK_BYTES, SSEWriter
from gateway.runs.run import Run

if TYPE_CHECKING:
    from gateway.store.base import SharedRuns

PLAYGROUND = Path(__file__).resolve().parents[2] / "playground"


async def _start(request: web.Request, data: object, endpoint: str) -> Run:
    app = request.app
    toolset = app[keys.TOOLSET]
    run_request = parse_run_request(
        data,
        app[keys.SETTINGS],
        toolset.registry.names(),
        request[keys.REQUEST_ID],
        caller_of(request),
    )
    config = await app[keys.PLANNER].config(run_request)  # a 400 for what the model can't do
    # The request's server span (made current by the middleware) is the run's parent.
    return await admission.start_run(
        request, run_request, config, endpoint, otel_context.get_current()
    )


async def stream_post(request: web.Request) -> web.StreamResponse:
    run = await _start(request, await read_json_body(request), "stream")
    return await stream_log(request, run, after=0)


async def stream_get(request: web.Request) -> web.StreamResponse:
    run = await _start(request, body_from_query(request.query), "stream")
    return await stream_log(request, run, after=0)


async def stream_reattach(request: web.Request) -> web.StreamResponse:
    run_id = request.match_info["run_id"]
    await check_owner(request, run_id)
    runs = request.app[keys.RUNS]
    run = runs.get(run_id)
    after = cursor(request)
    # A run taken over from a dead worker keeps only its new events in memory: the earlier
    # ones are read from the shared store.
    if run is not None and (runs.shared is None or after + 1 >= run.log.first_seq):
        _check_cursor(after, run.log.last_seq)
        return await stream_log(request, run, after=after)
    if runs.shared is not None:  # maybe another process owns it
        position = await runs.shared.position(run_id, after)
        if position is None:
            raise _not_found(run_id)
        _check_cursor(after, position[1])
        return await stream_shared(request, runs.shared, run_id, after=after, last=position[1])
    raise _not_found(run_id)


def cursor(request: web.Request) -> int:
    """`Last-Event-ID` (or `after`): the seq a stream resumes after."""
    raw = request.headers.get("Last-Event-ID") or request.query.get("after") or "0"
    try:
        after = int(raw)
    except ValueError:
        raise ValidationFailed("Last-Event-ID / after must be an integer seq") from None
    if after < 0:
        raise ValidationFailed("Last-Event-ID / after must be a seq, 0 or more")
    return after


def _check_cursor(after: int, last_seq: int) -> None:
    """A cursor past the run's last event is a mistake, not a run with nothing to say."""
    if after > last_seq:
        message = f"Last-Event-ID / after is {after}, past the run's last seq {last_seq}"
        raise ValidationFailed(message, {"last_seq": last_seq})


class _HeadersWithFrames(web.StreamResponse):
    """An SSE response whose headers go out in one write with its first frames (aiohttp
    sends a StreamResponse's headers at `prepare` otherwise: a write, a syscall and a
    TCP segment of their own for every stream). Its stream writes as soon as it is
    prepared, or sends the headers alone when it has nothing yet."""

    _send_headers_immediately = False


def _sse_response(
    request: web.Request, run_id: str, *, headers_with_frames: bool = False
) -> web.StreamResponse:
    kind = _HeadersWithFrames if headers_with_frames else web.StreamResponse
    response = kind(headers={**sse.HEADERS, "x-run-id": run_id})
    response.headers["x-request-id"] = request[keys.REQUEST_ID]
    request[STREAM] = response  # what the client was sent, should it leave
    return response


def _left(request: web.Request, writer: SSEWriter | None) -> None:
    """For the access line: the stream ended because its client went (or was dropped)."""
    if request.app[keys.RUNS].stopping:
        request[LEFT] = "closed_at_shutdown"
    else:
        dropped = writer is not None and writer.expired
        request[LEFT] = "client_dropped" if dropped else "client_left"


async def stream_log(request: web.Request, run: Run, *, after: int) -> web.StreamResponse:
    """Write the run's events after `after`, then follow it live until its terminal event."""
    settings = request.app[keys.SETTINGS]
    heartbeat, timeout_s = settings.gateway_heartbeat_s, settings.gateway_write_timeout_s
    readers = request.app[keys.METRICS].sse_readers
    response = _sse_response(request, run.id, headers_with_frames=True)
    run.attach()
    readers.inc()
    writer: SSEWriter | None = None
    log = run.log
    follower = log.follow(heartbeat)
    try:
        await response.prepare(request)
        writer = SSEWriter(request, response, timeout_s)
        if after >= log.last_seq > 0 and not log.closed:  # a re-attach with nothing new
            await writer.write(b"")  # the headers go alone, now
        last = b""
        while True:
            if after + 1 < log.hot_seq:  # a backlog, compressed: a window at a time
                data, after = log.window(after, CHUNK_BYTES)
                await writer.write_frames(data)  # waits for the socket to drain
                continue
            data = log.read(after)
            if data:
                after = log.last_seq
                if log.closed and len(data) <= CHUNK_BYTES:
                    last = data  # the terminal event goes out with the stream's end
                    break
                await writer.write_frames(data)
            elif log.closed:
                break
            else:
                woken = await follower.wait(after, writer.write_now)
                after = follower.after  # what the run's task wrote meanwhile
                if not woken:
                    await writer.write(sse.PING)
        await writer.write_last(last)
    except ConnectionResetError:  # the client left; the run's grace timer decides the rest
        _left(request, writer)
    finally:
        follower.close()
        if writer is not None:
            writer.close()
        readers.dec()
        run.detach()
    return response


async def stream_shared(
    request: web.Request, shared: SharedRuns, run_id: str, *, after: int, last: int
) -> web.StreamResponse:
    """`stream_log` for a run another process owns: read from the shared store, its
    backlog up to `last` a window at a time, then followed live."""
    status = await shared.attach(run_id)
    if status is None:
        raise _not_found(run_id)
    settings = request.app[keys.SETTINGS]
    heartbeat, timeout_s = settings.gateway_heartbeat_s, settings.gateway_write_timeout_s
    readers = request.app[keys.METRICS].sse_readers
    response = _sse_response(request, run_id)
    readers.inc()
    writer: SSEWriter | None = None
    try:
        await response.prepare(request)
        writer = SSEWriter(request, response, timeout_s)
        ended = False
        windows = shared.backlog(run_id, after, last)
        async with contextlib.aclosing(windows):
            async for data, seq, end in windows:
                await writer.write(data)  # waits for the socket to drain
                after, ended = seq, end
        if not ended:
            chunks = shared.follow(run_id, after, heartbeat, live=status == "running")
            async with contextlib.aclosing(chunks):
                async for chunk in chunks:
                    await writer.write(chunk or sse.PING)
        await response.write_eof()
    except ConnectionResetError:  # as in stream_log: the owner's grace timer counts readers
        _left(request, writer)
    finally:
        if writer is not None:
            writer.close()
        readers.dec()
        await shared.detach(run_id)
    return response


async def research(request: web.Request) -> web.Response:
    run = await _start(request, await read_json_body(request), "research")
    run.attach()
    try:
        if run.task is not None:  # shielded: this client leaving is the grace timer's call
            await asyncio.shield(run.task)
    finally:
        run.detach()
    collected = sse.parse_frames(b"".join(run.log.since(0)))
    result = fold(collected)
    if "error" in result:
        error = result["error"]
        status = GatewayError(error["code"], error["message"]).status
        return json_response({"error": error}, status)
    return json_response(result)


async def cancel(request: web.Request) -> web.Response:
    run_id = request.match_info["run_id"]
    await check_owner(request, run_id)
    cancelled = await request.app[keys.RUNS].cancel(run_id)
    if cancelled is None:
        raise _not_found(run_id)
    return json_response(
        {
            "ok": True,
            "run_id": run_id,
            "cancelled": cancelled,
            "status": "cancelling" if cancelled else "finished",
        }
    )


def _not_found(run_id: str) -> GatewayError:
    return GatewayError("NOT_FOUND", f"No run {run_id!r} (unknown or expired)")


async def list_tools(request: web.Request) -> web.Response:
    """The tools as the model sees them, each with `server`: the MCP server it comes from
    (None for the gateway's own); and the MCP servers' states."""
    app = request.app
    toolset = app[keys.TOOLSET]
    registry = toolset.registry.snapshot()
    tools = [{**d, "server": registry.source_of(d["name"])} for d in registry.definitions()]
    mcp = app.get(keys.MCP_SERVERS)
    servers = [] if mcp is None else mcp.report()
    return json_response({"tools": tools, "backends": toolset.backends, "mcp_servers": servers})


async def health(request: web.Request) -> web.Response:
    app = request.app
    settings = app[keys.SETTINGS]
    upstreams = app[keys.UPSTREAMS]
    health = upstreams.health
    primary = health.primary
    toolset = app[keys.TOOLSET]
    shared = app[keys.RUNS].shared
    store_health = None if shared is None else await shared.check()
    store_down = store_health is not None and store_health["status"] == "down"
    mcp = app.get(keys.MCP_SERVERS)
    mcp_down = mcp is not None and mcp.degraded
    body = {
        "ok": not health.degraded,
        # Redis or an MCP server down degrades, but answers 200: runs go on (in memory,
        # without that server's tools), so keep the worker.
        "status": "degraded" if health.degraded or store_down or mcp_down else "healthy",
        "version": __version__,
        "model": settings.model,
        "model_record": _model_health(app),
        "upstream": settings.upstream_kind,
        "upstream_consecutive_failures": primary.consecutive_failures,
        "upstream_last_error": primary.last_error,
        "upstreams": [
            {
                "name": p.name,
                "model": p.model,
                "url": upstreams.urls[p.name],
                **health.by_name[p.name].report(),
            }
            for p in upstreams.providers
        ],
        "tools": {"count": len(toolset.registry.names()), "backends": toolset.backends},
        "mcp_servers": [] if mcp is None else mcp.report(),
        "mcp_serve": settings.gateway_mcp_serve,
        "active_runs": len(app[keys.RUNS].active()),
        "max_runs_per_process": settings.gateway_max_runs_per_process,
        "worker": {"pid": os.getpid(), "index": settings.gateway_worker_index},
        "redis": store_health,  # the one shared store there is
        "uptime_s": round(time.monotonic() - app[keys.STARTED_AT], 1),
        # What the Node server's operators read (its scripts check these names).
        "environment": settings.gateway_env,
        "sdk_version": app[keys.BUILD].sdk_version,
        "build": app[keys.BUILD].report(),
        "feature_flags": feature_flags(app),
        "dependencies": dependencies(app, store_health),
    }
    return json_response(body, 503 if health.degraded else 200)


def feature_flags(app: web.Application) -> dict[str, bool]:
    """Which of the gateway's optional parts are on, as configured."""
    s = app[keys.SETTINGS]
    return {
        "prompt_cache": s.gateway_prompt_cache,
        "server_tools": bool(s.anthropic_server_tools),
        "code_execution": s.gateway_code_execution and s.upstream_kind == "anthropic",
        "fallback_upstreams": bool(s.gateway_fallback_upstreams),
        "api_keys": bool(s.gateway_api_keys or s.gateway_api_keys_file),
        "rate_limits": app[keys.LIMITS].limits.active,
        "usd_budget": bool(s.gateway_daily_usd_budget),
        "admin_keys": bool(s.gateway_admin_key),
        "cors": bool(s.gateway_cors_origins),
        "audit_log": keys.AUDIT in app,
        "shared_runs": bool(s.redis_url),
        "durable_runs": bool(s.redis_url),
        "cost": app[keys.PRICES].price(s.model) is not None,
    }


def dependencies(app: web.Application, store: dict[str, Any] | None) -> dict[str, Any]:
    """What the gateway depends on and its state: each upstream (and, as Node called it,
    the circuit breaker: `open` when the upstream is marked degraded after consecutive
    failures; the gateway still tries it, or its fallback), the limiter, the store."""
    upstreams, s = app[keys.UPSTREAMS], app[keys.SETTINGS]
    health = upstreams.health
    limits = app[keys.LIMITS].limits
    return {
        "upstream": {
            p.name: {
                "url": upstreams.urls[p.name],
                "model": p.model,
                "status": health.by_name[p.name].report()["status"],
            }
            for p in upstreams.providers
        },
        "rate_limiter": {
            "kind": "per_key",
            "store": "redis" if s.redis_url else "memory",
            "active": limits.active,
            "per_minute": limits.per_minute,
            "concurrent": limits.concurrent,
            "daily_tokens": limits.daily_tokens,
            "daily_usd": s.gateway_daily_usd_budget,
        },
        "circuit_breaker": {
            p.name: {
                "state": "open" if health.by_name[p.name].degraded else "closed",
                "consecutive_failures": health.by_name[p.name].consecutive_failures,
                "threshold": health.by_name[p.name].threshold,
            }
            for p in upstreams.providers
        },
        "store": store if store is not None else {"status": "memory"},
    }


def _model_health(app: web.Application) -> dict[str, object] | None:
    """The model as the Models API described it (None before it was first read)."""
    planner = app[keys.PLANNER]
    record = planner.catalog.cached(planner.settings.model)
    return record.health() if record is not None else None


async def metrics(request: web.Request) -> web.Response:
    registry = request.app[keys.METRICS].registry
    response = web.Response(body=generate_latest(registry))
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response


async def playground(request: web.Request) -> web.FileResponse:
    return web.FileResponse(PLAYGROUND / "index.html")


def routes() -> list[web.AbstractRouteDef]:
    return [
        web.post("/api/stream", stream_post),
        web.get("/api/stream", stream_get, allow_head=False),
        web.get("/api/stream/{run_id}", stream_reattach, allow_head=False),
        web.post("/api/research", research),
        web.post("/api/runs/{run_id}/cancel", cancel),
        web.get("/api/files/{file_id}", files.download, allow_head=False),
        web.get("/api/tools", list_tools),
        web.get("/health", health),
        web.get("/metrics", metrics),
        web.get("/", playground),
        web.get("/test/claude-playground.html", playground),
        web.static("/playground", PLAYGROUND, show_index=False),
    ]
