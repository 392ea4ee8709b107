"""A real Prometheus server for the tests: started as a subprocess on a free loopback port
with its own storage in a temporary directory, queried over its HTTP API."""

from __future__ import annotations

import asyncio
import math
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

from tests.deploy.dashboards import ALERTS, PROMETHEUS_CONFIG

T = TypeVar("T")
POLL_S = 0.2


class PrometheusAPI:
    """The parts of `/api/v1` the tests use; every answer must have status success."""

    def __init__(self, base_url: str, session: aiohttp.ClientSession) -> None:
        self.base_url = base_url
        self._session = session

    async def get(self, path: str, **params: str) -> Any:
        async with self._session.get(self.base_url + path, params=params) as response:
            body = await response.json()
        assert body.get("status") == "success", f"{path} {params}: {body}"
        return body["data"]

    async def query(self, expr: str) -> list[dict[str, Any]]:
        data = await self.get("/api/v1/query", query=expr)
        result: list[dict[str, Any]] = data["result"]
        return result if data["resultType"] == "vector" else [{"value": result}]


def finite_values(result: list[dict[str, Any]]) -> list[float]:
    values = [float(sample["value"][1]) for sample in result]
    return [value for value in values if math.isfinite(value)]


async def eventually(
    check: Callable[[], Awaitable[T | None]], what: str, timeout_s: float = 60.0
) -> T:
    """Poll `check` until it returns something other than None."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        result = await check()
        if result is not None:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
        await asyncio.sleep(POLL_S)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def loopback_config(gateway: str, prometheus: str) -> str:
    """deploy/prometheus.yml, scraping and evaluating every second, aimed at loopback."""
    text = PROMETHEUS_CONFIG.read_text()
    replacements = {
        "scrape_interval: 15s": "scrape_interval: 1s",
        "evaluation_interval: 15s": "evaluation_interval: 1s",
        '"gateway:3001"': f'"{gateway}"',
        '"localhost:9090"': f'"{prometheus}"',
    }
    for old, new in replacements.items():
        assert text.count(old) == 1, f"deploy/prometheus.yml no longer contains {old!r}"
        text = text.replace(old, new)
    return text


@asynccontextmanager
async def running_prometheus(
    binary: str, workdir: Path, gateway: str
) -> AsyncIterator[PrometheusAPI]:
    """Prometheus scraping `gateway` (host:port) with deploy/alerts.yml loaded."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    config = workdir / PROMETHEUS_CONFIG.name
    config.write_text(loopback_config(gateway, address))
    (workdir / ALERTS.name).write_text(ALERTS.read_text())
    args = [
        f"--config.file={config}",
        f"--storage.tsdb.path={workdir / 'data'}",
        f"--web.listen-address={address}",
    ]
    with (workdir / "prometheus.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            binary, *args, stdout=log, stderr=asyncio.subprocess.STDOUT
        )
        try:
            async with aiohttp.ClientSession() as session:
                api = PrometheusAPI(f"http://{address}", session)
                await eventually(lambda: _ready(session, api, process), "Prometheus to start")
                yield api
        finally:
            if process.returncode is None:
                process.terminate()
                try:
                    await asyncio.wait_for(process.wait(), timeout=10)
                except TimeoutError:
                    process.kill()
                    await process.wait()


async def _ready(
    session: aiohttp.ClientSession, api: PrometheusAPI, process: asyncio.subprocess.Process
) -> bool | None:
    if process.returncode is not None:
        raise AssertionError(f"Prometheus exited with {process.returncode}; see prometheus.log")
    try:
        async with session.get(api.base_url + "/-/ready") as response:
            return True if response.status == 200 else None
    except aiohttp.ClientConnectionError:
        return None
