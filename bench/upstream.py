"""A lean fake Anthropic Messages API: a raw asyncio HTTP/1.1 server on loopback.

`POST /v1/messages` answers with the Messages SSE sequence of the scenario in the query
(`bench.script`), chunked, keep-alive, as the real API does. A burst's events are one
write, after the headers' own write (a client quick to read the headers may wait for the
body: one more wake-up a run, bench/notes.md, eighth round); paced ones write each text
delta at its own time (one `call_at` per event) with its send time (`time.monotonic_ns()`,
a clock every process on the machine shares) as the text.
`GET /stats` reports what was sent and this process's CPU, so the upstream can be shown
not to be the bottleneck.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from typing import Any, cast

import orjson

from bench import chat_script, script
from bench.common import event_loop, quiet_gc, raise_nofile, rss_kb
from bench.script import Scenario
from gateway.http import serving
from gateway.ops import eventloop


class Connection(asyncio.Protocol):
    """One client connection; requests are answered one at a time (no pipelining)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self.buffer = bytearray()
        self.busy = False
        self.keep_alive = True
        self.closed = False
        self.timer: asyncio.TimerHandle | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but behave as one.
        transport = cast(asyncio.Transport, transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next_request()

    def _next_request(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        method, path, version = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        self.keep_alive = version == "HTTP/1.1" and headers.get("connection") != "close"
        self.busy = True
        self.upstream.handle(self, method, path, body)

    def start(self, status: str = "200 OK", content_type: str = "text/event-stream") -> None:
        assert self.transport is not None
        head = (
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
            "Transfer-Encoding: chunked\r\nrequest-id: req_bench\r\n\r\n"
        )
        self.transport.write(head.encode())

    def send(self, data: bytes) -> None:
        if not self.closed and self.transport is not None:
            self.transport.write(b"%x\r\n%b\r\n" % (len(data), data))

    def end(self) -> None:
        self.send(b"")  # the zero-length chunk ends the body
        self.busy = False
        if self.transport is None or self.closed:
            return
        if not self.keep_alive:
            self.transport.close()
        elif self.buffer:
            self._next_request()


class Upstream:
    """Answers every request by its scenario; counts what it sent."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.turn_ends: dict[str, float] = {}
        self.reset()

    def reset(self) -> None:
        self.sent = 0
        self.streams = 0
        self.finished = 0

    def handle(self, conn: Connection, method: str, path: str, body: bytes) -> None:
        if method == "GET" and path.startswith("/stats"):
            stats = self.stats()
            if "reset=1" in path:
                self.reset()
            self._json(conn, orjson.dumps(stats))
        elif method == "GET" and path.startswith("/v1/models/"):
            self._json(conn, _model_info(path.removeprefix("/v1/models/")))
        elif method == "POST" and path.startswith("/v1/chat/completions"):
            self._chat(conn, orjson.loads(body))
        elif method == "POST" and path.startswith("/v1/messages"):
            self._messages(conn, orjson.loads(body))
        else:
            conn.start("404 Not Found", "application/json")
            conn.send(b'{"type":"error","error":{"type":"not_found_error","message":"no"}}')
            conn.end()

    @staticmethod
    def _json(conn: Connection, body: bytes) -> None:
        conn.start(content_type="application/json")
        conn.send(body)
        conn.end()

    def _messages(self, conn: Connection, request: dict[str, Any]) -> None:
        messages: list[dict[str, Any]] = request["messages"]
        scenario = Scenario.from_query(_text_of(messages[0]["content"]))
        self.streams += 1
        message_id = f"msg_bench_{self.streams:08d}"
        conn.start()
        if _is_tool_results(messages[-1]):
            self._follow_up(conn, message_id, scenario)
        elif scenario.kind == "tool":
            self._burst(conn, script.tool_reply(message_id, scenario), scenario.size // 20)
        elif scenario.kind == "tools":
            self._burst(conn, script.tools_reply(message_id, scenario), scenario.tools)
            self.turn_ends[scenario.tag] = time.monotonic()
        elif scenario.kind == "fault":  # overloaded mid-stream, after output: no retry
            fault = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error"}}\n\n'
            self._burst(conn, script.text_open(message_id) + script.text_delta("part") + fault, 1)
        elif scenario.rate > 0:
            self._paced(conn, message_id, scenario)
        else:
            cycle = [script.text_delta(text) for text in script.BURST_TEXTS]
            deltas = b"".join(cycle[i % len(cycle)] for i in range(scenario.n))
            body_bytes = script.text_open(message_id) + deltas + script.text_close(scenario.n)
            self._burst(conn, body_bytes, scenario.n)

    def _chat(self, conn: Connection, request: dict[str, Any]) -> None:
        """The text scenarios (burst and paced) as a Chat Completions stream."""
        scenario = Scenario.from_query(chat_script.question(request["messages"]))
        self.streams += 1
        chat_id = f"chatcmpl-bench{self.streams:08d}"
        conn.start()
        if scenario.rate > 0:
            self._paced(conn, chat_id, scenario, chat=True)
            return
        cycle = [chat_script.text_delta(chat_id, text) for text in script.BURST_TEXTS]
        deltas = b"".join(cycle[i % len(cycle)] for i in range(scenario.n))
        opened = chat_script.text_open(chat_id)
        self._burst(conn, opened + deltas + chat_script.text_close(chat_id, scenario.n), scenario.n)

    def _burst(self, conn: Connection, data: bytes, deltas: int) -> None:
        conn.send(data)
        conn.end()
        self.sent += deltas
        self.finished += 1

    def _follow_up(self, conn: Connection, message_id: str, scenario: Scenario) -> None:
        """The turn after the tools: a short answer; `tools` runs say how long it waited."""
        ended = self.turn_ends.pop(scenario.tag, None)
        text = "done"
        if ended is not None:
            text = f"gap_ms={(time.monotonic() - ended) * 1000:.3f}"
        self._burst(conn, script.text_reply(message_id, text), 1)

    def _paced(
        self, conn: Connection, message_id: str, scenario: Scenario, *, chat: bool = False
    ) -> None:
        start = self.loop.time()
        count = 0

        def delta(text: str) -> bytes:
            return chat_script.text_delta(message_id, text) if chat else script.text_delta(text)

        def close(n: int) -> bytes:
            return chat_script.text_close(message_id, n) if chat else script.text_close(n)

        def tick() -> None:
            nonlocal count
            if conn.closed:
                return
            conn.send(delta(str(time.monotonic_ns())))
            count += 1
            self.sent += 1
            if count >= scenario.n:
                conn.send(close(count))
                conn.end()
                self.finished += 1
                return
            conn.timer = self.loop.call_at(start + count / scenario.rate, tick)

        conn.send(chat_script.text_open(message_id) if chat else script.text_open(message_id))
        tick()

    def stats(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "streams": self.streams,
            "finished": self.finished,
            "cpu_ns": time.process_time_ns(),
            "rss_kb": rss_kb(),
        }


def _text_of(content: Any) -> str:
    """The question: a string, or (with a cache breakpoint on it) its first text block."""
    if isinstance(content, str):
        return content
    return str(next(b["text"] for b in content if b.get("type") == "text"))


def _model_info(model_id: str) -> bytes:
    """The Models API record the gateway reads at startup: a model with no optional
    capabilities, so requests carry nothing the bench does not measure."""
    off = {"supported": False}
    capabilities: dict[str, Any] = {
        name: off
        for name in ("batch", "citations", "code_execution", "image_input", "pdf_input",
                     "structured_outputs", "context_management")
    }  # fmt: skip
    capabilities["effort"] = {"supported": False, "low": off, "medium": off, "high": off,
                              "max": off}  # fmt: skip
    capabilities["server_tools"] = {"supported": False, "code_execution": off, "web_search": off}
    types = {"adaptive": off, "enabled": off, "disabled": {"supported": True},
             "between_tools": off}  # fmt: skip
    capabilities["thinking"] = {"supported": False, "types": types}
    return orjson.dumps({
        "type": "model", "id": model_id, "display_name": model_id, "lifecycle": "active",
        "created_at": "2026-01-01T00:00:00Z", "deprecated_at": None, "retires_at": None,
        "max_input_tokens": 1_000_000, "max_tokens": 128_000, "capabilities": capabilities,
    })  # fmt: skip


def _is_tool_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "user"
        and isinstance(content, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


async def serve() -> None:
    raise_nofile()
    loop = asyncio.get_running_loop()
    upstream = Upstream()
    # Accepted as the gateway accepts (every waiting connection each time the socket is
    # readable): uvloop's own server takes one a loop iteration, and with 1,000 streams
    # opening on this busy core the upstream's queue, not the system under test, set the
    # time to first event.
    sock = serving.listening_socket("127.0.0.1", 0)
    server = serving.Acceptor(loop, sock, lambda: Connection(upstream), serving.LISTEN_BACKLOG)
    quiet_gc()
    print(f"READY {sock.getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        server.close()


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        eventloop.run(serve(), event_loop())
