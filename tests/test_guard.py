"""The guard (gateway/http/guard.py): a foreign Host, Origin or site, or a non-JSON body,
is refused on every route family before any work; the server's own pages, listed origins
and hosts, curl and the probes go through."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
from aiohttp.test_utils import TestClient

from tests.conftest import GatewayFactory, read_events
from tests.fakes.anthropic import FakeAnthropic, Reply, Text

Client = TestClient[Any, Any]
EVIL = "http://evil.example"
MCP_INIT = orjson.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
)
# Every route family, as (method, path, body): each would start work or answer data.
ROUTES: list[tuple[str, str, bytes]] = [
    ("GET", "/api/stream?query=revenue", b""),
    ("POST", "/api/stream", b'{"query": "revenue"}'),
    ("POST", "/api/research", b'{"query": "revenue"}'),
    ("GET", "/api/stream/run_x", b""),
    ("POST", "/api/runs/run_x/cancel", b""),
    ("GET", "/api/files/file_x", b""),
    ("GET", "/api/tools", b""),
    ("POST", "/api/batches", b'{"requests": [{"query": "revenue"}]}'),
    ("GET", "/api/batches/batch_x", b""),
    ("GET", "/api/batches/batch_x/events", b""),
    ("GET", "/api/batches/batch_x/results", b""),
    ("POST", "/api/batches/batch_x/cancel", b""),
    ("POST", "/mcp", MCP_INIT),
    ("DELETE", "/mcp", b""),
    ("GET", "/", b""),
    ("GET", "/openapi.json", b""),
]


SERVED_HOSTS = (
    "localhost",
    "localhost:1",
    "127.0.0.1:3001",
    "[::1]:3001",
    "LOCALHOST",
    "gw.example",
    "gw.example:443",
    "other.example:8443",
    "10.1.2.3:80",
)
REFUSED_HOSTS = (
    "other.example",
    "other.example:8444",
    "evil.example",
    "0.0.0.0",
    "evil.example@127.0.0.1",
    "127.0.0.1/x",
    "a b",
    "[::1",
    "localhost.evil",
)
SAME_OR_ALLOWED: tuple[dict[str, str], ...] = (
    {"Sec-Fetch-Site": "same-origin"},
    {"Sec-Fetch-Site": "none"},  # typed into the address bar
    {"Sec-Fetch-Site": "cross-site", "Origin": "https://app.example"},
)
JSON_POSTS = ("/api/stream", "/api/research", "/api/batches", "/api/runs/run_x/cancel", "/mcp")


async def exchange(
    client: Client, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> tuple[int, dict[str, Any] | None]:
    """One request written on a raw socket, headers exactly as given: status and JSON body."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    try:
        writer.write("\r\n".join([*lines, "Connection: close", "", ""]).encode() + body)
        async with asyncio.timeout(10):
            head, _, rest = (await reader.read(-1)).partition(b"\r\n\r\n")
    finally:
        writer.close()
    status = int(head.split(b" ", 2)[1])
    json = orjson.loads(rest) if b"application/json" in head and rest else None
    return status, json


def reason(answer: tuple[int, dict[str, Any] | None]) -> str:
    status, body = answer
    assert status == 403 and body is not None, answer
    assert body["error"]["code"] == "PERMISSION_ERROR"
    return str(body["error"]["details"]["reason"])


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
async def test_a_foreign_host_is_refused_before_any_work(
    make_gateway: GatewayFactory, fake: FakeAnthropic, method: str, path: str, body: bytes
) -> None:
    fake.add(Reply([Text("the answer")]))
    client = await make_gateway()  # keyless, as `make run` starts it
    rebound = {"Host": "attacker.example:3001"}
    assert reason(await exchange(client, method, path, rebound, body)) == "host"
    with_origin = {**rebound, "Origin": "http://attacker.example:3001"}  # its own page
    assert reason(await exchange(client, method, path, with_origin, body)) == "host"
    assert fake.requests == []
    # The same requests once the operator lists the name: its own pages go through.
    listed = await make_gateway(gateway_allowed_hosts="attacker.example")
    status, answer = await exchange(listed, method, path, with_origin, body)
    assert status != 403, answer
    starts_a_run = path.startswith(("/api/stream?", "/api/research")) or path == "/api/stream"
    assert len(fake.requests) == (1 if starts_a_run else 0), (status, answer)


async def test_hosts_that_are_served(make_gateway: GatewayFactory, fake: FakeAnthropic) -> None:
    client = await make_gateway(
        gateway_allowed_hosts="gw.example, Other.Example:8443", host="10.1.2.3"
    )
    for host in (*SERVED_HOSTS, f"{client.host}:{client.port}"):
        status, _ = await exchange(client, "GET", "/api/tools", {"Host": host})
        assert status == 200, host
    for host in REFUSED_HOSTS:
        assert reason(await exchange(client, "GET", "/api/tools", {"Host": host})) == "host"
    assert fake.requests == []


async def test_probes_answer_any_host(make_gateway: GatewayFactory) -> None:
    client = await make_gateway()
    for path in ("/health", "/metrics"):
        status, _ = await exchange(client, "GET", path, {"Host": "gateway:3001"})
        assert status == 200, path
    anything = await make_gateway(gateway_allowed_hosts="*")
    status, _ = await exchange(anything, "GET", "/api/tools", {"Host": "gateway:3001"})
    assert status == 200


async def test_an_allowed_host_starts_a_run(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    fake.add(Reply([Text("the answer")]))
    client = await make_gateway(gateway_allowed_hosts="research.example")
    headers = {"Host": "research.example", "Origin": "https://research.example"}
    response = await client.post("/api/research", json={"query": "x"}, headers=headers)
    assert response.status == 200, await response.text()
    assert len(fake.requests) == 1


async def test_foreign_origins_are_refused_on_every_route(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    client = await make_gateway()
    own = f"127.0.0.1:{client.port}"
    other_port = f"http://127.0.0.1:{(client.port or 0) + 1}"
    for method, path, body in [*ROUTES, ("GET", "/health", b"")]:
        for origin in (EVIL, "null", other_port, "http://localhost", f"https://{own}x"):
            headers = {"Host": own, "Origin": origin}
            answer = await exchange(client, method, path, headers, body)
            assert reason(answer) == "origin", (method, path, origin)
    assert fake.requests == []


async def test_own_and_listed_origins_go_through(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    fake.add(*[Reply([Text("the answer")]) for _ in range(3)])
    client = await make_gateway(gateway_cors_origins="https://app.example,null")
    own = f"http://127.0.0.1:{client.port}"
    for origin in (own, "https://app.example", "null"):
        response = await client.get(
            "/api/stream", params={"query": "x"}, headers={"Origin": origin}
        )
        assert response.status == 200, origin
        assert (await read_events(response))[-1]["outcome"] == "completed"
    assert len(fake.requests) == 3
    # `*` allows any origin, but not `null`: that one must be listed.
    anyone = await make_gateway(gateway_cors_origins="*")
    assert (await anyone.get("/api/tools", headers={"Origin": EVIL})).status == 200
    assert (
        reason(await exchange(anyone, "GET", "/api/tools", {"Host": "localhost", "Origin": "null"}))
        == "origin"
    )


async def test_other_sites_without_an_origin_are_refused(
    make_gateway: GatewayFactory, fake: FakeAnthropic
) -> None:
    """An <img>, a <script>, a link or a download carries no Origin, only Sec-Fetch-Site."""
    client = await make_gateway(gateway_cors_origins="https://app.example")
    host = {"Host": f"127.0.0.1:{client.port}"}
    for site in ("cross-site", "same-site"):
        for method, path, body in ROUTES:
            answer = await exchange(client, method, path, {**host, "Sec-Fetch-Site": site}, body)
            if path.startswith("/api/") or path == "/mcp":
                assert reason(answer) == "cross_site", (site, path)
            else:  # a page or the schema: a link from anywhere may open it
                assert answer[0] == 200, (site, path)
    assert fake.requests == []
    fake.add(Reply([Text("one")]), Reply([Text("two")]))
    for headers in SAME_OR_ALLOWED:
        status, _ = await exchange(client, "GET", "/api/tools", {**host, **headers})
        assert status == 200, headers
    response = await client.post(
        "/api/research",
        json={"query": "x"},
        headers={"Sec-Fetch-Site": "cross-site", "Origin": "https://app.example"},
    )
    assert response.status == 200
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
async def test_bodies_other_than_json_are_415_before_authentication(
    make_gateway: GatewayFactory, fake: FakeAnthropic, content_type: str
) -> None:
    client = await make_gateway(gateway_api_keys="web:k")
    for path in JSON_POSTS:
        response = await client.post(
            path, data=b'{"query": "x"}', headers={"Content-Type": content_type}
        )
        assert response.status == 415, path  # no key sent: not a 401, refused before that
        assert (await response.json())["error"]["code"] == "VALIDATION_ERROR"
    cancel = await client.post("/api/runs/run_x/cancel", headers={"Authorization": "Bearer k"})
    assert cancel.status == 404  # no body, no type: a cancel as curl sends it
    assert fake.requests == []


async def test_a_preflight_from_an_allowed_origin_is_still_answered(
    make_gateway: GatewayFactory,
) -> None:
    client = await make_gateway(gateway_cors_origins="https://app.example")
    asked = {"Access-Control-Request-Method": "POST", "Sec-Fetch-Site": "cross-site"}
    allowed = await client.options(
        "/api/stream", headers={**asked, "Origin": "https://app.example"}
    )
    assert allowed.status == 204
    assert allowed.headers["Access-Control-Allow-Origin"] == "https://app.example"
    refused = await client.options("/api/stream", headers={**asked, "Origin": EVIL})
    assert refused.status == 403
    assert (await refused.json())["error"]["details"]["reason"] == "origin"
    assert "Access-Control-Allow-Origin" not in refused.headers
