"""The caller-facing errors and their codes.

    GatewayError(code, message, status)      answered before a stream, or as an `error` event
    ├── ValidationFailed                      400 (or 405, 413), bad request input
    └── UpstreamFailure                       the model service failed in a way retries did not fix

One `Literal` set of codes serves the JSON error body, the SSE `error` event and the
metric label. Tool failures are not here: the model sees those as `is_error` results.
A client disconnect is not here either: it is an outcome.
"""

from __future__ import annotations

from typing import Any, Literal

ErrorCode = Literal[
    "VALIDATION_ERROR",
    "AUTHENTICATION_ERROR",
    "PERMISSION_ERROR",
    "NOT_FOUND",
    "RATE_LIMIT_ERROR",
    "OVERLOADED_ERROR",
    "TIMEOUT_ERROR",
    "NETWORK_ERROR",
    "UNKNOWN_ERROR",
    "KEY_REVOKED",
]

STATUS_BY_CODE: dict[ErrorCode, int] = {
    "VALIDATION_ERROR": 400,
    "AUTHENTICATION_ERROR": 401,
    "PERMISSION_ERROR": 403,
    "NOT_FOUND": 404,
    "RATE_LIMIT_ERROR": 429,
    "OVERLOADED_ERROR": 529,
    "TIMEOUT_ERROR": 504,
    "NETWORK_ERROR": 502,
    "UNKNOWN_ERROR": 500,
    "KEY_REVOKED": 401,  # the key was revoked while its run was in progress
}


class GatewayError(Exception):
    """An error the caller sees, with a code from the closed set."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message
        self.details = details or {}
        # HTTP statuses without a code of their own (405, 413) reuse VALIDATION_ERROR.
        self.status = status if status is not None else STATUS_BY_CODE[code]
        self.headers: dict[str, str] = {}
        """Extra response headers when answered as JSON (a 429's `Retry-After`)."""

    def body(self, request_id: str) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "details": self.details,
            "request_id": request_id,
        }


class ValidationFailed(GatewayError):
    def __init__(
        self, message: str, details: dict[str, Any] | None = None, *, status: int = 400
    ) -> None:
        super().__init__("VALIDATION_ERROR", message, details, status=status)


class UpstreamFailure(GatewayError):
    """The model service failed; `retryable` says whether a retry could help."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        details: dict[str, Any] | None = None,
        *,
        retryable: bool = False,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(code, message, details)
        self.retryable = retryable
        self.retry_after_s = retry_after_s
