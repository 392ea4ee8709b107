"""A plain-http forward proxy: it takes requests in the absolute form (`GET http://host/path`),
sends them on and relays the answer as it came (gzip stays gzip), noting every target."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
from aiohttp import web

# Not forwarded: hop-by-hop headers and the ones the proxy's own client sets.
_DROPPED = {"host", "connection", "proxy-connection", "proxy-authorization", "content-length"}
_RELAYED = {"content-type", "content-encoding", "retry-after"}


class ForwardProxy:
    def __init__(self) -> None:
        self.targets: list[str] = []
        self._session: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.cleanup_ctx.append(self._client)
        app.router.add_route("*", "/{tail:.*}", self.forward)
        return app

    async def _client(self, app: web.Application) -> AsyncIterator[None]:
        async with aiohttp.ClientSession(auto_decompress=False) as self._session:  # no env proxy
            yield

    async def forward(self, request: web.Request) -> web.Response:
        target = request.raw_path
        if not target.startswith("http://"):
            return web.Response(status=400, text="not a proxy request (origin form)")
        assert self._session is not None
        self.targets.append(target)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROPPED}
        body = await request.read()
        async with self._session.request(
            request.method, target, headers=headers, data=body or None
        ) as upstream:
            payload = await upstream.read()
            relayed = {k: v for k, v in upstream.headers.items() if k.lower() in _RELAYED}
            return web.Response(status=upstream.status, body=payload, headers=relayed)
