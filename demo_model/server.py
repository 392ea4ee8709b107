"""The demo upstream over HTTP: `POST /v1/messages`, streaming or not, like the real API,
`GET /v1/models/{model_id}` describing the one model it is, `demo`, and the Message
Batches API (demo_model/batches.py), each batch request answered as `/v1/messages` would.

Validation is a small subset of the real API's: a JSON object with `model`, a positive
integer `max_tokens` and a non-empty `messages` list; anything else is a 400
`invalid_request_error`, as is asking for structured outputs (`output_config.format`),
which the demo does not have. Today's request forms are accepted: `system` as text blocks,
`cache_control` on blocks and tools (no cache here: nothing to do), `thinking` of type
`enabled` or `adaptive` (a thinking block is streamed) or `disabled`, `output_config`
with an `effort`. Streams are paced (a few milliseconds per delta) so a browser shows
them arriving; tests pass `delay_s=0`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
from aiohttp import web

from demo_model.batch_store import BatchRequest, BatchStore, Processor, errored
from demo_model.batches import MAX_BODY_BYTES, install
from demo_model.card import DEMO_MODEL, model_card, not_found
from demo_model.companies import CompanyIndex, load_index
from demo_model.conversation import read_request
from demo_model.planner import respond
from demo_model.reply import Reply, Say, Think, block_id
from demo_model.wire import message, sse, stream_events

__all__ = ["PACING_S", "create_demo_app"]

log = logging.getLogger(__name__)

PACING_S = 0.015
"""Pause before each content delta of a stream, so a browser shows it arriving."""

_INDEX: web.AppKey[Knowledge] = web.AppKey("demo_company_index")
_DELAY = web.AppKey("demo_delay_s", float)


class Knowledge:
    """The company index, loaded on first use (the ticker map takes a moment to read)."""

    def __init__(self) -> None:
        self._index: CompanyIndex | None = None
        self._lock = asyncio.Lock()

    async def index(self) -> CompanyIndex:
        async with self._lock:
            if self._index is None:
                self._index = await load_index()
            return self._index


def create_demo_app(
    *, delay_s: float | None = None, batch_processing_s: float = 0.0
) -> web.Application:
    """The demo model as an aiohttp app serving `POST /v1/messages` and the Message Batches
    API (demo_model/batches.py); a batch waits `batch_processing_s` before it is answered."""
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[_INDEX] = Knowledge()
    app[_DELAY] = PACING_S if delay_s is None else delay_s
    app.router.add_post("/v1/messages", _messages)
    app.router.add_get("/v1/models/{model_id}", _model)
    processor = _batch_processor(app[_INDEX])
    install(app, BatchStore(processor, processing_s=batch_processing_s))
    return app


def _batch_processor(knowledge: Knowledge) -> Processor:
    """A batch's request answered as `POST /v1/messages` (not streaming) would answer it."""

    async def process(request: BatchRequest) -> dict[str, Any]:
        try:
            reply = await answer(knowledge, request.params)
        except Refusal as refusal:
            return errored(refusal.kind, refusal.message)
        answered = message(request.params, reply, DEMO_MODEL)
        answered["usage"]["service_tier"] = "batch"  # as the API marks a batch's usage
        return {"type": "succeeded", "message": answered}

    return process


async def _model(request: web.Request) -> web.Response:
    model_id = request.match_info["model_id"]
    if model_id != DEMO_MODEL:
        return web.json_response(not_found(model_id), status=404, dumps=_dumps)
    return web.json_response(model_card(), dumps=_dumps)


class Refusal(Exception):
    """What the API answers instead of a message: an HTTP status and an error object."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


async def answer(knowledge: Knowledge, body: Any) -> Reply:
    """The reply to one Messages request, or a `Refusal`: the one path both `/v1/messages`
    and a batch's requests take."""
    problem = _invalid(body)
    if problem:
        raise Refusal(400, problem)
    thinking = isinstance(body.get("thinking"), dict) and body["thinking"].get("type") in (
        "enabled",
        "adaptive",
    )
    index = await knowledge.index()
    try:
        reply = respond(read_request(body), index, thinking=thinking)
    except Exception as exc:  # a bug in the rules: answer as the API does, never a bare 500
        log.exception("demo model failed")
        raise Refusal(500, "The demo model failed on this request.", "api_error") from exc
    return _within_max_tokens(reply, body["max_tokens"])


async def _messages(request: web.Request) -> web.StreamResponse:
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError as exc:
        return _error(400, f"The request body is not valid JSON: {exc}")
    try:
        reply = await answer(request.app[_INDEX], body)
    except Refusal as refusal:
        return _error(refusal.status, refusal.message, refusal.kind)
    model = DEMO_MODEL  # the model that answers, whatever id the caller sent
    headers = {"request-id": block_id("req", body.get("messages"))}
    if not body.get("stream"):
        return web.json_response(message(body, reply, model), headers=headers, dumps=_dumps)
    response = web.StreamResponse(
        headers={**headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    delay = request.app[_DELAY]
    try:
        for event in stream_events(body, reply, model):
            if delay and event["type"] == "content_block_delta":
                await asyncio.sleep(delay)
            await response.write(sse(event))
        await response.write_eof()
    except ConnectionResetError:
        pass  # the gateway closed the request (a cancelled run): nothing left to say
    return response


def _invalid(body: Any) -> str | None:
    if not isinstance(body, dict):
        return "The request body must be a JSON object."
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return "max_tokens: Field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: Field required (a non-empty list)"
    if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in messages):
        return "messages: each message needs a role of 'user' or 'assistant'"
    if messages[0]["role"] != "user":
        return "messages: the first message must use the 'user' role"
    output = body.get("output_config")
    if isinstance(output, dict) and output.get("format") is not None:
        return f"output_config.format: structured outputs are not supported by model {DEMO_MODEL}"
    return None


def _within_max_tokens(reply: Reply, max_tokens: int) -> Reply:
    """Cut a text answer the way the API does when it runs out of tokens."""
    limit = max_tokens * 4
    if reply.calls or len(reply.text) <= limit:
        return reply
    thinking = tuple(b for b in reply.blocks if isinstance(b, Think))
    return Reply((*thinking, Say(reply.text[:limit])), forced_stop="max_tokens")


def _error(status: int, text: str, kind: str = "invalid_request_error") -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": text}}
    return web.json_response(body, status=status, dumps=_dumps)


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()
