"""`GATEWAY_MCP_SERVERS`: JSON (or `@path` to a JSON file), a list of servers, each either a
stdio command (`command`, `args`, `env`) or a Streamable HTTP `url` (`headers`,
`bearer_token`), with an optional `tools` allow-list.

    [{"name": "time", "command": "python", "args": ["-m", "mcp_server_time"],
      "tools": ["get_current_time"]},
     {"name": "docs", "url": "https://mcp.example.com/mcp", "bearer_token": "..."}]
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

__all__ = ["SEPARATOR", "McpServerConfig", "parse_servers"]

SEPARATOR = "__"
"""Between a server's name and its tool's: `time__get_current_time`."""


class McpServerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$", max_length=32)
    """Prefix of the server's tools; letters, digits, `-` and single `_`."""
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Added to a minimal environment (the SDK's: PATH, HOME, ...), not to the gateway's."""
    cwd: str | None = None
    url: str | None = Field(None, pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)
    bearer_token: str | None = None
    tools: list[str] | None = None
    """Allow-list of the server's tool names (its own, unprefixed); None: all of them."""

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r}: give either `command` or `url`")
        if self.command is None and (self.args or self.env or self.cwd):
            raise ValueError(f"MCP server {self.name!r}: `args`, `env`, `cwd` go with `command`")
        if self.url is None and (self.headers or self.bearer_token):
            raise ValueError(f"MCP server {self.name!r}: `headers`, `bearer_token` go with `url`")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "streamable_http"

    def http_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.bearer_token:
            headers["Authorization"] = f"Bearer {self.bearer_token}"
        return headers

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


_SERVERS = TypeAdapter(list[McpServerConfig])


def parse_servers(raw: str | None) -> tuple[McpServerConfig, ...]:
    """The servers a setting lists (JSON, or `@path`); ValueError naming what is wrong."""
    if raw is None or not raw.strip():
        return ()
    text = raw.strip()
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text()
        except OSError as exc:
            raise ValueError(f"GATEWAY_MCP_SERVERS: cannot read {text[1:]!r}: {exc}") from None
    try:
        servers = _SERVERS.validate_json(text)
    except ValidationError as exc:
        raise ValueError(f"GATEWAY_MCP_SERVERS: {exc}") from None
    names = [s.name for s in servers]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"GATEWAY_MCP_SERVERS: server names used twice: {duplicates}")
    return tuple(servers)
