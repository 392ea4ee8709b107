"""Request bodies read and validated (every field checked before a run starts or an SSE
header is sent), and JSON answers written."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import orjson
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.errors import ValidationFailed
from gateway.history import check_history
from gateway.http import keys
from gateway.providers.anthropic.code_execution import skills_problem
from gateway.runs.run import ANONYMOUS, RunRequest
from gateway.settings import Settings

MIN_THINKING_BUDGET = 1_024
MAX_JSON_DEPTH = 64
"""Deeper than any history needs, and far below where saving it would fail (orjson
refuses to write JSON nested deeper than 254)."""
Effort = Literal["low", "medium", "high", "xhigh", "max"]


class OutputFormat(BaseModel):
    """Ask for the final answer as JSON valid against a schema."""

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    type: Literal["json_schema"]
    json_schema: dict[str, Any] = Field(alias="schema")
    """A JSON schema (an object) the answer must satisfy."""

    def to_api(self) -> dict[str, Any]:
        return {"type": "json_schema", "schema": self.json_schema}


class RunBody(BaseModel):
    """The body of POST /api/stream and /api/research (GET takes the scalars as params)."""

    model_config = ConfigDict(extra="ignore", strict=True)

    query: str | None = Field(None, max_length=200_000)
    """The user's question."""
    messages: list[dict[str, Any]] | None = Field(None, max_length=1_000)
    """A Messages API history instead of `query`."""
    sessionId: str | None = Field(None, pattern=r"^[A-Za-z0-9_.:-]{1,128}$")
    """Continue an earlier conversation."""
    max_turns: int | None = Field(None, ge=1, le=100)
    """Tool rounds allowed; the last round's tools run, then one call answers without tools."""
    tools: list[str] | None = Field(None, max_length=100)
    """Allow-list of tool names for this run."""
    thinking: bool | int | Literal["adaptive", "off", "on"] | None = None
    """"adaptive", "off", true (the model's own form), or a budget in tokens (>= 1024)."""
    effort: Effort | None = None
    """How much effort the model spends, where the model supports effort."""
    output_format: OutputFormat | None = None
    """The final answer as JSON valid against `schema`, where the model supports it."""
    parallel_tools: bool = True
    """False: the model asks for at most one tool per turn (sequential tools)."""
    code_execution: bool | None = None
    """True: the model may run code in a container (the Messages API's code execution
    tool), where the operator allows it and the model has the tool. Skills imply it."""
    skills: list[str] | None = None
    """Skills loaded into the container: `xlsx`, `docx`, `pptx`, `pdf` (Anthropic's) or a
    custom skill's id (`skill_...`); at most 8, no duplicates."""


def json_response(data: object, status: int = 200) -> web.Response:
    """A JSON answer (errors too: the middleware answers with it)."""
    return web.Response(body=orjson.dumps(data), status=status, content_type="application/json")


async def read_json_body(request: web.Request) -> Any:
    if request.content_type != "application/json":
        # Also what keeps a page on another origin from posting without a preflight.
        raise ValidationFailed("Send the body as Content-Type: application/json", status=415)
    raw = await read_body(request)
    if not raw.strip():
        raise ValidationFailed("The request body is empty; send a JSON object")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValidationFailed(f"The request body is not valid JSON: {exc}") from exc
    # Nesting needs a bracket a level: a body with few of them needs no walk.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and too_deep(data, MAX_JSON_DEPTH):
        raise ValidationFailed(f"The request body nests deeper than {MAX_JSON_DEPTH} levels")
    return data


async def read_body(request: web.Request) -> bytes:
    """The whole body within the read deadline: a client that withholds its last byte
    holds a connection and a buffer until then, not for good."""
    if request.content.is_eof():  # all of it is here (most bodies come with their head):
        return await _read_whole(request)  # reading waits for nothing: no deadline to set
    timeout_s = request.app[keys.SETTINGS].gateway_body_timeout_s
    try:
        async with asyncio.timeout(timeout_s):
            return await _read_whole(request)
    except TimeoutError:
        raise ValidationFailed(
            f"The request body did not arrive within {timeout_s:g} s", status=408
        ) from None


async def _read_whole(request: web.Request) -> bytes:
    """The body, as `request.read()` reads it (413 over `client_max_size`), without the
    copy aiohttp keeps on the request: a stream's request lives as long as the stream."""
    limit, content = request.client_max_size, request.content
    if limit:
        content.set_read_chunk_size(limit)
    body = bytearray()
    while chunk := await content.readany():
        body += chunk
        if limit and len(body) > limit:
            raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=len(body))
    return bytes(body)


def too_deep(value: Any, limit: int) -> bool:
    """Whether JSON nests deeper than `limit` (iteratively: the check must not recurse
    into what it guards against; serialising it later would)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return False


def body_from_query(params: Any) -> dict[str, Any]:
    """GET parameters as the JSON body would carry them."""
    body: dict[str, Any] = {}
    for name in ("query", "sessionId"):
        if name in params:
            body[name] = params[name]
    if "max_turns" in params:
        body["max_turns"] = _int_param("max_turns", params["max_turns"])
    for listed in ("tools", "skills"):  # comma-separated
        if listed in params:
            body[listed] = [t for t in params[listed].split(",") if t]
    if "thinking" in params:
        body["thinking"] = _thinking_param(params["thinking"].lower())
    if "effort" in params:
        body["effort"] = params["effort"]
    for flag in ("parallel_tools", "code_execution"):
        if flag in params:
            body[flag] = _bool_param(flag, params[flag])
    return body


def _thinking_param(value: str) -> bool | str | int:
    if value in ("true", "false"):
        return value == "true"
    if value in ("adaptive", "off", "on"):
        return value
    return _int_param("thinking", value)


def _bool_param(name: str, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ValidationFailed(f"{name} must be true or false", {"field": name})
    return value.lower() == "true"


def _int_param(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValidationFailed(f"{name} must be an integer", {"field": name}) from None


def parse_run_request(
    data: Any,
    settings: Settings,
    tool_names: list[str],
    request_id: str,
    caller: str = ANONYMOUS,
) -> RunRequest:
    if not isinstance(data, dict):
        raise ValidationFailed("The request body must be a JSON object")
    try:
        body = RunBody.model_validate(data)
    except ValidationError as exc:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
            for e in exc.errors(include_url=False)
        ]
        summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        raise ValidationFailed(f"Invalid request: {summary}", {"errors": errors}) from None
    return RunRequest(
        messages=_messages(body),
        session_id=body.sessionId,
        replace_history=body.messages is not None,
        max_turns=body.max_turns,
        tools=_tools(body, tool_names),
        thinking=_thinking(body),
        effort=body.effort,
        output_format=body.output_format.to_api() if body.output_format else None,
        parallel_tools=body.parallel_tools,
        **_code_execution(body),
        request_id=request_id,
        caller=caller,
    )


def _messages(body: RunBody) -> list[dict[str, Any]]:
    if body.messages is not None:
        check_history(body.messages)
        return body.messages
    if body.query is None or not body.query.strip():
        raise ValidationFailed("query is required (or messages)", {"field": "query"})
    return [{"role": "user", "content": body.query}]


def _tools(body: RunBody, tool_names: list[str]) -> frozenset[str] | None:
    if body.tools is None:
        return None
    unknown = sorted(set(body.tools) - set(tool_names))
    if unknown:
        raise ValidationFailed(
            f"Unknown tool names: {', '.join(unknown)}",
            {"field": "tools", "unknown": unknown, "available": tool_names},
        )
    return frozenset(body.tools)


def _code_execution(body: RunBody) -> dict[str, Any]:
    """`code_execution` and `skills` as the run takes them: skills turn code execution on
    (they run in its container); asking for skills with `code_execution: false` is a 400."""
    if not body.skills and not body.code_execution:  # most runs: nothing to check
        return {"code_execution": False, "skills": ()}
    skills = tuple(body.skills or ())
    problem = skills_problem(skills)
    if problem is not None:
        raise ValidationFailed(f"skills: {problem}", {"field": "skills"})
    if skills and body.code_execution is False:
        raise ValidationFailed(
            "skills run in the code execution container: drop code_execution: false",
            {"field": "skills"},
        )
    return {"code_execution": bool(body.code_execution) or bool(skills), "skills": skills}


def _thinking(body: RunBody) -> str | int | None:
    """The request's thinking choice; what the model can take is checked against its record."""
    thinking = body.thinking
    if thinking is None or isinstance(thinking, str):
        return thinking
    if isinstance(thinking, bool):
        return "on" if thinking else "off"
    if thinking < MIN_THINKING_BUDGET:
        raise ValidationFailed(
            f"thinking must be at least {MIN_THINKING_BUDGET} tokens", {"field": "thinking"}
        )
    return thinking
