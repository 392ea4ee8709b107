"""Upstream failures in OpenAI's terms, mapped to the gateway's codes (pure).

The HTTP status table is the one `gateway/model.py` uses for the Messages API, so a 429 or
a 503 means the same thing whichever provider answered.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from typing import Any

from gateway.errors import ErrorCode, UpstreamFailure

STATUS_CODES: dict[int, tuple[ErrorCode, bool]] = {
    400: ("VALIDATION_ERROR", False),
    401: ("AUTHENTICATION_ERROR", False),
    403: ("PERMISSION_ERROR", False),
    404: ("NOT_FOUND", False),
    408: ("TIMEOUT_ERROR", True),
    409: ("UNKNOWN_ERROR", True),  # a lock timeout: both SDKs retry it
    413: ("VALIDATION_ERROR", False),
    429: ("RATE_LIMIT_ERROR", True),
    502: ("NETWORK_ERROR", True),
    503: ("NETWORK_ERROR", True),
    504: ("TIMEOUT_ERROR", True),
    529: ("OVERLOADED_ERROR", True),
}
# Error `type`s OpenAI-compatible servers put in a mid-stream `error` object.
_CODE_BY_TYPE: dict[str, tuple[ErrorCode, bool]] = {
    "invalid_request_error": ("VALIDATION_ERROR", False),
    "authentication_error": ("AUTHENTICATION_ERROR", False),
    "permission_error": ("PERMISSION_ERROR", False),
    "not_found_error": ("NOT_FOUND", False),
    "rate_limit_error": ("RATE_LIMIT_ERROR", True),
    "rate_limit_exceeded": ("RATE_LIMIT_ERROR", True),
    "insufficient_quota": ("RATE_LIMIT_ERROR", False),
    "server_error": ("UNKNOWN_ERROR", True),
    "overloaded_error": ("OVERLOADED_ERROR", True),
    "timeout_error": ("TIMEOUT_ERROR", True),
}


def status_code(status: int) -> tuple[ErrorCode, bool]:
    """The gateway code for an HTTP status, and whether a retry could help. A status
    without its own entry (a 3xx, a 101) is `UNKNOWN_ERROR`, retried only from 500 up."""
    return STATUS_CODES.get(status, ("UNKNOWN_ERROR", status >= 500))


def should_retry(headers: Mapping[str, str], retryable: bool) -> bool:
    """The upstream's own word, as the SDKs take it: `x-should-retry: true` or `false`
    wins over what the status says."""
    match headers.get("x-should-retry"):
        case "true":
            return True
        case "false":
            return False
        case _:
            return retryable


def failure_from_error_object(error: Any, status: int | None = None) -> UpstreamFailure:
    """An OpenAI error object (`{"message", "type", "code", "param"}`) as a failure.

    Mid-stream, OpenRouter puts the HTTP status it would have sent in `code`; OpenAI puts
    a string there and the kind in `type`.
    """
    error = error if isinstance(error, Mapping) else {}
    kind, code_field = error.get("type"), error.get("code")
    if status is None and isinstance(code_field, int):
        status = code_field
    if status is not None:
        code, retryable = status_code(status)
    else:
        code, retryable = _CODE_BY_TYPE.get(str(kind), ("UNKNOWN_ERROR", True))
    if "insufficient_quota" in (kind, code_field):
        # OpenAI's 429 for an exhausted balance: waiting will not help, another upstream may.
        retryable = False
    message = str(error.get("message") or "upstream error")
    details: dict[str, Any] = {"upstream_type": kind, "upstream_code": code_field}
    if status is not None:
        details["upstream_status"] = status
    return UpstreamFailure(code, message, details, retryable=retryable)


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """`retry-after-ms` (OpenAI's), `retry-after` in seconds or as an HTTP date, as the
    SDKs read them; a date already past is left to our own backoff, as they leave it."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue
    date = email.utils.parsedate_tz(headers.get("retry-after") or "")
    wait = None if date is None else email.utils.mktime_tz(date) - time.time()
    return wait if wait is not None and wait > 0 else None
