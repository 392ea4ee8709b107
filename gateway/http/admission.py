"""Wiring for who may do what: the key ring, the limits gate and the audit log on the app
(one `cleanup_ctx` each, appended before the runs' own, so they close after every run has
ended and written its last audit line), and the start of a run for a key."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import AsyncIterator, Iterator

from aiohttp import web

from gateway.access.keyring import load_keyring
from gateway.access.limits import Counters, Gate, Limits, MemoryCounters
from gateway.access.redis_limits import RedisCounters
from gateway.access.spend import MemorySpend, RedisSpend, Spend, SpendStore
from gateway.errors import GatewayError
from gateway.http import keys
from gateway.http.ownership import record_owner
from gateway.ops.audit import AuditLog, RunAudit
from gateway.ops.metrics import Metrics
from gateway.runs.loop import LoopConfig
from gateway.runs.run import Run, RunRequest
from gateway.settings import Settings


def limits_of(settings: Settings) -> Limits:
    return Limits(
        per_minute=settings.gateway_rate_limit_per_min,
        concurrent=settings.gateway_max_concurrent_runs,
        daily_tokens=settings.gateway_daily_token_budget,
    )


def install(app: web.Application) -> None:
    """Read the keys (a bad key file stops startup); add the limits and audit contexts."""
    settings = app[keys.SETTINGS]
    app[keys.KEYRING] = load_keyring(settings.gateway_api_keys, settings.gateway_api_keys_file)
    app.cleanup_ctx.append(_audit_ctx)
    app.cleanup_ctx.append(_limits_ctx)
    if settings.gateway_daily_usd_budget:
        app.cleanup_ctx.append(_spend_ctx)
    if limits_of(settings).per_minute:
        app.on_response_prepare.append(add_limit_headers)


async def _limits_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    limits = limits_of(settings)
    counters: Counters = MemoryCounters()
    if settings.redis_url and limits.active:
        counters = RedisCounters(settings.redis_url, settings.redis_key_prefix)
    app[keys.LIMITS] = Gate(limits, counters, app[keys.METRICS])
    try:
        yield
    finally:  # after the runs' context: every ended run has been handed over to settle
        await app[keys.LIMITS].close()


async def _spend_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    store: SpendStore = MemorySpend()
    if settings.redis_url:
        store = RedisSpend(settings.redis_url, settings.redis_key_prefix)
    app[keys.SPEND] = Spend(settings.gateway_daily_usd_budget, store, app[keys.METRICS])
    try:
        yield
    finally:  # after the runs' context: every ended run has been handed over to charge
        await app[keys.SPEND].close()


async def _audit_ctx(app: web.Application) -> AsyncIterator[None]:
    audit = _audit_log(app[keys.SETTINGS], app[keys.METRICS])
    if audit is None:
        yield
        return
    app[keys.AUDIT] = audit
    audit.start()
    with _reopen_on_sighup(audit):
        try:
            yield
        finally:  # after the runs' context: their last lines are queued
            await audit.close()


def _audit_log(settings: Settings, metrics: Metrics) -> AuditLog | None:
    if not settings.gateway_audit_log:
        return None
    key = settings.gateway_audit_hash_key
    return AuditLog(
        settings.gateway_audit_log,
        hash_key=key.encode() if key else None,
        content=settings.gateway_audit_content,
        redis_url=settings.redis_url,
        stream_key=f"{settings.redis_key_prefix}audit",
        maxlen=settings.gateway_audit_stream_maxlen,
        queue_max=settings.gateway_audit_queue_max,
        dropped=metrics.audit_dropped,
    )


@contextlib.contextmanager
def _reopen_on_sighup(audit: AuditLog) -> Iterator[None]:
    """SIGHUP reopens the audit file (logrotate's postrotate), where signals can be had."""
    main = threading.current_thread() is threading.main_thread()
    if audit.path == "-" or not main:
        yield
        return
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, audit.reopen)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGHUP)


def run_audit(app: web.Application, run: Run) -> RunAudit | None:
    """The audit lines of a new run, if the audit log is on."""
    if keys.AUDIT not in app:
        return None
    return RunAudit(app[keys.AUDIT], run.owner, run.id, run.session_id)


async def start_run(
    request: web.Request, run_request: RunRequest, config: LoopConfig, endpoint: str,
    parent: object,
) -> Run:  # fmt: skip
    """Start a validated run for its caller's key (`run_request.caller`): within its
    limits (else 429), owned by it, its slot held until the run's task ends."""
    app = request.app
    check_capacity(app)
    caller = run_request.caller
    gate = app[keys.LIMITS]
    if keys.SPEND in app:
        await app[keys.SPEND].admit(caller)
    admission = await gate.admit(caller)
    ticket = admission.ticket
    request[keys.LIMIT_HEADERS] = admission.headers
    try:
        run = app[keys.RUNS].start(run_request, config, endpoint, parent)
    except BaseException:
        gate.release(caller, ticket)
        raise
    gate.hold(run.id, caller, ticket)
    try:
        await record_owner(request, run)
    except asyncio.CancelledError:  # the client left before its stream began: nobody reads
        run.cancel("client_disconnected")
        raise
    return run


class AtCapacity(GatewayError):
    """This process runs GATEWAY_MAX_RUNS_PER_PROCESS runs (as `RateLimited` is a key over
    its limits): 503, so a load balancer sends the client elsewhere."""

    RETRY_S = 1
    """What a refused client is told to wait: runs end and free their places all the time."""

    def __init__(self, cap: int) -> None:
        super().__init__(
            "OVERLOADED_ERROR",
            "This gateway process is at its limit of runs in progress "
            f"(GATEWAY_MAX_RUNS_PER_PROCESS={cap}); try again shortly",
            {"limit": "runs_per_process", "value": cap, "retry_after_s": self.RETRY_S},
            status=503,
        )
        self.headers["Retry-After"] = str(self.RETRY_S)


def check_capacity(app: web.Application) -> None:
    """Refuse a new run while this process runs GATEWAY_MAX_RUNS_PER_PROCESS of them: past
    what one core relays on time, admitting more makes every stream late (BENCH.md)."""
    cap = app[keys.SETTINGS].gateway_max_runs_per_process
    if cap and app[keys.RUNS].live >= cap:
        raise AtCapacity(cap)


async def add_limit_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: the key's `RateLimit-*` headers on a run's response."""
    if keys.LIMIT_HEADERS in request:
        response.headers.update(request[keys.LIMIT_HEADERS])
