"""Connections to MCP servers, each supervised by a task of its own.

While a server is up its tools are in the registry as `<server>__<tool>` (`McpTool`); a
call goes to the server over its session, and the registry's timeout, result cap and
error handling apply as to any tool. When the server fails to start, its process exits,
its connection breaks or a ping goes unanswered, its tools leave the registry (a run that
already has them gets an `is_error` result), its state says why, and it is connected
again after a backoff that doubles up to a ceiling. `notifications/tools/list_changed`
lists its tools again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import Any, Literal

import anyio
import mcp.types as types
import orjson
from mcp.client.session import ClientSession, IncomingMessage
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ConfigDict

from tools.base import RichResult, Tool, ToolContext, ToolFailure, ToolInput
from tools.mcp.config import SEPARATOR, McpServerConfig
from tools.registry import ToolRegistry

__all__ = ["McpServer", "McpServers", "McpTool", "to_result"]

log = logging.getLogger(__name__)

State = Literal["starting", "up", "down"]
# What the Messages API takes as a tool name, and as an image.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_CONNECTION_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)


class McpArguments(ToolInput):
    """Any JSON object: the server validates its own tool's arguments."""

    model_config = ConfigDict(extra="allow")


class McpTool(Tool[McpArguments]):
    """One tool of an MCP server, under its prefixed name."""

    input_model = McpArguments

    def __init__(self, server: McpServer, tool: types.Tool) -> None:
        self.name = f"{server.name}{SEPARATOR}{tool.name}"
        self.remote_name = tool.name
        self.server = server
        self._description = " ".join((tool.description or tool.title or tool.name).split())
        self._schema = dict(tool.input_schema)

    def description(self) -> str:
        return self._description

    def input_schema(self) -> dict[str, Any]:
        return self._schema

    async def run(self, args: McpArguments, ctx: ToolContext) -> str | RichResult:
        return await self.server.call(self.remote_name, args.model_dump())


def _blocks(item: types.ContentBlock) -> list[dict[str, Any]]:
    """One MCP content item as `tool_result` content blocks (text or image)."""
    if isinstance(item, types.TextContent):
        return [{"type": "text", "text": item.text}] if item.text else []
    if isinstance(item, types.ImageContent) and item.mime_type in _IMAGE_TYPES:
        source = {"type": "base64", "media_type": item.mime_type, "data": item.data}
        return [{"type": "image", "source": source}]
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, types.TextResourceContents):
            return [{"type": "text", "text": f"[resource {resource.uri}]\n{resource.text}"}]
        if resource.mime_type in _IMAGE_TYPES:
            source = {"type": "base64", "media_type": resource.mime_type, "data": resource.blob}
            return [{"type": "image", "source": source}]
        note = f"[resource {resource.uri}: {resource.mime_type or 'binary'}, not shown]"
        return [{"type": "text", "text": note}]
    if isinstance(item, types.ResourceLink):
        return [{"type": "text", "text": f"[resource link {item.uri}: {item.name}]"}]
    kind = getattr(item, "mime_type", None) or item.type
    return [{"type": "text", "text": f"[{item.type} content ({kind}), not shown]"}]


def to_result(result: types.CallToolResult) -> str | RichResult:
    """A tool's result as the registry takes it: text, or blocks when there is an image;
    `isError` raises ToolFailure (an `is_error` result for the model)."""
    blocks = [block for item in result.content for block in _blocks(item)]
    if not blocks and result.structured_content is not None:
        blocks = [{"type": "text", "text": orjson.dumps(result.structured_content).decode()}]
    if result.is_error:
        text = RichResult(blocks).text()
        raise ToolFailure(text or "The tool reported an error without a message.")
    if all(b["type"] == "text" for b in blocks):
        return "\n\n".join(b["text"] for b in blocks)
    return RichResult(blocks)


class _Lost(Exception):
    """The server stopped answering."""


class McpServer:
    """One configured server: its connection, its state, its tools in the registry."""

    def __init__(
        self,
        config: McpServerConfig,
        registry: ToolRegistry,
        *,
        backoff_s: tuple[float, float] = (1.0, 60.0),
        ping_s: float = 15.0,
        connect_timeout_s: float = 30.0,
        client_version: str = "0",
    ) -> None:
        self.config = config
        self.name = config.name
        self.registry = registry
        self.state: State = "starting"
        self.last_error: str | None = None
        self.tools: list[str] = []
        self.connects = 0
        self.since = time.time()
        self._backoff = backoff_s
        self._ping_s = ping_s
        self._connect_timeout_s = connect_timeout_s
        self._client_info = types.Implementation(name="research-gateway", version=client_version)
        self._session: ClientSession | None = None
        self._wake = asyncio.Event()
        self._relist = False
        self._lost: str | None = None
        self.settled = asyncio.Event()
        """Set once the first connection succeeded or failed."""

    def report(self) -> dict[str, Any]:
        """The server's state for /health and /api/tools."""
        return {
            "name": self.name,
            "transport": self.config.transport,
            "state": self.state,
            "tools": list(self.tools),
            "connects": self.connects,
            "since": round(self.since, 3),
            "last_error": self.last_error,
        }

    async def call(self, tool: str, arguments: dict[str, Any]) -> str | RichResult:
        session = self._session
        if session is None:
            why = self.last_error or self.state
            raise ToolFailure(f"MCP server {self.name!r} is unavailable ({why}); try again later.")
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._connection_lost("the connection closed during a call")
            raise ToolFailure(f"MCP server {self.name!r}: {exc.error.message}") from None
        except _CONNECTION_ERRORS as exc:
            self._connection_lost(f"the connection failed during a call ({type(exc).__name__})")
            raise ToolFailure(f"MCP server {self.name!r} failed during the call") from None
        if not isinstance(result, types.CallToolResult):
            raise ToolFailure(f"MCP server {self.name!r} answered with no tool result")
        return to_result(result)

    def _connection_lost(self, why: str) -> None:
        self._lost = why
        self._wake.set()

    async def supervise(self) -> None:
        """Connect, serve, and connect again after each failure, until cancelled."""
        delay = self._backoff[0]
        while True:
            began = time.monotonic()
            try:
                await self._connected()
                error = "the connection ended"
            except (Exception, _Lost) as exc:
                error = _describe(exc)
            self._down(error)
            if time.monotonic() - began > 2 * self._backoff[1]:
                delay = self._backoff[0]  # it was up a good while: start over
            log.warning("MCP server %s is down (%s); again in %.1f s", self.name, error, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._backoff[1])

    async def _connected(self) -> None:
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport())
            session = await stack.enter_async_context(
                ClientSession(
                    read, write, message_handler=self._on_message, client_info=self._client_info
                )
            )
            async with asyncio.timeout(self._connect_timeout_s):
                await session.initialize()
                await self._list_tools(session)
            self._session, self._lost = session, None
            self.state, self.last_error, self.since = "up", None, time.time()
            self.connects += 1
            self.settled.set()
            log.info("MCP server %s is up: %d tools", self.name, len(self.tools))
            await self._watch(session)

    def _transport(self) -> contextlib.AbstractAsyncContextManager[Any]:
        config = self.config
        if config.command is not None:
            params = StdioServerParameters(
                command=config.command, args=config.args, env=config.env or None, cwd=config.cwd
            )
            return stdio_client(params, errlog=sys.stderr)
        return self._http(config.url or "", config.http_headers())

    @contextlib.asynccontextmanager
    async def _http(self, url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
        async with (
            create_mcp_http_client(headers=headers) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    async def _watch(self, session: ClientSession) -> None:
        """Until the connection is lost: list the tools again when told, ping when idle."""
        while True:
            try:
                async with asyncio.timeout(self._ping_s):
                    await self._wake.wait()
            except TimeoutError:
                try:
                    async with asyncio.timeout(self._ping_s):
                        await session.send_ping()
                except TimeoutError:
                    raise _Lost(f"no answer to a ping in {self._ping_s:g} s") from None
                continue
            self._wake.clear()
            if self._lost is not None:
                raise _Lost(self._lost)
            if self._relist:
                self._relist = False
                await self._list_tools(session)
                log.info("MCP server %s listed its tools again: %d", self.name, len(self.tools))

    async def _list_tools(self, session: ClientSession) -> None:
        listed: list[types.Tool] = []
        cursor: str | None = None
        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            listed += page.tools
            cursor = page.next_cursor
            if not cursor:
                break
        tools = []
        for tool in listed:
            if not self.config.allows(tool.name):
                continue
            wrapped = McpTool(self, tool)
            if not _TOOL_NAME.match(wrapped.name):
                log.warning("MCP server %s: tool %r has a name models refuse", self.name, tool.name)
                continue
            tools.append(wrapped)
        clashes = self.registry.replace(self.name, tools)
        self.tools = [t.name for t in tools if t.name not in clashes]

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error %s", self.name, _describe(message))

    def _down(self, error: str) -> None:
        self._session = None
        self.registry.replace(self.name, [])
        self.tools = []
        self.state, self.last_error, self.since = "down", error, time.time()
        self.settled.set()


def _describe(exc: BaseException) -> str:
    """One line for the log and /health, from the innermost error of a task group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    if isinstance(exc, _Lost):
        return str(exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class McpServers:
    """Every configured server, supervised while the context is open."""

    def __init__(
        self, configs: Sequence[McpServerConfig], registry: ToolRegistry, **options: Any
    ) -> None:
        self.servers = [McpServer(config, registry, **options) for config in configs]
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> McpServers:
        for server in self.servers:
            self._tasks.append(asyncio.create_task(server.supervise(), name=f"mcp {server.name}"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def settled(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until every server is up or has failed once."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_s):
                for server in self.servers:
                    await server.settled.wait()

    def report(self) -> list[dict[str, Any]]:
        return [server.report() for server in self.servers]

    @property
    def degraded(self) -> bool:
        return any(server.state != "up" for server in self.servers)
