"""A question's provider: its model calls go through the batch's rounds, not a stream.

`attempt` posts the call's Messages body to the rounds and waits for its result; a
`succeeded` Message is fed to the stream translator as the payloads a stream would have
carried, so the run's events, history and usage are those of a live call. A request that
`errored`, `expired` or was `canceled` fails the call for good (a batch result is not
retried: the question's outcome says what happened), with `batch_result` in its details.
"""

from __future__ import annotations

from typing import Any

from gateway.batches.calls import stem
from gateway.batches.messages import message_payloads
from gateway.batches.rounds import Rounds
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.anthropic.provider import messages_body
from gateway.providers.anthropic.stream import TurnTranslator, failure_from_error_body
from gateway.providers.base import Emit, ModelCall, Turn

BATCH_RESULTS = ("succeeded", "errored", "expired", "canceled")


class BatchProvider:
    """The Messages API through its Batches endpoints, for question `index` of a batch."""

    def __init__(self, rounds: Rounds, index: int, name: str, model: str) -> None:
        self._rounds = rounds
        self._index = index
        self.name = name
        self.model = model
        self.last_result: str | None = None
        """How the question's latest call ended in its batch (one of `BATCH_RESULTS`)."""

    def new_turn(self, turn: int) -> TurnTranslator:
        return TurnTranslator(turn)

    async def attempt(self, call: ModelCall, turn: Turn, emit: Emit) -> None:
        if not isinstance(turn, TurnTranslator):
            raise TypeError(f"BatchProvider needs its own turn, got {type(turn).__name__}")
        name = stem(self._index, turn.turn)
        answer = await self._rounds.call(name, messages_body(call), call.betas)
        cid, result = str(answer.get("custom_id") or name), answer["result"]
        kind = result.get("type")
        self.last_result = kind if kind in BATCH_RESULTS else "errored"
        if kind != "succeeded":
            raise _failure(cid, result)
        batch: list[Event] = []
        try:
            turn.feed_payloads(message_payloads(result["message"]), batch)
        finally:
            if batch:
                emit(batch)
        turn.finish()


def _failure(cid: str, result: dict[str, Any]) -> UpstreamFailure:
    kind = result.get("type")
    if kind == "errored":
        failure = failure_from_error_body(result.get("error"))
        failure.message = f"The batch request {cid} errored: {failure.message}"
    elif kind == "expired":
        message = f"The batch request {cid} expired before the API processed it (24 h)"
        failure = UpstreamFailure("TIMEOUT_ERROR", message)
    elif kind == "canceled":
        message = f"The batch request {cid} was canceled before the API processed it"
        failure = UpstreamFailure("UNKNOWN_ERROR", message)
    else:
        failure = UpstreamFailure("UNKNOWN_ERROR", f"The batch request {cid} has no result")
    failure.retryable = False
    failure.details["batch_result"] = kind if kind in BATCH_RESULTS else "errored"
    failure.details["custom_id"] = cid
    return failure
