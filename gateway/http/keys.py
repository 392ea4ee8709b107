"""Every typed key on the application, declared in one place.

The keys' types are imported for the type checker only: a module that needs one key (the
SSE writer, the access log) must not pull in the whole application with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from gateway.access.keyring import KeyRing
    from gateway.access.limits import Gate
    from gateway.access.spend import Spend
    from gateway.access.tenants import Tenant, Tenants
    from gateway.batches.manager import BatchManager
    from gateway.ops.audit import AuditLog
    from gateway.ops.build import Build
    from gateway.ops.metrics import Metrics
    from gateway.pricing import PriceTable
    from gateway.providers.configured import Upstreams
    from gateway.runs.manager import RunManager
    from gateway.runs.planner import RunPlanner
    from gateway.runs.tools import ToolsetLike
    from gateway.settings import Settings
    from gateway.store.files import FileOwners
    from tools.mcp.client import McpServers

SETTINGS: web.AppKey[Settings] = web.AppKey("settings")
METRICS: web.AppKey[Metrics] = web.AppKey("metrics")
TRACER: web.AppKey[Tracer] = web.AppKey("tracer")
TOOLSET: web.AppKey[ToolsetLike] = web.AppKey("toolset")
RUNS: web.AppKey[RunManager] = web.AppKey("runs")
PLANNER: web.AppKey[RunPlanner] = web.AppKey("planner")
UPSTREAMS: web.AppKey[Upstreams] = web.AppKey("upstreams")
STARTED_AT: web.AppKey[float] = web.AppKey("started_at")
PRICES: web.AppKey[PriceTable] = web.AppKey("prices")
BUILD: web.AppKey[Build] = web.AppKey("build")
SPEND: web.AppKey[Spend] = web.AppKey("spend")  # each key's spend, and its dollar budgets
KEYRING: web.AppKey[KeyRing] = web.AppKey("keyring")
TENANTS: web.AppKey[Tenants] = web.AppKey("tenants")  # every key: the ring's and the store's
LIMITS: web.AppKey[Gate] = web.AppKey("limits")
MCP_SERVERS: web.AppKey[McpServers] = web.AppKey("mcp_servers")  # when any is configured
AUDIT: web.AppKey[AuditLog] = web.AppKey("audit")  # only when GATEWAY_AUDIT_LOG is set
BATCHES: web.AppKey[BatchManager] = web.AppKey("batches")  # when the upstream has batches
FILES: web.AppKey[FileOwners] = web.AppKey("files")  # who owns code execution's files

REQUEST_ID = web.RequestKey("request_id", str)  # set by the middleware
LIMIT_HEADERS = web.RequestKey("limit_headers", dict[str, str])  # set when a run starts
CALLER = web.RequestKey("caller", str)  # the key's name, set by the auth middleware
TENANT: web.RequestKey[Tenant | None] = web.RequestKey("tenant")  # None when the API is open
# Bytes a stream wrote to its transport past aiohttp's writer (`SSEWriter.write_now`),
# which the access log adds to what aiohttp counted.
SENT_DIRECTLY = web.RequestKey("sent_directly", int)
