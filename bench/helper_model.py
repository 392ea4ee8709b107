"""The SDK's stream helper (`client.messages.stream(...)`) as the gateway's read path, for
the comparison in case 6. It is the Messages API provider with its `stream` swapped: the helper
parses, builds its event objects and accumulates its snapshot (tool input re-parsed on
every fragment); the raw events are handed to the gateway as it takes them from its own
read path (the JSON payload bytes; plain dicts from gateways that took those), text and
tool input deltas through a hand-written fast path.
"""

from __future__ import annotations

from typing import Any

import anthropic
import orjson

from gateway.errors import UpstreamFailure
from gateway.providers.anthropic.provider import AnthropicProvider, status_failure
from gateway.providers.anthropic.stream import TurnTranslator
from gateway.providers.anthropic.transport import OnPayloads

# The gateway's read path yields SSE payload bytes where its translator takes them.
_AS_BYTES = hasattr(TurnTranslator, "feed_payload")

_PASSED = frozenset({"message_start", "message_delta", "content_block_start"})


class HelperProvider(AnthropicProvider):
    """Reads every call through the SDK's stream helper instead of the raw body."""

    async def stream(
        self, params: dict[str, Any], on_payloads: OnPayloads, *, betas: tuple[str, ...] = ()
    ) -> None:
        headers = {"anthropic-beta": ",".join(betas)} if betas else None
        try:
            async with self._client.messages.stream(**params, extra_headers=headers) as stream:
                async for event in stream:
                    raw = as_raw(event)
                    if raw is not None:
                        # One event per list: the helper hands them over one at a time.
                        on_payloads([orjson.dumps(raw) if _AS_BYTES else raw])  # type: ignore[list-item]
        except anthropic.APIStatusError as exc:
            raise status_failure(exc) from exc
        except anthropic.APIConnectionError as exc:
            raise UpstreamFailure("NETWORK_ERROR", str(exc), retryable=True) from exc


def as_raw(event: Any) -> dict[str, Any] | None:
    """The raw Messages event as a dict; None for the helper's derived events."""
    kind = event.type
    if kind == "content_block_delta":
        delta = event.delta
        if delta.type == "text_delta":
            body: dict[str, Any] = {"type": "text_delta", "text": delta.text}
        elif delta.type == "input_json_delta":
            body = {"type": "input_json_delta", "partial_json": delta.partial_json}
        else:
            body = delta.to_dict()
        return {"type": kind, "index": event.index, "delta": body}
    if kind == "content_block_stop":
        return {"type": kind, "index": event.index}
    if kind == "message_stop":
        return {"type": kind}
    if kind in _PASSED:
        result: dict[str, Any] = event.to_dict()
        return result
    return None
