"""No unauthenticated server off loopback: `python -m gateway` bound to a non-loopback
address with no keys refuses to start, naming the keys and the override."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gateway.http.guard import unauthenticated_exposure
from gateway.settings import Settings
from tests.procs.gateway import GatewayProcess, gateway_process


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.9", "localhost", "::1", "[::1]"])
def test_loopback_needs_no_keys(host: str) -> None:
    assert unauthenticated_exposure(Settings(_env_file=None, host=host)) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5", "gateway.internal", ""])
def test_off_loopback_needs_keys_or_the_override(host: str, tmp_path: Path) -> None:
    why = unauthenticated_exposure(Settings(_env_file=None, host=host))
    assert why is not None
    assert "GATEWAY_API_KEYS" in why and "GATEWAY_ALLOW_UNAUTHENTICATED=1" in why
    keys_file = tmp_path / "keys"
    for given in (
        {"gateway_api_keys": "ops:k"},
        {"gateway_api_keys_file": str(keys_file)},
        {"gateway_allow_unauthenticated": True},
        {"gateway_admin_key": "admin-key-of-16-chars"},
    ):
        assert unauthenticated_exposure(Settings(_env_file=None, host=host, **given)) is None


async def test_the_process_refuses_to_start(tmp_path: Path) -> None:
    gateway = GatewayProcess(tmp_path, GATEWAY_UPSTREAM="demo", HOST="0.0.0.0")
    await gateway.start(wait=False)
    assert gateway.process is not None
    async with asyncio.timeout(30):
        code = await gateway.process.wait()
    assert code != 0
    output = gateway.output()
    assert "will not start" in output
    assert "GATEWAY_API_KEYS" in output and "GATEWAY_ALLOW_UNAUTHENTICATED=1" in output


@pytest.mark.parametrize(
    "env", [{"GATEWAY_API_KEYS": "ops:k"}, {"GATEWAY_ALLOW_UNAUTHENTICATED": "1"}]
)
async def test_keys_or_the_override_start_it(tmp_path: Path, env: dict[str, str]) -> None:
    async with gateway_process(tmp_path, GATEWAY_UPSTREAM="demo", HOST="0.0.0.0", **env) as gw:
        assert (await gw.health())["status"] == "healthy"
