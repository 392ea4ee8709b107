"""A fake Amazon Bedrock runtime: InvokeModelWithResponseStream for Claude, holding the
cloud's rules.

Every request's SigV4 signature is computed again with botocore's own `SigV4Auth` for the
credentials the fake issued, and refused as AWS refuses it (403 with `x-amzn-ErrorType`
and a JSON `{"message"}`): no signature, an unknown key, a wrong signature, a date more
than 5 minutes off, temporary keys without their session token, expired keys. The body
is refused as Bedrock refuses it (`model` or `stream` in it, no `anthropic_version`, a
model id Bedrock does not have, a current model without an inference profile); what is
left is the Messages API's request, checked and answered by a `FakeAnthropic` (its
scripted replies), and streamed back as real event-stream frames.

A container credentials endpoint (`GET /creds`, what `AWS_CONTAINER_CREDENTIALS_FULL_URI`
points botocore at) issues a new set of temporary keys on each call; the earlier ones
expire then (as short-lived keys do by the time the next ones are needed).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from aiohttp import web
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from gateway.providers.bedrock.eventstream import chunk_frame, encode_frame
from tests.fakes.anthropic import FakeAnthropic, Reply

# The `anthropic_version`s Bedrock takes: its own documented one, and the one the SDK's
# `AnthropicBedrock` sends today (anthropic 2.14.0).
VERSIONS = frozenset({"bedrock-2023-05-31", "2026-10-21"})
# Bedrock's model ids -> the Messages API's; `profile_only`: current models are offered
# only through cross-region inference profiles.
MODEL_IDS = {
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
_request_ids = itertools.count(1)
EVENTSTREAM = "application/vnd.amazon.eventstream"
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


@dataclass
class FakeBedrock:
    fake: FakeAnthropic = field(default_factory=FakeAnthropic)
    region: str = "us-east-1"
    keys: dict[str, Keys] = field(default_factory=dict)
    issued: int = 0
    """Keys the container endpoint issued."""
    issued_for_s: int = 14 * 60
    """The lifetime written on issued keys: under botocore's 15 minutes, so it refreshes."""
    refusals: list[tuple[int, str, str]] = field(default_factory=list)
    accepted: list[dict[str, Any]] = field(default_factory=list)
    """Each accepted request: its path's model id, body, headers, access key."""
    break_checksum_at: int | None = None
    """In the next stream, the frame at this index goes out with a broken message CRC."""
    exception_at: tuple[int, str] | None = None
    """In the next stream, an exception frame (index, `:exception-type`) instead."""
    model_server: str | None = None
    """A Messages API server (the demo model) that answers instead of scripted replies:
    Bedrock in front of a model that researches, for the playground offline."""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/model/{model_id}/invoke-with-response-stream", self._invoke)
        app.router.add_get("/creds", self._container_credentials)
        return app

    def add_static(self, key: str, secret: str, token: str | None = None) -> None:
        self.keys[key] = Keys(secret, token)

    async def _container_credentials(self, request: web.Request) -> web.Response:
        for keys in self.keys.values():
            keys.expired = True
        self.issued += 1
        key = f"ASIAFAKE{self.issued:012d}"
        self.keys[key] = Keys(f"secret/{self.issued}", f"session-token-{self.issued}")
        expires = datetime.now(UTC) + timedelta(seconds=self.issued_for_s)
        return web.json_response(
            {
                "AccessKeyId": key,
                "SecretAccessKey": self.keys[key].secret,
                "Token": self.keys[key].token,
                "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )

    async def _invoke(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            key = self._check_signature(request, raw)
            model_id = request.match_info["model_id"]
            body = self._messages_request(model_id, raw)
        except AWSError as exc:
            return self._refuse(exc)
        self.accepted.append(
            {
                "model_id": model_id,
                "body": json.loads(raw),
                "key": key,
                "headers": dict(request.headers),
            }
        )
        self.fake.requests.append(body)
        applied = self.fake.refusal(body, set(json.loads(raw).get("anthropic_beta") or ()))
        if isinstance(applied, tuple):
            return self._refuse(AWSError(400, "ValidationException", applied[2]))
        if self.model_server is not None:
            return await self._relay(request, body)
        if not self.fake.replies:
            return self._refuse(AWSError(500, "InternalServerException", "no reply left"))
        reply = self.fake.ready(self.fake.replies.pop(0), applied)
        if reply.status is not None:
            return self._refuse(AWSError(reply.status, reply.error_type, "scripted failure"))
        return await self._stream(request, reply)

    def _refuse(self, error: AWSError) -> web.Response:
        self.refusals.append((error.status, error.kind, error.message))
        headers = {
            "x-amzn-ErrorType": f"{error.kind}:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-RequestId": f"fake-{next(_request_ids):08d}",
        }
        return web.json_response({"message": error.message}, status=error.status, headers=headers)

    def _check_signature(self, request: web.Request, body: bytes) -> str:
        """The access key of a request whose signature botocore computes the same."""
        match = _AUTH.match(request.headers.get("Authorization", ""))
        if match is None:
            raise AWSError(
                403, "MissingAuthenticationTokenException", "Missing Authentication Token"
            )
        keys = self.keys.get(match["key"])
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
        day, region, service, _ = match["scope"].split("/")
        if (region, service) != (self.region, "bedrock") or not stamp.startswith(day):
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
            request, body, match["signed"], keys, match["key"], self.region, stamp
        ):
            raise AWSError(403, "InvalidSignatureException", MISMATCH)
        return match["key"]

    def _messages_request(self, model_id: str, raw: bytes) -> dict[str, Any]:
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
        if beta is not None and not (
            isinstance(beta, list) and all(isinstance(b, str) for b in beta)
        ):
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

    async def _stream(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={
                "Content-Type": EVENTSTREAM,
                "x-amzn-RequestId": f"fake-{next(_request_ids):08d}",
                "X-Amzn-Bedrock-Content-Type": "application/json",
            }
        )
        await response.prepare(request)
        broken, self.break_checksum_at = self.break_checksum_at, None
        exception, self.exception_at = self.exception_at, None
        try:
            for n, event in enumerate(self.fake.events(reply)):
                if event["type"] == "message_stop":
                    event = {
                        **event,
                        "amazon-bedrock-invocationMetrics": {
                            "inputTokenCount": reply.input_tokens,
                            "outputTokenCount": reply.output_tokens,
                        },
                    }
                if exception is not None and n == exception[0]:
                    await response.write(exception_frame(exception[1], "scripted failure"))
                    return response
                if n == reply.cut_after:
                    assert request.transport is not None
                    request.transport.close()
                    return response
                if reply.delay_s:
                    await asyncio.sleep(reply.delay_s)
                frame = chunk_frame(json.dumps(event, separators=(",", ":")).encode())
                if n == broken:
                    frame = frame[:-1] + bytes([frame[-1] ^ 0xFF])
                await response.write(frame)
            await response.write_eof()
            self.fake.finished += 1
        except (ConnectionResetError, asyncio.CancelledError):
            self.fake.disconnects += 1
            self.fake.disconnected.set()
            raise
        return response

    async def _relay(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        """The model server's SSE events, each as Bedrock frames it."""
        response = web.StreamResponse(headers={"Content-Type": EVENTSTREAM})
        await response.prepare(request)
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.model_server}/v1/messages", json=body) as answer,
        ):
            async for line in answer.content:
                if line.startswith(b"data: "):
                    await response.write(chunk_frame(line[6:].rstrip(b"\r\n")))
        await response.write_eof()
        return response


def exception_frame(kind: str, message: str) -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_frame(headers, json.dumps({"message": message}).encode())


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
