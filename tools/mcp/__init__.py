"""MCP servers' tools as tools of the registry (client side): `client.McpServers` connects
to each configured server (`config`), keeps its tools in the registry while it is up, and
reconnects it with backoff when it fails. The gateway's own tools are served over MCP by
gateway/http/mcp.py.

Nothing here is imported by this package itself: the SDK is large to import (its types are
hundreds of models), and a process that configures no MCP server should not pay for it.
"""
