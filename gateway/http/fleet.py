"""`/metrics` for all the workers of a supervisor (see `ops.fleet`): this worker serves
its own snapshot on its socket while the app runs, and answers a scrape for every worker."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from gateway.http import keys
from gateway.ops.fleet import Member, exposition, serve_snapshots, stop_serving


def install(app: web.Application, routes: Iterable[web.AbstractRouteDef]) -> list[Any]:
    """Serve this worker's snapshot while the app runs: `routes` with their own /metrics
    replaced by the fleet's."""
    app.on_startup.append(_start)  # after every cleanup context started: the worker serves
    app.on_cleanup.append(_stop)  # after every cleanup context closed: the last counts
    kept = [r for r in routes if not (isinstance(r, web.RouteDef) and r.path == "/metrics")]
    return [*kept, web.get("/metrics", metrics)]


_SERVER = web.AppKey("fleet_server", asyncio.AbstractServer)


def _member(app: web.Application) -> Member:
    return Member(Path(app[keys.SETTINGS].gateway_fleet_member or ""))


async def _start(app: web.Application) -> None:
    app[_SERVER] = await serve_snapshots(_member(app), app[keys.METRICS])


async def _stop(app: web.Application) -> None:
    stop_serving(app[_SERVER], _member(app), app[keys.METRICS])


async def metrics(request: web.Request) -> web.Response:
    """Every worker's metrics added up."""
    body = await exposition(_member(request.app), request.app[keys.METRICS])
    response = web.Response(body=body)
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response
