"""What the tools need from the process's configuration, in one frozen object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ToolsConfig"]


@dataclass(frozen=True)
class ToolsConfig:
    """Backends and outside URLs of the tools; the defaults need no network at all."""

    sec_source: Literal["offline", "live"] = "offline"
    sec_user_agent: str | None = None
    sec_www_url: str = "https://www.sec.gov"
    sec_data_url: str = "https://data.sec.gov"
    sec_efts_url: str = "https://efts.sec.gov"
    search_backend: Literal["offline", "exa"] = "offline"
    exa_api_key: str | None = None
    exa_base_url: str = "https://api.exa.ai"
    redis_url: str | None = None
    """Set: the SEC rate limit and SEC's responses are shared through this Redis by every
    process using it; unset: each process limits and caches alone."""
    redis_key_prefix: str = "rg:"
    sec_max_body_bytes: int = 64 << 20
    """The largest SEC answer read (decoded); 16 times the largest recorded company facts."""
    exa_max_body_bytes: int = 1 << 20
    """The largest Exa answer read; twenty results of 800 characters are some 30 kB."""
    max_retry_wait_s: float = 10.0
    """The longest a throttled call waits for a retry (SEC's or Exa's `Retry-After`); a
    longer wait fails the call at once. Also bounded by one request's share of the tool
    timeout."""

    def check(self) -> None:
        """Raise ValueError naming the setting to fix when the combination cannot work."""
        if self.sec_source not in ("offline", "live"):
            raise ValueError(f"SEC_SOURCE must be 'offline' or 'live', not {self.sec_source!r}")
        if self.search_backend not in ("offline", "exa"):
            raise ValueError(
                f"SEARCH_BACKEND must be 'offline' or 'exa', not {self.search_backend!r}"
            )
        if self.sec_source == "live" and not (self.sec_user_agent or "").strip():
            raise ValueError(
                "SEC_SOURCE=live needs SEC_USER_AGENT, e.g. 'Example Corp admin@example.com' "
                "(SEC refuses requests without a declared name and contact)"
            )
        if self.search_backend == "exa" and not (self.exa_api_key or "").strip():
            raise ValueError("SEARCH_BACKEND=exa needs EXA_API_KEY")
        for name in ("sec_www_url", "sec_data_url", "sec_efts_url", "exa_base_url"):
            url = getattr(self, name)
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"{name.upper()} must be an http(s) URL, not {url!r}")
        self._check_limits()

    def _check_limits(self) -> None:
        for name in ("sec_max_body_bytes", "exa_max_body_bytes"):
            value = getattr(self, name)
            if value < 1024:
                raise ValueError(f"{name.upper()} must be at least 1024, not {value}")
        if not self.max_retry_wait_s >= 0:  # NaN too
            raise ValueError(
                f"GATEWAY_TOOL_MAX_RETRY_WAIT_S must be >= 0, not {self.max_retry_wait_s}"
            )
