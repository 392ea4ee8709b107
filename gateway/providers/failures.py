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


# Amazon Bedrock's exceptions (the `x-amzn-ErrorType` of an answer, the `:exception-type`
# of a stream frame, first letter in either case): the gateway's code, and whether a
# retry could help (botocore's standard retry mode retries the same).
_AWS_CODES: dict[str, tuple[ErrorCode, bool]] = {
    "throttlingexception": ("RATE_LIMIT_ERROR", True),
    "toomanyrequestsexception": ("RATE_LIMIT_ERROR", True),
    "servicequotaexceededexception": ("RATE_LIMIT_ERROR", False),
    "modelnotreadyexception": ("OVERLOADED_ERROR", True),
    "serviceunavailableexception": ("OVERLOADED_ERROR", True),
    "internalserverexception": ("UNKNOWN_ERROR", True),
    "modeltimeoutexception": ("TIMEOUT_ERROR", True),
    "modelstreamerrorexception": ("UNKNOWN_ERROR", True),
    "modelerrorexception": ("UNKNOWN_ERROR", False),
    "validationexception": ("VALIDATION_ERROR", False),
    "resourcenotfoundexception": ("NOT_FOUND", False),
    "accessdeniedexception": ("PERMISSION_ERROR", False),
    "unrecognizedclientexception": ("AUTHENTICATION_ERROR", False),
    "invalidsignatureexception": ("AUTHENTICATION_ERROR", False),
    "incompletesignatureexception": ("AUTHENTICATION_ERROR", False),
    "missingauthenticationtokenexception": ("AUTHENTICATION_ERROR", False),
    # Retried once the credentials are read again (the provider does that first).
    "expiredtokenexception": ("AUTHENTICATION_ERROR", True),
}
EXPIRED_TOKEN = "ExpiredTokenException"


def aws_stream_failure(kind: str, message: str, status: int | None = None) -> UpstreamFailure:
    """A Bedrock exception (an event-stream frame's, or an answer's) as a failure."""
    name = kind.split(":", 1)[0].strip()
    default = status_code(status) if status is not None else ("UNKNOWN_ERROR", True)
    code, retryable = _AWS_CODES.get(name.lower(), default)
    details: dict[str, Any] = {"upstream_type": name}
    if status is not None:
        details["upstream_status"] = status
    return UpstreamFailure(code, message, details, retryable=retryable)


def aws_answer_failure(status: int, body: Any, headers: Mapping[str, str]) -> UpstreamFailure:
    """An error answer of Bedrock's runtime: `x-amzn-ErrorType` names the exception (else
    the body's `__type`), the body's `message` says why, `x-amzn-RequestId` identifies it."""
    body = body if isinstance(body, dict) else {}
    kind = headers.get("x-amzn-errortype") or str(body.get("__type", "")).rsplit("#", 1)[-1]
    message = str(body.get("message") or body.get("Message") or f"HTTP {status}")
    failure = aws_stream_failure(kind or f"HTTP {status}", message, status)
    failure.retry_after_s = retry_after_s(headers)
    request_id = headers.get("x-amzn-requestid")
    if request_id:
        failure.details["upstream_request_id"] = request_id
    return failure


# Google's canonical error statuses (`{"error": {"code", "message", "status"}}`).
_GOOGLE_CODES: dict[str, tuple[ErrorCode, bool]] = {
    "INVALID_ARGUMENT": ("VALIDATION_ERROR", False),
    "FAILED_PRECONDITION": ("VALIDATION_ERROR", False),
    "OUT_OF_RANGE": ("VALIDATION_ERROR", False),
    "UNAUTHENTICATED": ("AUTHENTICATION_ERROR", False),
    "PERMISSION_DENIED": ("PERMISSION_ERROR", False),
    "NOT_FOUND": ("NOT_FOUND", False),
    "RESOURCE_EXHAUSTED": ("RATE_LIMIT_ERROR", True),
    "ABORTED": ("UNKNOWN_ERROR", True),
    "UNAVAILABLE": ("NETWORK_ERROR", True),
    "DEADLINE_EXCEEDED": ("TIMEOUT_ERROR", True),
    "INTERNAL": ("UNKNOWN_ERROR", True),
}


def google_failure(status: int, body: Any, headers: Mapping[str, str]) -> UpstreamFailure | None:
    """A Google API error answer (Vertex's own: auth, quota, a project without the model)
    as a failure; None when the body is not Google's shape (the model's own errors come in
    the Messages API's shape through Vertex)."""
    if isinstance(body, list) and body:  # some Google front ends answer a list of one
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or ("status" not in error and "code" not in error):
        return None
    kind = str(error.get("status") or "")
    code, retryable = _GOOGLE_CODES.get(kind, status_code(status))
    message = str(error.get("message") or f"HTTP {status}")
    details: dict[str, Any] = {"upstream_type": kind or None, "upstream_status": status}
    failure = UpstreamFailure(code, message, details, retryable=retryable)
    failure.retry_after_s = retry_after_s(headers)
    return failure
