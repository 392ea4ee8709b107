"""A fake OpenAI Chat Completions API: an aiohttp app that writes the real streaming
chunks (`data: {chunk}` lines, tool-call fragments by `index` with `id` and `name` only
on the first, a usage chunk with no choices when `include_usage` is set, `data: [DONE]`),
records every request, validates it as the real API would (`openai_rules`), and injects
faults (an HTTP error with `retry-after`, an `error` object mid-stream, a cut connection,
a stream with no `finish_reason`).

Script it with `Reply` objects, one per expected model call, in order.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.openai_rules import Invalid, validate

MODEL = "gpt-4.1-2025-04-14"


@dataclass
class Call:
    """One tool call; its arguments are streamed in `fragment`-character pieces."""

    name: str
    arguments: dict[str, Any] | None = None
    id: str = ""
    fragment: int = 12
    raw_arguments: str | None = None  # sent as-is instead of `arguments` (e.g. invalid JSON)


@dataclass
class Reply:
    """One model call's answer."""

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    reasoning: str = ""  # streamed before the text, as compatible servers do
    reasoning_field: str = "reasoning_content"  # DeepSeek's and vLLM's; OpenRouter: reasoning
    chunk: int = 8
    finish_reason: str | None = None  # default: tool_calls if any Call, else stop
    interleave: bool = False  # the fragments of parallel calls take turns
    prompt_tokens: int = 20
    completion_tokens: int = 7
    cached_tokens: int = 0
    status: int | None = None  # HTTP error instead of a stream
    error_type: str = "server_error"
    error_code: str | int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    error_after: int | None = None  # an `error` object after N chunks
    cut_after: int | None = None  # close the connection after N chunks
    stall_after: int | None = None  # stop sending (connection open) after N chunks
    no_finish: bool = False  # no finish_reason (and no usage) before [DONE]
    model: str = MODEL


class FakeOpenAI:
    """Records `requests` (JSON bodies) and `headers`; `rejected` holds the 400 bodies of
    requests that failed validation; `disconnects` counts streams the client closed
    before their end."""

    def __init__(
        self, replies: list[Reply] | None = None, api_key: str = "sk-fake",
        context_window: int | None = None,
    ) -> None:  # fmt: skip
        self.replies = list(replies or [])
        self.context_window = context_window
        """Refuse a prompt over this many tokens (about four characters each), as the API
        does (`context_length_exceeded`)."""
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.rejected: list[dict[str, Any]] = []
        self.disconnects = 0
        self.disconnected = asyncio.Event()
        self._calls = 0

    def add(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        return app

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "invalid_request_error", "Incorrect API key provided.")
        body = await request.json()
        self.requests.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        try:
            validate(body)
        except Invalid as exc:
            self.rejected.append(exc.body)
            return web.json_response(exc.body, status=400)
        size = len(json.dumps(body.get("messages"))) // 4
        if self.context_window is not None and size > self.context_window:
            error = {"error": {
                "message": f"This model's maximum context length is {self.context_window} "
                           f"tokens. However, your messages resulted in {size} tokens.",
                "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded",
            }}  # fmt: skip
            self.rejected.append(error)
            return web.json_response(error, status=400)
        if not self.replies:
            return _error(500, "server_error", "fake: no scripted reply left")
        reply = self.replies.pop(0)
        if reply.status is not None:
            return _error(reply.status, reply.error_type, "scripted failure", reply, reply.headers)
        if body.get("stream") is not True:
            return _error(400, "invalid_request_error", "fake: only streaming is served")
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            await self._stream(request, response, self.chunks(reply, include_usage=usage), reply)
        except (ConnectionResetError, asyncio.CancelledError):
            self.disconnects += 1
            self.disconnected.set()
            raise
        return response

    async def _stream(
        self,
        request: web.Request,
        response: web.StreamResponse,
        chunks: list[dict[str, Any]],
        reply: Reply,
    ) -> None:
        for n, chunk in enumerate(chunks):
            if n == reply.error_after:
                error = {"message": "boom", "type": reply.error_type, "code": reply.error_code}
                await response.write(_sse({"error": error}))
                return
            if n == reply.cut_after:
                assert request.transport is not None
                request.transport.close()
                return
            if n == reply.stall_after:
                await asyncio.sleep(3600)
            await response.write(_sse(chunk))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()

    def body(self, reply: Reply, *, include_usage: bool = True) -> bytes:
        """The whole response body the real API streams for `reply`."""
        chunks = self.chunks(reply, include_usage=include_usage)
        return b"".join(_sse(chunk) for chunk in chunks) + b"data: [DONE]\n\n"

    def chunks(self, reply: Reply, *, include_usage: bool) -> list[dict[str, Any]]:
        """The chunk sequence the real API streams for `reply`."""
        base: dict[str, Any] = {
            "id": f"chatcmpl-fake{len(self.requests):04d}",
            "object": "chat.completion.chunk",
            "created": 1_760_000_000,
            "model": reply.model,
            "service_tier": "default",
            "system_fingerprint": "fp_fake",
        }
        if include_usage:
            base["usage"] = None  # every chunk but the last says so

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**base, "choices": [choice]}

        out = [chunk({"role": "assistant", "content": "", "refusal": None})]
        field = reply.reasoning_field
        out += [chunk({field: piece}) for piece in _pieces(reply.reasoning, reply.chunk)]
        out += [chunk({"content": piece}) for piece in _pieces(reply.text, reply.chunk)]
        out += [chunk({"tool_calls": [f]}) for f in self._fragments(reply)]
        if reply.no_finish:
            return out
        default = "tool_calls" if reply.calls else "stop"
        out.append(chunk({}, reply.finish_reason or default))
        if include_usage:
            out.append({**base, "choices": [], "usage": _usage(reply)})
        return out

    def _fragments(self, reply: Reply) -> list[dict[str, Any]]:
        per_call: list[list[dict[str, Any]]] = []
        for index, call in enumerate(reply.calls):
            if not call.id:
                self._calls += 1
                call.id = f"call_{self._calls:024d}"
            raw = call.raw_arguments
            if raw is None:
                raw = json.dumps(call.arguments or {}, separators=(",", ":"))
            function = {"name": call.name, "arguments": ""}
            fragments = [{"index": index, "id": call.id, "type": "function", "function": function}]
            fragments += [
                {"index": index, "function": {"arguments": piece}}
                for piece in _pieces(raw, call.fragment)
            ]
            per_call.append(fragments)
        if not reply.interleave:
            return [f for fragments in per_call for f in fragments]
        out: list[dict[str, Any]] = []
        for step in range(max((len(f) for f in per_call), default=0)):
            out += [fragments[step] for fragments in per_call if step < len(fragments)]
        return out


def _usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] if text else []


def _sse(chunk: dict[str, Any]) -> bytes:
    # Compact and UTF-8, as the real API writes it.
    return (
        b"data: " + json.dumps(chunk, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"
    )


def _error(
    status: int,
    error_type: str,
    message: str,
    reply: Reply | None = None,
    headers: dict[str, str] | None = None,
) -> web.Response:
    code = reply.error_code if reply is not None else None
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    return web.json_response(body, status=status, headers=headers)
