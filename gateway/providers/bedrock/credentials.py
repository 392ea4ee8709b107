"""AWS credentials from botocore's standard chain (environment, shared credentials and
config files with their profiles, `credential_process`, web identity, the container's and
the instance's metadata endpoints), kept current for signing.

The chain is resolved once, in a thread (it may call a metadata endpoint); each call
then takes the frozen keys, refreshed in a thread when botocore says they are near
expiry (its advisory window: 15 minutes before) or when the service said they expired.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import botocore.session

from gateway.errors import UpstreamFailure
from gateway.providers.bedrock.sigv4 import Keys


class NoCredentials(UpstreamFailure):
    def __init__(self, why: str) -> None:
        super().__init__(
            "AUTHENTICATION_ERROR",
            f"No AWS credentials for Bedrock: {why} (the AWS standard chain: AWS_ACCESS_KEY_ID"
            " and AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws, web identity, or the "
            "container's or instance's role)",
        )


class AWSCredentials:
    """`await keys()`: the current keys; `expired()`: read them again on the next call."""

    def __init__(self, resolve: Callable[[], Any]) -> None:
        """`resolve()` (blocking) runs the chain: its credentials object, or None."""
        self._resolve = resolve
        self._source: Any = None
        self._keys: Keys | None = None
        self._stale = False
        self._lock = asyncio.Lock()
        self.refreshes = 0

    @classmethod
    async def from_chain(cls, profile: str | None = None) -> AWSCredentials:
        def resolve() -> Any:
            return botocore.session.Session(profile=profile).get_credentials()

        credentials = cls(resolve)
        credentials._source = await asyncio.to_thread(resolve)
        return credentials

    @property
    def found(self) -> bool:
        return self._source is not None

    def expired(self) -> None:
        self._stale = True

    async def keys(self) -> Keys:
        keys = self._keys
        if keys is not None and not self._stale and not self._near_expiry():
            return keys
        async with self._lock:
            if self._keys is keys:  # not refreshed by another call meanwhile
                self._keys = await asyncio.to_thread(self._read)
                self.refreshes += 1
            assert self._keys is not None
            return self._keys

    def _near_expiry(self) -> bool:
        needed = getattr(self._source, "refresh_needed", None)
        return bool(needed()) if needed is not None else False

    def _read(self) -> Keys:
        try:
            if self._stale or self._source is None:  # expired by the service's word: the
                self._source = self._resolve()  # chain again, from its start
            self._stale = False
            if self._source is None:
                raise NoCredentials("none found")
            frozen = self._source.get_frozen_credentials()
        except NoCredentials:
            raise
        except Exception as exc:  # botocore's many credential errors
            raise NoCredentials(f"{type(exc).__name__}: {exc}") from exc
        return Keys(frozen.access_key, frozen.secret_key, frozen.token)
