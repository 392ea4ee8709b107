"""The Messages API wire format, without I/O: request parameters, SSE bytes to raw events,
and one model turn's raw events to gateway events plus the assistant content.

Per-event work is kept small on purpose: text deltas are passed through, and a tool's
input fragments are only collected; they are joined and parsed once, when the block closes
(the SDK's accumulator re-parses the growing JSON on every fragment, which is quadratic).
Splicing text deltas' JSON strings into the client's frames unparsed was measured and
lost: orjson parses a small event faster than Python can slice and check one.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from gateway import events, pricing
from gateway.errors import ErrorCode, UpstreamFailure
from gateway.events import Event

# The error types the Messages API sends in an `error` event or an error body.
_CODE_BY_ERROR_TYPE: dict[str, tuple[ErrorCode, bool]] = {
    "overloaded_error": ("OVERLOADED_ERROR", True),
    "rate_limit_error": ("RATE_LIMIT_ERROR", True),
    "api_error": ("UNKNOWN_ERROR", True),
    "timeout_error": ("TIMEOUT_ERROR", True),
    "authentication_error": ("AUTHENTICATION_ERROR", False),
    "permission_error": ("PERMISSION_ERROR", False),
    "not_found_error": ("NOT_FOUND", False),
    "invalid_request_error": ("VALIDATION_ERROR", False),
    "request_too_large": ("VALIDATION_ERROR", False),
}


def failure_from_error_body(body: Any, default: ErrorCode = "UNKNOWN_ERROR") -> UpstreamFailure:
    """Map an Anthropic error object (`{"type":"error","error":{...}}`) to a failure."""
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    code, retryable = _CODE_BY_ERROR_TYPE.get(str(error.get("type")), (default, False))
    message = str(error.get("message") or "upstream error")
    return UpstreamFailure(code, message, {"upstream_type": error.get("type")}, retryable=retryable)


class SSEDecoder:
    """Splits SSE bytes into the `data` payloads of complete events.

    Anthropic puts the event name in the JSON `type` as well, so `event:` lines are not
    needed. Chunks may end anywhere, including inside a line or a `\\r\\n` pair.
    """

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        data = self._buffer + chunk if self._buffer else chunk
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = data.rfind(b"\n\n")
        if end < 0:
            self._buffer = data
            return []
        self._buffer = data[end + 2 :]
        payloads = []
        for block in data[:end].split(b"\n\n"):
            # Inline fast path for Anthropic's framing (a call per event costs more than
            # the check): at most an `event:` line, then one `data:` line, last.
            start = block.find(b"data: ")
            if (start == 0 or (start > 0 and block[start - 1] == 10)) and (
                block.find(b"\n", start) < 0
            ):
                payload = block[start + 6 :]
            else:
                payload = _data_of(block)
            if payload:
                payloads.append(payload)
        return payloads


def _data_of(block: bytes) -> bytes:
    """The `data` of any SSE block: its `data:` lines, joined by newlines."""
    lines = [line for line in block.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(_strip_field(line) for line in lines)


def _strip_field(line: bytes) -> bytes:
    value = line[5:]
    return value[1:] if value[:1] == b" " else value


def parse_tool_input(tool_id: str, joined: str, errors: dict[str, str]) -> dict[str, Any]:
    """A tool call's joined input fragments, parsed once; what is not a JSON object becomes
    `errors[tool_id]` (the model gets it back as an `is_error` result) and `{}`."""
    try:
        value = orjson.loads(joined)
    except orjson.JSONDecodeError as exc:
        errors[tool_id] = f"The tool input was not valid JSON ({exc})."
        return {}
    if not isinstance(value, dict):
        errors[tool_id] = "The tool input must be a JSON object."
        return {}
    return value


def _server_flag(block: dict[str, Any]) -> dict[str, bool]:
    return {"server": True} if block.get("type") == "server_tool_use" else {}


def _server_preview(content: Any) -> Any:
    """What a client sees of a server tool's result: titles and addresses, not the
    encrypted page content that only the model can read."""
    if isinstance(content, list):
        keep = ("type", "title", "url", "page_age")
        return [
            {k: item[k] for k in keep if k in item} for item in content if isinstance(item, dict)
        ]
    if isinstance(content, dict):
        return {k: v for k, v in content.items() if k not in ("encrypted_content", "data")}
    return content


PACK_AFTER = 32
"""Payloads read between two joins of each open block's newest fragments into one string."""


def progress_mode(thinking: dict[str, Any] | None) -> str | None:
    """How a call's `thinking` parameter returns the notes between tool calls, for
    `TurnTranslator.progress_mode`: `between_tools` (every thinking block is one),
    `updates` (the blocks with text are; reasoning comes back empty), `summarized` (text
    in all: a thinking block after another kind of block in the turn is one), or None (no
    such notes: every thinking block is reasoning)."""
    if not thinking:
        return None
    if thinking.get("type") == "between_tools":
        return "between_tools"
    display = thinking.get("display")
    return display if display in ("updates", "summarized") else None


class TurnTranslator:
    """Turns one model call's raw stream events into gateway events, and keeps what the
    history needs: the assistant content exactly as produced, usage, the stop reason.

    `feed` returns the event to relay, or None. It raises `UpstreamFailure` on an `error`
    event; `finish` raises if the stream ended without `message_stop`.
    """

    def __init__(self, turn: int, progress: str | None = None) -> None:
        self.turn = turn
        self.progress_mode = progress
        """See `progress_mode`; set by the provider from the call's `thinking`."""
        self.reset()

    def reset(self) -> None:
        """Forget a failed attempt, before the turn is retried."""
        self.emitted = 0
        self.message_id: str | None = None
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.stop_details: dict[str, Any] | None = None
        """Why the model stopped, where it says (a refusal's `category`)."""
        self.usage: dict[str, int] = {}
        """The call's tokens as billed: the answering call's, plus compaction's own."""
        self.context_tokens = 0
        self.container_id: str | None = None
        """The code execution container the API used for this call, if any."""
        self._compaction_usage: dict[str, int] = {}
        self._edits: list[Event] = []
        """Events that follow the one `feed` returned: context edits, a note's first text."""
        self.tool_uses: list[dict[str, Any]] = []
        self.input_errors: dict[str, str] = {}
        self.texts: list[str] = []
        self.dropped: Counter[str] = Counter()  # the Messages API takes every block
        self._blocks: dict[int, dict[str, Any]] = {}
        self._parts: dict[int, list[str]] = {}
        self._packed: dict[int, int] = {}  # leading entries of a `_parts` list already joined
        self._unpacked = 0  # payloads read since the last join
        self._server_names: dict[str, str] = {}
        self._stopped = False
        # Thinking blocks not shown (yet): omitted reasoning. A dict as a set: an empty set
        # is 216 bytes, an empty dict 64, and every open stream has one.
        self._quiet: dict[int, None] = {}

    def partial_texts(self) -> list[str]:
        """Text so far, finished blocks and the one still streaming (for an interrupted turn)."""
        partial = [
            "".join(parts)
            for i, parts in sorted(self._parts.items())
            if self._blocks[i].get("type") == "text" and parts
        ]
        return [*self.texts, *partial]

    @property
    def content(self) -> list[dict[str, Any]]:
        return [self._blocks[i] for i in sorted(self._blocks)]

    def feed_payload(self, payload: bytes) -> Event | None:
        """One SSE `data` payload (JSON bytes)."""
        return self.feed(orjson.loads(payload))

    def feed_payloads(self, payloads: list[bytes], into: list[Event]) -> None:
        """The payloads of one upstream read, their events appended to `into` (on a
        failure, the events before it are there: they still go to the client)."""
        feed, parts, loads = self.feed, self._parts, orjson.loads
        for payload in payloads:
            raw = loads(payload)
            # Most events of a turn are text deltas: those take no call per event.
            if raw.get("type") == "content_block_delta":
                delta = raw["delta"]
                if delta.get("type") == "text_delta":
                    text = delta["text"]
                    parts[raw["index"]].append(text)
                    into.append({"type": "delta", "text": text})
                    self.emitted += 1
                    continue
            event = feed(raw)
            if event is not None:
                into.append(event)
            if self._edits:  # a message_delta may report several edits at once
                into.extend(self._edits)
                self.emitted += len(self._edits)
                self._edits.clear()
        self._unpacked += len(payloads)
        if self._unpacked >= PACK_AFTER:  # not per read: a paced stream reads one event
            self._unpacked = 0
            self._pack_parts()

    def _pack_parts(self) -> None:
        """Join each open block's newest fragments into one string: a fragment costs ~50
        bytes of string object beyond its text, a long block has thousands, and a stream
        holds them until the block ends. Each fragment is joined once (the packed strings
        are not joined again), so this stays linear."""
        for index, parts in self._parts.items():
            packed = self._packed.get(index, 0)
            if len(parts) - packed > 1:
                parts[packed:] = ["".join(parts[packed:])]
                self._packed[index] = packed + 1

    def feed(self, raw: dict[str, Any]) -> Event | None:
        """One parsed stream event."""
        kind = raw.get("type")
        if kind == "content_block_delta":
            event = self._delta(raw["index"], raw["delta"])
        elif kind == "content_block_start":
            event = self._start(raw["index"], raw["content_block"])
        elif kind == "content_block_stop":
            event = self._stop(raw["index"])
        elif kind == "message_start":
            self._message_start(raw["message"])
            return None
        elif kind == "message_delta":
            self._message_delta(raw)
            return None
        elif kind == "message_stop":
            self._stopped = True
            return None
        elif kind == "error":
            raise failure_from_error_body(raw)
        else:  # ping, and event types newer than this code
            return None
        if event is not None:
            self.emitted += 1
        return event

    def finish(self) -> None:
        if not self._stopped:
            raise UpstreamFailure(
                "NETWORK_ERROR", "The model stream ended before message_stop.", retryable=True
            )

    def _delta(self, index: int, delta: dict[str, Any]) -> Event | None:
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta["text"]
            self._parts[index].append(text)
            return events.delta(text)
        if kind == "input_json_delta":
            fragment = delta["partial_json"]
            self._parts[index].append(fragment)
            block = self._blocks[index]
            return events.tool_call(
                "tool_input_delta",
                {"id": block["id"]},
                self.turn,
                partial_json=fragment,
                **_server_flag(block),
            )
        if kind == "thinking_delta":
            text = delta["thinking"]
            self._parts[index].append(text)
            if index in self._quiet:
                return self._note_shown(index, text)
            return events.thinking(text)
        if kind == "signature_delta":
            return self._signature(index, delta["signature"])
        if kind == "compaction_delta":  # kept whole, back to the API verbatim
            if delta.get("content") is not None:
                self._parts[index].append(delta["content"])
            if delta.get("encrypted_content") is not None:
                self._blocks[index]["encrypted_content"] = delta["encrypted_content"]
            return None
        if kind == "citations_delta":
            self._blocks[index].setdefault("citations", []).append(delta["citation"])
            return events.citation(delta["citation"], self.turn)
        return None

    def _start(self, index: int, block: dict[str, Any]) -> Event | None:
        block = dict(block)
        self._blocks[index] = block
        self._parts[index] = []
        self._packed.pop(index, None)
        kind = block.get("type")
        if kind == "server_tool_use":
            self._server_names[block["id"]] = block["name"]
        if kind == "tool_use" or kind == "server_tool_use":
            tool = {"id": block["id"], "name": block["name"]}
            return events.tool_call("tool_start", tool, self.turn, **_server_flag(block))
        if kind == "thinking":
            return self._thinking_start(index)
        return None

    def _thinking_start(self, index: int) -> Event | None:
        mode = self.progress_mode
        if mode == "updates":  # only the notes have text: a block shows once it has some
            self._quiet[index] = None
            return None
        after_action = mode == "summarized" and any(
            self._blocks[i].get("type") not in ("thinking", "redacted_thinking")
            for i in self._blocks
            if i < index
        )
        progress = mode == "between_tools" or after_action
        return events.thinking_start(self.turn, "progress" if progress else "reasoning")

    def _signature(self, index: int, signature: str) -> Event | None:
        self._blocks[index]["signature"] = signature
        if index in self._quiet:  # omitted reasoning: nothing of it is shown
            return None
        return events.thinking_signature(signature)

    def _note_shown(self, index: int, text: str) -> Event | None:
        """A quiet block's first text: it is a note; its start, then the text."""
        if not text:
            return None
        self._quiet.pop(index, None)
        self._edits.append(events.thinking(text))
        return events.thinking_start(self.turn, "progress")

    def _stop(self, index: int) -> Event | None:
        block = self._blocks[index]
        joined = "".join(self._parts.pop(index, ()))
        self._packed.pop(index, None)
        kind = block.get("type")
        if kind == "text":
            block["text"] = block.get("text", "") + joined
            if block["text"]:
                self.texts.append(block["text"])
            return None
        if kind == "tool_use":
            block["input"] = self._parse_input(block["id"], joined, block.get("input"))
            self.tool_uses.append(block)
            tool = {"id": block["id"], "name": block["name"], "input": block["input"]}
            return events.tool_call("tool_use", tool, self.turn)
        if kind == "thinking":
            block["thinking"] = block.get("thinking", "") + joined
            if index in self._quiet:  # omitted reasoning: nothing was shown of it
                self._quiet.pop(index, None)
                return None
            return events.thinking_complete(self.turn)
        if kind == "server_tool_use":  # run by the API: back to it verbatim, input included
            block["input"] = self._parse_input(block["id"], joined, block.get("input"))
            self.input_errors.pop(block["id"], None)
            tool = {"id": block["id"], "name": block["name"], "input": block["input"]}
            return events.tool_call("tool_use", tool, self.turn, server=True)
        if isinstance(kind, str) and kind.endswith("_tool_result"):
            return self._server_result(block)
        if kind == "compaction" and joined:
            block["content"] = (block.get("content") or "") + joined
        return None

    def _server_result(self, block: dict[str, Any]) -> Event:
        """A server tool's result block, which arrives whole, as the client's result phase."""
        tool_id = block.get("tool_use_id", "")
        tool = {"id": tool_id, "name": self._server_names.get(tool_id, block["type"])}
        content = block.get("content")
        if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
            error = f"{tool['name']} failed: {content.get('error_code', 'unknown error')}"
            return events.tool_call(
                "tool_error",
                tool,
                self.turn,
                success=False,
                error=error,
                duration_ms=None,
                server=True,
            )
        preview = orjson.dumps(_server_preview(content)).decode()
        return events.tool_call(
            "tool_result",
            tool,
            self.turn,
            success=True,
            preview=preview[:2_000],
            bytes=len(preview),
            truncated=len(preview) > 2_000,
            duration_ms=None,
            server=True,
        )

    def _parse_input(self, tool_id: str, joined: str, initial: Any) -> dict[str, Any]:
        if not joined.strip():
            return initial if isinstance(initial, dict) else {}
        return parse_tool_input(tool_id, joined, self.input_errors)

    def _message_start(self, message: dict[str, Any]) -> None:
        self.message_id = message.get("id")
        self.model = message.get("model")
        self._take_container(message.get("container"))
        self._take_usage(message.get("usage"))
        self.context_tokens = sum(self.usage.values())

    def _message_delta(self, raw: dict[str, Any]) -> None:
        delta = raw.get("delta") or {}
        if delta.get("stop_reason") is not None:
            self.stop_reason = delta["stop_reason"]
        if isinstance(delta.get("stop_details"), dict):
            self.stop_details = delta["stop_details"]
        if delta.get("container") is not None:
            self._take_container(delta["container"])
        usage = raw.get("usage")
        self._take_usage(usage)
        iterations = usage.get("iterations") if isinstance(usage, dict) else None
        compactions = [i for i in iterations if i.get("type") == "compaction"] if iterations else ()
        if compactions:
            self._compaction_usage = {
                key: sum(int(i.get(key) or 0) for i in compactions) for key in events.USAGE_KEYS
            }
            self._edits.append(
                events.context_edited(
                    self.turn, "compact", None, None, usage=dict(self._compaction_usage)
                )
            )
        management = raw.get("context_management")
        applied = (management.get("applied_edits") or ()) if management else ()
        for edit in applied:
            strategy = str(edit.get("type", "")).rsplit("_", 1)[0]
            extra = {}
            if "cleared_thinking_turns" in edit:
                extra["cleared_thinking_turns"] = edit["cleared_thinking_turns"]
            self._edits.append(
                events.context_edited(
                    self.turn,
                    strategy,
                    edit.get("cleared_input_tokens"),
                    edit.get("cleared_tool_uses"),
                    **extra,
                )
            )
        self._count()

    def _take_container(self, container: Any) -> None:
        if isinstance(container, dict) and isinstance(container.get("id"), str):
            self.container_id = container["id"]

    def _count(self) -> None:
        """The call's own tokens are the context; compaction's are billed on top (the API
        reports them apart, in `usage.iterations`)."""
        self.context_tokens = sum(self.usage.values())
        if self._compaction_usage:  # most calls compact nothing
            for key, value in self._compaction_usage.items():
                self.usage[key] = self.usage.get(key, 0) + value
            self._compaction_usage = {}

    def _take_usage(self, usage: Any) -> None:
        # message_delta usage is cumulative for the call: later values replace earlier ones.
        if isinstance(usage, dict):
            for key in events.USAGE_KEYS:
                value = usage.get(key)
                if isinstance(value, int):
                    self.usage[key] = value
            if len(usage) > 2:  # more than message_delta's usual output_tokens
                self._take_priced_usage(usage)

    def _take_priced_usage(self, usage: dict[str, Any]) -> None:
        """What the price of the call also depends on, where the API reports it: server
        searches, 1-hour cache writes, the batch tier, where inference ran (keys of
        `gateway.pricing`)."""
        found = {
            pricing.WEB_SEARCH_KEY: (usage.get("server_tool_use") or {}).get("web_search_requests"),
            pricing.CACHE_WRITE_1H_KEY: (usage.get("cache_creation") or {}).get(
                "ephemeral_1h_input_tokens"
            ),
            pricing.BATCH_KEY: 1 if usage.get("service_tier") == "batch" else None,
            pricing.FAST_KEY: 1 if usage.get("speed") == "fast" else None,
        }
        geo = usage.get("inference_geo")
        if isinstance(geo, str) and geo != "global":
            found[pricing.geo_key(geo)] = 1
        for key, value in found.items():
            if isinstance(value, int) and value > 0:
                self.usage[key] = value
