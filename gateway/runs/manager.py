"""Runs outlive connections. A run is a task that drives the loop into an event log; HTTP
streams, re-attaches and `/api/research` are readers of that log from some `seq` on.

Every run ends with exactly one terminal event, whatever stopped it (the disconnect rule
that can stop it is in `run.py`).

With a shared store (Redis) the manager also mirrors each log there, answers cancels sent
by other processes, and counts readers attached elsewhere before a grace timer cancels.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway import events
from gateway.errors import GatewayError
from gateway.events import Event
from gateway.ids import token_hex
from gateway.ops.observe import RunObserver
from gateway.providers.base import Emit
from gateway.runs.durable import Checkpoint, Claimed, Durability, resumed_loop
from gateway.runs.ending import Ending, end_loop, end_run, run_to_end
from gateway.runs.loop import LoopConfig, LoopDeps, RunState, run_loop
from gateway.runs.run import Run, RunRequest
from gateway.store.base import SessionStore
from gateway.store.eventlog import EventLog
from gateway.store.sessions import consistent_history

if TYPE_CHECKING:
    from gateway.store.base import ControlHandler, SharedRuns

log = logging.getLogger(__name__)

RESUMED = "The worker running this run stopped; another continues it from its last turn"


@dataclass
class RunFactory:
    """What the manager needs to make each run's loop dependencies and observer, and (for
    a run taken over from another worker) its LoopConfig from its request."""

    deps: Callable[[Run, RunRequest, str, Any], LoopDeps]
    config: Callable[[RunRequest], Awaitable[LoopConfig]]


class RunManager:
    """Starts runs, finds them by id, expires finished ones, and ends them all at shutdown."""

    def __init__(
        self,
        factory: RunFactory,
        sessions: SessionStore,
        *,
        grace_s: float,
        ttl_s: float,
        max_events: int,
        on_end: Callable[[str], None] | None = None,
        shared: SharedRuns | None = None,
        on_finish: Callable[[Run, dict[str, int], float | None], None] | None = None,
        takeover_s: float = 10.0,
    ) -> None:
        self.factory = factory
        self._on_end = on_end
        self._on_finish = on_finish
        """Called with the run, its usage and its cost (None: unpriced) when its task ends,
        however it ends."""
        self.sessions = sessions
        self.shared = shared
        """The store shared with other processes, if any: runs they own are read there."""
        self._grace_s = grace_s
        self._ttl_s = ttl_s
        self._max_events = max_events
        self._runs: dict[str, Run] = {}
        self._finished: deque[tuple[float, str]] = deque()  # (finished_at, run_id)
        self._takeover_s = takeover_s
        self._lost_runs: set[str] = set()  # taken over elsewhere: save nothing of them
        self._expiry: asyncio.TimerHandle | None = None
        self.live = 0
        self.stopping = False
        """Set at shutdown: streams closed from now on were closed by the server."""
        """Runs whose task has not ended, taken over ones included."""
        self.durable: Durability | None = None
        """With the shared store: this worker's leases on its runs (see `durable`)."""
        self.other_control: ControlHandler | None = None
        """Where control messages for ids that are no run here go (a batch's cancel)."""

    def get(self, run_id: str) -> Run | None:
        self._expire_finished()
        return self._runs.get(run_id)

    def active(self) -> list[Run]:
        return [run for run in self._runs.values() if not run.done]

    async def open(self) -> None:
        """Connect the shared store, if any (it fails fast when Redis does not answer)."""
        if self.shared is not None:
            await self.shared.open(self._on_control)
            self.durable = Durability(
                self.shared.leases(), self._takeover_s, self.shared.errors, self.resume, self._lost
            )

    async def close(self) -> None:
        """After `shutdown`: the shared store writes the last terminal events, disconnects."""
        if self._expiry is not None:
            self._expiry.cancel()
        if self.durable is not None:
            await self.durable.close()
        if self.shared is not None:
            await self.shared.close()

    async def cancel(self, run_id: str) -> bool | None:
        """Cancel a run here or on the process that owns it: whether it was running, None
        if it is unknown."""
        run = self.get(run_id)
        if run is not None:
            return run.cancel("cancelled")
        return None if self.shared is None else await self.shared.cancel(run_id)

    def start(
        self, request: RunRequest, config: LoopConfig, endpoint: str, parent: Any = None
    ) -> Run:
        self._expire_finished()
        run_id = f"run_{token_hex(16)}"
        session_id = request.session_id or f"sess_{token_hex(16)}"
        shared = self.shared
        elsewhere = None if shared is None else (lambda: shared.readers(run_id))
        run = Run(run_id, session_id, EventLog(run_id, self._max_events), self._grace_s, elsewhere)
        run.owner = request.caller
        state = RunState(run_id, session_id, list(request.messages))
        deps = self.factory.deps(run, request, endpoint, parent)
        if shared is not None:
            shared.mirror(run_id, session_id, run.log)
        run.task = asyncio.create_task(self._drive(run, config, deps, state, request, endpoint))
        self._count_live(run.task)
        if self._on_finish is not None:  # a done callback: it runs even if the task never did
            on_finish = self._on_finish
            run.task.add_done_callback(lambda _: on_finish(run, state.usage, state.cost_usd))
        self._runs[run_id] = run
        return run

    def _count_live(self, task: asyncio.Task[None]) -> None:
        # A done callback: it runs however the task ends, even one cancelled before it ran.
        self.live += 1
        task.add_done_callback(self._not_live)

    def _not_live(self, _: asyncio.Task[None]) -> None:
        self.live -= 1

    def resume(self, claimed: Claimed) -> None:
        """Continue a run another worker started, from its last checkpoint: its log goes on
        after the last seq already in Redis (see `durable`)."""
        checkpoint, run_id = claimed.checkpoint, claimed.run_id
        state, request = checkpoint.state, checkpoint.request
        shared = self.shared
        assert shared is not None
        log_ = EventLog(run_id, self._max_events)
        log_.first_seq = claimed.last_seq + 1
        run = Run(run_id, state.session_id, log_, self._grace_s, lambda: shared.readers(run_id))
        run.owner = request.caller
        deps = self.factory.deps(run, request, checkpoint.endpoint, None)
        shared.mirror(run_id, state.session_id, log_, claimed.token)
        run.task = asyncio.create_task(self._drive_resumed(run, deps, state, checkpoint))
        self._count_live(run.task)
        if self._on_finish is not None:  # charged here: the worker that died never was
            on_finish = self._on_finish
            run.task.add_done_callback(lambda _: on_finish(run, state.usage, state.cost_usd))
        self._runs[run_id] = run
        run.left_elsewhere()  # nobody reads it here yet: the grace period counts from now

    async def _drive_resumed(
        self, run: Run, deps: LoopDeps, state: RunState, checkpoint: Checkpoint
    ) -> None:
        """Plan the run again on this worker (the model record may need reading), then go
        on; a run its model can no longer take ends with its error event."""
        request = checkpoint.request
        try:
            config = await self.factory.config(request)
        except GatewayError as exc:
            terminal = events.error(exc.body(request.request_id))
            ending = Ending(exc.code, terminal, state.turns, state.usage, request.request_id)
            try:
                await end_run(run, ending, deps.observer, lambda _: terminal, None)
            finally:
                self._ended(run, exc.code)
            return
        run.model = config.plan.model
        await self._drive(run, config, deps, state, request, checkpoint.endpoint)

    async def shutdown(self) -> None:
        """End every open run with its terminal event (outcome `cancelled`)."""
        self.stopping = True
        if self.durable is not None:  # take over nothing more while stopping
            await self.durable.close()
        runs = self.active()
        for run in runs:
            if not run.done:
                run.log.append(events.warning("shutdown", "The server is shutting down", 0))
            run.cancel("cancelled")
        await asyncio.gather(*(r.task for r in runs if r.task), return_exceptions=True)

    def _on_control(self, kind: str, run_id: str) -> None:
        run = self._runs.get(run_id)
        if run is None:
            if self.other_control is not None:
                self.other_control(kind, run_id)
            return
        if kind == "cancel":
            run.cancel("cancelled")
        elif kind == "idle":
            run.left_elsewhere()
        elif kind == "lost":
            self._lost(run_id)

    def _lost(self, run_id: str) -> None:
        """Another worker drives this run now: stop here (Redis refuses what this one
        writes, so its readers elsewhere see the other worker's events)."""
        run = self._runs.get(run_id)
        if run is not None:
            self._lost_runs.add(run_id)
            run.cancel("cancelled")

    async def _drive(
        self,
        run: Run,
        config: LoopConfig,
        deps: LoopDeps,
        state: RunState,
        request: RunRequest,
        endpoint: str,
    ) -> None:
        loaded = False

        async def body() -> None:
            nonlocal loaded
            if state.resumed:
                run.log.append(events.warning("run_resumed", RESUMED, state.turns))
            elif not request.replace_history:  # here, not in start: a store may need a trip
                state.messages[:0] = await self.sessions.get(run.session_id)
            loaded = True
            on_turn = None
            if self.durable is not None:
                on_turn = await self.durable.checkpoints(run.id, run.log, request, endpoint, state)
            # A resumed run may only owe its terminal event; others skip that generator.
            loop = resumed_loop if state.resumed else run_loop
            await loop(config, deps, state, _relay(run, deps.observer, on_turn))

        outcome = await run_to_end(run, request, state, body())
        save = None
        if loaded and run.id not in self._lost_runs:
            # Before the terminal event, so whoever sees it can continue the session.
            save = functools.partial(self._save, run.session_id, state.messages)
        self._lost_runs.discard(run.id)
        try:
            await end_loop(
                run,
                config,
                state,
                request,
                deps.observer,
                outcome,
                save,
                figure_check=deps.figure_check,
            )
        finally:
            self._ended(run, outcome.name)

    async def _save(self, session_id: str, messages: list[dict[str, Any]]) -> None:
        await self.sessions.save(session_id, consistent_history(messages))

    def _ended(self, run: Run, outcome: str) -> None:
        run.finished_at = time.monotonic()
        self._finished.append((run.finished_at, run.id))
        self._schedule_expiry()
        if self._on_end is not None:
            try:
                self._on_end(outcome)
            except Exception:
                log.exception("the end callback of run %s failed", run.id)

    def _schedule_expiry(self) -> None:
        """One timer, for the oldest finished run: expired runs go even when no request
        comes along to notice, so an idle server frees their logs."""
        if self._expiry is not None or not self._finished:
            return
        delay = max(0.0, self._finished[0][0] + self._ttl_s - time.monotonic()) + 0.01
        self._expiry = asyncio.get_running_loop().call_later(delay, self._on_expiry)

    def _on_expiry(self) -> None:
        self._expiry = None
        self._expire_finished()
        self._schedule_expiry()

    def _expire_finished(self) -> None:
        # Runs finish in time order, so the expired ones are at the front of the queue.
        horizon = time.monotonic() - self._ttl_s
        finished = self._finished
        while finished and finished[0][0] < horizon:
            self._runs.pop(finished.popleft()[1], None)


def _relay(run: Run, observer: RunObserver, on_turn: Callable[[], None] | None) -> Emit:
    """The loop's `emit`: each list goes into the run's log, and from there straight to the
    streams that follow it live (their writes never wait). A model's events come from the
    upstream socket's callback: relaying them wakes no task but the stream's client."""
    log_ = run.log
    first_seen = False
    # Made in the run's task. Passed to `current_task`: without a loop it asks for the
    # running one, and Python 3.11 checks that loop's pid with a syscall, once a batch.
    loop = asyncio.get_running_loop()

    def emit(batch: list[Event]) -> None:
        nonlocal first_seen
        if not first_seen and any(e["type"] in events.MODEL_EVENT_TYPES for e in batch):
            first_seen = True
            observer.first_event()
        # From the upstream's socket callback (no task), a batch is written to the
        # streams there and then. From the run's task, the streams' own tasks write it
        # after this step, together with whatever else the step appends: a run's last
        # `turn_complete` goes out with `final` and the stream's end, one write, not two.
        log_.extend(batch, push=asyncio.current_task(loop) is None)
        # `turn_complete` comes alone: a turn boundary, where the state is whole (tool
        # results included).
        if on_turn is not None and batch[-1]["type"] == "turn_complete":
            on_turn()

    return emit
