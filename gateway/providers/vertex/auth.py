"""Google Application Default Credentials (`GOOGLE_APPLICATION_CREDENTIALS`'s file, a
service account's or an external account's (workload identity federation), the gcloud
user's, or the metadata server's), kept fresh for Vertex AI's bearer tokens.

Resolved once in a thread; before each call the token is refreshed, in a thread, when
google-auth no longer calls it fresh (within 3 min 45 s of its expiry) or the service
refused it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import google.auth
import google.auth.exceptions
import google.auth.transport.requests
from google.auth.credentials import TokenState

from gateway.errors import UpstreamFailure

SCOPE = "https://www.googleapis.com/auth/cloud-platform"


class NoGoogleCredentials(UpstreamFailure):
    def __init__(self, why: str) -> None:
        super().__init__(
            "AUTHENTICATION_ERROR",
            f"No Google credentials for Vertex AI: {why} (Application Default Credentials: "
            "GOOGLE_APPLICATION_CREDENTIALS, `gcloud auth application-default login`, or "
            "the metadata server's service account)",
        )


def load_default() -> tuple[Any, str | None]:
    """ADC with the cloud-platform scope, and their project (blocking)."""
    try:
        credentials, project = google.auth.default(scopes=[SCOPE])
    except google.auth.exceptions.DefaultCredentialsError as exc:
        raise NoGoogleCredentials(str(exc).splitlines()[0]) from exc
    return credentials, project


class GoogleToken:
    """`await bearer()`: a current access token; `refused()`: get a new one next time."""

    def __init__(self, credentials: Any) -> None:
        self._credentials = credentials
        self._refused = False
        self._lock = asyncio.Lock()
        self.refreshes = 0

    @property
    def quota_project(self) -> str | None:
        return getattr(self._credentials, "quota_project_id", None)

    def refused(self) -> None:
        self._refused = True

    async def bearer(self) -> str:
        credentials = self._credentials
        if self._refused or credentials.token_state != TokenState.FRESH:
            async with self._lock:
                if self._refused or credentials.token_state != TokenState.FRESH:
                    await asyncio.to_thread(self._refresh)
        return str(credentials.token)

    def _refresh(self) -> None:
        try:
            self._credentials.refresh(google.auth.transport.requests.Request())
        except google.auth.exceptions.GoogleAuthError as exc:
            raise NoGoogleCredentials(f"{type(exc).__name__}: {exc}") from exc
        self._refused = False
        self.refreshes += 1
