"""OpenAI-style errors mapped to the gateway's codes."""

from __future__ import annotations

import pytest

from gateway.providers.failures import failure_from_error_object, retry_after_s


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),  # the precise one wins
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),  # a date: our backoff
        ({"retry-after": "-5"}, 0.0),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], wait: float | None) -> None:
    assert retry_after_s(headers) == wait


def test_an_http_status_decides_over_the_error_type() -> None:
    body = {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
    failure = failure_from_error_object(body, 429)
    assert (failure.code, failure.retryable, failure.message) == (
        "RATE_LIMIT_ERROR", True, "Rate limit reached"
    )  # fmt: skip
    assert failure.details == {
        "upstream_type": "requests",
        "upstream_code": "rate_limit_exceeded",
        "upstream_status": 429,
    }


@pytest.mark.parametrize(
    ("error", "code", "retryable"),
    [
        ({"type": "insufficient_quota"}, "RATE_LIMIT_ERROR", False),
        ({"code": 401}, "AUTHENTICATION_ERROR", False),
        ({"code": 529}, "OVERLOADED_ERROR", True),
        ({"type": "something_new"}, "UNKNOWN_ERROR", True),
        ("not an object", "UNKNOWN_ERROR", True),
    ],
)
def test_error_objects_without_a_status(error: object, code: str, retryable: bool) -> None:
    failure = failure_from_error_object(error)
    assert (failure.code, failure.retryable) == (code, retryable)


def test_an_exhausted_quota_is_not_worth_a_retry() -> None:
    body = {"message": "You exceeded your current quota", "type": "insufficient_quota",
            "code": "insufficient_quota"}  # fmt: skip
    failure = failure_from_error_object(body, 429)
    assert (failure.code, failure.retryable) == ("RATE_LIMIT_ERROR", False)
