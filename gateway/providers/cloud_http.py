"""One streaming POST to a cloud's model endpoint on the gateway's own HTTP/1.1 client,
the answer's body handed to a decoder from the socket's callback and its events to the
turn, as the Messages API provider relays (see `anthropic/transport.py`).

Shared by the Bedrock and Vertex providers: they differ in the URL, how a request is
signed or authorized, how the body is framed and how an error answer reads.
"""

from __future__ import annotations

import urllib.request
from collections import Counter
from collections.abc import Mapping
from typing import Any, Protocol

import orjson
from yarl import URL

from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.anthropic.stream import TurnTranslator
from gateway.providers.base import Emit
from gateway.providers.http1 import Answer, HTTP1Client, InvalidHeader


class Decoder(Protocol):
    def feed(self, chunk: bytes) -> list[bytes]:
        """Bytes of the answer's body -> the Messages API events' JSON payloads complete
        in them."""
        ...


def environment_proxy(url: URL) -> URL | None:
    """The environment's proxy for `url` (`HTTPS_PROXY`, `NO_PROXY`), as urllib reads it."""
    if urllib.request.proxy_bypass(url.host or ""):
        return None
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and "://" not in proxy:
        proxy = f"http://{proxy}"
    return URL(proxy) if proxy else None


def client_for(url: URL, connect_timeout: float, read_timeout: float) -> HTTP1Client:
    return HTTP1Client(
        connect_timeout=connect_timeout, read_timeout=read_timeout, proxy=environment_proxy(url)
    )


async def relay(
    http: HTTP1Client,
    url: URL,
    body: list[bytes],
    headers: Mapping[str, str],
    decoder: Decoder,
    turn: TurnTranslator,
    emit: Emit,
) -> Answer | None:
    """POST and relay the answer's events; the `Answer` of an error status (for the
    caller to map), None when the stream ended. Raises `UpstreamFailure` for a failure
    in the stream or of the connection; `turn.finish()` is the caller's. `body` holds the
    request's one buffer and is emptied as it is sent: no frame of the call keeps the
    request while the answer streams (the client lets it go at the answer's first byte)."""

    def on_body(chunk: bytes) -> None:
        payloads = decoder.feed(chunk)
        if payloads:
            batch: list[Event] = []
            try:
                turn.feed_payloads(payloads, batch)
            finally:
                if batch:  # on a failure too: what preceded it in this read was relayed
                    emit(batch)
        failure = getattr(decoder, "failure", None)
        if failure is not None:  # after the events that came before it in this read
            raise failure

    try:
        return await http.post(url, body.pop(), headers, on_body)
    except UpstreamFailure:
        raise
    except TimeoutError as exc:
        raise UpstreamFailure(
            "TIMEOUT_ERROR", f"Upstream timed out: {exc}", retryable=True
        ) from exc
    except OSError as exc:
        message = f"Upstream connection failed: {type(exc).__name__}: {exc}".rstrip(": ")
        raise UpstreamFailure("NETWORK_ERROR", message, retryable=True) from exc
    except InvalidHeader as exc:  # a credential read with a newline in it
        raise UpstreamFailure("AUTHENTICATION_ERROR", f"Not sent: {exc}") from exc


def answer_json(answer: Answer) -> object:
    try:
        return orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        return None


# What a cloud takes of a Messages API call made for the `anthropic` upstream (a fallback
# gets the primary's calls): the Messages API's own tools, their blocks, code execution's
# container, API-side context management and its blocks stay with the Messages API.
_SERVER_BLOCKS = ("server_tool_use", "compaction", "container_upload")


def _server_block(block: Any) -> bool:
    kind = block.get("type", "") if isinstance(block, dict) else ""
    return kind in _SERVER_BLOCKS or (kind.endswith("_tool_result") and kind != "tool_result")


def cloud_body(body: dict[str, Any], dropped: Counter[str]) -> dict[str, Any]:
    """`body` without what no cloud runs, counted in `dropped` by kind (the caller warns)."""
    for key in ("container", "context_management"):
        if body.pop(key, None) is not None:
            dropped[key] += 1
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and "block_binding" in thinking:
        # Its beta is not on the clouds' pages: a replayed block that no longer fits fails.
        body["thinking"] = {k: v for k, v in thinking.items() if k != "block_binding"}
        dropped["thinking.block_binding"] += 1
    tools = body.get("tools")
    if tools:
        local = [tool for tool in tools if "input_schema" in tool]
        if len(local) < len(tools):
            dropped["server tools"] += len(tools) - len(local)
            body["tools"] = local
        if not local:
            del body["tools"], body["tool_choice"]
    messages = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, list) and any(_server_block(b) for b in content):
            kept = [block for block in content if not _server_block(block)]
            dropped["server tool blocks"] += len(content) - len(kept)
            message = {**message, "content": kept or [{"type": "text", "text": "(omitted)"}]}
        messages.append(message)
    body["messages"] = messages
    return body
