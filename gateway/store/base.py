"""What the layers above need of a store, as interfaces: nothing above `store/` names Redis.

A run's own process holds its log in memory (`EventLog`), where readers on that process
read it. With a shared store, the log is also mirrored where every process can find the
run: to re-attach to it, cancel it, count its readers, check its owner, and, for durable
runs, hold a lease on it and take it over from a dead worker. Redis is the one shared
store (`store.redis`); without one a process sees its own runs only.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any, Protocol

from gateway.store.eventlog import EventLog

Message = dict[str, Any]

ControlHandler = Callable[[str, str], None]
"""Called with (`cancel` | `idle`, run_id) for each message sent to this process, and
with (`lost`, run_id) when the store refuses an owned run's write: another worker took it
over."""


class SessionStore(Protocol):
    """Conversation histories by session id. Async, so a store can live in another server;
    memory answers at once."""

    async def get(self, session_id: str) -> list[Message]: ...
    async def save(self, session_id: str, messages: list[Message]) -> None: ...


class Leases(Protocol):
    """Durable runs' leases and fencing tokens (see `runs.durable` for the timing)."""

    lease_ms: int
    """How long a lease lasts; each write of an owned run's frames renews it too."""

    async def claim(self, run_id: str, checkpoint: bytes) -> int:
        """Claim a new run with its first checkpoint: its fencing token (0: not claimed)."""
        ...

    async def renew(self, owned: list[tuple[str, int]]) -> list[int]:
        """Renew the leases of (run id, token): per run 1 renewed, 0 taken over elsewhere,
        anything else ended."""
        ...

    async def take_over(self, limit: int, grace_ms: int) -> list[tuple[str, int, bytes, int]]:
        """Claim up to `limit` runs whose lease has been missing for `grace_ms`: (run id,
        new token, its last checkpoint, its last seq in the store)."""
        ...

    def checkpoint(self, run_id: str, seq: int, data: bytes) -> None:
        """Write a run's checkpoint with the frames before `seq`, fenced by its token."""
        ...


class SharedBatches(Protocol):
    """Batches' journals as every process sees them (`batches.journal` says what is in
    them), each batch driven by one worker at a time: a lease it renews, and a fencing
    token that each of its writes carries, so a worker that lost the batch has its
    writes refused. Every call raises `errors` when the store fails; of those, `faults`
    are the caller's (a value the store cannot take), which no retry mends."""

    errors: tuple[type[BaseException], ...]
    faults: tuple[type[BaseException], ...]
    lease_ms: int

    async def claim(
        self, batch_id: str, owner: str, meta: bytes, ttl_s: int, head: bytes = b"{}"
    ) -> int:
        """Claim a new batch with its record (`head`: the part its progress needs): its
        token (0: not claimed)."""
        ...

    async def write(
        self, batch_id: str, token: int, parts: dict[str, dict[str, bytes]], ttl_s: int
    ) -> bool:
        """Set the fields of the batch's parts (`q` questions' checkpoints and events, `p`
        their progress, `r` rounds) at once if `token` still holds it: whether it did."""
        ...

    async def finish(self, batch_id: str, token: int, summary: bytes, ttl_s: int) -> bool:
        """The batch ended: its summary, its lease dropped (fenced as `write`)."""
        ...

    async def renew(self, owned: list[tuple[str, int]], ttl_s: int) -> list[int]:
        """Per (batch id, token): 1 renewed, 0 taken over elsewhere, 2 ended or gone."""
        ...

    async def release(self, batch_id: str, token: int) -> None:
        """Give the lease up (a worker stopping): another worker may take the batch."""
        ...

    async def take_over(self, limit: int, grace_ms: int) -> list[tuple[str, int]]:
        """Claim up to `limit` running batches whose lease has been missing for
        `grace_ms`: (batch id, new token)."""
        ...

    async def load(self, batch_id: str) -> dict[str, dict[str, bytes]] | None:
        """The batch's parts as written (`batch`, `q`, `p`, `r`); None if unknown."""
        ...

    async def summary(self, batch_id: str) -> dict[str, dict[str, bytes]] | None:
        """What its progress reads: the record's head, status and summary (`batch`), the
        questions' progress (`p`) and the rounds (`r`); None if unknown."""
        ...

    async def events(self, batch_id: str, indexes: range) -> list[bytes]:
        """These questions' events as journaled (b"" for one with none yet)."""
        ...

    async def cancel(self, batch_id: str) -> bool | None:
        """Ask the worker driving the batch to cancel it (a control message `cancel
        {batch_id}`): whether it was running, None if unknown."""
        ...


class SharedRuns(Protocol):
    """Runs as every process sees them: mirrored by their owner, found by anyone."""

    errors: tuple[type[BaseException], ...]
    """What a failing store raises (a caller that can go on without it catches these)."""

    async def open(self, on_control: ControlHandler) -> None: ...
    async def close(self) -> None: ...
    def mirror(self, run_id: str, session_id: str, event_log: EventLog, token: int = 0) -> None:
        """Copy the run's log to the store as it grows (the owner's log stays the truth)."""
        ...

    async def readers(self, run_id: str) -> int:
        """Readers of an owned run attached on other processes."""
        ...

    async def attach(self, run_id: str) -> str | None:
        """Count a reader of a run owned elsewhere in: its status, None if unknown."""
        ...

    async def detach(self, run_id: str) -> None: ...
    async def cancel(self, run_id: str) -> bool | None:
        """Ask the owner to cancel: whether it was running, None if the run is unknown."""
        ...

    def follow(
        self, run_id: str, after: int, heartbeat_s: float, *, live: bool
    ) -> AsyncGenerator[bytes, None]:
        """The run's frames after seq `after` until its terminal one; b"" for a ping."""
        ...

    async def position(self, run_id: str, after: int) -> tuple[str, int] | None:
        """A run's status and last seq in the store (None: unknown there), for a reader
        that starts after seq `after`."""
        ...

    def backlog(
        self, run_id: str, after: int, last: int
    ) -> AsyncGenerator[tuple[bytes, int, bool], None]:
        """The frames after seq `after` up to `last`, a bounded window at a time: each
        window's frames, its last seq, and whether that was the run's terminal frame."""
        ...

    async def owner(self, run_id: str) -> str | None:
        """The name of the key that started the run (None if not recorded)."""
        ...

    async def record_owner(self, run_id: str, owner: str) -> None: ...
    async def check(self) -> dict[str, Any]:
        """For /health: whether the store answers now, its last error."""
        ...

    def leases(self) -> Leases: ...
    def batches(self) -> SharedBatches: ...
