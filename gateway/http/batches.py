"""HTTP for batches: create (202 with the id), progress, the batch's SSE events, results
as JSON Lines (one `/api/research` fold per question, in order), cancel. A batch belongs
to the key that created it: other keys get 404, as for runs.

With the shared store, a batch driven by another worker is read from its journal there
(progress, results, events polled), and its cancel is sent to that worker."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import web

from gateway import sse
from gateway.batches.api import BatchesAPI
from gateway.batches.batch import Batch
from gateway.batches.journal import Journal, MemoryJournal, SharedJournal, Stored
from gateway.batches.manager import BatchManager, BatchOptions
from gateway.batches.takeover import Takeover
from gateway.errors import GatewayError, ValidationFailed
from gateway.fold import fold
from gateway.http import admission, keys
from gateway.http.auth import caller_of
from gateway.http.body import json_response, parse_run_request, read_json_body
from gateway.http.handlers import cursor
from gateway.http.writer import SSEWriter
from gateway.providers.anthropic.provider import AnthropicProvider
from gateway.runs.loop import LoopConfig
from gateway.runs.run import Run, RunRequest

NOT_BY_QUESTION = ("query", "messages", "sessionId")
"""Request fields a batch does not share: a question is its query (or its own body), and
batch questions do not continue sessions."""
JOURNALED_WAIT_S = 5.0
"""How long `create` waits for the journal to take a new batch before answering anyway
(a store that does not answer: the batch goes on, and its worker answers for it)."""


async def create(request: web.Request) -> web.Response:
    app = request.app
    manager = app.get(keys.BATCHES)
    if manager is None:
        raise ValidationFailed(
            "Batches need the Messages API (GATEWAY_UPSTREAM anthropic or demo): the "
            f"{app[keys.SETTINGS].upstream_kind} upstream has no Message Batches",
            {"upstream": app[keys.SETTINGS].upstream_kind},
        )
    requests = _questions(request, await read_json_body(request))
    configs = await _configs(request, requests)
    caller = caller_of(request)
    admission.check_capacity(app)
    # A batch is one admission, as a run is (its models, prices, budgets and limits),
    # held until it ends.
    admitted = await admission.admit(request, *(config.plan.model for config in configs))
    gate = app[keys.LIMITS]
    try:
        batch = manager.start(caller, requests, configs, request[keys.REQUEST_ID])
    except BaseException:
        gate.release(caller, admitted.ticket)
        raise
    gate.hold(batch.id, caller, admitted.ticket)
    # Answered once the journal has it, so the next request may go to any worker.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(batch.begun.wait(), JOURNALED_WAIT_S)
    body = {"batch_id": batch.id, "state": batch.state, "questions": len(requests)}
    return json_response(body, 202)


def _questions(request: web.Request, data: Any) -> list[RunRequest]:
    app = request.app
    settings = app[keys.SETTINGS]
    if not isinstance(data, dict):
        raise ValidationFailed("The request body must be a JSON object")
    questions = data.get("questions")
    limit = settings.gateway_batch_max_questions
    if not isinstance(questions, list) or not questions or len(questions) > limit:
        message = f"questions must be a list of 1 to {limit} questions (strings or request bodies)"
        raise ValidationFailed(message, {"field": "questions"})
    shared = {k: v for k, v in data.items() if k != "questions"}
    for name in NOT_BY_QUESTION:
        if name in shared:
            raise ValidationFailed(f"{name} is not a shared field of a batch", {"field": name})
    names = app[keys.TOOLSET].registry.names()
    parsed = []
    for index, question in enumerate(questions):
        if isinstance(question, str):
            body = {**shared, "query": question}
        elif isinstance(question, dict):
            body = {**shared, **question}
        else:
            message = f"questions[{index}]: a question is a string or a request body"
            raise ValidationFailed(message, {"index": index})
        if "sessionId" in body:
            message = f"questions[{index}]: batch questions do not continue sessions"
            raise ValidationFailed(message, {"index": index, "field": "sessionId"})
        try:
            parsed.append(
                parse_run_request(
                    body, settings, names, request[keys.REQUEST_ID], caller_of(request)
                )
            )
        except ValidationFailed as exc:
            raise _at(exc, index) from None
    return parsed


async def _configs(request: web.Request, requests: list[RunRequest]) -> list[LoopConfig]:
    planner = request.app[keys.PLANNER]
    configs = []
    for index, run_request in enumerate(requests):
        try:
            configs.append(await planner.config(run_request))
        except ValidationFailed as exc:
            raise _at(exc, index) from None
    return configs


def _at(exc: ValidationFailed, index: int) -> ValidationFailed:
    return ValidationFailed(f"questions[{index}]: {exc.message}", {**exc.details, "index": index})


async def _owned(request: web.Request) -> Batch | Stored:
    """The caller's batch: driven here, or read from the shared store."""
    batch_id = request.match_info["batch_id"]
    manager = request.app.get(keys.BATCHES)
    found: Batch | Stored | None = None if manager is None else manager.get(batch_id)
    if found is None and manager is not None and isinstance(manager.journal, SharedJournal):
        found = await _stored(manager.journal, batch_id)
    if found is None or found.owner != caller_of(request):
        raise GatewayError("NOT_FOUND", f"No batch {batch_id!r} (unknown or expired)")
    return found


async def _stored(journal: SharedJournal, batch_id: str) -> Stored | None:
    try:
        return await journal.stored(batch_id)
    except journal.errors as exc:
        message = f"The shared store does not answer ({type(exc).__name__})"
        raise GatewayError("NETWORK_ERROR", message) from exc


async def progress(request: web.Request) -> web.Response:
    return json_response((await _owned(request)).progress())


async def results(request: web.Request) -> web.StreamResponse:
    batch = await _owned(request)
    if not batch.done:
        message = (
            f"Batch {batch.batch_id if isinstance(batch, Stored) else batch.id} is "
            f"{batch.state}: its results come when it has ended"
        )
        raise GatewayError("VALIDATION_ERROR", message, {"state": batch.state}, status=409)
    response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
    await response.prepare(request)
    index = 0
    async for data in _logs(request, batch):  # read from the store as it is written out
        folded = fold(sse.parse_frames(data))
        line = (
            {"index": index, "error": folded["error"]}
            if "error" in folded
            else {"index": index, **folded}
        )
        await response.write(orjson.dumps(line) + b"\n")
        index += 1
    await response.write_eof()
    return response


async def _logs(request: web.Request, batch: Batch | Stored) -> AsyncIterator[bytes]:
    """The questions' event logs, in order: here, or from the journal a few at a time."""
    if isinstance(batch, Batch):
        for question in batch.questions:
            yield question.run.log.read(0)
        return
    journal = request.app[keys.BATCHES].journal
    assert isinstance(journal, SharedJournal)
    async for data in journal.events(batch.batch_id, len(batch.questions)):
        yield data


async def events(request: web.Request) -> web.StreamResponse:
    found = await _owned(request)
    if isinstance(found, Stored):
        return await _stored_events(request, found)
    batch = found
    settings = request.app[keys.SETTINGS]
    after = cursor(request)
    log = batch.log
    response = web.StreamResponse(headers={**sse.HEADERS, "x-batch-id": batch.id})
    await response.prepare(request)
    # As a run's streams: a reader that takes nothing within the deadline is dropped.
    writer = SSEWriter(request, response, settings.gateway_write_timeout_s)
    follower = log.follow(settings.gateway_heartbeat_s)
    try:
        while True:
            data = log.read(after)
            if data:
                after = log.last_seq
                await writer.write(data)
            elif log.closed:
                break
            elif not await follower.wait(after):
                await writer.write(sse.PING)
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client left (or was dropped); the batch goes on
    finally:
        follower.close()
        writer.close()
    return response


async def _stored_events(request: web.Request, stored: Stored) -> web.StreamResponse:
    """A batch another worker drives, as SSE: its journal read every `GATEWAY_BATCH_POLL_S`
    (at most a second): `batch_status`, then a `question` for each question whose
    progress changed, then `batch_complete`. The seqs are this stream's own."""
    settings = request.app[keys.SETTINGS]
    journal = request.app[keys.BATCHES].journal
    assert isinstance(journal, SharedJournal)
    every = min(1.0, settings.gateway_batch_poll_s)
    batch_id = stored.batch_id
    response = web.StreamResponse(headers={**sse.HEADERS, "x-batch-id": batch_id})
    await response.prepare(request)
    writer = SSEWriter(request, response, settings.gateway_write_timeout_s)
    seq = 0
    seen: list[dict[str, Any] | None] = [None] * len(stored.questions)

    def framed(kind: str, **fields: Any) -> bytes:
        nonlocal seq
        seq += 1
        return sse.frame(seq, {"type": kind, **fields, "run_id": batch_id, "seq": seq})

    try:
        await writer.write(
            framed("batch_status", state=stored.state, questions=len(stored.questions))
        )
        while True:
            changed = [q for i, q in enumerate(stored.questions) if q != seen[i]]
            for question in changed:
                seen[question["index"]] = question
            data = b"".join(framed("question", **q) for q in changed)
            if stored.done:
                summary = stored.summary or {}
                outcome = summary.get("outcome") or "completed"
                data += framed(
                    "batch_complete",
                    batch_id=batch_id,
                    state="ended",
                    outcome=outcome,
                    **_totals(stored),
                )
            await writer.write(data or sse.PING)
            if stored.done:
                break
            await asyncio.sleep(every)
            stored = await _stored(journal, batch_id) or stored
        await response.write_eof()
    except ConnectionResetError:
        pass  # the client left (or was dropped); the batch goes on
    finally:
        writer.close()
    return response


def _totals(stored: Stored) -> dict[str, Any]:
    progress = stored.progress()
    for name in ("batch_id", "state", "outcome", "created_at", "rounds", "questions"):
        progress.pop(name)
    return progress


async def cancel(request: web.Request) -> web.Response:
    batch = await _owned(request)
    manager = request.app[keys.BATCHES]
    if isinstance(batch, Stored):
        assert isinstance(manager.journal, SharedJournal)
        try:
            cancelled = await manager.journal.store.cancel(batch.batch_id)
        except manager.journal.errors as exc:
            message = f"The shared store does not answer ({type(exc).__name__})"
            raise GatewayError("NETWORK_ERROR", message) from exc
        state = "cancelling" if cancelled else batch.state
        return json_response(
            {"ok": True, "batch_id": batch.batch_id, "cancelled": bool(cancelled), "state": state}
        )
    cancelled = await manager.cancel(batch.id)
    return json_response(
        {"ok": True, "batch_id": batch.id, "cancelled": bool(cancelled), "state": batch.state}
    )


def routes() -> list[web.AbstractRouteDef]:
    return [
        web.post("/api/batches", create),
        web.get("/api/batches/{batch_id}", progress, allow_head=False),
        web.get("/api/batches/{batch_id}/events", events, allow_head=False),
        web.get("/api/batches/{batch_id}/results", results, allow_head=False),
        web.post("/api/batches/{batch_id}/cancel", cancel),
    ]


async def batches_ctx(app: web.Application) -> AsyncIterator[None]:
    """The batch manager, when the primary upstream speaks the Messages API (its SDK
    client's Batches endpoints: the API's, or the demo model's offline)."""
    settings = app[keys.SETTINGS]
    primary = app[keys.UPSTREAMS].providers[0]
    if not isinstance(primary, AnthropicProvider):
        yield
        return
    runs = app[keys.RUNS]
    journal: Journal = MemoryJournal()
    if runs.shared is not None:  # a batch outlives this worker: see `batches.takeover`
        journal = SharedJournal(runs.shared.batches(), settings.gateway_batch_ttl_s)
    options = BatchOptions(
        poll_s=settings.gateway_batch_poll_s,
        ttl_s=settings.gateway_batch_ttl_s,
        max_events=settings.gateway_run_log_max_events,
        upstream=primary.name,
        model=settings.model,
        clock_skew_s=settings.gateway_batch_clock_skew_s,
    )
    manager = BatchManager(
        app[keys.RUNS].factory,
        BatchesAPI(
            primary.client, settings.gateway_batch_poll_s, settings.gateway_batch_create_timeout_s
        ),
        options,
        app[keys.METRICS],
        journal,
        audit=app.get(keys.AUDIT),
        on_question_end=functools.partial(_question_ended, app),
        on_batch_end=functools.partial(_batch_ended, app),
    )
    app[keys.BATCHES] = manager
    takeover = None
    if isinstance(journal, SharedJournal):
        journal.on_lost = manager.lost
        runs.other_control = manager.on_control
        takeover = Takeover(journal, manager, app[keys.PLANNER].config, settings.gateway_takeover_s)
    try:
        yield
    finally:
        if takeover is not None:
            await takeover.close()
        await manager.shutdown()


def _question_ended(
    app: web.Application, run: Run, usage: dict[str, int], cost: float | None
) -> None:
    """A question's tokens and dollars count against its key's budgets as each one ends."""
    model = run.model or app[keys.SETTINGS].model
    app[keys.SPEND].charge(run.owner, model, usage, cost, batch_question=True)


def _batch_ended(app: web.Application, batch: Batch) -> None:
    """The batch's admission is settled with all its questions' tokens (a batch taken
    over from a worker that died: charged here, the dead worker never settled it)."""
    app[keys.LIMITS].finished(batch.id, batch.totals()["usage"], owner=batch.owner)
