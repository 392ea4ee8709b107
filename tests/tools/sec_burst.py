"""A process of its own asking the live SEC source for many paths at once, the way a
worker's tools would: `python -m tests.tools.sec_burst CONFIG_JSON PATH...`, once a line
arrives on stdin."""

from __future__ import annotations

import asyncio
import json
import sys

from tools.config import ToolsConfig
from tools.sec.source import SecError
from tools.toolset import open_toolset


async def burst(config: ToolsConfig, paths: list[str]) -> None:
    async with open_toolset(config) as toolset:
        source = toolset.services["sec"].source
        # Ready; the burst starts on a line from stdin, so processes that took different
        # times to start still burst together.
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

        async def one(path: str) -> str:
            try:
                return f"ok {len(await source.get_text('data', path))}"
            except SecError as exc:
                return f"error {exc}"

        for answer in await asyncio.gather(*(one(path) for path in paths)):
            print(answer, flush=True)


if __name__ == "__main__":
    asyncio.run(burst(ToolsConfig(**json.loads(sys.argv[1])), sys.argv[2:]))
