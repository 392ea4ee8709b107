"""The audit log: one JSON line per run start, tool call and run end, saying which key (by
name, never the key itself) ran which tool with what input.

Lines are queued in memory and written by one task: to the file (in a worker thread, so a
slow disk never stalls the event loop) and to a sink of `store/audit.py` if one is given
(with REDIS_URL, a Redis stream). `close()` writes whatever is queued, so shutdown loses nothing;
`reopen()` (on SIGHUP) closes and reopens the file, for logrotate's `postrotate`.

The queue is bounded (GATEWAY_AUDIT_QUEUE_MAX): when the writer falls behind (a stalled
disk, a Redis that times out), new lines are dropped, counted and warned about at most
every `WARN_EVERY_S`; a run never waits for its audit line. The writer outlives any failure
of a write: it logs it and goes on with the next batch.

Tool inputs are written as `input_hmac_sha256` and `input_bytes` unless
GATEWAY_AUDIT_CONTENT=true: the keyed hash proves what was sent without keeping it, and
without the key (GATEWAY_AUDIT_HASH_KEY) nobody can test guesses of a short input against
it, as anyone could with a plain SHA-256.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import secrets
import sys
import time
from collections import deque
from datetime import UTC, datetime
from typing import IO, Any

import orjson

from gateway.ops.metrics import Counter
from gateway.store.audit import AuditSink

log = logging.getLogger(__name__)

# Lines per write. Measured with 20,000 lines queued at once: sent to Redis as one pipeline
# they held the event loop for 876 ms (packing and parsing cost ~44 us a command); in
# batches of 100 the loop's longest stall was 11 ms (file only: 5 ms, 20,000 lines in 50 ms).
BATCH = 100
QUEUE_MAX = 50_000
WARN_EVERY_S = 10.0  # dropping goes on for as long as the writer is behind: one line a while


def keyed_digest(key: bytes, raw: bytes) -> str:
    """HMAC-SHA256 of `raw` under `key`, as hex."""
    return hmac.digest(key, raw, "sha256").hex()


class AuditLog:
    """A buffered writer of audit lines to a file (or stdout) and a sink (a Redis stream)."""

    def __init__(
        self,
        path: str,
        *,
        hash_key: bytes | None = None,
        content: bool = False,
        sink: AuditSink | None = None,
        queue_max: int = QUEUE_MAX,
        dropped: Counter | None = None,
    ) -> None:
        self.path = path
        self.content = content
        self.queue_max = queue_max
        # The key's inner and outer blocks hashed once; each input costs a copy (6.5 us a
        # 53-byte input against 9.9 us for hmac.digest, measured).
        self._mac = hmac.new(hash_key or self._random_key(content), digestmod="sha256")
        self._dropped = dropped
        self._unwarned = 0  # lines dropped since the last warning
        self._warned_at = -math.inf
        self.sink = sink
        self._queue: deque[bytes] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._reopen = False
        self._file: IO[bytes] | None = None
        self._writer: asyncio.Task[None] | None = None

    @staticmethod
    def _random_key(content: bool) -> bytes:
        if not content:
            log.warning(
                "audit: GATEWAY_AUDIT_HASH_KEY is not set: tool inputs are hashed with a "
                "random key of this process, so their hashes cannot be compared across "
                "restarts, workers or replicas, nor checked against a known input later"
            )
        return secrets.token_bytes(32)

    def start(self) -> None:
        self._writer = asyncio.create_task(self._write_loop())

    def write(self, event: str, fields: dict[str, Any]) -> None:
        """Queue one line (never blocks; the writer task does the I/O); drop it if full."""
        if len(self._queue) >= self.queue_max:
            self._drop()
            return
        ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        self._queue.append(orjson.dumps({"ts": ts, "event": event, **fields}))
        self._wake.set()

    def digest(self, raw: bytes) -> str:
        """The keyed hash of a tool input, as written in `input_hmac_sha256`."""
        mac = self._mac.copy()
        mac.update(raw)
        return mac.hexdigest()

    def reopen(self) -> None:
        """Close and reopen the file before the next write (after a rotation)."""
        self._reopen = True
        self._wake.set()

    async def close(self) -> None:
        """Write every queued line, then close the file and the Redis client."""
        self._closing = True
        self._wake.set()
        if self._writer is not None:
            await self._writer
        else:  # never started: write what was queued here
            await self._write_loop()
        if self._file is not None and self._file is not sys.stdout.buffer:
            self._file.close()
        if self.sink is not None:
            await self.sink.close()

    def _drop(self) -> None:
        if self._dropped is not None:
            self._dropped.inc()
        self._unwarned += 1
        now = time.monotonic()
        if now - self._warned_at >= WARN_EVERY_S:
            log.warning(
                "audit: %d lines queued, the writer is behind: %d lines dropped since the "
                "last warning",
                self.queue_max,
                self._unwarned,
            )
            self._warned_at, self._unwarned = now, 0

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue or self._reopen:
                reopen, self._reopen = self._reopen, False
                queue = self._queue
                lines = [queue.popleft() for _ in range(min(BATCH, len(queue)))]
                await self._write(lines, reopen)
            if self._closing:
                return

    async def _write(self, lines: list[bytes], reopen: bool) -> None:
        """One batch to the file and the stream. Nothing a write raises may end the writer:
        the lines after it, and close()'s flush, depend on it."""
        try:
            await asyncio.to_thread(self._to_file, lines, reopen)
        except Exception:
            log.exception("audit: cannot write %d lines to %s", len(lines), self.path)
            self._reopen = True  # a file left in a bad state: start the next batch afresh
        sink = self.sink
        if not lines or sink is None:
            return
        try:
            await sink.add(lines)
        except sink.errors as exc:  # Redis away or slow: expected, no traceback
            log.error("audit: cannot add %d lines to the Redis stream (%s)", len(lines), exc)
        except Exception:
            log.exception("audit: cannot add %d lines to the Redis stream", len(lines))

    def _to_file(self, lines: list[bytes], reopen: bool) -> None:
        """In a worker thread: append the lines (after reopening the file, if asked)."""
        if reopen and self._file is not None and self._file is not sys.stdout.buffer:
            self._file.close()
            self._file = None
        try:
            if self._file is None:
                self._file = sys.stdout.buffer if self.path == "-" else open(self.path, "ab")  # noqa: SIM115
            self._file.write(b"".join(line + b"\n" for line in lines))
            self._file.flush()
        except OSError as exc:  # keep serving; the Redis copy (if any) still has the lines
            log.error("audit: cannot write %d lines to %s (%s)", len(lines), self.path, exc)


class RunAudit:
    """The audit lines of one run."""

    def __init__(self, audit: AuditLog, key: str, run_id: str, session_id: str) -> None:
        self._audit = audit
        self._base = {"key": key, "run_id": run_id, "session_id": session_id}

    def run_start(self, endpoint: str, model: str) -> None:
        self._audit.write("run_start", {**self._base, "endpoint": endpoint, "model": model})

    def tool_call(
        self,
        tool: str,
        tool_input: Any,
        *,
        result_bytes: int,
        is_error: bool,
        duration_ms: float,
        outcome: str,
    ) -> None:
        fields = {**self._base, "tool": tool, **self._input(tool_input)}
        fields |= {
            "result_bytes": result_bytes,
            "is_error": is_error,
            "duration_ms": round(duration_ms, 1),
            "outcome": outcome,
        }
        self._audit.write("tool_call", fields)

    def run_end(
        self, outcome: str, duration_ms: float, usage: dict[str, int], *, failed: bool
    ) -> None:
        """`outcome` is the run's outcome, or its error code when it `failed`."""
        fields = {**self._base, "outcome": outcome, "duration_ms": round(duration_ms, 1)}
        fields["is_error"] = failed
        fields["input_tokens"] = usage.get("input_tokens", 0)
        fields["output_tokens"] = usage.get("output_tokens", 0)
        self._audit.write("run_end", fields)

    def _input(self, tool_input: Any) -> dict[str, Any]:
        if tool_input is None:  # a call that was refused before its input was read
            return {}
        if self._audit.content:
            return {"input": tool_input}
        raw = orjson.dumps(tool_input, option=orjson.OPT_SORT_KEYS)
        return {"input_hmac_sha256": self._audit.digest(raw), "input_bytes": len(raw)}
