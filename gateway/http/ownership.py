"""A run belongs to the key that started it: another key gets 404 on its re-attach and
cancel, as if the run did not exist (a 403 would confirm that the id is real).

Runs on this process carry their owner (`Run.owner`). For runs other processes own, the
shared store keeps the owner's name (`SharedRuns.owner`), written when the run starts.
"""

from __future__ import annotations

from aiohttp import web

from gateway.errors import GatewayError
from gateway.http import keys
from gateway.http.auth import caller_of
from gateway.runs.run import Run


async def record_owner(request: web.Request, run: Run) -> None:
    """Write the run's owner to the shared store, if there is one (before its stream
    starts, so a re-attach on another process finds it)."""
    shared = request.app[keys.RUNS].shared
    if shared is not None:
        await shared.record_owner(run.id, run.owner)


async def check_owner(request: web.Request, run_id: str) -> None:
    """404 unless the caller's key started the run (on this process or another one)."""
    caller = caller_of(request)
    runs = request.app[keys.RUNS]
    run = runs.get(run_id)
    if run is not None:
        owner: str | None = run.owner
    elif runs.shared is not None:
        owner = await runs.shared.owner(run_id)
    else:
        return  # unknown here and no other process: the handler answers its own 404
    if owner != caller and not (owner is None and request.app[keys.TENANTS].open):
        raise GatewayError("NOT_FOUND", f"No run {run_id!r} (unknown or expired)")
