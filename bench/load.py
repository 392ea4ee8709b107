"""The load client: N SSE streams over raw asyncio connections, started over a ramp.

`python -m bench.load < spec.json` prints one JSON result. It speaks just enough HTTP/1.1
(one request per connection, chunked or close-delimited bodies) to stay far cheaper per
event than the systems it measures. Every stream records when it started, its first text
delta, each delta's latency (when the text is an upstream send time) and its terminal
event; tool-call phases are timed for the tool-input case.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import orjson

from bench.common import cpu_s, event_loop, quiet_gc, raise_nofile, schedstat
from bench.wire import Dechunker, Response, request_bytes
from gateway.ops import eventloop

OK_TERMINALS = frozenset({"final", "message_stop"})
TOOL_PHASES = ("tool_start", "tool_input_delta", "tool_use")


@dataclass
class StreamResult:
    started_ns: int = 0
    connected_ns: int = 0
    """When the TCP connection was made and the request written."""
    headers_ns: int = 0
    """When the response's status line and headers had arrived."""
    first_delta_ns: int = 0
    ended_ns: int = 0
    status: int = 0
    frames: int = 0
    deltas: int = 0
    terminal: str = ""
    error: str = ""
    run_id: str = ""
    result: str = ""
    latencies_ms: list[float] = field(default_factory=list)
    phases: dict[str, list[int]] = field(default_factory=dict)
    """Tool phase -> [first arrival ns, last arrival ns, count]."""


class Reader(asyncio.Protocol):
    """One request and its SSE response."""

    def __init__(self, request: bytes, result: StreamResult, done: asyncio.Future[None]) -> None:
        self.request = request
        self.result = result
        self.done = done
        self.response = Response()
        self.chunks: Dechunker | None = None
        self.pending = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but behave as one.
        transport = cast(asyncio.Transport, transport)
        transport.write(self.request)
        self.result.connected_ns = time.monotonic_ns()

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        if not self.response.complete:
            data = self.response.feed(data)
            if not self.response.complete:
                return
            self.result.status = self.response.status
            self.result.headers_ns = now
            self.chunks = Dechunker() if self.response.chunked else None
        if self.chunks is not None:
            data = self.chunks.feed(data)
        if data:
            self._frames(data, now)
        if self.chunks is not None and self.chunks.done:
            self._finish(now)

    def connection_lost(self, exc: Exception | None) -> None:
        self._finish(time.monotonic_ns())

    def _finish(self, now: int) -> None:
        if not self.done.done():
            self.result.ended_ns = now
            self.done.set_result(None)

    def _frames(self, data: bytes, now: int) -> None:
        data = self.pending + data if self.pending else data
        end = data.rfind(b"\n\n")
        if end < 0:
            self.pending = data
            return
        self.pending = data[end + 2 :]
        for frame in data[:end].split(b"\n\n"):
            start = frame.find(b"data: ")
            if start >= 0:
                self._event(orjson.loads(frame[start + 6 :]), now)

    def _event(self, event: dict[str, Any], now: int) -> None:
        result = self.result
        result.frames += 1
        kind = event.get("type")
        text: str | None = None
        if kind == "delta":
            text = event["text"]
        elif kind == "content_block_delta" and event["delta"]["type"] == "text_delta":
            text = event["delta"]["text"]
        elif kind == "tool_call":
            self._phase(event["phase"], now)
        elif kind in OK_TERMINALS or kind == "error":
            result.terminal = kind
            result.result = str(event.get("result", ""))
            if kind == "error":
                result.error = str(event.get("error"))[:300]
        if not result.run_id and "run_id" in event:
            result.run_id = event["run_id"]
        if text is None:
            return
        result.deltas += 1
        if not result.first_delta_ns:
            result.first_delta_ns = now
        if text.isdigit():
            result.latencies_ms.append((now - int(text)) / 1e6)

    def _phase(self, phase: str, now: int) -> None:
        seen = self.result.phases.setdefault(phase, [now, now, 0])
        seen[1] = now
        seen[2] += 1


async def one_stream(spec: dict[str, Any], delay_s: float, result: StreamResult) -> None:
    await asyncio.sleep(delay_s)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    request = request_bytes(spec)
    result.started_ns = time.monotonic_ns()
    transport: asyncio.BaseTransport | None = None
    try:
        async with asyncio.timeout(spec["deadline_s"]):
            transport, _ = await loop.create_connection(
                lambda: Reader(request, result, done), spec["host"], spec["port"]
            )
            await done
    except TimeoutError:
        result.error = "timeout"
    except OSError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if transport is not None:
            transport.close()
    if not result.error and result.status != 200:
        result.error = f"HTTP {result.status}"
    elif not result.error and result.terminal not in OK_TERMINALS:
        result.error = f"no terminal event (got {result.terminal or 'none'})"


async def run(spec: dict[str, Any]) -> dict[str, Any]:
    """Run `spec["streams"]` streams started evenly over `spec["ramp_s"]` seconds."""
    raise_nofile()
    quiet_gc()
    count = int(spec.get("streams", 1))
    ramp = float(spec.get("ramp_s", 0.0))
    results = [StreamResult() for _ in range(count)]
    started = time.monotonic()
    cpu_before = cpu_s()
    wait_before = schedstat()[1]
    async with asyncio.TaskGroup() as group:
        for i, result in enumerate(results):
            group.create_task(one_stream(spec, ramp * i / count, result))
    summary = summarize(results, time.monotonic() - started, cpu_s() - cpu_before, spec)
    summary["wait_s"] = (schedstat()[1] - wait_before) / 1e9
    return summary


def summarize(
    results: list[StreamResult], wall_s: float, cpu: float, spec: dict[str, Any]
) -> dict[str, Any]:
    on_time_ms = float(spec.get("on_time_ms", 100.0))
    latencies = [lat for r in results for lat in r.latencies_ms]
    errors = [r.error for r in results if r.error]
    summary: dict[str, Any] = {
        "streams": len(results),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:5],
        "deltas": sum(r.deltas for r in results),
        "frames": sum(r.frames for r in results),
        "ttfe_ms": [(r.first_delta_ns - r.started_ns) / 1e6 for r in results if r.first_delta_ns],
        "latencies": len(latencies),
        "on_time": sum(1 for lat in latencies if lat <= on_time_ms),
        "latency_ms": sorted(latencies)[:: max(1, len(latencies) // 20_000)],
        "wall_s": wall_s,
        "cpu_s": cpu,
    }
    if spec.get("detail"):
        summary["detail"] = [
            {k: v for k, v in asdict(r).items() if k != "latencies_ms"} for r in results
        ]
    return summary


def main() -> None:
    spec = json.load(sys.stdin)
    summary = eventloop.run(run(spec), event_loop())
    data = (json.dumps(summary) + "\n").encode()
    # Straight to the descriptor: under uvloop, print() cut summaries at 128 KB (partial
    # writes to the pipe went unnoticed), which broke the full run's paced case.
    os.set_blocking(1, True)
    while data:
        data = data[os.write(1, data) :]


if __name__ == "__main__":
    main()
