"""The Message Batches API over HTTP, on the demo's app (and the tests' fake's):

    POST   /v1/messages/batches                 create: {requests: [{custom_id, params}]}
    GET    /v1/messages/batches                 list, newest first (before_id, after_id, limit)
    GET    /v1/messages/batches/{id}            the batch
    GET    /v1/messages/batches/{id}/results    JSON Lines, once the batch has ended
    POST   /v1/messages/batches/{id}/cancel     stop what is not yet answered
    DELETE /v1/messages/batches/{id}            an ended batch

The create body is checked as the API checks it before accepting a batch: 1 to 100,000
requests, each a `custom_id` matching `^[a-zA-Z0-9_-]{1,64}$`, unique in the batch, and
`params` of a non-streaming Messages request (`stream: true` is refused, the SDK's
`MessageCreateParamsNonStreaming` allows only false). Everything else about `params` is
checked when the request is processed, as the API does: a refused request is an `errored`
result. Errors have the API's JSON form; an unknown id is a 404 `not_found_error`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from demo_model.batch_store import Batch, BatchRequest, BatchStore

__all__ = ["BATCHES", "MAX_REQUESTS", "create_problem", "install"]

BATCHES = web.AppKey("message_batches", BatchStore)
MAX_REQUESTS = 100_000
MAX_BODY_BYTES = 256 * 1024 * 1024
"""The API's limit on a batch's size; an app serving batches takes bodies this large."""
CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_PREFIX = "/v1/messages/batches"

Check = Callable[[Any, frozenset[str]], str | None]
"""The 400 message for a create body (and the betas of its header), or None."""
_CHECK: web.AppKey[Check] = web.AppKey("message_batches_check")


def install(app: web.Application, store: BatchStore, check: Check | None = None) -> None:
    """Serve `store` on `app`; `check` refuses create bodies (default: `create_problem`)."""
    app[BATCHES] = store
    app[_CHECK] = check or create_problem
    app.router.add_post(_PREFIX, _create)
    app.router.add_get(_PREFIX, _list)
    app.router.add_get(_PREFIX + "/{batch_id}", _retrieve)
    app.router.add_delete(_PREFIX + "/{batch_id}", _delete)
    app.router.add_get(_PREFIX + "/{batch_id}/results", _results)
    app.router.add_post(_PREFIX + "/{batch_id}/cancel", _cancel)
    app.on_cleanup.append(_close)


def create_problem(body: Any, betas: frozenset[str] = frozenset()) -> str | None:
    """The `invalid_request_error` message for a create body, or None."""
    if not isinstance(body, dict) or not isinstance(body.get("requests"), list):
        return "requests: Field required"
    requests: list[Any] = body["requests"]
    if not 1 <= len(requests) <= MAX_REQUESTS:
        return f"requests: List should have between 1 and {MAX_REQUESTS} items, not {len(requests)}"
    seen: set[str] = set()
    for i, item in enumerate(requests):
        problem = _item_problem(item, f"requests.{i}")
        if problem is not None:
            return problem
        if item["custom_id"] in seen:
            twice = item["custom_id"]
            return f"requests.{i}.custom_id: Duplicate custom_id '{twice}' (each must be unique)"
        seen.add(item["custom_id"])
    return None


def _item_problem(item: Any, at: str) -> str | None:
    if not isinstance(item, dict):
        return f"{at}: Input should be a valid dictionary"
    extra = sorted(set(item) - {"custom_id", "params"})
    if extra:
        return f"{at}.{extra[0]}: Extra inputs are not permitted"
    custom_id = item.get("custom_id")
    if not isinstance(custom_id, str) or not CUSTOM_ID.match(custom_id):
        return f"{at}.custom_id: String should match pattern '{CUSTOM_ID.pattern}'"
    params = item.get("params")
    if not isinstance(params, dict):
        return f"{at}.params: Input should be a valid dictionary"
    if params.get("stream", False) is not False:
        return f"{at}.params.stream: Input should be False"
    return None


async def _create(request: web.Request) -> web.Response:
    try:
        body = orjson.loads(await request.read())
    except orjson.JSONDecodeError as exc:
        return _error(400, "invalid_request_error", f"The request body is not valid JSON: {exc}")
    header = request.headers.get("anthropic-beta", "")
    betas = frozenset(b.strip() for b in header.split(",") if b.strip())
    problem = request.app[_CHECK](body, betas)
    if problem is not None:
        return _error(400, "invalid_request_error", problem)
    store = request.app[BATCHES]
    if store.full():
        return _error(429, "rate_limit_error", "Too many Message Batches are in progress.")
    batch = store.create(
        [BatchRequest(r["custom_id"], r["params"], betas) for r in body["requests"]]
    )
    return _json(batch.view(_results_url(request, batch)))


async def _list(request: web.Request) -> web.Response:
    query = request.query
    raw = query.get("limit", "20")
    if not raw.isdigit() or not 1 <= int(raw) <= 1000:
        return _error(400, "invalid_request_error", "limit: Input should be between 1 and 1000")
    page, more = request.app[BATCHES].page(
        before_id=query.get("before_id"), after_id=query.get("after_id"), limit=int(raw)
    )
    data = [b.view(_results_url(request, b)) for b in page]
    first, last = (page[0].id, page[-1].id) if page else (None, None)
    return _json({"data": data, "has_more": more, "first_id": first, "last_id": last})


async def _retrieve(request: web.Request) -> web.Response:
    batch = _batch(request)
    return _json(batch.view(_results_url(request, batch)))


async def _cancel(request: web.Request) -> web.Response:
    batch = _batch(request)
    if batch.ended_at is not None:
        message = f"Message Batch {batch.id} has already ended and cannot be canceled."
        return _error(400, "invalid_request_error", message)
    request.app[BATCHES].cancel(batch)
    return _json(batch.view(_results_url(request, batch)))


async def _delete(request: web.Request) -> web.Response:
    batch = _batch(request)
    if batch.ended_at is None:
        message = f"Message Batch {batch.id} is still processing: cancel it before deleting it."
        return _error(400, "invalid_request_error", message)
    request.app[BATCHES].delete(batch)
    return _json({"id": batch.id, "type": "message_batch_deleted"})


async def _results(request: web.Request) -> web.Response:
    batch = _batch(request)
    if batch.ended_at is None:
        message = f"Message Batch {batch.id} has not finished processing; no results yet."
        return _error(400, "invalid_request_error", message)
    body = b"".join(orjson.dumps(line) + b"\n" for line in batch.lines())
    return web.Response(body=body, content_type="application/x-jsonl")


def _batch(request: web.Request) -> Batch:
    batch_id = request.match_info["batch_id"]
    batch = request.app[BATCHES].get(batch_id)
    if batch is None:
        text = _body("not_found_error", f"Message Batch {batch_id} not found.").decode()
        raise web.HTTPNotFound(text=text, content_type="application/json")
    return batch


def _results_url(request: web.Request, batch: Batch) -> str:
    return f"{request.url.origin()}{_PREFIX}/{batch.id}/results"


async def _close(app: web.Application) -> None:
    await app[BATCHES].close()


def _json(value: Any) -> web.Response:
    return web.json_response(value, dumps=lambda v: orjson.dumps(v).decode())


def _body(kind: str, message: str) -> bytes:
    return orjson.dumps({"type": "error", "error": {"type": kind, "message": message}})


def _error(status: int, kind: str, message: str) -> web.Response:
    return web.Response(status=status, body=_body(kind, message), content_type="application/json")
