"""Chat Completions stream bytes for the bench upstream: the same text scenarios as the
Messages ones in `bench.script`, written as an OpenAI-compatible server writes them (one
`data:` chunk per delta, a finish chunk, the usage chunk, `[DONE]`)."""

from __future__ import annotations

from typing import Any

import orjson

MODEL = "bench-chat"
_DELTA = (
    b'data: {"id":"%b","object":"chat.completion.chunk","created":1764000000,"model":"'
    + MODEL.encode()
    + b'","choices":[{"index":0,"delta":{"content":%b},"finish_reason":null}]}\n\n'
)


def _chunk(chat_id: str, choices: list[dict[str, Any]], **extra: Any) -> bytes:
    body = {"id": chat_id, "object": "chat.completion.chunk", "created": 1764000000,
            "model": MODEL, "choices": choices, **extra}  # fmt: skip
    return b"data: " + orjson.dumps(body) + b"\n\n"


def text_open(chat_id: str) -> bytes:
    return _chunk(chat_id, [{"index": 0, "delta": {"role": "assistant", "content": ""},
                             "finish_reason": None}])  # fmt: skip


def text_delta(chat_id: str, text: str) -> bytes:
    return _DELTA % (chat_id.encode(), orjson.dumps(text))


def text_close(chat_id: str, n: int) -> bytes:
    finish = _chunk(chat_id, [{"index": 0, "delta": {}, "finish_reason": "stop"}])
    usage = {"prompt_tokens": 10, "completion_tokens": n, "total_tokens": 10 + n}
    return finish + _chunk(chat_id, [], usage=usage) + b"data: [DONE]\n\n"


def question(messages: list[dict[str, Any]]) -> str:
    """The user's first message, where the bench puts the scenario."""
    return str(next(m["content"] for m in messages if m.get("role") == "user"))
