"""Where SEC data comes from: the live EDGAR hosts or the bundled snapshot, same shapes.

Both sources answer by host and URL path exactly as EDGAR does (parsed JSON for the JSON
endpoints, the raw body for documents), so everything above them is one code path.

Failures, all `ToolFailure`s so the model reads them:

    ToolFailure
     └─ SecError            EDGAR answered, but not with the data
         ├─ SecNotFound     404 NoSuchKey, 403 AccessDenied under /Archives, not in snapshot
         └─ (base class)    rate threshold, undeclared tool, 5xx, timeouts
"""

from __future__ import annotations

from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from tools.base import ToolFailure

__all__ = [
    "PUBLIC_BASE",
    "SecError",
    "SecHost",
    "SecNotFound",
    "SecSource",
    "archives_path",
    "public_url",
]

SecHost = Literal["www", "data", "efts"]

# Canonical public URLs, used in results whatever base URL the client really talks to.
PUBLIC_BASE: dict[SecHost, str] = {
    "www": "https://www.sec.gov",
    "data": "https://data.sec.gov",
    "efts": "https://efts.sec.gov",
}


class SecError(ToolFailure):
    """EDGAR did not give the data; the message says why and what to do."""


class SecNotFound(SecError):
    """The path does not exist (or is not in the offline snapshot)."""


class SecSource(Protocol):
    """Read access to EDGAR by host and path; `label` names it in every tool result."""

    @property
    def label(self) -> str: ...

    @property
    def www_base(self) -> str:
        """The base URL documents are really fetched from (a mirror URL is accepted too)."""
        ...

    async def get_json(
        self, host: SecHost, path: str, params: dict[str, str] | None = None
    ) -> Any: ...

    async def get_text(self, host: SecHost, path: str) -> str: ...


def public_url(host: SecHost, path: str) -> str:
    return PUBLIC_BASE[host] + path


def archives_path(url_or_path: str, extra_bases: tuple[str, ...] = ()) -> str:
    """The `/Archives/...` path of a www.sec.gov document URL, or a ToolFailure.

    Accepts the public URL, a URL on a configured mirror base, or the bare path.
    """
    url = url_or_path.strip()
    for base in (PUBLIC_BASE["www"], "http://www.sec.gov", "https://sec.gov", *extra_bases):
        if base and url.startswith(base.rstrip("/") + "/"):
            url = url[len(base.rstrip("/")) :]
            break
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or not parts.path.startswith("/Archives/"):
        raise ToolFailure(
            f"Not an EDGAR document URL: {url_or_path!r}. Pass a https://www.sec.gov/Archives/... "
            "URL (as search_sec_filings returns) or cik plus accession_number."
        )
    return parts.path
