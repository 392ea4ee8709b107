"""AWS Signature Version 4 for one request (pure): what botocore's `SigV4Auth` computes,
without building its request objects per call (the fake checks each signature with
botocore itself)."""

from __future__ import annotations

import functools
import hashlib
import hmac
from collections.abc import Mapping
from datetime import datetime
from typing import NamedTuple
from urllib.parse import quote

from yarl import URL

ALGORITHM = "AWS4-HMAC-SHA256"
TIME_FORMAT = "%Y%m%dT%H%M%SZ"


class Keys(NamedTuple):
    """One set of AWS credentials, as botocore's `ReadOnlyCredentials` has them."""

    access_key: str
    secret_key: str
    token: str | None


@functools.lru_cache(maxsize=16)
def _signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    key = f"AWS4{secret}".encode()
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def canonical_path(raw_path: str) -> str:
    """The path as SigV4 signs it outside S3: each byte of the sent path encoded again."""
    return quote(raw_path or "/", safe="/~")


def sign(
    url: URL,
    body: bytes,
    headers: Mapping[str, str],
    keys: Keys,
    region: str,
    service: str,
    now: datetime,
) -> dict[str, str]:
    """The headers that sign a POST of `body` to `url` with `headers` (lowercase names, sent
    as they are): `x-amz-date`, `x-amz-security-token` with temporary keys, and
    `authorization`. `now` is UTC."""
    stamp = now.strftime(TIME_FORMAT)
    added = {"x-amz-date": stamp}
    if keys.token:
        added["x-amz-security-token"] = keys.token
    signed = {"host": url.raw_authority, **headers, **added}
    names = sorted(signed)
    canonical = "\n".join(
        (
            "POST",
            canonical_path(url.raw_path),
            url.raw_query_string,
            "".join(f"{name}:{' '.join(signed[name].split())}\n" for name in names),
            ";".join(names),
            hashlib.sha256(body).hexdigest(),
        )
    )
    scope = f"{stamp[:8]}/{region}/{service}/aws4_request"
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    to_sign = f"{ALGORITHM}\n{stamp}\n{scope}\n{digest}"
    key = _signing_key(keys.secret_key, stamp[:8], region, service)
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    added["authorization"] = (
        f"{ALGORITHM} Credential={keys.access_key}/{scope}, SignedHeaders={';'.join(names)}, "
        f"Signature={signature}"
    )
    return added
