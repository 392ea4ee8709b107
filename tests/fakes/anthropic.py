"""A fake Anthropic Messages API: an aiohttp app that writes the real SSE event sequence,
records every request, and injects faults (an HTTP error before the stream, an `error`
event mid-stream, a cut connection, a stall, a stream with no `message_stop`).

Like today's API it serves the Models API (`GET /v1/models/{id}`), answers 400 for a
request the real API refuses (the SDK's request type, the documented rules:
tests/fakes/messages_rules.py) and for what a model cannot take (tests/fakes/models.py),
and with `count_tokens=True` counts input and prompt-cache tokens from the request itself
(tests/fakes/prompt_cache.py). `rejected` holds the 400s' messages.

Script it with `Reply` objects, one per expected model call, in order.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import context, current_models, messages_rules
from tests.fakes.code_execution import Containers, FakeFiles, MadeFile
from tests.fakes.models import default_catalogue, request_problem
from tests.fakes.prompt_cache import PromptCache


@dataclass
class Text:
    text: str
    chunk: int = 8
    citations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ToolUse:
    name: str
    input: dict[str, Any] | None = None
    id: str = ""
    fragment: int = 20
    raw_json: str | None = None  # sent as-is instead of `input` (e.g. invalid JSON)


@dataclass
class Thinking:
    thinking: str
    signature: str = "sig-" + "A" * 40
    chunk: int = 16
    progress: bool = False
    """A progress update (a note before a tool call), not reasoning: its text comes back
    at displays `updates` and `between_tools` too (tests/fakes/current_models.py)."""


@dataclass
class RedactedThinking:
    data: str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


@dataclass
class ServerToolUse:
    """A tool the API runs itself (web search, web fetch): its call, then its result."""

    name: str
    input: dict[str, Any]
    result: Any  # the result block's `content`: a list of results or an error object
    id: str = "srvtoolu_01fake"
    fragment: int = 12


@dataclass
class CodeExecution:
    """Code the API runs in the container (`bash_code_execution`): its call, then its
    result, naming the files it made (served by the fake's Files API from then on)."""

    command: str
    files: list[MadeFile] = field(default_factory=list)
    stdout: str = ""
    return_code: int = 0
    id: str = ""
    fragment: int = 12


Block = Text | ToolUse | Thinking | RedactedThinking | ServerToolUse | CodeExecution


@dataclass
class Reply:
    """One model call's answer."""

    blocks: list[Block] = field(default_factory=list)
    stop_reason: str | None = None  # default: tool_use if any ToolUse, else end_turn
    input_tokens: int = 10
    output_tokens: int = 5
    cache_read: int = 0
    cache_creation: int = 0
    status: int | None = None  # HTTP error instead of a stream
    error_type: str = "overloaded_error"
    headers: dict[str, str] = field(default_factory=dict)
    error_after: int | None = None  # an `error` event after N events
    cut_after: int | None = None  # close the connection after N events
    stall_after: int | None = None  # stop sending (connection open) after N events
    garbage_after: int | None = None  # a `data:` line that is not JSON after N events
    no_stop: bool = False  # end the body without message_stop
    delay_s: float = 0.0  # pause before each event
    one_write: bool = False  # the whole body in one write, so the gateway reads it at once
    model: str | None = None  # default: the model the request asked for, as the API answers
    usage_extra: dict[str, Any] = field(default_factory=dict)
    """More of `message_start`'s usage (`server_tool_use`, `cache_creation`, `service_tier`);
    `server_tool_use` goes in `message_delta`'s usage too, as the API sends it."""
    # Set by the fake from the request's context management (tests/fakes/context.py):
    compaction: str | None = None
    compaction_usage: dict[str, int] = field(default_factory=dict)
    applied_edits: list[dict[str, Any]] | None = None
    container: dict[str, Any] | None = None
    """Set by the fake for a request with the code execution tool (code_execution.py)."""
    stop_details: dict[str, Any] | None = None
    """`message_delta`'s `delta.stop_details` (a refusal's category)."""


class _HeldWrites:
    """A response whose writes are held and sent as one."""

    def __init__(self, response: web.StreamResponse) -> None:
        self._response = response
        self._held: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self._held.append(data)

    async def flush(self) -> None:
        if self._held:
            await self._response.write(b"".join(self._held))
            self._held = []

    async def write_eof(self) -> None:
        await self.flush()
        await self._response.write_eof()


_request_ids = itertools.count(1)

Refused = tuple[int, str, str]
"""An HTTP status, an error type and its message."""


def betas_of(header: str) -> set[str]:
    """The betas an `anthropic-beta` header names."""
    return {b.strip() for b in header.split(",") if b.strip()}


def _tool_id(n: int) -> str:
    return f"toolu_{n:024d}"


class FakeAnthropic:
    """Records `requests` (JSON bodies), `headers`; `disconnects` counts streams the
    client closed before their end."""

    def __init__(self, replies: list[Reply] | None = None, *, count_tokens: bool = False) -> None:
        self.replies = list(replies or [])
        self.models = default_catalogue()
        self.model_lookups: list[str] = []
        self.models_status: int | None = None  # answer every model lookup with this error
        self.cache = PromptCache() if count_tokens else None
        self.usages: list[dict[str, int]] = []
        self.applied: list[context.Applied] = []
        """What the model saw of each accepted request (compacted, edited)."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.rejected: list[str] = []
        self.dropped_blocks: list[list[str]] = []
        """Per accepted request, the thinking blocks `drop_block` removed (their paths)."""
        self.disconnects = 0
        self.finished = 0
        self.request_seen = asyncio.Event()
        self.disconnected = asyncio.Event()
        self._tool_counter = 0
        self.containers = Containers()
        self.files = FakeFiles()

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def app(self, client_max_size: int = 1024**2) -> web.Application:
        app = web.Application(client_max_size=client_max_size)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models/{model_id}", self._model)
        self.files.add_routes(app)
        return app

    async def _model(self, request: web.Request) -> web.Response:
        model_id = request.match_info["model_id"]
        self.model_lookups.append(model_id)
        if self.models_status is not None:
            return _error(self.models_status, "api_error", "fake: models unavailable")
        if model_id not in self.models:
            return _error(404, "not_found_error", f"model: {model_id}")
        return web.json_response(self.models[model_id])

    def refusal(self, body: dict[str, Any], betas: set[str]) -> Refused | context.Applied:
        """The 4xx the real API gives before any stream (status, error type, message), or
        what the model will see."""
        applied: context.Applied | str | None = None
        problem = messages_rules.request_problem(body, beta=bool(betas))
        if problem is None:
            info = self.models.get(str(body.get("model")))
            if info is None or info["lifecycle"] == "retired":
                return 404, "not_found_error", f"model: {body.get('model')}"
            problem = (
                request_problem(info, body)
                or current_models.problem(body, betas)
                or self.containers.problem(body, info)
                or context.problem(info, body, betas)
            )
            seen = copy.deepcopy(body)  # what the model sees, bound blocks dropped
            if problem is None:
                problem, dropped = current_models.check_bindings(seen)
                self.dropped_blocks.append(dropped)
            if problem is None:
                applied = context.apply(seen, info["max_input_tokens"])
                problem = applied if isinstance(applied, str) else None
        if problem is None and self.cache is not None:
            assert isinstance(applied, context.Applied)
            try:
                self.usages.append(self.cache.account(applied.body))
            except ValueError as exc:
                problem = str(exc)
        if problem is not None or not isinstance(applied, context.Applied):
            self.rejected.append(problem or "")
            return 400, "invalid_request_error", problem or ""
        self.applied.append(applied)
        return applied

    def ready(self, reply: Reply, applied: context.Applied) -> Reply:
        """`reply` as the model gives it for the accepted request: compacted or edited as
        the request asked, its token counts counted when the fake counts them."""
        reply.compaction = applied.compaction
        reply.compaction_usage = applied.compaction_usage
        reply.applied_edits = applied.applied_edits
        reply.container = self.containers.open(applied.body)
        if self.cache is not None:
            counted = self.usages[-1]
            reply.input_tokens = counted["input_tokens"]
            reply.cache_read = counted["cache_read_input_tokens"]
            reply.cache_creation = counted["cache_creation_input_tokens"]
        return reply

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        self.request_seen.set()
        header = self.headers[-1].get("anthropic-beta", "")
        applied = self.refusal(body, betas_of(header))
        if isinstance(applied, tuple):
            return _error(*applied)
        if not self.replies:
            return _error(500, "api_error", "fake: no scripted reply left")
        reply = self.ready(self.replies.pop(0), applied)
        if reply.status is not None:
            return _error(reply.status, reply.error_type, "scripted failure", reply.headers)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        writer = _HeldWrites(response) if reply.one_write else response
        try:
            await self._stream(request, writer, reply)
            if isinstance(writer, _HeldWrites):
                await writer.flush()
        except (ConnectionResetError, asyncio.CancelledError):
            self.disconnects += 1
            self.disconnected.set()
            raise
        return response

    async def _stream(
        self, request: web.Request, response: web.StreamResponse | _HeldWrites, reply: Reply
    ) -> None:
        for n, event in enumerate(self.events(reply)):
            if n == reply.error_after:
                error = {"type": "error", "error": {"type": reply.error_type, "message": "boom"}}
                await response.write(_sse(error))
                return
            if n == reply.cut_after:
                assert request.transport is not None
                request.transport.close()
                return
            if n == reply.stall_after:
                await asyncio.sleep(3600)
            if n == reply.garbage_after:
                await response.write(b"event: content_block_delta\ndata: {not json\n\n")
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            if reply.no_stop and event["type"] == "message_stop":
                break
            await response.write(_sse(event))
        await response.write_eof()
        self.finished += 1

    def events(self, reply: Reply) -> list[dict[str, Any]]:
        """The Messages API event sequence for `reply`."""
        has_tools = any(isinstance(b, ToolUse) for b in reply.blocks)
        stop = reply.stop_reason or ("tool_use" if has_tools else "end_turn")
        usage: dict[str, Any] = {
            "input_tokens": reply.input_tokens,
            "output_tokens": 1,
            "cache_read_input_tokens": reply.cache_read,
            "cache_creation_input_tokens": reply.cache_creation,
            **reply.usage_extra,
        }
        out: list[dict[str, Any]] = [
            {"type": "message_start", "message": {
                "id": f"msg_fake{len(self.requests):04d}", "type": "message",
                "role": "assistant", "model": reply.model or self._asked_model(), "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": usage}},
            {"type": "ping"},
        ]  # fmt: skip
        index = 0
        if reply.compaction is not None:
            out += [
                {"type": "content_block_start", "index": 0,
                 "content_block": {"type": "compaction", "content": None}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "compaction_delta", "content": reply.compaction}},
                {"type": "content_block_stop", "index": 0},
            ]  # fmt: skip
            index = 1
        for block in self._as_displayed(reply.blocks):
            if isinstance(block, ServerToolUse):
                out.extend(_server_tool_blocks(index, block))
                index += 2
            elif isinstance(block, CodeExecution):
                out.extend(self._code_execution_blocks(index, block))
                index += 2
            else:
                out.extend(self._block(index, block))
                index += 1
        delta: dict[str, Any] = {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": reply.output_tokens, **{
                k: v for k, v in reply.usage_extra.items() if k == "server_tool_use"
            }},
        }  # fmt: skip
        if reply.compaction_usage:
            delta["usage"]["iterations"] = [
                {"type": "compaction", **reply.compaction_usage},
                {"type": "message", **usage, "output_tokens": reply.output_tokens},
            ]
        if reply.applied_edits is not None:
            delta["context_management"] = {"applied_edits": reply.applied_edits}
        if reply.container is not None:
            delta["delta"]["container"] = reply.container
        if reply.stop_details is not None:
            delta["delta"]["stop_details"] = reply.stop_details
        out.append(delta)
        out.append({"type": "message_stop"})
        return out

    def _code_execution_blocks(self, index: int, block: CodeExecution) -> list[dict[str, Any]]:
        if not block.id:
            self._tool_counter += 1
            block.id = f"srvtoolu_{self._tool_counter:024d}"
        outputs = [
            {"type": "bash_code_execution_output", "file_id": self.files.make(made)}
            for made in block.files
        ]
        result = {"type": "bash_code_execution_result", "stdout": block.stdout, "stderr": "",
                  "return_code": block.return_code, "content": outputs}  # fmt: skip
        call = ServerToolUse(
            "bash_code_execution", {"command": block.command}, result, block.id, block.fragment
        )
        return _server_tool_blocks(index, call)

    def _as_displayed(self, blocks: list[Block]) -> list[Block]:
        """The blocks as the request's `thinking.display` returns them: text only where
        that display shows it, signatures bound where the model binds
        (current_models.py)."""
        if not self.requests:
            return blocks
        body = self.requests[-1]
        display = current_models.display_of(body)
        bound = body.get("model") in current_models.BINDING_MODELS
        shown: list[Block] = []
        for block in blocks:
            if isinstance(block, Thinking):
                if display == "between_tools" and not block.progress:
                    continue  # thinking off: no reasoning at all, only the notes
                visible = current_models.shown(display, progress=block.progress)
                signature = current_models.bound_signature(body) if bound else block.signature
                block = Thinking(
                    block.thinking if visible else "", signature, block.chunk, block.progress
                )
            shown.append(block)
        return shown

    def _asked_model(self) -> str:
        return str(self.requests[-1].get("model")) if self.requests else "claude-test-model"

    def _block(
        self, index: int, block: Text | ToolUse | Thinking | RedactedThinking
    ) -> list[dict[str, Any]]:
        if isinstance(block, Text):
            start: dict[str, Any] = {"type": "text", "text": ""}
            if block.citations:
                start["citations"] = []
            deltas: list[dict[str, Any]] = [
                {"type": "text_delta", "text": p} for p in _pieces(block.text, block.chunk)
            ]
            deltas += [{"type": "citations_delta", "citation": c} for c in block.citations]
        elif isinstance(block, RedactedThinking):
            start, deltas = {"type": "redacted_thinking", "data": block.data}, []
        elif isinstance(block, Thinking):
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p}
                for p in _pieces(block.thinking, block.chunk)
            ]
            deltas.append({"type": "signature_delta", "signature": block.signature})
        else:
            if not block.id:
                self._tool_counter += 1
                block.id = _tool_id(self._tool_counter)
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            raw = block.raw_json if block.raw_json is not None else json.dumps(block.input or {})
            deltas = [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(raw, block.fragment)
            ]
        events: list[dict[str, Any]] = [
            {"type": "content_block_start", "index": index, "content_block": start}
        ]
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
        return events


def _server_tool_blocks(index: int, block: ServerToolUse) -> list[dict[str, Any]]:
    raw = json.dumps(block.input)
    start = {"type": "server_tool_use", "id": block.id, "name": block.name, "input": {}}
    result_type = f"{block.name}_tool_result"
    result = {"type": result_type, "tool_use_id": block.id, "content": block.result}
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *[
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in _pieces(raw, block.fragment)
        ],
        {"type": "content_block_stop", "index": index},
        {"type": "content_block_start", "index": index + 1, "content_block": result},
        {"type": "content_block_stop", "index": index + 1},
    ]  # fmt: skip


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


def _sse(event: dict[str, Any]) -> bytes:
    # Compact and UTF-8, as the real API writes it.
    data = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    return f"event: {event['type']}\ndata: {data}\n\n".encode()


def _error(
    status: int, error_type: str, message: str, headers: dict[str, str] | None = None
) -> web.Response:
    request_id = f"req_fake{next(_request_ids):020d}"
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    body["request_id"] = request_id  # as the API answers: in the body and as a header
    headers = {"request-id": request_id, **(headers or {})}
    return web.json_response(body, status=status, headers=headers)
