"""Amazon Bedrock's rules for the fake runtime (tests/fakes/bedrock.py): a request's SigV4
signature computed again with botocore and refused as AWS refuses it, and an
InvokeModel body turned back into the Messages API request it stands for, or refused as
Bedrock refuses it."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

# The `anthropic_version`s Bedrock takes: its own documented one, and the one the SDK's
# `AnthropicBedrock` sends today (anthropic 2.14.0).
VERSIONS = frozenset({"bedrock-2023-05-31", "2026-10-21"})
# Bedrock's model ids -> the Messages API's; `profile_only`: current models are offered
# only through cross-region inference profiles.
MODEL_IDS = {
    "anthropic.claude-sonnet-5-5": "claude-sonnet-5-5",
    "anthropic.claude-opus-5-5": "claude-opus-5-5",
    "anthropic.claude-haiku-5-5": "claude-haiku-5-5",
    "anthropic.claude-sonnet-5": "claude-sonnet-5",
    "anthropic.claude-opus-5": "claude-opus-5",
    "anthropic.claude-haiku-4-5-20251001-v1:0": "claude-haiku-4-5",
    "anthropic.claude-sonnet-4-5-20250929-v1:0": "claude-sonnet-4-5-20250929",
}
PROFILES = ("global", "us", "eu", "apac", "jp", "au")
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<scope>[^,]+), "
    r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})$"
)
MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check "
    "your AWS Secret Access Key and signing method. Consult the service documentation for "
    "details."
)


@dataclass
class Keys:
    secret: str
    token: str | None = None
    expired: bool = False


class AWSError(Exception):
    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def check_signature(request: web.Request, body: bytes, issued: dict[str, Keys], region: str) -> str:
    """The access key of a request whose signature botocore computes the same."""
    match = _AUTH.match(request.headers.get("Authorization", ""))
    if match is None:
        raise AWSError(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
    keys = issued.get(match["key"])
    if keys is None:
        raise AWSError(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    token = request.headers.get("X-Amz-Security-Token")
    if keys.token is not None and token != keys.token:
        raise AWSError(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    if keys.expired:
        raise AWSError(
            403,
            "ExpiredTokenException",
            "The security token included in the request is expired",
        )
    stamp = request.headers.get("X-Amz-Date", "")
    day, scoped_region, service, _ = match["scope"].split("/")
    if (scoped_region, service) != (region, "bedrock") or not stamp.startswith(day):
        raise AWSError(
            403, "InvalidSignatureException", "Credential should be scoped to a valid region."
        )
    when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    now = datetime.now(UTC)
    if abs(now - when) > timedelta(minutes=5):
        earliest = (now - timedelta(minutes=5)).strftime("%Y%m%dT%H%M%SZ")
        raise AWSError(
            403,
            "InvalidSignatureException",
            f"Signature expired: {stamp} is now earlier than {earliest}",
        )
    if match["signature"] != _botocore_signature(
        request, body, match["signed"], keys, match["key"], region, stamp
    ):
        raise AWSError(403, "InvalidSignatureException", MISMATCH)
    return match["key"]


def messages_request(model_id: str, raw: bytes) -> dict[str, Any]:
    """The Messages API request a valid InvokeModel body stands for."""
    try:
        body = json.loads(raw)
    except ValueError:
        raise AWSError(400, "ValidationException", "Malformed input request") from None
    for key in ("model", "stream"):
        if key in body:
            raise AWSError(
                400,
                "ValidationException",
                f"Malformed input request: #: extraneous key [{key}] is not "
                "permitted, please reformat your input and try again.",
            )
    if body.get("anthropic_version") not in VERSIONS:
        raise AWSError(
            400,
            "ValidationException",
            "Malformed input request: #: required key [anthropic_version] not found or invalid",
        )
    beta = body.get("anthropic_beta")
    if beta is not None and not (isinstance(beta, list) and all(isinstance(b, str) for b in beta)):
        raise AWSError(400, "ValidationException", "anthropic_beta must be a list of strings")
    profile, _, bare = model_id.partition(".")
    if profile not in PROFILES:
        bare = model_id
    anthropic_id = MODEL_IDS.get(bare)
    if anthropic_id is None:
        raise AWSError(400, "ValidationException", "The provided model identifier is invalid.")
    if bare == model_id:
        raise AWSError(
            400,
            "ValidationException",
            f"Invocation of model ID {model_id} with on-demand throughput isn't "
            "supported. Retry your request with the ID or ARN of an inference "
            "profile that contains this model.",
        )
    rest = {k: v for k, v in body.items() if k not in ("anthropic_version", "anthropic_beta")}
    return {"model": anthropic_id, **rest, "stream": True}


def _botocore_signature(
    request: web.Request,
    body: bytes,
    signed: str,
    keys: Keys,
    key: str,
    region: str,
    stamp: str,
) -> str:
    """The signature botocore makes for the request's signed headers as received."""
    names = signed.split(";")
    headers = {name: request.headers.get(name, "") for name in names}
    aws = AWSRequest(
        method=request.method,
        url=f"http://{request.host}{request.raw_path}",
        headers=headers,
        data=body,
    )
    aws.context["timestamp"] = stamp
    auth = SigV4Auth(Credentials(key, keys.secret, keys.token), "bedrock", region)
    canonical = auth.canonical_request(aws)
    if auth.signed_headers(auth.headers_to_sign(aws)) != signed:
        return "signed headers differ: " + base64.b64encode(canonical.encode()).decode()
    return str(auth.signature(auth.string_to_sign(aws, canonical), aws))
