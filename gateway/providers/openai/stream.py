"""Chat Completions stream chunks to gateway events plus a canonical assistant turn,
without I/O.

Tool calls arrive as fragments keyed by `index`: the first fragment of a call carries
its `id` and `name`, later ones only `arguments` pieces, and several calls may be open at
once. Fragments are collected per index and each call's arguments joined and parsed
once, when the choice finishes (re-parsing the growing JSON per fragment, as the SDK's
accumulator does for strict tools, is quadratic in the input size).

Reasoning text that compatible servers stream (`reasoning_content` or `reasoning`) is
relayed as `thinking` events and left out of the turn's content.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from gateway import events
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.anthropic.stream import parse_tool_input
from gateway.providers.failures import failure_from_error_object

STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
_NONE: list[Event] = []  # returned for chunks with nothing to relay; never mutated


class _Call:
    __slots__ = ("id", "name", "parts")

    def __init__(self, id: str, name: str) -> None:
        self.id = id
        self.name = name
        self.parts: list[str] = []


class ChatTurn:
    """One Chat Completions call: `feed` a parsed chunk, get the events to relay.

    Only choice 0 is read (the gateway never asks for `n` > 1). `finish` raises if the
    stream ended before a `finish_reason`.
    """

    def __init__(self, turn: int) -> None:
        self.turn = turn
        self.dropped: Counter[str] = Counter()
        """Canonical blocks the request could not carry, by type (set per attempt), so
        the caller can warn that, say, thinking did not cross to this provider."""
        self.reset()

    def reset(self) -> None:
        """Forget a failed attempt, before the turn is retried."""
        self.emitted = 0
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.usage: dict[str, int] = {}
        self.tool_uses: list[dict[str, Any]] = []
        self.input_errors: dict[str, str] = {}
        self.stop_details: dict[str, Any] | None = None  # Chat Completions has neither
        self.container_id: str | None = None
        self.texts: list[str] = []
        self._text: list[str] = []
        self._refused = False
        self._thinking = False
        self._calls: dict[int, _Call] = {}
        self._finished = False

    @property
    def context_tokens(self) -> int:
        return sum(self.usage.values())

    @property
    def content(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": t} for t in self.texts]
        return [*blocks, *self.tool_uses]

    def partial_texts(self) -> list[str]:
        """Text so far, finished or still streaming (for an interrupted turn)."""
        if self._finished or not self._text:
            return list(self.texts)
        return ["".join(self._text)]

    def feed_payload(self, payload: bytes) -> list[Event]:
        """One SSE `data` payload (JSON bytes, not `[DONE]`)."""
        return self.feed(orjson.loads(payload))

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        """One parsed chunk; raises `UpstreamFailure` on an `error` object."""
        if chunk.get("error") is not None:
            raise failure_from_error_object(chunk["error"])
        if self.model is None and chunk.get("model"):
            self.model = chunk["model"]
        usage = chunk.get("usage")
        if usage:
            self._take_usage(usage)
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) == 0:
                out = self._choice(choice)
                self.emitted += len(out)
                return out
        return _NONE

    def finish(self) -> None:
        if not self._finished:
            raise UpstreamFailure(
                "NETWORK_ERROR", "The model stream ended before a finish_reason.", retryable=True
            )

    def _choice(self, choice: dict[str, Any]) -> list[Event]:
        delta = choice.get("delta") or {}
        out: list[Event] = []
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            self._think(reasoning, out)
        if self._thinking and (
            delta.get("content") or delta.get("tool_calls") or choice.get("finish_reason")
        ):
            self._thinking = False
            out.append(events.thinking_complete(self.turn))
        text = delta.get("content")
        if text:
            self._text.append(text)
            out.append(events.delta(text))
        refusal = delta.get("refusal")
        if refusal:  # a structured-output refusal: the reader sees it as text
            self._refused = True
            self._text.append(refusal)
            out.append(events.delta(refusal))
        for fragment in delta.get("tool_calls") or ():
            self._fragment(fragment, out)
        reason = choice.get("finish_reason")
        if reason is not None and not self._finished:
            out.extend(self._finish_choice(reason))
        return out

    def _think(self, reasoning: str, out: list[Event]) -> None:
        # Relayed so readers see the model work, but kept out of the history: the
        # servers that stream it (DeepSeek, vLLM, OpenRouter, Ollama) do not take it
        # back, and unsigned thinking must not reach the Messages API after a fallback.
        if not self._thinking:
            self._thinking = True
            out.append(events.thinking_start(self.turn))
        out.append(events.thinking(reasoning))

    def _fragment(self, fragment: dict[str, Any], out: list[Event]) -> None:
        index = fragment.get("index", 0)
        function = fragment.get("function") or {}
        call = self._calls.get(index)
        if call is None:
            # Some servers send no id: make one that is unique within the run.
            call_id = fragment.get("id") or f"call_{self.turn}_{index}"
            call = self._calls[index] = _Call(call_id, function.get("name") or "")
            out.append(
                events.tool_call("tool_start", {"id": call.id, "name": call.name}, self.turn)
            )
        elif function.get("name") and not call.name:
            call.name = function["name"]
        arguments = function.get("arguments")
        if arguments:  # the first fragment may carry some already
            call.parts.append(arguments)
            tool = {"id": call.id}
            out.append(
                events.tool_call("tool_input_delta", tool, self.turn, partial_json=arguments)
            )

    def _finish_choice(self, reason: str) -> list[Event]:
        self._finished = True
        self.stop_reason = "refusal" if self._refused else STOP_REASONS.get(reason, reason)
        if reason == "stop" and self._calls:
            # Some servers (Gemini's compatible endpoint, older Ollama) end a turn that
            # asked for tools with `stop`; the calls still want their answers.
            self.stop_reason = "tool_use"
        if self._text:
            self.texts.append("".join(self._text))
        out: list[Event] = []
        for index in sorted(self._calls):
            call = self._calls[index]
            arguments = self._parse_input(call.id, "".join(call.parts))
            use = {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}
            self.tool_uses.append(use)
            tool = {"id": call.id, "name": call.name, "input": use["input"]}
            out.append(events.tool_call("tool_use", tool, self.turn))
        return out

    def _parse_input(self, call_id: str, joined: str) -> dict[str, Any]:
        if not joined.strip():
            return {}
        return parse_tool_input(call_id, joined, self.input_errors)

    def _take_usage(self, usage: dict[str, Any]) -> None:
        # Cumulative for the call; OpenAI counts cached tokens inside `prompt_tokens`,
        # Anthropic (our canonical form) outside `input_tokens`.
        details = usage.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens") or 0
        prompt = usage.get("prompt_tokens") or 0
        self.usage = {
            "input_tokens": max(0, prompt - cached),
            "output_tokens": usage.get("completion_tokens") or 0,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
        }
