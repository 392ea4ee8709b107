"""`python -m bench.relays KIND --upstream URL`: the reference relays the gateway is measured
against. Each is an aiohttp app with `POST /api/stream {"query"}` that makes the same
upstream call and writes every upstream event as `id: N\\ndata: ...\\n\\n`, and nothing else:

- `raw`: aiohttp client, SSE split by hand, payload bytes re-framed as they are, one write
  per upstream read. The floor: what relaying costs with no per-event work at all.
- `sdk-events`: the official SDK, `messages.create(stream=True)`, one `RawMessageStreamEvent`
  object per event, written back with `to_json` as it arrives.
- `sdk-helper`: the SDK's stream helper, `messages.stream(...)`, the same for its raw events
  (its derived `text`/`input_json` events are skipped).

Prints `READY <port>`.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator, Awaitable, Callable

import aiohttp
import anthropic
import orjson
from aiohttp import web
from anthropic.types import MessageParam

from bench import probe
from bench.common import event_loop, raise_nofile
from gateway.http import serving
from gateway.ops.eventloop import new_loop

MODEL = "claude-bench"
MAX_TOKENS = 1024
HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
RAW_TYPES = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
    }
)
UPSTREAM = web.AppKey("upstream", str)
SESSION = web.AppKey("session", aiohttp.ClientSession)
CLIENT = web.AppKey("client", anthropic.AsyncAnthropic)


class Reframer:
    """Upstream SSE bytes to `id:`/`data:` frames, payloads untouched."""

    def __init__(self) -> None:
        self.buffer = b""
        self.seq = 0

    def feed(self, chunk: bytes) -> bytes:
        data = self.buffer + chunk if self.buffer else chunk
        end = data.rfind(b"\n\n")
        if end < 0:
            self.buffer = data
            return b""
        self.buffer = data[end + 2 :]
        frames = []
        for block in data[:end].split(b"\n\n"):
            start = block.find(b"data: ")
            if start >= 0:
                self.seq += 1
                frames.append(b"id: %d\ndata: %b\n\n" % (self.seq, block[start + 6 :]))
        return b"".join(frames)


async def _open(request: web.Request) -> tuple[str, web.StreamResponse]:
    query = orjson.loads(await request.read())["query"]
    response = web.StreamResponse(headers=HEADERS)
    await response.prepare(request)
    return query, response


def _messages(query: str) -> list[MessageParam]:
    return [{"role": "user", "content": query}]


async def raw_relay(request: web.Request) -> web.StreamResponse:
    query, response = await _open(request)
    body = {"model": MODEL, "max_tokens": MAX_TOKENS, "messages": _messages(query), "stream": True}
    headers = {
        "content-type": "application/json",
        "x-api-key": "bench",
        "anthropic-version": "2023-06-01",
    }
    url = request.app[UPSTREAM] + "/v1/messages"
    reframer = Reframer()
    async with request.app[SESSION].post(url, data=orjson.dumps(body), headers=headers) as up:
        async for chunk in up.content.iter_any():
            frames = reframer.feed(chunk)
            if frames:
                await response.write(frames)
    await response.write_eof()
    return response


async def sdk_events_relay(request: web.Request) -> web.StreamResponse:
    query, response = await _open(request)
    client = request.app[CLIENT]
    stream = await client.messages.create(
        model=MODEL, max_tokens=MAX_TOKENS, messages=_messages(query), stream=True
    )
    seq = 0
    async for event in stream:
        seq += 1
        await response.write(b"id: %d\ndata: %b\n\n" % (seq, event.to_json(indent=None).encode()))
    await response.write_eof()
    return response


async def sdk_helper_relay(request: web.Request) -> web.StreamResponse:
    query, response = await _open(request)
    client = request.app[CLIENT]
    seq = 0
    async with client.messages.stream(
        model=MODEL, max_tokens=MAX_TOKENS, messages=_messages(query)
    ) as stream:
        async for event in stream:
            if event.type in RAW_TYPES:
                seq += 1
                data = event.to_json(indent=None).encode()
                await response.write(b"id: %d\ndata: %b\n\n" % (seq, data))
    await response.write_eof()
    return response


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
RELAYS: dict[str, Handler] = {
    "raw": raw_relay,
    "sdk-events": sdk_events_relay,
    "sdk-helper": sdk_helper_relay,
}


async def _clients(app: web.Application) -> AsyncIterator[None]:
    # As the gateway's Messages API session: a connection per live stream, no cap.
    connector = aiohttp.TCPConnector(limit=0)
    app[SESSION] = aiohttp.ClientSession(connector=connector)
    app[CLIENT] = anthropic.AsyncAnthropic(
        api_key="bench",
        base_url=app[UPSTREAM],
        max_retries=0,
        http_client=anthropic.DefaultAioHttpClient(),
    )
    yield
    await app[CLIENT].close()
    await app[SESSION].close()


def create_relay(kind: str, upstream: str) -> web.Application:
    app = web.Application()
    app[UPSTREAM] = upstream.rstrip("/")
    app.cleanup_ctx.append(_clients)
    app.router.add_post("/api/stream", RELAYS[kind])
    probe.install(app)
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=sorted(RELAYS))
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    raise_nofile()
    app = create_relay(args.kind, args.upstream)
    sock = serving.listening_socket("127.0.0.1", 0)  # served as the gateway is
    print(f"READY {sock.getsockname()[1]}", flush=True)
    serving.run(app, sock, new_loop(event_loop()), shutdown_timeout=5)


if __name__ == "__main__":
    main()
