"""Configuration: one frozen object read from the environment (and `.env`) in `__main__` only.

Tests build `Settings(...)` explicitly; nothing here does I/O at import time.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from tools.config import ToolsConfig

DEFAULT_MODEL = "claude-sonnet-4-5-20250929"


class Settings(BaseSettings):
    """Every setting PROTOCOL lists, by its environment name (case-insensitive)."""

    model_config = SettingsConfigDict(
        env_file=".env", extra="ignore", frozen=True, populate_by_name=True
    )

    host: str = "127.0.0.1"
    port: int = 3001

    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    gateway_upstream: Literal["anthropic", "demo"] | None = None
    """None: `anthropic` when a key is set, else the built-in `demo` model."""

    sdk_model: str = DEFAULT_MODEL
    sdk_max_tokens: int = Field(64_000, ge=1)
    sdk_max_turns: int = Field(10, ge=1, le=100)
    sdk_thinking_budget: int = Field(0, ge=0)
    sdk_system_prompt: str | None = None

    gateway_tool_timeout_s: float = Field(30.0, gt=0)
    gateway_tool_result_max_chars: int = Field(100_000, ge=1_000)
    gateway_heartbeat_s: float = Field(15.0, gt=0)
    gateway_resume_grace_s: float = Field(30.0, ge=0)
    gateway_run_ttl_s: float = Field(600.0, gt=0)
    """How long a finished run's event log stays readable for re-attach."""
    gateway_run_log_max_events: int = Field(200_000, ge=100)
    gateway_max_body_bytes: int = Field(1_048_576, ge=1_024)
    gateway_api_keys: Annotated[tuple[str, ...], NoDecode] = ()
    gateway_upstream_max_retries: int = Field(3, ge=0)
    gateway_upstream_max_retry_wait_s: float = Field(30.0, ge=0)
    gateway_upstream_timeout_s: float = Field(600.0, gt=0)
    gateway_trace_content: bool = False
    gateway_gc_freeze: bool = True
    """Once the app is up, move everything made at startup out of the collector's way and
    collect less often: full collections otherwise stall every stream for 100 ms and more
    at a few hundred streams."""
    gateway_demo_pacing_ms: float = Field(15.0, ge=0)
    """Pause before each streamed delta of the demo model, so people can watch it work."""

    # The tools' own defaults: one place says where SEC and Exa are.
    sec_source: Literal["offline", "live"] = ToolsConfig.sec_source
    sec_user_agent: str | None = None
    sec_www_url: str = ToolsConfig.sec_www_url
    sec_data_url: str = ToolsConfig.sec_data_url
    sec_efts_url: str = ToolsConfig.sec_efts_url
    search_backend: Literal["offline", "exa"] = ToolsConfig.search_backend
    exa_api_key: str | None = None
    exa_base_url: str = ToolsConfig.exa_base_url

    redis_url: str | None = None
    """Set: runs, sessions and event logs live in Redis, shared by every process."""
    redis_key_prefix: str = "rg:"
    """Prefix of every Redis key and channel, so deployments (or tests) can share a server."""
    gateway_session_ttl_s: float = Field(3600.0, gt=0)
    """How long a session's history is kept after its last run."""

    # Workers and durable runs: several processes on one port, runs that outlive a worker.
    gateway_workers: int = Field(1, ge=1)
    """Processes serving the port (SO_REUSEPORT); more than one needs REDIS_URL."""
    gateway_worker_index: int = Field(0, ge=0)
    """Which worker this process is (the supervisor sets it), for /health and logs."""
    gateway_takeover_s: float = Field(10.0, gt=0)
    """With Redis: how soon another worker continues the runs of a worker that died."""

    @field_validator("gateway_api_keys", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(k.strip() for k in value.split(",") if k.strip())
        return value

    @property
    def upstream_kind(self) -> Literal["anthropic", "demo"]:
        if self.gateway_upstream is not None:
            return self.gateway_upstream
        return "anthropic" if self.anthropic_api_key else "demo"

    def tools_config(self) -> ToolsConfig:
        return ToolsConfig(
            sec_source=self.sec_source,
            sec_user_agent=self.sec_user_agent,
            sec_www_url=self.sec_www_url,
            sec_data_url=self.sec_data_url,
            sec_efts_url=self.sec_efts_url,
            search_backend=self.search_backend,
            exa_api_key=self.exa_api_key,
            exa_base_url=self.exa_base_url,
            redis_url=self.redis_url,
            redis_key_prefix=self.redis_key_prefix,
        )
