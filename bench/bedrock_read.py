"""`python -m bench.bedrock_read [--deltas N] [--runs R]`: CPU per relayed event of one long
model stream read the Messages API's way (SSE) and Bedrock's (AWS event-stream frames of
base64 chunks), through the gateway's own code:

- `sse`: `cloud_http.relay` with the `SSEDecoder` (what the `anthropic` and `vertex`
  providers do), each payload fed to `TurnTranslator`, gateway events out;
- `eventstream`: the same with the `EventStreamDecoder` (both CRCs checked, base64 decoded);
- `bedrock`: `BedrockProvider.attempt` whole: the body built, SigV4-signed with static
  keys, then as `eventstream`.

The upstream is a child process (aiohttp on 127.0.0.1) writing one pre-rendered body of
`N` text deltas in each framing, in one go. The clock is this process's CPU time; modes
take turns; each figure is the median over `R` runs, in microseconds per text delta.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import time
from typing import Any

from botocore.credentials import Credentials
from yarl import URL

from gateway.events import Event
from gateway.providers import cloud_http
from gateway.providers.anthropic.stream import SSEDecoder, TurnTranslator
from gateway.providers.base import ModelCall
from gateway.providers.bedrock.credentials import AWSCredentials
from gateway.providers.bedrock.eventstream import EventStreamDecoder, chunk_frame
from gateway.providers.bedrock.provider import BedrockProvider
from gateway.providers.http1 import HTTP1Client

MODEL = "bedrock/us.anthropic.claude-sonnet-5"


def events(deltas: int) -> list[bytes]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_bench",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-5",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    out = [
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ]
    out += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": f" word{i % 97}"},
        }
        for i in range(deltas)
    ]
    out += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": deltas},
        },
        {"type": "message_stop"},
    ]
    return [json.dumps(e, separators=(",", ":")).encode() for e in out]


def _serve(deltas: int, ports: Any) -> None:
    from aiohttp import web

    payloads = events(deltas)
    bodies = {
        "sse": b"".join(b"event: x\ndata: " + p + b"\n\n" for p in payloads),
        "eventstream": b"".join(chunk_frame(p) for p in payloads),
    }

    async def answer(request: web.Request) -> web.StreamResponse:
        await request.read()
        kind = "sse" if request.path == "/sse" else "eventstream"
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(bodies[kind])
        await response.write_eof()
        return response

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", answer)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


class Bench:
    def __init__(self, port: int) -> None:
        self.base = URL(f"http://127.0.0.1:{port}")
        self.http = HTTP1Client(connect_timeout=5, read_timeout=60)
        keys = Credentials("AKIABENCH", "bench/secret")
        self.provider = BedrockProvider(
            str(self.base),
            "us-east-1",
            MODEL,
            AWSCredentials(lambda: keys),
            connect_timeout=5,
            read_timeout=60,
        )
        self.call = ModelCall(
            model=MODEL,
            max_tokens=10**6,
            system=None,
            tools=[],
            messages=[{"role": "user", "content": "Write at length."}],
        )

    async def run(self, mode: str) -> int:
        turn = TurnTranslator(1)
        relayed = 0

        def emit(batch: list[Event]) -> None:
            nonlocal relayed
            relayed += sum(e["type"] == "delta" for e in batch)

        if mode == "bedrock":
            await self.provider.attempt(self.call, turn, emit)
            return relayed
        decoder = SSEDecoder() if mode == "sse" else EventStreamDecoder()
        url = self.base / mode
        await cloud_http.relay(self.http, url, [b"{}"], {}, decoder, turn, emit)
        turn.finish()
        return relayed

    async def close(self) -> None:
        await self.http.close()
        await self.provider.close()


MODES = ("sse", "eventstream", "bedrock")


async def measure(port: int, deltas: int, runs: int) -> dict[str, Any]:
    bench = Bench(port)
    cpu: dict[str, list[float]] = {name: [] for name in MODES}
    try:
        for mode in MODES:  # warm-up: imports, connection, first-call costs
            await bench.run(mode)
        for run in range(runs):
            for name in MODES[run % 3 :] + MODES[: run % 3]:
                started = time.process_time()
                relayed = await bench.run(name)
                spent = time.process_time() - started
                assert relayed == deltas, (name, relayed)
                cpu[name].append(spent / deltas * 1e6)
    finally:
        await bench.close()
    medians = {name: round(statistics.median(values), 3) for name, values in cpu.items()}
    ratio = round(medians["eventstream"] / medians["sse"], 3)
    return {
        "deltas": deltas,
        "runs": runs,
        "cpu_us_per_delta": medians,
        "eventstream_over_sse": ratio,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    ports = context.Queue()
    server = context.Process(target=_serve, args=(args.deltas, ports), daemon=True)
    server.start()
    try:
        port = ports.get(timeout=30)
        print(json.dumps(asyncio.run(measure(port, args.deltas, args.runs))), flush=True)
    finally:
        server.terminate()
        server.join()


if __name__ == "__main__":
    main()
