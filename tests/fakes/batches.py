"""A fake Message Batches API: the demo's batch endpoints and bookkeeping
(demo_model/batches.py, demo_model/batch_store.py) over the strict fake Messages API.

The create body is held to the SDK's own `BatchCreateParams` (the beta one when an
`anthropic-beta` header is sent), strictly, as `tests/fakes/sdk_types.py` builds it, after
the demo's checks (1 to 100,000 requests, custom_id pattern, unique). Each request is then
processed as the fake Messages API would take it (`FakeAnthropic.refusal`: the rules of
`tests/fakes/messages_rules.py`, the model record's limits, context management): a request
it refuses is an `errored` result with that error, as the real API reports it. The others
are answered by `script(request) -> Reply` (a fresh `Reply` each call), accumulated into the
`Message` a non-streaming call returns.

Knobs: `processing_s` (the time a batch waits before it is answered, standing for the
minutes of the real service), `expire` and `error` (custom_ids, or a predicate, whose
requests come back `expired`, or `errored` with `error_type`; `error` may also map
custom_ids to their own error types; a name picks a custom_id, or the gateway's call
`q{index}-t{turn}` whatever batch tail its custom_id carries), `fail(op, status)` (an HTTP
error on the next call of an endpoint: create, list, retrieve, results, cancel, delete),
`stall(op, seconds, created=...)` (the next call of an endpoint is not answered for that
long: before the API acts on it, or, with `created`, after: a create that made its batch
whose answer never came).
Records: `received` (Counter of custom_ids submitted), `submitted` (batch id -> its
requests), `cancels` (batch ids a cancel was asked for), `created` (set on each create).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from collections import Counter
from collections.abc import Callable, Collection
from typing import Any

from aiohttp import web
from anthropic.types.beta.messages.batch_create_params import (
    BatchCreateParams as BetaBatchCreateParams,
)
from anthropic.types.messages.batch_create_params import BatchCreateParams

from demo_model.batch_store import Batch, BatchRequest, BatchStore, errored
from demo_model.batches import MAX_BODY_BYTES, create_problem, install
from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.fakes.sdk_types import cached_validator, type_problem

__all__ = ["BatchRequest", "FakeBatches", "Script", "accumulate"]

Script = Callable[[BatchRequest], Reply]
Pick = Collection[str] | Callable[[str], bool]
"""Which custom_ids a knob applies to: these, or those the predicate picks."""
_messages = itertools.count(1)


class FakeBatches:
    """The Message Batches API (and, on the same app, the fake Messages API `messages`)."""

    def __init__(
        self,
        script: Script,
        *,
        messages: FakeAnthropic | None = None,
        processing_s: float = 0.0,
        expire: Pick = (),
        error: Pick = (),
        error_type: str = "api_error",
    ) -> None:
        self.script = script
        self.messages = messages or FakeAnthropic()
        self.expire = expire
        self.error = error
        self.error_type = error_type
        self.received: Counter[str] = Counter()
        self.submitted: dict[str, list[BatchRequest]] = {}
        self.cancels: list[str] = []
        self.created = asyncio.Event()
        self.failures: dict[str, list[int]] = {}
        self.stalls: dict[str, list[tuple[float, bool]]] = {}
        self.calls: Counter[str] = Counter()
        """Calls of each endpoint (create, list, retrieve, results, cancel, delete)."""
        self.reads: Counter[str] = Counter()
        """Reads of each batch's results, by batch id."""
        self.store = _RecordingStore(self, self._process, processing_s=processing_s)

    @property
    def processing_s(self) -> float:
        return self.store.processing_s

    @processing_s.setter
    def processing_s(self, value: float) -> None:
        self.store.processing_s = value

    def fail(self, op: str, status: int, times: int = 1) -> None:
        """Answer the next `times` calls of `op` with an HTTP `status` error."""
        self.failures.setdefault(op, []).extend([status] * times)

    def stall(self, op: str, seconds: float, *, created: bool = False) -> None:
        """Leave the next call of `op` unanswered for `seconds`; with `created`, after it
        took effect. The client gives up first (its timeout is shorter)."""
        self.stalls.setdefault(op, []).append((seconds, created))

    def batch(self, batch_id: str) -> Batch | None:
        return self.store.get(batch_id)

    def app(self) -> web.Application:
        app = self.messages.app(client_max_size=MAX_BODY_BYTES)
        app.middlewares.append(self._failing)
        install(app, self.store, check=_check)
        return app

    async def _process(self, request: BatchRequest) -> dict[str, Any]:
        if _picked(self.expire, request.custom_id):
            return {"type": "expired"}
        if _picked(self.error, request.custom_id):
            kind = None
            if isinstance(self.error, dict):
                kind = self.error.get(request.custom_id) or self.error.get(_call(request.custom_id))
            return errored(kind or self.error_type, "fake: scripted failure of this request")
        applied = self.messages.refusal({**request.params, "stream": True}, set(request.betas))
        if isinstance(applied, tuple):
            return errored(applied[1], applied[2])
        reply = copy.deepcopy(self.script(request))
        reply.model = reply.model or str(request.params["model"])
        reply = self.messages.ready(reply, applied)
        if reply.status is not None:
            return errored(reply.error_type, "scripted failure")
        message = accumulate(self.messages.events(reply))
        message["id"] = f"msg_fakebatch{next(_messages):08d}"
        message["usage"]["service_tier"] = "batch"  # as the API marks a batch's usage
        return {"type": "succeeded", "message": message}

    @web.middleware
    async def _failing(self, request: web.Request, handler: Any) -> web.StreamResponse:
        op = _op(request)
        self.calls[op or ""] += 1
        if op == "results":
            self.reads[request.match_info.get("batch_id", "")] += 1
        stalls = self.stalls.get(op or "")
        if stalls:
            seconds, created = stalls.pop(0)
            if created:
                await handler(request)
            await asyncio.sleep(seconds)
            body = {"type": "error", "error": {"type": "api_error", "message": "fake: stalled"}}
            return web.json_response(body, status=500)
        statuses = self.failures.get(op or "")
        if statuses:
            status = statuses.pop(0)
            kind = "overloaded_error" if status == 529 else "api_error"
            body = {"type": "error", "error": {"type": kind, "message": f"fake: {op} failed"}}
            return web.json_response(body, status=status)
        response: web.StreamResponse = await handler(request)
        return response


class _RecordingStore(BatchStore):
    def __init__(self, fake: FakeBatches, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._fake = fake

    def create(self, requests: list[BatchRequest]) -> Batch:
        batch = super().create(requests)
        self._fake.received.update(r.custom_id for r in requests)
        self._fake.submitted[batch.id] = requests
        self._fake.created.set()
        return batch

    def cancel(self, batch: Batch) -> None:
        self._fake.cancels.append(batch.id)
        super().cancel(batch)


def _check(body: Any, betas: frozenset[str]) -> str | None:
    problem = create_problem(body, betas)
    if problem is not None:
        return problem
    request_type = BetaBatchCreateParams if betas else BatchCreateParams
    return type_problem(cached_validator(request_type), body)


def _picked(pick: Pick, custom_id: str) -> bool:
    if callable(pick):
        return pick(custom_id)
    return custom_id in pick or _call(custom_id) in pick


def _call(custom_id: str) -> str:
    """The gateway's call a custom_id names: `q{index}-t{turn}` without its batch tail."""
    return custom_id.rsplit("-", 1)[0]


def _op(request: web.Request) -> str | None:
    parts = request.path.strip("/").split("/")  # v1 messages batches [id] [action]
    if parts[:3] != ["v1", "messages", "batches"]:
        return None
    if len(parts) == 3:
        return "create" if request.method == "POST" else "list"
    if len(parts) == 4:
        return "delete" if request.method == "DELETE" else "retrieve"
    return parts[4]


def accumulate(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The `Message` a non-streaming call returns, from the stream of the same reply."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for event in events:
        kind = event["type"]
        if kind == "message_start":
            message = copy.deepcopy(event["message"])
        elif kind == "content_block_start":
            message["content"].append(copy.deepcopy(event["content_block"]))
        elif kind == "content_block_delta":
            _apply(message["content"][event["index"]], event["delta"], partial, event["index"])
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message["usage"], **event["usage"]}
            if "context_management" in event:
                message["context_management"] = event["context_management"]
    for index, raw in partial.items():
        message["content"][index]["input"] = json.loads(raw) if raw else {}
    return message


def _apply(block: dict[str, Any], delta: dict[str, Any], partial: dict[int, str], at: int) -> None:
    kind = delta["type"]
    if kind == "input_json_delta":
        partial[at] = partial.get(at, "") + delta["partial_json"]
    elif kind == "citations_delta":
        block.setdefault("citations", []).append(delta["citation"])
    elif kind == "signature_delta":
        block["signature"] = delta["signature"]
    else:  # text, thinking, compaction: more of the field the delta is named after
        field = {"text_delta": "text", "thinking_delta": "thinking"}.get(kind, "content")
        block[field] = (block.get(field) or "") + delta[field]
