"""Every typed key on the application, declared in one place."""

from __future__ import annotations

from aiohttp import web
from opentelemetry.trace import Tracer

from gateway.access.keyring import KeyRing
from gateway.access.limits import Gate
from gateway.ops.audit import AuditLog
from gateway.ops.metrics import Metrics
from gateway.providers.configured import Upstreams
from gateway.runs.manager import RunManager
from gateway.runs.planner import RunPlanner
from gateway.runs.tools import ToolsetLike
from gateway.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
METRICS = web.AppKey("metrics", Metrics)
TRACER = web.AppKey("tracer", Tracer)
TOOLSET = web.AppKey("toolset", ToolsetLike)
RUNS = web.AppKey("runs", RunManager)
PLANNER = web.AppKey("planner", RunPlanner)
UPSTREAMS = web.AppKey("upstreams", Upstreams)
STARTED_AT = web.AppKey("started_at", float)
KEYRING = web.AppKey("keyring", KeyRing)
LIMITS = web.AppKey("limits", Gate)
AUDIT = web.AppKey("audit", AuditLog)  # only when GATEWAY_AUDIT_LOG is set

REQUEST_ID = web.RequestKey("request_id", str)  # set by the middleware
LIMIT_HEADERS = web.RequestKey("limit_headers", dict[str, str])  # set when a run starts
CALLER = web.RequestKey("caller", str)  # the key's name, set by the auth middleware
# Bytes a stream wrote to its transport past aiohttp's writer (`SSEWriter.write_now`),
# which the access log adds to what aiohttp counted.
SENT_DIRECTLY = web.RequestKey("sent_directly", int)
