"""`python -m gateway`'s own log: each line names the caller (`[key]`), the access line
included, with the record switches of `configure_logging` on."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp

from tests.procs.gateway import gateway_process


async def test_the_access_line_names_the_caller(tmp_path: Path) -> None:
    env = {"GATEWAY_UPSTREAM": "demo", "GATEWAY_API_KEYS": "alice:sk-alice-0123456789"}
    async with gateway_process(tmp_path, **env) as gateway, aiohttp.ClientSession() as session:
        headers = {"Authorization": "Bearer sk-alice-0123456789"}
        body = {"query": "What was Apple's revenue in fiscal 2023?"}
        async with session.post(gateway.url + "/api/research", json=body, headers=headers) as r:
            assert r.status == 200
        async with session.get(gateway.url + "/health") as r:
            assert r.status == 200
        output = gateway.output()
    access = re.compile(r"^\S+ \S+ INFO aiohttp\.access \[(\S+)\] \S+ \[.+\] \"(\w+) (\S+) ")
    lines = {m.groups() for m in map(access.match, output.splitlines()) if m}
    assert ("alice", "POST", "/api/research") in lines
    assert ("anonymous", "GET", "/health") in lines  # no key needed outside /api/*
    assert "sk-alice" not in output  # the name, never the key
