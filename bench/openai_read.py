"""`python -m bench.openai_read [--deltas N] [--runs R]`: CPU per event of reading one
long Chat Completions stream, four ways, through the official SDK client over HTTP:

- `floor`: the SDK makes the request and the raw body is read and dropped;
- `gateway`: `OpenAIProvider.attempt`, i.e. the raw body split by hand, each `data`
  payload parsed with orjson and fed to `ChatTurn`, gateway events out;
- `sdk-objects`: `chat.completions.create(stream=True)`, a `ChatCompletionChunk` per event;
- `sdk-helper`: `chat.completions.stream(...)`, chunk objects plus its accumulated snapshot.

The upstream is a child process (aiohttp on 127.0.0.1) that writes one pre-rendered body
of `N` text deltas, shaped as OpenAI writes them, in one go. The clock is this process's
CPU time, so the upstream's work is not counted. Modes take turns; each figure is the
median over `R` runs, in microseconds per text delta. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import openai
from aiohttp import web

from gateway.events import Event
from gateway.providers.base import ModelCall
from gateway.providers.openai.provider import OpenAIProvider

MESSAGES: Any = [{"role": "user", "content": "Write at length."}]


def render(deltas: int) -> bytes:
    """A Chat Completions stream body with `deltas` text deltas, usage and `[DONE]`."""
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_760_000_000,
        "model": "gpt-bench",
        "service_tier": "default",
        "system_fingerprint": "fp_bench",
        "usage": None,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        data = json.dumps({**base, "choices": [choice]}, separators=(",", ":"))
        return f"data: {data}\n\n".encode()

    parts = [chunk({"role": "assistant", "content": "", "refusal": None})]
    parts += [chunk({"content": f" word{i % 97}"}) for i in range(deltas)]
    parts.append(chunk({}, "stop"))
    usage = {"prompt_tokens": 10, "completion_tokens": deltas, "total_tokens": deltas + 10}
    tail = json.dumps({**base, "choices": [], "usage": usage}, separators=(",", ":"))
    parts.append(f"data: {tail}\n\ndata: [DONE]\n\n".encode())
    return b"".join(parts)


def _serve(deltas: int, ports: Any) -> None:
    body = render(deltas)

    async def completions(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(body)
        await response.write_eof()
        return response

    async def main() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", completions)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        ports.put(runner.addresses[0][1])
        await asyncio.Event().wait()

    asyncio.run(main())


Mode = Callable[[openai.AsyncOpenAI], Awaitable[int]]


async def floor(client: openai.AsyncOpenAI) -> int:
    create = client.chat.completions.with_streaming_response.create
    async with create(model="m", messages=MESSAGES, stream=True) as response:
        async for _ in response.http_response.aiter_raw():
            pass
    return 0


async def gateway(client: openai.AsyncOpenAI) -> int:
    provider = OpenAIProvider(client)
    call = ModelCall(model="m", max_tokens=10**6, messages=MESSAGES, system=None, tools=[])
    turn = provider.new_turn(1)
    deltas = 0

    def emit(batch: list[Event]) -> None:
        nonlocal deltas
        deltas += sum(e["type"] == "delta" for e in batch)

    await provider.attempt(call, turn, emit)
    return deltas


async def sdk_objects(client: openai.AsyncOpenAI) -> int:
    stream = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    relayed = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            relayed.append({"type": "delta", "text": chunk.choices[0].delta.content})
    return len(relayed)


async def sdk_helper(client: openai.AsyncOpenAI) -> int:
    relayed = []
    async with client.chat.completions.stream(model="m", messages=MESSAGES) as stream:
        async for event in stream:
            if event.type == "content.delta" and event.delta:
                relayed.append({"type": "delta", "text": event.delta})
    return len(relayed)


MODES: dict[str, Mode] = {
    "floor": floor,
    "gateway": gateway,
    "sdk-objects": sdk_objects,
    "sdk-helper": sdk_helper,
}


async def measure(port: int, deltas: int, runs: int) -> dict[str, Any]:
    client = openai.AsyncOpenAI(
        api_key="bench",
        base_url=f"http://127.0.0.1:{port}/v1",
        max_retries=0,
        http_client=openai.DefaultAioHttpClient(),
    )
    cpu: dict[str, list[float]] = {name: [] for name in MODES}
    try:
        for mode in MODES.values():  # warm-up: imports, connection, first-call costs
            await mode(client)
        for run in range(runs):
            names = list(MODES)[run % len(MODES) :] + list(MODES)[: run % len(MODES)]
            for name in names:
                started = time.process_time()
                relayed = await MODES[name](client)
                spent = time.process_time() - started
                assert name == "floor" or relayed == deltas, (name, relayed)
                cpu[name].append(spent / deltas * 1e6)
    finally:
        await client.close()
    medians = {name: round(statistics.median(values), 2) for name, values in cpu.items()}
    return {"deltas": deltas, "runs": runs, "cpu_us_per_delta": medians}


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
