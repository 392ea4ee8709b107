"""`python -m bench.micro < spec.json`: tool input accumulation in-process, no I/O.

The events of one `tool_use` turn whose input arrives in 20-byte fragments go through
the gateway's `TurnTranslator` (fragments collected, joined and parsed once at block stop)
and through the SDK's `accumulate_event` (the stream helper's accumulator, which re-parses
the partial JSON on every fragment). Events are decoded, and for the SDK built into its
event objects, before the clock starts: only accumulation is timed. Prints JSON.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, cast

import orjson
from anthropic._models import construct_type
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import RawMessageStreamEvent

from bench import script
from bench.script import Scenario
from gateway.providers.anthropic.stream import SSEDecoder, TurnTranslator


def turn_events(size: int) -> list[dict[str, Any]]:
    body = script.tool_reply("msg_bench_micro", Scenario(kind="tool", size=size))
    return [orjson.loads(data) for data in SSEDecoder().feed(body)]


def translator(events: list[dict[str, Any]]) -> dict[str, float]:
    turn = TurnTranslator(1)
    stop_at = next(i for i, e in enumerate(events) if e["type"] == "content_block_stop")
    started = time.perf_counter()
    for event in events[:stop_at]:
        turn.feed(event)
    last_fragment = time.perf_counter()
    turn.feed(events[stop_at])
    parsed = time.perf_counter()
    for event in events[stop_at + 1 :]:
        turn.feed(event)
    assert turn.tool_uses[0]["input"]["content"]
    return {"total_s": parsed - started, "after_last_s": parsed - last_fragment}


def sdk_accumulator(events: list[dict[str, Any]]) -> dict[str, float]:
    objects = [
        cast(RawMessageStreamEvent, construct_type(type_=RawMessageStreamEvent, value=e))
        for e in events
    ]
    last = max(i for i, e in enumerate(events) if e["type"] == "content_block_delta")
    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    started = time.perf_counter()
    before_last = started
    for i, event in enumerate(objects[: last + 1]):
        if i == last:
            before_last = time.perf_counter()
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
    parsed = time.perf_counter()
    assert snapshot.content[0].input["content"]
    return {"total_s": parsed - started, "after_last_s": parsed - before_last}


def main() -> None:
    spec = json.load(sys.stdin)
    out: dict[str, Any] = {}
    sdk_accumulator(turn_events(1_000))  # imports and first-call costs, not measured
    for size in spec["sizes"]:
        events = turn_events(size)
        found: dict[str, Any] = {"fragments": len(events) - 6, "translator": translator(events)}
        found["bytes"] = len(script.tool_input(size))
        if size <= spec["sdk_max"]:
            found["sdk"] = sdk_accumulator(events)
        out[str(size)] = found
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
