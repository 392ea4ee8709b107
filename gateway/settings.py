"""Configuration: one frozen object read from the environment (and `.env`) in `__main__` only.

Tests build `Settings(...)` explicitly; nothing here does I/O at import time.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AliasChoices, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from gateway.cloud_ids import bedrock_model_id, bedrock_name, vertex_model_id, vertex_name
from tools.config import ToolsConfig
from tools.mcp.config import McpServerConfig, parse_servers

DEFAULT_MODEL = "claude-sonnet-5-5"
DEMO_MODEL = "demo"
SERVER_TOOLS = ("web_search", "web_fetch")
UpstreamKind = Literal["anthropic", "openai", "demo", "bedrock", "vertex"]


class Settings(BaseSettings):
    """Every setting PROTOCOL lists, by its environment name (case-insensitive)."""

    model_config = SettingsConfigDict(
        env_file=".env", extra="ignore", frozen=True, populate_by_name=True
    )

    host: str = "127.0.0.1"
    port: int = 3001

    anthropic_api_key: str | None = None
    anthropic_base_url: str | None = None
    gateway_upstream: UpstreamKind | None = None
    """None: `anthropic` when a key is set, else the built-in `demo` model."""

    openai_base_url: str | None = None
    """An OpenAI-compatible server (OpenRouter, vLLM, Ollama, LiteLLM, Azure); None: OpenAI."""
    openai_api_key: str | None = None
    openai_model: str | None = None
    """The model an `openai` upstream is asked for; it must be set to use one."""
    gateway_fallback_upstreams: Annotated[tuple[UpstreamKind, ...], NoDecode] = ()
    """Upstreams to hand a model call to, in order, when the one before failed it."""
    aws_region: str | None = Field(
        None, validation_alias=AliasChoices("aws_region", "aws_default_region")
    )
    """The Bedrock runtime's region; None: the AWS profile's (credentials: the standard chain)."""
    gateway_bedrock_model: str | None = None
    """Bedrock's model id or inference profile; None: SDK_MODEL through the region's profile."""
    gateway_bedrock_url: str | None = None
    """Instead of `https://bedrock-runtime.{AWS_REGION}.amazonaws.com` (a private link, tests)."""
    gateway_vertex_region: str | None = Field(
        None, validation_alias=AliasChoices("gateway_vertex_region", "cloud_ml_region")
    )
    gateway_vertex_project: str | None = Field(
        None, validation_alias=AliasChoices("gateway_vertex_project", "anthropic_vertex_project_id")
    )
    """None: the project of the Application Default Credentials."""
    gateway_vertex_url: str | None = None
    """Instead of `https://{region}-aiplatform.googleapis.com/v1` (`global`: no region part)."""

    sdk_model: str = DEFAULT_MODEL
    sdk_max_tokens: int = Field(64_000, ge=1)
    sdk_max_turns: int = Field(10, ge=1, le=100)
    sdk_thinking: Literal["off", "adaptive", "on"] = "off"
    """Default thinking: `on` is the model's own form (adaptive where it has it)."""
    sdk_effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    """Default effort; None: the model's own default."""
    sdk_thinking_budget: int = Field(0, ge=0)
    """A budget > 0 turns thinking on; the budget form goes only to models that take it."""
    sdk_system_prompt: str | None = None
    gateway_prompt_cache: bool = True
    """Cache tool definitions, the system prompt and each call's history prefix."""
    gateway_context: Literal["compact", "edit", "off"] = "compact"
    """Long runs: `compact` (server-side compaction where the model has it, else context
    editing, else the gateway clears old tool results itself), `edit` (no compaction),
    `off` (a full window ends the run with `context_exceeded`)."""
    gateway_context_trigger_tokens: int | None = Field(None, ge=1_000)
    """Input tokens past which the context is compacted or cleared; None: 150,000, and at
    most three quarters of the model's window (compaction: at least 50,000)."""
    gateway_context_keep_tool_uses: int = Field(3, ge=0)
    """Tool results kept (the newest) when old ones are cleared."""
    anthropic_server_tools: Annotated[tuple[str, ...], NoDecode] = ()
    """The Messages API's own tools to offer (`web_search`, `web_fetch`)."""
    gateway_code_execution: bool = True
    """Allow runs that ask for it (`code_execution`, `skills`) to use the Messages API's
    code execution tool and skills; false: such a request is a 400."""

    gateway_tool_timeout_s: float = Field(30.0, gt=0)
    gateway_tool_result_max_chars: int = Field(100_000, ge=1_000)
    gateway_tool_max_retry_wait_s: float = Field(ToolsConfig.max_retry_wait_s, ge=0)
    """The longest a tool waits on SEC's or Exa's `Retry-After` (and a third of the timeout)."""
    gateway_heartbeat_s: float = Field(15.0, gt=0)
    gateway_resume_grace_s: float = Field(30.0, ge=0)
    gateway_run_ttl_s: float = Field(600.0, gt=0)
    """How long a finished run's event log stays readable for re-attach."""
    gateway_run_log_max_events: int = Field(200_000, ge=100)
    gateway_max_body_bytes: int = Field(1_048_576, ge=1_024)
    gateway_body_timeout_s: float = Field(30.0, gt=0)
    """How long a request body may take to arrive (408 after)."""
    gateway_write_timeout_s: float = Field(30.0, gt=0)
    """How long one SSE write may wait on a client that does not read before it is dropped."""
    gateway_shutdown_timeout_s: float = Field(15.0, ge=0)
    """After SIGTERM: how long runs and streams get to end (open streams are closed then);
    the process exits within this plus 5 s."""
    gateway_api_keys: Annotated[tuple[str, ...], NoDecode] = ()
    gateway_upstream_max_retries: int = Field(3, ge=0)
    gateway_upstream_max_retry_wait_s: float = Field(30.0, ge=0)
    gateway_upstream_timeout_s: float = Field(600.0, gt=0)
    """The longest wait for one read of a model call's answer."""
    gateway_upstream_connect_timeout_s: float = Field(5.0, gt=0)
    """The longest wait for a connection to the model service (TLS included), the SDK's 5 s."""
    gateway_upstream_deadline_s: float = Field(900.0, gt=0)
    """One model call in all, retries and their waits included."""
    gateway_trace_content: bool = False
    gateway_gc_freeze: bool = True
    """Once the app is up, move everything made at startup out of the collector's way and
    collect less often: full collections otherwise stall every stream for 100 ms and more
    at a few hundred streams."""
    gateway_event_loop: Literal["auto", "uvloop", "asyncio"] = "auto"
    """`auto`: uvloop when it is installed, else asyncio's own loop (see `eventloop`)."""
    gateway_demo_pacing_ms: float = Field(15.0, ge=0)
    """Pause before each streamed delta of the demo model, so people can watch it work."""
    gateway_figure_check: Literal["annotate", "off"] = "annotate"
    """`annotate`: a `figures` event before `final` says where each figure of the answer
    came from (gateway/figures); `off`: no check."""

    # The tools' own defaults: one place says where SEC and Exa are.
    sec_source: Literal["offline", "live"] = ToolsConfig.sec_source
    sec_user_agent: str | None = None
    sec_www_url: str = ToolsConfig.sec_www_url
    sec_data_url: str = ToolsConfig.sec_data_url
    sec_efts_url: str = ToolsConfig.sec_efts_url
    search_backend: Literal["offline", "exa", "anthropic"] = ToolsConfig.search_backend
    """`anthropic`: the Messages API's own web search instead of the local `web_search`."""
    exa_api_key: str | None = None
    exa_base_url: str = ToolsConfig.exa_base_url
    sec_max_body_bytes: int = Field(ToolsConfig.sec_max_body_bytes, ge=1024)
    exa_max_body_bytes: int = Field(ToolsConfig.exa_max_body_bytes, ge=1024)
    """The largest answer read from SEC and from Exa; a longer one fails the tool call."""

    redis_url: str | None = None
    """Set: runs, sessions and event logs live in Redis, shared by every process."""
    redis_key_prefix: str = "rg:"
    """Prefix of every Redis key and channel, so deployments (or tests) can share a server."""
    gateway_session_ttl_s: float = Field(3600.0, gt=0)
    gateway_session_cache_bytes: int = Field(256 << 20, ge=1 << 20)
    """The in-process session cache's bound, as JSON bytes (oldest dropped first)."""
    """How long a session's history is kept after its last run."""

    # Workers and durable runs: several processes on one port, runs that outlive a worker.
    gateway_workers: int = Field(1, ge=1)
    """Processes serving the port (SO_REUSEPORT); more than one needs REDIS_URL."""
    gateway_worker_index: int = Field(0, ge=0)
    """Which worker this process is (the supervisor sets it), for /health and logs."""
    gateway_worker_boot_failures: int = Field(5, ge=1)
    """Failed starts in a row of one worker (within 10 minutes) after which the supervisor
    stops every worker and exits with status 1, logging the worker's error."""
    gateway_fleet_member: str | None = None
    """Set by the supervisor: this worker's files in its private directory, through which
    /metrics adds up every worker's numbers and a worker that fails says why (fleet.py)."""
    gateway_takeover_s: float = Field(10.0, gt=0)
    """With Redis: how soon another worker continues the runs of a worker that died."""
    gateway_max_runs_per_process: int = Field(0, ge=0)
    """Runs in progress in one process (0: no cap). Past it a new run is refused at once
    (503 `OVERLOADED_ERROR`, `Retry-After`), so the runs already streaming keep their pace
    and a load balancer can send the client to another worker. BENCH.md says what one
    process holds."""

    # Who may do what: named keys, per-key limits, CORS, the audit log (auth.py, limits.py,
    # cors.py, audit.py). A limit of 0 means no limit.
    gateway_api_keys_file: str | None = None
    """A file of `name sha256hex` lines, read at startup, added to GATEWAY_API_KEYS."""
    gateway_rate_limit_per_min: int = Field(0, ge=0)
    """Run starts per key per minute."""
    gateway_max_concurrent_runs: int = Field(0, ge=0)
    """Runs in progress per key."""
    gateway_daily_token_budget: int = Field(0, ge=0)
    """Input + output tokens per key per UTC day; checked when a run starts."""
    gateway_daily_usd_budget: float = Field(0.0, ge=0)
    """Dollars per key per UTC day (priced by GATEWAY_PRICES_FILE over the shipped table);
    checked when a run starts, beside the token budget."""
    gateway_prices_file: str | None = None
    """A JSON price table (the shape of gateway/prices.json) over the shipped one."""
    gateway_env: str = Field(
        "development", validation_alias=AliasChoices("gateway_env", "node_env")
    )
    """`/health`'s `environment` (GATEWAY_ENV, else NODE_ENV as the Node server read it)."""
    build_sha: str | None = None
    """The build's commit for `/health` (else the checkout's git HEAD, if there is one)."""
    build_timestamp: str | None = None
    """When the build was made, for `/health` (else the commit's time)."""
    gateway_cors_origins: Annotated[tuple[str, ...], NoDecode] = ()
    """Browser origins allowed to call the API (`*`: any but `null`, which must be listed);
    any other `Origin` is refused (guard.py)."""
    gateway_allowed_hosts: Annotated[tuple[str, ...], NoDecode] = ()
    """Host names (or `name:port`) the server answers to besides loopback and its bound
    address (`*`: any); any other Host is refused, which stops DNS rebinding (guard.py)."""
    gateway_allow_unauthenticated: bool = False
    """Start on a non-loopback HOST with no keys (otherwise that refuses to start)."""
    gateway_audit_log: str | None = None
    """A path, or `-` for stdout: one JSON line per run start, tool call and run end."""
    gateway_audit_content: bool = False
    """Write tool inputs in the audit log (otherwise their keyed hash and size)."""
    gateway_audit_stream_maxlen: int = Field(100_000, ge=100)
    """With REDIS_URL: the audit stream keeps about this many lines."""
    gateway_audit_hash_key: str | None = Field(None, min_length=32)
    """The HMAC-SHA256 key of the audit log's tool input hashes (32 characters or more).
    Unset: a random key per process, so hashes compare only within one process's life."""
    gateway_audit_queue_max: int = Field(50_000, ge=1)
    """Audit lines waiting for the writer at most; past it new lines are dropped (counted)."""
    gateway_admin_key: str | None = Field(None, min_length=16)
    """Enables the admin API (`/api/admin/keys`), for `Authorization: Bearer <this>`; it
    then also requires a key on every /api/* route. Unset: the admin routes are 404."""
    gateway_keys_db: str = "gateway-keys.db"
    """The SQLite file of the admin API's keys and of each key's spend, without REDIS_URL
    (created on first start; a relative path is the working directory's)."""
    gateway_keys_secret: str | None = Field(None, min_length=32)
    """The HMAC-SHA256 key the admin API's key secrets are stored under. Unset: derived
    from GATEWAY_ADMIN_KEY (then changing the admin key invalidates every such key)."""
    gateway_keys_refresh_s: float = Field(0.25, gt=0, le=1.0)
    """How often each worker looks for changed or revoked keys in the store."""

    # MCP both ways: servers' tools in the loop (tools/mcp), the gateway's tools at /mcp.
    gateway_batch_poll_s: float = Field(30.0, gt=0)
    """How often a batch's round in flight is looked at (`GET /v1/messages/batches/{id}`)."""
    gateway_batch_max_questions: int = Field(1_000, ge=1, le=100_000)
    """Questions one `POST /api/batches` may ask (a round is one Message Batch of them)."""
    gateway_batch_ttl_s: float = Field(86_400.0, gt=0)
    """How long a finished batch's progress and results stay readable."""
    gateway_batch_create_timeout_s: float = Field(120.0, gt=0)
    """A Message Batch `create` unanswered this long is given up and looked up instead."""
    gateway_batch_clock_skew_s: float = Field(60.0, ge=0)
    """How far the API's clock may be from the gateway's (the window a lookup reads)."""

    gateway_mcp_servers: str | None = None
    """JSON, or `@path` to a JSON file: a list of {`name`, `command` + `args` + `env` |
    `url` + `headers` (or `bearer_token`), `tools` allow-list}. Their tools are offered as
    `<name>__<tool>`."""
    gateway_mcp_serve: bool = True
    """Serve the gateway's own tools over MCP (Streamable HTTP) at `/mcp`."""
    gateway_mcp_backoff_s: float = Field(1.0, gt=0)
    """First wait before connecting again to an MCP server that failed; it doubles."""
    gateway_mcp_backoff_max_s: float = Field(60.0, gt=0)
    gateway_mcp_ping_s: float = Field(15.0, gt=0)
    """An idle MCP connection is pinged this often; no answer in as long takes it down."""
    gateway_mcp_startup_wait_s: float = Field(10.0, ge=0)
    """How long startup waits for the MCP servers' first connections (they go on trying)."""

    @field_validator(
        "gateway_api_keys",
        "anthropic_server_tools",
        "gateway_fallback_upstreams",
        "gateway_cors_origins",
        "gateway_allowed_hosts",
        mode="before",
    )
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(k.strip() for k in value.split(",") if k.strip())
        return value

    @field_validator("anthropic_server_tools")
    @classmethod
    def _known_server_tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = sorted(set(value) - set(SERVER_TOOLS))
        if unknown:
            raise ValueError(f"unknown server tools {unknown}; known: {list(SERVER_TOOLS)}")
        return value

    @property
    def model(self) -> str:
        """The model runs use: the demo answers under its own name."""
        return self.model_of(self.upstream_kind)

    def model_of(self, upstream: UpstreamKind) -> str:
        if upstream == "demo":
            return DEMO_MODEL
        if upstream == "openai":
            return self.openai_model or ""
        if upstream == "bedrock":
            region = self.aws_region or ""
            return bedrock_name(
                self.gateway_bedrock_model or bedrock_model_id(self.sdk_model, region)
            )
        if upstream == "vertex":
            return vertex_name(vertex_model_id(self.sdk_model), self.vertex_region)
        return self.sdk_model

    @property
    def upstreams(self) -> tuple[UpstreamKind, ...]:
        """Every upstream a model call may go to, in the order they are tried."""
        order = (self.upstream_kind, *self.gateway_fallback_upstreams)
        return tuple(dict.fromkeys(order))

    @model_validator(mode="after")
    def _openai_needs_a_model(self) -> Settings:
        if "openai" in self.upstreams and not self.openai_model:
            raise ValueError("an openai upstream needs OPENAI_MODEL")
        return self

    @model_validator(mode="after")
    def _every_run_could_work(self) -> Settings:
        """Refuse at startup what would fail every run, naming the variables to change."""
        upstreams = ",".join(self.upstreams)
        if self.server_tools and "anthropic" not in self.upstreams:
            asked = [f"ANTHROPIC_SERVER_TOOLS={','.join(self.anthropic_server_tools)}"]
            asked = asked if self.anthropic_server_tools else []
            asked += ["SEARCH_BACKEND=anthropic"] if self.search_backend == "anthropic" else []
            raise ValueError(
                f"{' and '.join(asked)} need the Messages API's own tools, which no upstream "
                f"here runs (GATEWAY_UPSTREAM and GATEWAY_FALLBACK_UPSTREAMS give {upstreams}): "
                "add anthropic to them, or unset those variables"
            )
        thinking = self.sdk_thinking != "off" or self.sdk_thinking_budget > 0
        if self.upstream_kind == "openai" and thinking:
            raise ValueError(
                f"SDK_THINKING={self.sdk_thinking} / SDK_THINKING_BUDGET="
                f"{self.sdk_thinking_budget} turn thinking on for every run, which "
                "GATEWAY_UPSTREAM=openai cannot take (every run would be refused): set "
                "SDK_THINKING=off and SDK_THINKING_BUDGET=0, or another GATEWAY_UPSTREAM"
            )
        return self

    @field_validator("gateway_mcp_servers")
    @classmethod
    def _mcp_servers_parse(cls, value: str | None) -> str | None:
        parse_servers(value)  # a mistake stops startup, naming the setting
        return value

    def mcp_servers(self) -> tuple[McpServerConfig, ...]:
        return parse_servers(self.gateway_mcp_servers)

    @property
    def server_tools(self) -> tuple[str, ...]:
        """Server tools to offer: the configured ones, plus web search for SEARCH_BACKEND."""
        wanted = set(self.anthropic_server_tools)
        if self.search_backend == "anthropic":
            wanted.add("web_search")
        return tuple(name for name in SERVER_TOOLS if name in wanted)

    @property
    def vertex_region(self) -> str:
        """`global` unless set: the endpoint every current model is served on."""
        return self.gateway_vertex_region or "global"

    @property
    def upstream_kind(self) -> UpstreamKind:
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
            # The API's own search replaces only web_search; the rest stays local.
            search_backend="offline" if self.search_backend == "anthropic" else self.search_backend,
            exa_api_key=self.exa_api_key,
            exa_base_url=self.exa_base_url,
            redis_url=self.redis_url,
            redis_key_prefix=self.redis_key_prefix,
            sec_max_body_bytes=self.sec_max_body_bytes,
            exa_max_body_bytes=self.exa_max_body_bytes,
            max_retry_wait_s=self.gateway_tool_max_retry_wait_s,
        )
