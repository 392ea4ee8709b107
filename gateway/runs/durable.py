"""Durable runs: with a shared store (Redis), a run outlives the worker that drives it.

A run is claimed when it starts: a lease (`run:{id}:lease`, SET NX PX) held by its worker
and renewed every few seconds, and a fencing token (INCR on the record) that every write of
its frames and checkpoints carries, so a worker that lost the run (paused past its lease,
say) has its writes refused by the script that makes them: never two drivers of one run.
At every turn boundary (each `turn_complete`) the run's checkpoint goes to Redis with the
frames before it: the request, the history, usage and counters. Every worker looks for
running durable runs without a lease; the first to find one claims it with a new token and
continues from its last checkpoint (`RunManager.resume`).

Timing, for a takeover within `GATEWAY_TAKEOVER_S` (T): leases last T/3, renewed every
T/6 and by each write of the run's frames; each worker looks for runs without a lease every
T/5 (± 20 %) and takes one whose lease has been missing for T/10 (so an owner back from a
Redis outage writes first). A dead worker's runs move within T/3 + 2 x 1.2 T/5 = 0.81 T.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from gateway import events
from gateway.providers.base import Emit
from gateway.runs.loop import MAX_PAUSES, LoopConfig, LoopDeps, RunState, run_loop
from gateway.runs.run import RunRequest
from gateway.store.base import Leases
from gateway.store.eventlog import EventLog

log = logging.getLogger(__name__)

MAX_CLAIMS = 64  # runs one worker takes over per look: a dead worker's runs spread out
_SKIPPED_STATE = ("current", "resumed")  # the turn in flight is lost; resumed is set anew


@dataclass(frozen=True)
class Checkpoint:
    """What rebuilds a run on another worker: its request (for its LoopConfig), where it
    came in, its state after the last completed turn."""

    request: RunRequest
    endpoint: str
    state: RunState
    seq: int


@dataclass(frozen=True)
class Claimed:
    """A run this worker took over: its new token, checkpoint and last seq in Redis."""

    run_id: str
    token: int
    checkpoint: Checkpoint
    last_seq: int


def encode(request: RunRequest, endpoint: str, state: RunState, seq: int) -> bytes:
    """The checkpoint as JSON: every field of the request (whatever fields it has), the
    state without the turn in flight."""
    fields = {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}
    for name in _SKIPPED_STATE:
        fields.pop(name)
    body = {"request": dataclasses.asdict(request), "endpoint": endpoint, "state": fields}
    return orjson.dumps({**body, "seq": seq}, default=_sets_as_lists)


def decode(data: bytes) -> Checkpoint:
    body = orjson.loads(data)
    request = RunRequest(**_fields_of(RunRequest, body["request"]))
    state = RunState(**_fields_of(RunState, body["state"]))
    state.last_calls = tuple(state.last_calls)
    state.resumed = True
    return Checkpoint(request, body["endpoint"], state, int(body["seq"]))


def _sets_as_lists(value: object) -> object:
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot checkpoint a {type(value).__name__}")


def _fields_of(cls: type[Any], values: dict[str, Any]) -> dict[str, Any]:
    """The values `cls` has fields for (a newer worker may have added some), with lists
    turned back into the frozensets, sets and tuples JSON could not keep."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        if field.name in values:
            value = values[field.name]
            if isinstance(value, list) and "frozenset" in str(field.type):
                value = frozenset(value)
            elif isinstance(value, list) and str(field.type).startswith("set["):
                value = set(value)
            elif isinstance(value, list) and str(field.type).startswith("tuple["):
                value = tuple(value)
            out[field.name] = value
    return out


class Leased(Protocol):
    lease_ms: int


class LeaseLoop:
    """What durable runs and batches share: renewing this worker's leases every T/6 (each
    lasts T/3) and looking for work whose lease has been missing T/10 every T/5 (± 20 %,
    so the workers do not all look at the same moment), for a takeover within T
    (`GATEWAY_TAKEOVER_S`). A store that fails is tried again at the next tick.
    Subclasses say what they hold (`holding`), renew it (`renew`) and take over
    (`take_over`, with `grace_ms`)."""

    name = "durable runs"

    def __init__(
        self, leased: Leased, takeover_s: float, store_errors: tuple[type[BaseException], ...]
    ) -> None:
        self._errors: tuple[type[BaseException], ...] = (*store_errors, TimeoutError)
        leased.lease_ms = max(100, int(takeover_s * 1000 / 3))
        self._renew_s = takeover_s / 6
        self._look_s = takeover_s / 5
        self.grace_ms = int(takeover_s * 1000 / 10)
        self._tasks = [asyncio.create_task(self._renewing()), asyncio.create_task(self._looking())]

    def holding(self) -> bool:
        raise NotImplementedError

    async def renew(self) -> None:
        raise NotImplementedError

    async def take_over(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _renewing(self) -> None:
        while True:
            await asyncio.sleep(self._renew_s)
            if self.holding():
                await self._guarded(self.renew)

    async def _looking(self) -> None:
        while True:
            await asyncio.sleep(self._look_s * random.uniform(0.8, 1.2))
            await self._guarded(self.take_over)

    async def _guarded(self, operation: Callable[[], Awaitable[Any]]) -> None:
        try:
            await operation()
        except self._errors as exc:  # the store is reported elsewhere; try again next time
            log.debug("%s: the store failed (%s)", self.name, exc)


class Durability(LeaseLoop):
    """This worker's leases: claims new runs, renews, takes over runs of dead workers."""

    def __init__(
        self,
        leases: Leases,
        takeover_s: float,
        store_errors: tuple[type[BaseException], ...],
        on_claimed: Callable[[Claimed], None],
        on_lost: Callable[[str], None],
    ) -> None:
        self._leases = leases
        self._on_claimed = on_claimed
        self._on_lost = on_lost
        self._owned: dict[str, int] = {}  # run id -> fencing token
        super().__init__(leases, takeover_s, store_errors)

    async def begin(self, run_id: str, checkpoint: bytes) -> int:
        """Claim a new run with its first checkpoint: its token, 0 if Redis failed (then
        the run is not durable, and goes on in memory)."""
        try:
            token = await self._leases.claim(run_id, checkpoint)
        except self._errors as exc:
            log.warning("durable runs: cannot claim %s (%s); it is not durable", run_id, exc)
            return 0
        if token:
            self._owned[run_id] = token
        return token

    async def checkpoints(
        self, run_id: str, log_: EventLog, request: RunRequest, endpoint: str, state: RunState
    ) -> Callable[[], None] | None:
        """Claim a new run (a resumed one is claimed already); what takes its checkpoint
        after each turn. None if the run could not be made durable."""
        if not state.resumed and not await self.begin(
            run_id, encode(request, endpoint, state, log_.last_seq)
        ):
            return None
        leases = self._leases

        def checkpoint() -> None:
            seq = log_.last_seq
            leases.checkpoint(run_id, seq, encode(request, endpoint, state, seq))

        return checkpoint

    def holding(self) -> bool:
        return bool(self._owned)

    async def renew(self) -> None:
        owned = list(self._owned.items())
        answers = await self._leases.renew(owned)
        for (run_id, _), answer in zip(owned, answers, strict=True):
            if answer != 1:
                self._owned.pop(run_id, None)
            if answer == 0:
                log.warning("durable runs: %s was taken over elsewhere; stopping it", run_id)
                self._on_lost(run_id)

    async def take_over(self) -> None:
        for run_id, token, data, last_seq in await self._leases.take_over(
            MAX_CLAIMS, self.grace_ms
        ):
            try:
                checkpoint = decode(data)
            except (ValueError, TypeError, KeyError) as exc:
                log.error("durable runs: cannot resume %s: bad checkpoint (%s)", run_id, exc)
                continue
            self._owned[run_id] = token
            log.info("durable runs: taking over %s at turn %d", run_id, checkpoint.state.turns)
            self._on_claimed(Claimed(run_id, token, checkpoint, last_seq))


def turn_ended_run(state: RunState, max_turns: int) -> bool:
    """Whether the loop stopped after the checkpointed turn (the worker died between it
    and the terminal event): then a resumed run only owes its terminal event. The loop goes
    on after tool results (a user message last) and after `pause_turn`."""
    if state.turns == 0 or state.messages[-1]["role"] == "user":
        return False
    return not (state.stop_reason == "pause_turn" and state.turns <= max_turns + MAX_PAUSES)


async def resumed_loop(config: LoopConfig, deps: LoopDeps, state: RunState, emit: Emit) -> None:
    """The loop of a resumed run, unless its last turn had already ended it."""
    if turn_ended_run(state, config.max_turns):
        stop = events.OUTCOME_BY_STOP_REASON.get(state.stop_reason or "", "completed")
        state.outcome = state.wrap_up or stop
        return
    await run_loop(config, deps, state, emit)
