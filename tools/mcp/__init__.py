"""MCP servers' tools as tools of the registry (client side): `McpServers` connects to each
configured server, keeps its tools in the registry while it is up, and reconnects it with
backoff when it fails. The gateway's own tools are served over MCP by gateway/http/mcp.py.
"""

from tools.mcp.client import McpServer, McpServers, McpTool
from tools.mcp.config import McpServerConfig, parse_servers

__all__ = ["McpServer", "McpServerConfig", "McpServers", "McpTool", "parse_servers"]
