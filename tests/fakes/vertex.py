"""A fake Google Cloud Vertex AI for Claude: `streamRawPredict` of the publisher models,
and a local OAuth 2.0 token endpoint for a service account key it generates.

The token endpoint takes the JWT-bearer grant google-auth sends for a service account,
checks the assertion's RS256 signature with the key's public half and its claims, and
issues an access token that lives `token_lifetime_s`. The model endpoint refuses a
missing, unknown or expired bearer (401 `UNAUTHENTICATED` in Google's error shape),
another project (403 `PERMISSION_DENIED`), a model or region it does not serve (404
`NOT_FOUND`), a body with `model` or without a known `anthropic_version` (400 in the
Messages API's shape, as Vertex passes the model's refusals); what is left is the
Messages API's request, checked and answered by a `FakeAnthropic` (its scripted replies:
a `status` with an upper-case `error_type` answers in Google's shape, e.g. a quota's
`RESOURCE_EXHAUSTED`).
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.fakes.anthropic import FakeAnthropic

VERSIONS = frozenset({"vertex-2023-10-16", "2026-10-21"})
MODEL_IDS = {
    "claude-sonnet-5-5": "claude-sonnet-5-5",
    "claude-opus-5-5": "claude-opus-5-5",
    "claude-haiku-5-5": "claude-haiku-5-5",
    "claude-sonnet-5": "claude-sonnet-5",
    "claude-opus-5": "claude-opus-5",
    "claude-haiku-4-5@20251001": "claude-haiku-4-5",
    "claude-sonnet-4-5@20250929": "claude-sonnet-4-5-20250929",
}
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
SCOPE = "https://www.googleapis.com/auth/cloud-platform"
AUDIENCE = "https://oauth2.googleapis.com/token"
"""What a service account's assertion is addressed to, whichever `token_uri` it goes to."""
_tokens = itertools.count(1)


def google_error(status: int, kind: str, message: str) -> web.Response:
    body = {"error": {"code": status, "message": message, "status": kind}}
    return web.json_response(body, status=status)


def anthropic_error(status: int, kind: str, message: str) -> web.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return web.json_response(body, status=status)


def _b64(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


@dataclass
class FakeVertex:
    fake: FakeAnthropic = field(default_factory=FakeAnthropic)
    project: str = "fake-project"
    region: str = "us-east5"
    token_lifetime_s: int = 3600
    client_email: str = "gateway@fake-project.iam.gserviceaccount.com"
    tokens: dict[str, float] = field(default_factory=dict)
    """Access token -> when it expires (time.time())."""
    issued: int = 0
    accepted: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[tuple[int, str]] = field(default_factory=list)
    token_uri: str = ""
    model_server: str | None = None
    """A Messages API server (the demo model) that answers instead of scripted replies."""

    def __post_init__(self) -> None:
        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/token", self._token)
        app.router.add_post(
            "/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{action}",
            self._predict,
        )
        return app

    def write_key(self, directory: Path, token_uri: str) -> Path:
        """A service account key file (as IAM hands one out) whose `token_uri` is here."""
        self.token_uri = token_uri
        pem = self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()
        path = directory / "service-account.json"
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": self.project,
                    "private_key_id": "k1",
                    "private_key": pem,
                    "client_email": self.client_email,
                    "client_id": "1",
                    "token_uri": token_uri,
                }
            )
        )
        return path

    def expire_tokens(self) -> None:
        for token in self.tokens:
            self.tokens[token] = 0.0

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        if form.get("grant_type") != JWT_BEARER:
            return web.json_response({"error": "unsupported_grant_type"}, status=400)
        problem = self._assertion_problem(str(form.get("assertion", "")))
        if problem is not None:
            body = {"error": "invalid_grant", "error_description": problem}
            return web.json_response(body, status=400)
        self.issued += 1
        token = f"ya29.fake-{next(_tokens)}"
        self.tokens[token] = time.time() + self.token_lifetime_s
        issued = {"access_token": token, "token_type": "Bearer"}
        return web.json_response({**issued, "expires_in": self.token_lifetime_s})

    def _assertion_problem(self, assertion: str) -> str | None:
        try:
            head, claims, signature = assertion.split(".")
            self._key.public_key().verify(
                _b64(signature),
                f"{head}.{claims}".encode(),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
            values = json.loads(_b64(claims))
        except (ValueError, InvalidSignature):
            return "Invalid JWT Signature."
        now = time.time()
        if values.get("iss") != self.client_email or values.get("aud") != AUDIENCE:
            return "Invalid JWT: wrong issuer or audience."
        if SCOPE not in str(values.get("scope", "")).split():
            return "Invalid JWT: no cloud-platform scope."
        if not values.get("iat", 0) - 300 <= now <= values.get("exp", 0):
            return "Invalid JWT: Token must be a short-lived token and in a reasonable timeframe."
        return None

    async def _predict(self, request: web.Request) -> web.StreamResponse:
        refused = self._check(request)
        if refused is not None:
            self.refusals.append((refused.status, refused.text or ""))
            return refused
        model_id = request.match_info["action"].removesuffix(":streamRawPredict")
        raw = await request.json()
        if "model" in raw or raw.get("anthropic_version") not in VERSIONS:
            self.refusals.append((400, "body"))
            return anthropic_error(
                400,
                "invalid_request_error",
                "model: Extra inputs are not permitted, or anthropic_version is missing",
            )
        self.accepted.append(
            {"path": request.path, "body": raw, "authorization": request.headers["Authorization"]}
        )
        body = {"model": MODEL_IDS[model_id], **raw}
        del body["anthropic_version"]
        return await self._answer(request, body)

    def _check(self, request: web.Request) -> web.Response | None:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return google_error(
                401,
                "UNAUTHENTICATED",
                "Request is missing required authentication credential. "
                "Expected OAuth 2 access token.",
            )
        if self.tokens.get(auth.removeprefix("Bearer "), 0.0) <= time.time():
            return google_error(
                401,
                "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token.",
            )
        info = request.match_info
        if info["project"] != self.project:
            return google_error(
                403,
                "PERMISSION_DENIED",
                f"Permission 'aiplatform.endpoints.predict' denied on resource "
                f"'projects/{info['project']}' (or it may not exist).",
            )
        model_id = info["action"].removesuffix(":streamRawPredict")
        if info["region"] != self.region or model_id not in MODEL_IDS or model_id == info["action"]:
            return google_error(
                404,
                "NOT_FOUND",
                f"Publisher Model `{request.path}` was not found or your project "
                "does not have access to it.",
            )
        return None

    async def _answer(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        fake = self.fake
        fake.requests.append(body)
        applied = fake.refusal(
            body, {b for b in request.headers.get("anthropic-beta", "").split(",") if b}
        )
        if isinstance(applied, tuple):
            return anthropic_error(*applied)
        if self.model_server is not None:
            return await self._relay(request, body)
        if not fake.replies:
            return google_error(500, "INTERNAL", "fake: no scripted reply left")
        reply = fake.ready(fake.replies.pop(0), applied)
        if reply.status is not None:
            shape = google_error if reply.error_type.isupper() else anthropic_error
            return shape(reply.status, reply.error_type, "scripted failure")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await fake._stream(request, response, reply)
        return response

    async def _relay(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        """The model server's SSE, as Vertex passes the model's stream on."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        async with (
            aiohttp.ClientSession() as session,
            session.post(f"{self.model_server}/v1/messages", json=body) as answer,
        ):
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
        await response.write_eof()
        return response
