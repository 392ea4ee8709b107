"""Wiring for who may do what: the keys (the ring and the key store), the limits gate, the
spend ledger and the audit log on the app (one `cleanup_ctx` each, appended before the
runs' own, so they close after every run has ended and written its last audit line), and
the start of a run for a key: its model, its budgets, its limits."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import threading
from collections.abc import AsyncIterator, Iterator

from aiohttp import web

from gateway.access import budgets
from gateway.access.keyring import load_keyring
from gateway.access.limits import Admission, Gate
from gateway.access.spend import Spend
from gateway.access.tenants import Tenant, Tenants, keys_secret
from gateway.errors import GatewayError
from gateway.http import keys
from gateway.http.mcp_sessions import SESSIONS
from gateway.http.ownership import record_owner
from gateway.ops.audit import AuditLog, RunAudit
from gateway.ops.metrics import Metrics
from gateway.runs.loop import LoopConfig
from gateway.runs.run import Run, RunRequest
from gateway.settings import Settings
from gateway.store.configured import audit_sink, keys_and_spend, limit_counters


class KeyRevoked(GatewayError):
    """The run's key was revoked while it ran."""

    def __init__(self, name: str) -> None:
        super().__init__("KEY_REVOKED", f"Key {name!r} was revoked", {"key": name})


def install(app: web.Application) -> None:
    """Read the keys (a bad key file stops startup, as does a global dollar budget on an
    unpriced model); add the audit, keys (and spend) and limits contexts."""
    settings = app[keys.SETTINGS]
    budgets.check_startup(settings, app[keys.PRICES])
    app[keys.KEYRING] = load_keyring(settings.gateway_api_keys, settings.gateway_api_keys_file)
    app.cleanup_ctx.append(_audit_ctx)
    app.cleanup_ctx.append(_keys_ctx)
    app.cleanup_ctx.append(_limits_ctx)
    if budgets.configured_limits(settings).per_minute or settings.gateway_admin_key:
        app.on_response_prepare.append(add_limit_headers)


async def _keys_ctx(app: web.Application) -> AsyncIterator[None]:
    """Every key: the ring's and, with the admin API, the key store's (polled for changes;
    a revoked key's runs and batches here end with `KEY_REVOKED`). Also the spend ledger."""
    settings = app[keys.SETTINGS]
    store, ledger = keys_and_spend(settings)
    secret = keys_secret(settings.gateway_keys_secret, settings.gateway_admin_key)
    tenants = Tenants(
        app[keys.KEYRING],
        store,
        secret,
        refresh_s=settings.gateway_keys_refresh_s,
        on_revoked=functools.partial(end_runs_of, app),
    )
    app[keys.SPEND] = spend = Spend(ledger, app[keys.METRICS])
    await tenants.start()
    app[keys.TENANTS] = tenants
    try:
        yield
    finally:  # after the runs' context: every ended run has been handed over to charge
        await tenants.close()
        await spend.close()


def end_runs_of(app: web.Application, name: str) -> None:
    """A key was revoked: its runs in progress on this worker end with `KEY_REVOKED`, its
    batches running here are cancelled (each unfinished question ending `KEY_REVOKED`),
    its MCP sessions here end."""
    if SESSIONS in app:
        app[SESSIONS].end_key(name)
    if keys.BATCHES in app:
        app[keys.BATCHES].end_key(name, KeyRevoked(name))
    if keys.RUNS in app:
        for run in app[keys.RUNS].active():
            if run.owner == name:
                run.fail(KeyRevoked(name))


async def _limits_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[keys.SETTINGS]
    limits = budgets.configured_limits(settings)
    per_key = bool(settings.gateway_admin_key)
    counters = limit_counters(settings, limits.active or per_key)
    app[keys.LIMITS] = Gate(limits, counters, app[keys.METRICS], per_key=per_key)
    try:
        yield
    finally:  # after the runs' context: every ended run has been handed over to settle
        await app[keys.LIMITS].close()


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
        sink=audit_sink(settings),
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
    request: web.Request,
    run_request: RunRequest,
    config: LoopConfig,
    endpoint: str,
    parent: object,
) -> Run:
    """Start a validated run for its caller's key (`run_request.caller`), admitted by
    `admit`, owned by it, its slot held until the run's task ends."""
    app = request.app
    check_capacity(app)
    caller = run_request.caller
    gate = app[keys.LIMITS]
    ticket = (await admit(request, config.plan.model)).ticket
    try:
        run = app[keys.RUNS].start(run_request, config, endpoint, parent)
    except BaseException:
        gate.release(caller, ticket)
        raise
    run.model = config.plan.model
    gate.hold(run.id, caller, ticket)
    try:
        await record_owner(request, run)
    except asyncio.CancelledError:  # the client left before its stream began: nobody reads
        run.cancel("client_disconnected")
        raise
    return run


async def admit(request: web.Request, model: str | None, *more: str) -> Admission:
    """One start for the caller's key, whatever starts (a run, a batch, an MCP session or
    tool call): models it may run (else 403), priced if a dollar budget applies (else
    400), within its budgets and its own limits, else the configured ones (else 429). The
    caller releases the ticket (`Gate.release`, or `Gate.hold` for a run or a batch); the
    `RateLimit-*` headers go on the response. `model` None: no model is called; `more`:
    a batch's other models, each checked as `model` is."""
    gate = request.app[keys.LIMITS]
    tenant = await admit_key(request, model, *more)
    admission = await gate.admit(request[keys.CALLER], budgets.limits_for(tenant, gate.limits))
    request[keys.LIMIT_HEADERS] = admission.headers
    return admission


async def admit_key(request: web.Request, model: str | None, *more: str) -> Tenant | None:
    """The caller's key may run `model` and `more` (403), priced if a dollar budget
    applies (400), and has not spent its budgets (429). Its tenant (None: the API is open)."""
    app = request.app
    tenant = request.get(keys.TENANT)
    if tenant is None and not app[keys.SETTINGS].gateway_daily_usd_budget:
        return None  # nothing to check: no key of its own, no budget
    owed = budgets.budgets_for(tenant, app[keys.SETTINGS])
    for each in sorted({*more, *([] if model is None else [model])}):
        budgets.check_model(tenant, each)
        budgets.check_priced(each, owed, app[keys.PRICES])
    await app[keys.SPEND].admit(request[keys.CALLER], owed)
    return tenant


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
