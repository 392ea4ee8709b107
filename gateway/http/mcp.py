"""`/mcp`: the gateway's own tools (SEC and search) served over MCP's Streamable HTTP
transport, so an MCP client (Claude Desktop, Claude Code, an IDE, an agent framework) can
call them directly, on the same backends as the runs.

One JSON-RPC message per POST, answered as `application/json`: `initialize` (which opens a
session, `Mcp-Session-Id`), `ping`, `tools/list`, `tools/call`; notifications and responses
get 202. GET is 405 (the server sends nothing unasked), DELETE ends a session. Protocol
versions 2024-11-05 to 2025-11-25. The messages are checked with the SDK's types (imported
at the first request: they are slow to import, and most processes never serve one).

Behind the same key as /api/* (the auth middleware: a revoked key gets 401, and its
sessions end), each `initialize` and each call admitted as a run start is, on the same
code path as /api/stream (`admission.admit`: the key's own limits and USD budgets, else
the configured ones; `mcp_sessions.py`: each key's sessions have their own budget), with
an audit line (`run_id` is the request's id, `session_id` the MCP session's), the tool
metrics and a span. Origins and hosts are the
guard's rule, as on every route (`guard.py`: the MCP specification's DNS rebinding check).

Sessions live in the process that opened them: with several workers, an MCP client must
keep its connection (as HTTP clients do) or meet a 404 and initialize again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import web
from pydantic import BaseModel, ValidationError

from gateway import __version__
from gateway.errors import GatewayError, ValidationFailed
from gateway.http import keys
from gateway.http.admission import admit
from gateway.http.auth import caller_of
from gateway.http.mcp_sessions import SESSIONS, Sessions
from gateway.ops.audit import RunAudit
from tools.base import ToolContext
from tools.registry import ToolOutcome, ToolRegistry

VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST = VERSIONS[0]
# Fields the SDK's types carry for protocol versions newer than the ones served here.
_NEWER_FIELDS = ("resultType", "ttlMs", "cacheScope")


def install(app: web.Application) -> None:
    app[SESSIONS] = Sessions()
    app.router.add_post("/mcp", post)
    app.router.add_delete("/mcp", delete)  # GET: aiohttp's 405 (no stream from the server)


# JSON-RPC's error codes.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602


def _error(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error = {"code": code, "message": message}
    return error if data is None else {**error, "data": data}


class _Refused(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, code: int, message: str, data: Any = None, status: int = 200) -> None:
        super().__init__(message)
        self.error = _error(code, message, data)
        self.status = status


def _rpc(
    message_id: Any,
    *,
    result: Any = None,
    error: dict[str, Any] | None = None,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> web.Response:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": message_id}
    if error is not None:
        body["error"] = error
    else:
        body["result"] = result
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


def _dump(model: BaseModel) -> dict[str, Any]:
    data = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    for name in _NEWER_FIELDS:
        data.pop(name, None)
    return data


def _session(request: web.Request) -> str:
    """The request's open session, or a 400 (none given) or 404 (unknown or ended)."""
    session_id = request.headers.get("Mcp-Session-Id")
    if not session_id:
        raise _Refused(-32000, "Bad Request: the Mcp-Session-Id header is required", status=400)
    if not request.app[SESSIONS].use(session_id, caller_of(request)):
        raise _Refused(-32001, "Session not found: initialize again", status=404)
    version = request.headers.get("Mcp-Protocol-Version")
    if version is not None and version not in VERSIONS:
        raise _Refused(-32000, f"Unsupported protocol version {version!r}", status=400)
    return session_id


async def post(request: web.Request) -> web.Response:
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(reason="POST /mcp takes application/json")
    try:
        async with asyncio.timeout(request.app[keys.SETTINGS].gateway_body_timeout_s):
            raw = await request.read()
    except TimeoutError:
        raise ValidationFailed("The request body did not arrive in time", status=408) from None
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _rpc(None, error=_error(PARSE_ERROR, "Parse error"), status=400)
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        error = _error(INVALID_REQUEST, "One JSON-RPC 2.0 message")
        return _rpc(None, error=error, status=400)
    if "method" not in message:
        return web.Response(status=202)  # an answer to nothing this server asked
    if "id" not in message:  # a notification: nothing to do but check its session
        try:
            _session(request)
        except _Refused as refused:
            return _rpc(None, error=refused.error, status=refused.status)
        return web.Response(status=202)
    message_id = message["id"]
    try:
        return await _answer(request, message_id, message["method"], message.get("params"))
    except _Refused as refused:
        return _rpc(message_id, error=refused.error, status=refused.status)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}"
            for e in exc.errors(include_url=False)
        )
        error = _error(INVALID_PARAMS, f"Invalid params: {problems}")
        return _rpc(message_id, error=error)


async def _answer(request: web.Request, message_id: Any, method: Any, params: Any) -> web.Response:
    import mcp.types as types

    if method == "initialize":
        init = types.InitializeRequestParams.model_validate(params or {})
        asked = init.protocol_version
        version = asked if asked in VERSIONS else LATEST
        async with _within_limits(request):
            session_id = request.app[SESSIONS].open(version, caller_of(request))
        result = types.InitializeResult(
            protocol_version=version,
            capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
            server_info=types.Implementation(name="research-gateway", version=__version__),
            instructions="SEC EDGAR filings, XBRL figures, full-text search and web search.",
        )
        return _rpc(message_id, result=_dump(result), headers={"Mcp-Session-Id": session_id})
    session_id = _session(request)
    if method == "ping":
        return _rpc(message_id, result={})
    if method == "tools/list":
        return _rpc(message_id, result={"tools": _tool_list(_own(request))})
    if method == "tools/call":
        call = types.CallToolRequestParams.model_validate(params or {})
        answer = await _call(request, session_id, call.name, call.arguments or {})
        return _rpc(message_id, result=answer)
    raise _Refused(METHOD_NOT_FOUND, f"Method not found: {method}")


@contextlib.asynccontextmanager
async def _within_limits(request: web.Request) -> AsyncIterator[None]:
    """One start admitted as a run start is (`admission.admit`: the key's own limits and
    budgets; no model is called), its slot held meanwhile; a refusal as a JSON-RPC error
    (with the limit's details)."""
    try:
        admission = await admit(request, None)
    except GatewayError as exc:
        raise _Refused(-32000, exc.message, exc.body(request[keys.REQUEST_ID])) from None
    try:
        yield
    finally:
        request.app[keys.LIMITS].release(caller_of(request), admission.ticket)


def _own(request: web.Request) -> ToolRegistry:
    return request.app[keys.TOOLSET].registry.snapshot()


def _tool_list(registry: ToolRegistry) -> list[dict[str, Any]]:
    """The gateway's own tools, with the input schemas /api/tools gives (not the tools of
    the MCP servers it uses: those have servers of their own)."""
    return [
        {"name": d["name"], "description": d["description"], "inputSchema": d["input_schema"]}
        for d in registry.definitions()
        if registry.source_of(d["name"]) is None
    ]


async def _call(
    request: web.Request, session_id: str, name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    app = request.app
    registry = _own(request)
    if name not in registry or registry.source_of(name) is not None:
        raise _Refused(INVALID_PARAMS, f"Unknown tool: {name}")
    ctx = ToolContext(tool_use_id=request[keys.REQUEST_ID], services=app[keys.TOOLSET].services)
    tracer = app[keys.TRACER]
    async with _within_limits(request):
        with tracer.start_as_current_span(
            f"execute_tool {name}",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.type": "function",
                "gateway.mcp_session": session_id,
            },
        ) as span:
            outcome = await registry.call(name, arguments, ctx)
            if outcome.is_error:
                span.set_attribute("error.type", outcome.error_type or "tool_error")
    _count(request, name, arguments, outcome, session_id)
    content = outcome.blocks or [{"type": "text", "text": outcome.content}]
    return {"content": content, "isError": outcome.is_error}


def _count(
    request: web.Request,
    name: str,
    arguments: dict[str, Any],
    outcome: ToolOutcome,
    session_id: str,
) -> None:
    """The tool metrics and the audit line, as a run's tool call has them."""
    app = request.app
    metrics = app[keys.METRICS]
    result = outcome.error_type if outcome.is_error else "success"
    if result in ("tool_failure", "exception"):
        result = "error"
    metrics.tool_invocations.labels(name, "error" if outcome.is_error else "success").inc()
    metrics.loop_tool_invocations.labels(name, result or "error").inc()
    metrics.tool_duration_ms.labels(name).observe(outcome.duration_ms)
    metrics.tool_duration_s.labels(name).observe(outcome.duration_ms / 1000)
    if keys.AUDIT in app:
        audit = RunAudit(app[keys.AUDIT], caller_of(request), request[keys.REQUEST_ID], session_id)
        audit.tool_call(
            name,
            arguments,
            result_bytes=len(outcome.content.encode()),
            is_error=outcome.is_error,
            duration_ms=outcome.duration_ms,
            outcome=result or "error",
        )


async def delete(request: web.Request) -> web.Response:
    session_id = request.headers.get("Mcp-Session-Id", "")
    if not request.app[SESSIONS].close(session_id, caller_of(request)):
        raise web.HTTPNotFound(reason="No such MCP session")
    return web.Response(status=204)
