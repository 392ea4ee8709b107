"""A cloud call (Bedrock, Vertex) holds no copy of its request while the answer streams:
the signed or authorized body is the stream's largest buffer, and a long answer would
otherwise keep it for minutes."""

from __future__ import annotations

import asyncio
import tracemalloc
from typing import Any, cast

from yarl import URL

from gateway.events import Event
from gateway.providers import cloud_http
from gateway.providers.anthropic.stream import SSEDecoder, TurnTranslator
from tests.test_http1 import SSE, chunked, client


async def test_a_cloud_request_is_let_go_once_its_answer_begins() -> None:
    release = asyncio.Event()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).lower()
        left = int(head.split(b"content-length: ")[1].split(b"\r\n")[0])
        while left:  # read and drop: this server keeps none of it
            left -= len(await reader.read(min(left, 1 << 16)))
        first, rest = chunked(SSE, SSE).split(SSE, 1)
        writer.write(first + SSE)
        await release.wait()
        writer.write(rest)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    url = URL(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/messages")
    held: list[int] = []

    def emit(batch: list[Event]) -> None:
        pass

    class Watched:  # around the decoder, not a subclass: it may be compiled
        def __init__(self) -> None:
            self._decoder = SSEDecoder()

        def feed(self, chunk: bytes) -> list[bytes]:
            held.append(tracemalloc.get_traced_memory()[0] - before)
            release.set()
            return self._decoder.feed(chunk)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._decoder, name)

    http = client()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        body = [b"x" * 4_000_000]
        answer = await cloud_http.relay(
            http,
            url,
            body,
            {"content-type": "x"},
            cast(SSEDecoder, Watched()),
            TurnTranslator(0),
            emit,
        )
    finally:
        tracemalloc.stop()
        await http.close()
        server.close()
    assert answer is None and body == [] and held
    assert held[0] < 1_000_000  # the 4 MB body and the 4 MB request are gone
