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
import itertools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
from aiohttp import web

from gateway.providers.bedrock.eventstream import chunk_frame, encode_frame
from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.fakes.aws_rules import MISMATCH, AWSError, Keys, check_signature, messages_request

__all__ = ["MISMATCH", "FakeBedrock", "Keys", "exception_frame"]
_request_ids = itertools.count(1)
EVENTSTREAM = "application/vnd.amazon.eventstream"


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
            key = check_signature(request, raw, self.keys, self.region)
            model_id = request.match_info["model_id"]
            body = messages_request(model_id, raw)
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
