"""A question's model call through its batch's rounds, one result of each kind: a
`succeeded` Message is relayed as a live call's events; `errored`, `expired`, `canceled`
and a result of no known kind each fail the call for good, saying which request and why."""

from __future__ import annotations

from typing import Any, cast

import pytest

from gateway.batches.api import BatchesAPI, Result
from gateway.batches.calls import RoundRecord
from gateway.batches.provider import BatchProvider
from gateway.batches.rounds import Rounds
from gateway.errors import UpstreamFailure
from gateway.events import Event
from gateway.providers.base import ModelCall

QUESTION = [{"role": "user", "content": "revenue?"}]
CALL = ModelCall(
    model="claude-test-model", max_tokens=100, messages=QUESTION, system=None, tools=[]
)
ANSWER = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-model",
          "content": [{"type": "text", "text": "35.1B"}], "stop_reason": "end_turn",
          "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 3}}  # fmt: skip


class OneResult(Rounds):
    """Rounds whose every call ends with the one result given (no API behind them)."""

    def __init__(self, result: dict[str, Any]) -> None:
        async def journal(record: RoundRecord) -> None:
            return None

        super().__init__(cast(BatchesAPI, None), 1, journal, key="k")
        self.result = result
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def call(self, cid: str, params: dict[str, Any], betas: tuple[str, ...]) -> Result:
        self.asked.append((cid, params))
        return {"custom_id": cid, "result": self.result}


async def attempt(
    result: dict[str, Any],
) -> tuple[BatchProvider, list[Event], UpstreamFailure | None]:
    """Question 4's call 2 through rounds that answer `result`: the provider after it, what
    it emitted, and how the call failed (None: it did not)."""
    rounds = OneResult(result)
    provider = BatchProvider(rounds, 4, "anthropic-batch", "claude-test-model")
    assert provider.last_result is None  # no call ended yet
    said: list[Event] = []
    failure = None
    try:
        await provider.attempt(CALL, provider.new_turn(2), said.extend)
    except UpstreamFailure as exc:
        failure = exc
    [(cid, params)] = rounds.asked
    assert cid == "q4-t2" and params["messages"] == CALL.messages
    return provider, said, failure


async def test_a_succeeded_message_is_relayed_as_a_live_calls() -> None:
    provider, said, failure = await attempt({"type": "succeeded", "message": ANSWER})
    assert failure is None
    assert (provider.name, provider.model) == ("anthropic-batch", "claude-test-model")
    assert provider.last_result == "succeeded"
    assert said == [{"type": "delta", "text": "35.1B"}]


async def failure_of(result: dict[str, Any]) -> tuple[BatchProvider, UpstreamFailure]:
    provider, said, failure = await attempt(result)
    assert failure is not None and said == []
    assert failure.retryable is False  # a batch result is not retried
    assert failure.details["custom_id"] == "q4-t2"
    return provider, failure


ERROR = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tools"}}


@pytest.mark.parametrize(
    ("result", "code", "message", "batch_result"),
    [
        ({"type": "errored", "error": ERROR}, "VALIDATION_ERROR",
         "The batch request q4-t2 errored: bad tools", "errored"),
        ({"type": "expired"}, "TIMEOUT_ERROR",
         "The batch request q4-t2 expired before the API processed it (24 h)", "expired"),
        ({"type": "canceled"}, "UNKNOWN_ERROR",
         "The batch request q4-t2 was canceled before the API processed it", "canceled"),
        ({"type": "vanished"}, "UNKNOWN_ERROR", "The batch request q4-t2 has no result",
         "errored"),
        ({}, "UNKNOWN_ERROR", "The batch request q4-t2 has no result", "errored"),
    ],
)  # fmt: skip
async def test_each_other_result_fails_the_call_for_good_and_says_why(
    result: dict[str, Any], code: str, message: str, batch_result: str
) -> None:
    provider, failure = await failure_of(result)
    assert (failure.code, failure.message) == (code, message)
    assert failure.details["batch_result"] == batch_result
    assert provider.last_result == batch_result  # what the question's outcome reports


async def test_an_errored_requests_api_error_keeps_its_type() -> None:
    error = {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    _, failure = await failure_of({"type": "errored", "error": error})
    assert failure.code == "UNKNOWN_ERROR" and failure.details["upstream_type"] == "api_error"
    assert failure.retryable is False  # retryable live, but not as a batch result


async def test_another_providers_turn_is_refused() -> None:
    class Other:
        turn = 1

    provider = BatchProvider(OneResult({"type": "succeeded"}), 0, "b", "m")
    with pytest.raises(TypeError, match="BatchProvider needs its own turn, got Other"):
        await provider.attempt(CALL, cast(Any, Other()), lambda events: None)
