"""The official MCP conformance suite (`@modelcontextprotocol/conformance`, installed by
`npm ci` in tests/mcp_conformance) against a real `python -m gateway`'s /mcp, for every
server scenario that applies to a server of tools only (README: "MCP" says why the others
do not)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from tests.procs.gateway import gateway_process

SUITE = Path(__file__).resolve().parents[1] / "mcp_conformance"
CLI = SUITE / "node_modules" / ".bin" / "conformance"
NODE = shutil.which("node")
SCENARIOS = [
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
]

pytestmark = pytest.mark.skipif(
    NODE is None or not CLI.exists(),
    reason="needs node and `npm ci` in tests/mcp_conformance (.ci/run does both)",
)


@pytest.mark.timeout(180)
async def test_the_official_suite_passes(tmp_path: Path) -> None:
    async with gateway_process(tmp_path) as gateway:
        url = f"http://localhost:{gateway.port}/mcp"  # a loopback name: the rebinding check
        for scenario in SCENARIOS:
            process = await asyncio.create_subprocess_exec(
                str(CLI), "server", "--url", url, "--scenario", scenario,
                cwd=SUITE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            output, _ = await process.communicate()
            report = output.decode(errors="replace")
            assert process.returncode == 0, f"{scenario}:\n{report}"
            assert " 0 failed" in report and "Passed: 0/" not in report, f"{scenario}:\n{report}"
