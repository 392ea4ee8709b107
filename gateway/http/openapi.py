"""`GET /openapi.json`: OpenAPI 3.1 for every endpoint, generated from the models.

The request body is `RunBody` itself (pydantic's JSON schema), so a field added there is
documented without an edit here; the GET parameters are its scalar fields, as
`body_from_query` reads them. Responses are small models below; the error shape is the
one `GatewayError.body` writes, with the closed set of codes. Only the list of operations
is written by hand, and a test checks it against the app's routes.

The hand-written parts keep the nesting of the JSON they become (`# fmt: skip` on each):
the formatter's one-key-a-line layout would triple their length and hide the document's
shape, which is what a reader checks them against.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Literal

from aiohttp import web
from pydantic import BaseModel, ConfigDict
from pydantic.json_schema import models_json_schema

from gateway import __version__
from gateway.errors import STATUS_BY_CODE, ErrorCode
from gateway.http import keys, openapi_keys
from gateway.http.body import RunBody

REF = "#/components/schemas/{model}"
STRING = {"schema": {"type": "string"}}
GET_QUERY_MAX_CHARS = 500  # up to 12 bytes each once percent-encoded: well under 8 KB


class ErrorDetail(BaseModel):
    """What went wrong, with a code from a closed set."""

    code: ErrorCode
    message: str
    details: dict[str, Any]
    """Machine-readable specifics: the field, the limit and its `retry_after_s`..."""
    request_id: str
    """The `x-request-id` of the request, for the logs."""


class ErrorResponse(BaseModel):
    """Every error answered as JSON (before any SSE header)."""

    error: ErrorDetail


class CancelResult(BaseModel):
    ok: bool
    run_id: str
    cancelled: bool
    """Whether the run was still running (False: it had already ended)."""
    status: str


class ToolList(BaseModel):
    tools: list[dict[str, Any]]
    """Tool definitions as the model sees them: name, description, input_schema; and
    `server`, the MCP server a tool comes from (null: the gateway's own)."""
    backends: dict[str, str]
    mcp_servers: list[dict[str, Any]]
    """Each configured MCP server: name, transport, state (starting, up, down), tools,
    connects, since, last_error."""


class ResearchResult(BaseModel):
    """The fold of a run's events into one answer."""

    model_config = ConfigDict(extra="allow")

    text: str
    toolCalls: list[dict[str, Any]]
    thinkingBlocks: list[dict[str, Any]]
    """Each `{thinking, signature, kind}`: `kind` `progress` for a note before a tool call,
    `reasoning` otherwise."""
    citations: list[Any]
    total_cost_usd: float | None
    """What the run's model calls cost in dollars; null when a model of it has no price."""
    subtype: Literal["success", "error_max_turns", "error_during_execution"] | None = None
    """Node's name for how the run ended (absent for a failed run)."""
    is_error: bool | None = None
    num_turns: int | None = None
    details: dict[str, Any] | None = None
    """A refusal's `{category, explanation}` (the model's `stop_details`); null otherwise."""
    files: list[dict[str, Any]] | None = None
    """The files code execution made (absent when none): each `file` event's fields."""
    figures: dict[str, int] | None = None
    """The figure check's counts (sourced, derived, unsourced, other_period); absent with
    GATEWAY_FIGURE_CHECK=off or for a failed run."""


class Build(BaseModel):
    commit: str | None
    version: str
    timestamp: str | None


class Health(BaseModel):
    model_config = ConfigDict(extra="allow")

    ok: bool
    status: str
    version: str
    environment: str
    sdk_version: str | None
    build: Build
    feature_flags: dict[str, bool]
    dependencies: dict[str, Any]
    """`upstream`, `rate_limiter`, `circuit_breaker`, `store`."""


class BatchCreated(BaseModel):
    batch_id: str
    state: str
    questions: int


class BatchProgress(BaseModel):
    """A batch's progress: per question its round (model calls made), state (`queued`,
    `waiting_model`, `running_tools`, `done`), outcome and usage; the rounds' Message
    Batches; totals with the dollars saved against live calls."""

    model_config = ConfigDict(extra="allow")

    batch_id: str
    state: Literal["running", "cancelling", "ended"]
    outcome: Literal["completed", "cancelled"] | None
    """Null while running."""
    created_at: str
    question_count: int
    counts: dict[str, int]
    usage: dict[str, int]
    total_cost_usd: float | None
    saved_usd: float
    rounds: list[dict[str, Any]]
    questions: list[dict[str, Any]]


class BatchCancelResult(BaseModel):
    ok: bool
    batch_id: str
    cancelled: bool
    state: str


_MODELS: list[type[BaseModel]] = [
    ErrorResponse, CancelResult, ToolList, ResearchResult, Health, BatchCreated, BatchProgress,
    BatchCancelResult,
]  # fmt: skip


def _json(model: str) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": REF.format(model=model)}}}


def _errors(*codes: ErrorCode) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for code in ("VALIDATION_ERROR", *codes, "UNKNOWN_ERROR"):
        status = str(STATUS_BY_CODE[code])
        answers[status] = {"description": code, "content": _json("ErrorResponse")}
    return answers


# One Server-Sent Event (OpenAPI 3.1 reads a stream's `schema` as that of each event): its
# `data` is one JSON event of the gateway's protocol, numbered by `seq` as its `id` is.
SSE_EVENT = {
    "type": "object",
    "required": ["id", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"type": "string", "const": "message"},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {
                "type": "object",
                "required": ["type", "seq", "run_id"],
                "properties": {"type": {"type": "string"}, "seq": {"type": "integer"},
                               "run_id": {"type": "string"}},
            },
        },
    },
}  # fmt: skip


# With GATEWAY_RATE_LIMIT_PER_MIN: the key's per-minute window, on run starts and their 429.
RATE_HEADERS = {
    name: {"schema": {"type": "integer", "minimum": 0}, "description": text}
    for name, text in (
        ("RateLimit-Limit", "Run starts allowed per minute for this key"),
        ("RateLimit-Remaining", "Starts left in the current window"),
        ("RateLimit-Reset", "Seconds until the window ends"),
    )
}


def _sse(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": {"x-run-id": {"schema": {"type": "string"}}, **RATE_HEADERS},
        "content": {"text/event-stream": {"schema": SSE_EVENT}},
    }


def _run_errors(*codes: ErrorCode) -> dict[str, Any]:
    answers = _errors("AUTHENTICATION_ERROR", "RATE_LIMIT_ERROR", "NETWORK_ERROR", *codes)
    for status, description in (
        ("408", "The body did not arrive in time"),
        ("413", "The body is too large"),
        ("415", "The body is not application/json"),
    ):
        answers[status] = {"description": description, "content": _json("ErrorResponse")}
    retry = {"Retry-After": {"schema": {"type": "integer", "minimum": 1}}}
    answers["429"]["headers"] = retry | RATE_HEADERS
    answers["503"] = {
        "description": "OVERLOADED_ERROR: this process runs GATEWAY_MAX_RUNS_PER_PROCESS runs",
        "headers": retry, "content": _json("ErrorResponse"),
    }  # fmt: skip
    return answers


def _refine_body(body_schema: dict[str, Any], tool_names: tuple[str, ...]) -> None:
    """Add the rules `parse_run_request` enforces beyond the field types: a non-blank
    `query` or a `messages` history, and tool names from this gateway's registry."""
    properties = body_schema["properties"]
    body_schema["anyOf"] = [
        {"required": ["query"], "properties": {"query": {"type": "string", "pattern": r"\S"}}},
        {"required": ["messages"], "properties": {"messages": {"type": "array", "minItems": 1}}},
    ]
    if "tools" in properties and tool_names:
        properties["tools"] = {
            "anyOf": [{"type": "array", "items": {"enum": list(tool_names)}}, {"type": "null"}],
            "description": properties["tools"].get("description", ""),
        }


def _query_params(body_schema: dict[str, Any], tool_names: tuple[str, ...]) -> list[dict[str, Any]]:
    """RunBody's scalar fields (and `tools`, comma-separated) as GET parameters."""
    params = []
    for name, field in body_schema["properties"].items():
        options = [s for s in field.get("anyOf", [field]) if s.get("type") != "null"]
        if name == "tools":
            one = "|".join(re.escape(tool) for tool in tool_names) or "[^,]+"
            pattern = f"^(?:(?:{one})(?:,(?:{one}))*)?$"
            options = [{"type": "string", "pattern": pattern, "description": "Comma-separated"}]
        # objects and arrays (a `$ref` is a model: an object) have no GET form
        if not options or any(s.get("type") in ("array", "object") or "$ref" in s for s in options):
            continue
        schema = options[0] if len(options) == 1 else {"anyOf": options}
        required = name == "query"  # a GET has no `messages` to send instead
        if required:  # the HTTP parser refuses URLs over 8 KB (as text): long queries POST
            schema = {**schema, "pattern": r"\S", "maxLength": GET_QUERY_MAX_CHARS}
        params.append({"name": name, "in": "query", "required": required, "schema": schema})
    return params


def _operations(body_schema: dict[str, Any], tool_names: tuple[str, ...]) -> dict[str, Any]:
    run_id = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}
    body = {"required": True, "content": _json("RunBody")}
    after = [
        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "integer", "minimum": 0}},
        {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0}},
    ]
    run = "A run: its events as Server-Sent Events, each `id: {seq}` then one `data:` line of JSON"
    return {
        "/api/stream": {
            "post": {"summary": "Start a run and stream it", "requestBody": body,
                     "responses": {"200": _sse(run), **_run_errors()}},
            "get": {"summary": "Start a run and stream it (for EventSource)",
                    "parameters": _query_params(body_schema, tool_names),
                    "responses": {"200": _sse(run), **_run_errors()}},
        },
        "/api/stream/{run_id}": {"get": {
            "summary": "Re-attach to a run: its events after a seq, then live",
            "parameters": [run_id, *after],
            "responses": {"200": _sse(run), **_errors("AUTHENTICATION_ERROR", "NOT_FOUND",
                                                      "NETWORK_ERROR")},
        }},
        "/api/research": {"post": {
            "summary": "Run to the end and answer with one JSON result", "requestBody": body,
            "responses": {"200": {"description": "The result", "headers": RATE_HEADERS,
                                  "content": _json("ResearchResult")},
                          **_run_errors("OVERLOADED_ERROR", "TIMEOUT_ERROR")},
        }},
        "/api/runs/{run_id}/cancel": {"post": {
            "summary": "Stop a run (its stream ends with outcome `cancelled`)",
            "parameters": [run_id],
            "responses": {"200": {"description": "Done", "content": _json("CancelResult")},
                          **_errors("AUTHENTICATION_ERROR", "NOT_FOUND", "NETWORK_ERROR")},
        }},
        "/api/files/{file_id}": {"get": {
            "summary": "Download a file a run's code execution made (the run's key only)",
            "parameters": [{"name": "file_id", "in": "path", "required": True,
                            "schema": {"type": "string"}}],
            "responses": {"200": {"description": "The file's bytes, as an attachment",
                                  "headers": {"Content-Disposition": STRING},
                                  "content": {"application/octet-stream": {
                                      "schema": {"type": "string", "format": "binary"}}}},
                          **_errors("AUTHENTICATION_ERROR", "NOT_FOUND", "NETWORK_ERROR")},
        }},
        "/api/tools": {"get": {
            "summary": "The tools the model may call",
            "responses": {"200": {"description": "Tools", "content": _json("ToolList")},
                          **_errors("AUTHENTICATION_ERROR")},
        }},
        "/health": {"get": {"summary": "Health", "security": [], "responses": {
            "200": {"description": "Healthy", "content": _json("Health")},
            "503": {"description": "Degraded", "content": _json("Health")},
        }}},
        "/metrics": {"get": {"summary": "Prometheus metrics", "security": [], "responses": {
            "200": {"description": "Text exposition format",
                    "content": {"text/plain": {"schema": {"type": "string"}}}},
        }}},
        "/openapi.json": {"get": {"summary": "This document", "security": [], "responses": {
            "200": {"description": "OpenAPI 3.1",
                    "content": {"application/json": {"schema": {"type": "object"}}}},
        }}},
    }  # fmt: skip


_JSON_RPC_SCHEMA = {
    "type": "object",
    "required": ["jsonrpc"],
    "properties": {"jsonrpc": {"const": "2.0"}},
}
_JSON_RPC = {"application/json": {"schema": _JSON_RPC_SCHEMA}}
_JSON_RPC_OR_ERROR = {
    "application/json": {
        "schema": {"anyOf": [_JSON_RPC_SCHEMA, {"$ref": REF.format(model="ErrorResponse")}]}
    }
}


def _mcp_paths() -> dict[str, Any]:
    errors = _errors("AUTHENTICATION_ERROR", "PERMISSION_ERROR")
    for status, description in (
        ("408", "The body did not arrive in time"),
        ("413", "The body is too large"),
        ("415", "The body is not application/json"),
    ):
        errors[status] = {"description": description, "content": _json("ErrorResponse")}
    return {"/mcp": {
        "post": {
            "summary": "MCP (Streamable HTTP): one JSON-RPC message (initialize, ping, "
                       "tools/list, tools/call; notifications), Mcp-Session-Id after initialize",
            "requestBody": {"required": True, "content": _JSON_RPC},
            "responses": {**errors,
                          "200": {"description": "The JSON-RPC answer", "content": _JSON_RPC},
                          "202": {"description": "A notification, taken"},
                          "400": {"description": "Not one JSON-RPC message, or no session",
                                  "content": _JSON_RPC_OR_ERROR},
                          "404": {"description": "An unknown or ended session",
                                  "content": _JSON_RPC_OR_ERROR}},
        },
        "delete": {"summary": "End an MCP session", "responses": {
            **_errors("AUTHENTICATION_ERROR", "PERMISSION_ERROR"),
            "204": {"description": "Ended"},
            "404": {"description": "No such session", "content": _json("ErrorResponse")}}},
    }}  # fmt: skip


def _batch_paths() -> dict[str, Any]:
    batch_id = {"name": "batch_id", "in": "path", "required": True, "schema": {"type": "string"}}
    errors = _errors("AUTHENTICATION_ERROR", "NOT_FOUND")
    question = {
        "anyOf": [{"type": "string", "minLength": 1}, {"$ref": REF.format(model="RunBody")}]
    }
    body = {
        "type": "object",
        "required": ["questions"],
        "description": "Questions, plus RunBody's fields (but query, messages, sessionId) "
        "shared by all of them; a question's own body wins",
        "properties": {"questions": {"type": "array", "minItems": 1, "items": question}},
    }
    lines = {"application/x-ndjson": {"schema": {"$ref": REF.format(model="ResearchResult")}}}
    return {
        "/api/batches": {"post": {
            "summary": "Start a batch: each question's tool loop, its model calls sent round "
                       "by round as Message Batches (half price)",
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
            "responses": {"202": {"description": "Started", "content": _json("BatchCreated")},
                          **_run_errors()},
        }},
        "/api/batches/{batch_id}": {"get": {
            "summary": "A batch's progress", "parameters": [batch_id],
            "responses": {"200": {"description": "Progress", "content": _json("BatchProgress")},
                          **errors},
        }},
        "/api/batches/{batch_id}/events": {"get": {
            "summary": "A batch's events (batch_status, question, batch_complete) as SSE",
            "parameters": [batch_id],
            "responses": {"200": {"description": "Events",
                                  "content": {"text/event-stream": {"schema": SSE_EVENT}}},
                          **errors},
        }},
        "/api/batches/{batch_id}/results": {"get": {
            "summary": "One /api/research result per question, in order, as JSON Lines "
                       "(each with its `index`)", "parameters": [batch_id],
            "responses": {"200": {"description": "Results", "content": lines},
                          "409": {"description": "The batch has not ended",
                                  "content": _json("ErrorResponse")}, **errors},
        }},
        "/api/batches/{batch_id}/cancel": {"post": {
            "summary": "Cancel a batch and its Message Batches in flight",
            "parameters": [batch_id],
            "responses": {"200": {"description": "Done", "content": _json("BatchCancelResult")},
                          **errors},
        }},
    }  # fmt: skip


def _key_paths(admin: bool) -> dict[str, Any]:
    not_found = {"description": "No such key", "content": _json("ErrorResponse")}
    return openapi_keys.key_paths(admin, _errors("AUTHENTICATION_ERROR"), not_found)


@functools.cache
def document(
    keys_required: bool,
    tool_names: tuple[str, ...] = (),
    *,
    mcp_served: bool = True,
    admin: bool = False,
) -> dict[str, Any]:
    """The whole document; `keys_required` adds the bearer scheme to /api/*, `admin` the
    admin routes."""
    pairs = [(m, "serialization") for m in _MODELS] + [(RunBody, "validation")]
    pairs += openapi_keys.MODELS
    named, defs = models_json_schema(pairs, ref_template=REF)  # type: ignore[arg-type]
    schemas = defs.get("$defs", {})
    body_schema = named[(RunBody, "validation")]
    if "$ref" in body_schema:
        body_schema = schemas[body_schema["$ref"].rsplit("/", 1)[-1]]
    _refine_body(body_schema, tool_names)
    components: dict[str, Any] = {"schemas": schemas}
    doc: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "research-gateway", "version": __version__,
                 "description": "Claude's tool-use loop over SEC EDGAR and the web, as SSE."},
        "paths": _operations(body_schema, tool_names) | _batch_paths()
        | (_mcp_paths() if mcp_served else {}) | _key_paths(admin),
        "components": components,
    }  # fmt: skip
    _guarded(doc["paths"])
    if keys_required:
        components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        doc["security"] = [{"bearer": []}]
    return doc


def _guarded(paths: dict[str, Any]) -> None:
    """Every route may answer the guard's 403 (guard.py): a foreign Origin, Host or site."""
    refused = {
        "description": "PERMISSION_ERROR: a foreign Origin, Host or site (details.reason)",
        "content": _json("ErrorResponse"),
    }
    for operations in paths.values():
        for operation in operations.values():
            operation["responses"].setdefault("403", refused)


async def serve(request: web.Request) -> web.Response:
    names = tuple(sorted(request.app[keys.TOOLSET].registry.names()))
    served = request.app[keys.SETTINGS].gateway_mcp_serve
    admin = bool(request.app[keys.SETTINGS].gateway_admin_key)
    doc = document(not request.app[keys.TENANTS].open, names, mcp_served=served, admin=admin)
    return web.json_response(doc)
