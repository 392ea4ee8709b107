"""Every typed key on the application, declared in one place."""

from __future__ import annotations

from aiohttp import web
from opentelemetry.trace import Tracer

from gateway.metrics import Metrics
from gateway.planner import RunPlanner
from gateway.runs import RunManager
from gateway.settings import Settings
from gateway.toolset import ToolsetLike
from gateway.upstreams import Upstreams

SETTINGS = web.AppKey("settings", Settings)
METRICS = web.AppKey("metrics", Metrics)
TRACER = web.AppKey("tracer", Tracer)
TOOLSET = web.AppKey("toolset", ToolsetLike)
RUNS = web.AppKey("runs", RunManager)
PLANNER = web.AppKey("planner", RunPlanner)
UPSTREAMS = web.AppKey("upstreams", Upstreams)
STARTED_AT = web.AppKey("started_at", float)

REQUEST_ID = web.RequestKey("request_id", str)  # set by the middleware
