"""A small MCP server (stdio) for the tests: results of every content shape, an `isError`
result, and a tool that adds a tool and says so (`notifications/tools/list_changed`).

    python -m tests.mcp.shapes_server
"""

from __future__ import annotations

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer

# A 1x1 PNG.
DOT = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAA"
    "BJRU5ErkJggg=="
)

server = MCPServer("shapes")


@server.tool()
def picture() -> types.CallToolResult:
    """A picture, its caption and its record."""
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="a red dot"),
            types.ImageContent(type="image", data=DOT, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri="file:///dot.txt", text="1x1 pixels"),
            ),
        ]
    )


@server.tool()
def broken() -> types.CallToolResult:
    """Always fails, the MCP way."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="the disk is on fire")], is_error=True
    )


def sprout() -> str:
    """Added by `grow`."""
    return "sprouted"


@server.tool()
async def grow(ctx: Context) -> str:
    """Adds the tool `sprout`."""
    server.add_tool(sprout)
    await ctx.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    server.run("stdio")
