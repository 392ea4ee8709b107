"""What the fake upstream sends: a scenario named in the user's query, as Messages API SSE.

The query of a bench run is `bench {json}`; the upstream reads it from the first user
message of every request, so a run's later turns find their scenario too. Event bytes are
built from fixed prefixes: the upstream must never be the slowest process in the room.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import orjson

PREFIX = "bench "
FRAGMENT = 20
# Text deltas of a burst: a few tokens each, as the API sends them; one in ten has quotes
# and one a line break, so a reader that special-cases plain text is not flattered.
BURST_TEXTS = ("Revenue grew ", "12% to ", "$4.2 billion", " in fiscal 2024", ", driven ",
               'by the "core" segment', ".\n\nOperating ", "margin was ", "18.5%, up ",
               "from 17.1%")  # fmt: skip
_DELTA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,"delta":'
_TEXT = _DELTA + b'{"type":"text_delta","text":%b}}\n\n'
_JSON = _DELTA + b'{"type":"input_json_delta","partial_json":%b}}\n\n'


@dataclass(frozen=True)
class Scenario:
    """One model call's shape (and, for tool scenarios, the shape of the run)."""

    kind: str = "text"
    """`text`: `n` text deltas; `tool`: one tool_use with a `size`-byte input in 20-byte
    fragments; `tools`: `tools` parallel calls of `bench_sleep` for `seconds` each;
    `fault`: one delta, then an `overloaded_error` event."""
    n: int = 100
    rate: float = 0.0
    """Text deltas per second, each carrying its send time; 0: as fast as the socket takes."""
    size: int = 0
    tools: int = 0
    seconds: float = 1.0
    tag: str = ""
    """Tells the turns of one run apart (the upstream times the gap between them)."""

    def query(self) -> str:
        return PREFIX + json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_query(cls, query: Any) -> Scenario:
        if isinstance(query, list):  # content blocks (a cache breakpoint): the first text
            query = next((b.get("text") for b in query if b.get("type") == "text"), None)
        if isinstance(query, str) and query.startswith(PREFIX):
            return cls(**json.loads(query[len(PREFIX) :]))
        return cls()


def sse(event: dict[str, Any]) -> bytes:
    return b"event: %b\ndata: %b\n\n" % (event["type"].encode(), orjson.dumps(event))


def text_delta(text: str, index: int = 0) -> bytes:
    return _TEXT % (index, orjson.dumps(text))


def json_delta(fragment: str, index: int = 0) -> bytes:
    return _JSON % (index, orjson.dumps(fragment))


def message_start(message_id: str) -> bytes:
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-bench",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return sse({"type": "message_start", "message": message})


def block_start(index: int, block: dict[str, Any]) -> bytes:
    return sse({"type": "content_block_start", "index": index, "content_block": block})


def block_stop(index: int) -> bytes:
    return sse({"type": "content_block_stop", "index": index})


def message_end(stop_reason: str, output_tokens: int) -> bytes:
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    usage = {"output_tokens": output_tokens}
    return sse({"type": "message_delta", "delta": delta, "usage": usage}) + sse(
        {"type": "message_stop"}
    )


def text_open(message_id: str) -> bytes:
    return message_start(message_id) + block_start(0, {"type": "text", "text": ""})


def text_close(n: int) -> bytes:
    return block_stop(0) + message_end("end_turn", n)


def text_reply(message_id: str, text: str) -> bytes:
    return text_open(message_id) + text_delta(text) + text_close(1)


def tool_input(size: int) -> str:
    """A JSON object of about `size` bytes for `bench_echo`: a document to write, the usual
    reason for a big tool input (lines, quotes and escapes, not one run of one letter)."""
    line = 'Line %06d: the "quick" brown fox jumps over the lazy dog; 3 < 4 & 5 > 2.\n'
    count = max(1, (size - 40) // (len(line % 0) + 3))  # JSON escapes add ~3 bytes a line
    content = "".join(line % i for i in range(count))
    return json.dumps({"path": "notes/bench.md", "content": content})


def tool_reply(message_id: str, scenario: Scenario) -> bytes:
    """One `tool_use` block whose input arrives in 20-byte fragments."""
    raw = tool_input(scenario.size)
    block = {"type": "tool_use", "id": "toolu_bench_echo", "name": "bench_echo", "input": {}}
    parts = [message_start(message_id), block_start(0, block)]
    parts += [json_delta(raw[i : i + FRAGMENT]) for i in range(0, len(raw), FRAGMENT)]
    parts += [block_stop(0), message_end("tool_use", len(parts))]
    return b"".join(parts)


def tools_reply(message_id: str, scenario: Scenario) -> bytes:
    """`tools` parallel `bench_sleep` calls in one turn."""
    parts = [message_start(message_id)]
    raw = json.dumps({"seconds": scenario.seconds})
    for index in range(scenario.tools):
        block = {
            "type": "tool_use",
            "id": f"toolu_bench_{index:04d}",
            "name": "bench_sleep",
            "input": {},
        }
        parts += [block_start(index, block), json_delta(raw, index), block_stop(index)]
    parts.append(message_end("tool_use", scenario.tools * 10))
    return b"".join(parts)
