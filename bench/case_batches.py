"""Case 13: a 200-question screen on the Message Batches API, next to the same questions
run live.

One gateway on the offline demo model (its own Message Batches endpoints, no key): the
screen (8 companies x 5 figures x 5 fiscal years) goes in as one `POST /api/batches`,
polled until it ends, then its results are read; the same 200 questions go one by one
through `/api/research`, 20 at a time. Tokens billed are every model call's input, output
and prompt-cache tokens as the questions' folds report them. The demo has no price, so
both are priced as `claude-sonnet-5` from the shipped table (gateway/prices.json): live at
its list price, the batch at the Message Batches discount. The demo answers a batch as
soon as it is submitted; the API takes minutes to hours a round, so the wall time here is
the gateway's own cost of running rounds, not what a real screen waits.

    python -m bench.case_batches      (alone; `python -m bench --cases batches` in the report)
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson

from bench.case_cache import _serve
from bench.run import Bench, Row
from gateway import pricing
from gateway.events import USAGE_KEYS
from gateway.http.app import create_app
from gateway.settings import Settings

PRICED_AS = "claude-sonnet-5"
COMPANIES = ("Apple", "NVIDIA", "Tesla", "Snowflake", "Alphabet", "Marvell", "Microsoft", "Meta")
FIGURES = ("revenue", "net income", "operating income", "total assets", "diluted EPS")
YEARS = (2020, 2021, 2022, 2023, 2024)
LIVE_AT_ONCE = 20
POLL_S = 0.05


def screen() -> list[str]:
    return [f"What was {c}'s {f} in fiscal {y}?" for c in COMPANIES for f in FIGURES for y in YEARS]


def _settings() -> Settings:
    return Settings(
        _env_file=None, gateway_upstream="demo", sec_source="offline", search_backend="offline",
        gateway_demo_pacing_ms=0, gateway_batch_poll_s=POLL_S, gateway_gc_freeze=False,
        gateway_batch_max_questions=len(screen()),
    )  # fmt: skip


async def _live(session: aiohttp.ClientSession, url: str, questions: list[str]) -> list[Any]:
    gate = asyncio.Semaphore(LIVE_AT_ONCE)

    async def one(question: str) -> Any:
        async with gate, session.post(f"{url}/api/research", json={"query": question}) as r:
            if r.status != 200:
                raise RuntimeError(f"/api/research answered {r.status}: {await r.text()}")
            return await r.json()

    return list(await asyncio.gather(*(one(q) for q in questions)))


async def _batch(
    session: aiohttp.ClientSession, url: str, questions: list[str]
) -> tuple[list[Any], dict[str, Any]]:
    async with session.post(f"{url}/api/batches", json={"questions": questions}) as r:
        if r.status != 202:
            raise RuntimeError(f"/api/batches answered {r.status}: {await r.text()}")
        batch_id = (await r.json())["batch_id"]
    async with asyncio.timeout(600):
        while True:
            async with session.get(f"{url}/api/batches/{batch_id}") as r:
                progress: dict[str, Any] = await r.json()
            if progress["state"] == "ended":
                break
            await asyncio.sleep(POLL_S)
    async with session.get(f"{url}/api/batches/{batch_id}/results") as r:
        lines = [orjson.loads(line) for line in (await r.read()).splitlines()]
    return lines, progress


def _totals(folds: list[Any], discount: float) -> dict[str, float]:
    price = pricing.shipped().price(PRICED_AS)
    assert price is not None, f"{PRICED_AS} is not in the shipped price table"
    usages = [{k: f["usage"].get(k, 0) for k in USAGE_KEYS} for f in folds if "usage" in f]
    return {
        "tokens": sum(sum(u.values()) for u in usages),
        "usd": sum(pricing.usage_cost(price, u, discount) for u in usages),
        "completed": sum(1 for f in folds if f.get("outcome") == "completed"),
        "turns": sum(f.get("turns", 0) for f in folds),
    }


async def measure() -> dict[str, Any]:
    questions = screen()
    discount = pricing.shipped().batch_discount
    async with _serve(create_app(_settings())) as url, aiohttp.ClientSession() as session:
        began = time.perf_counter()
        live = await _live(session, url, questions)
        live_s = time.perf_counter() - began
        began = time.perf_counter()
        lines, progress = await _batch(session, url, questions)
        batch_s = time.perf_counter() - began
    return {
        "questions": len(questions),
        "live": {**_totals(live, 1.0), "wall_s": live_s},
        "batch": {**_totals(lines, discount), "wall_s": batch_s, "rounds": len(progress["rounds"])},
        "discount": discount,
    }


async def batch_screen(bench: Bench) -> None:
    found = await measure()
    bench.details["batches"] = found
    live, batch, n = found["live"], found["batch"], found["questions"]
    done = f"completed {batch['completed']}/{n} (live {live['completed']}/{n})"
    bench.add(Row(
        "13", f"{n}-question screen on Message Batches: cost, tokens priced as {PRICED_AS}",
        batch["usd"], "$", "the same questions live", live["usd"], target="report",
        note=f"batch discount {found['discount']}; the demo itself is free; {done}",
    ))  # fmt: skip
    bench.add(Row(
        "13", "the same screen: tokens billed (input, output, cache)", batch["tokens"], "tok",
        "live", live["tokens"], target="report",
        note=f"model calls: {batch['turns']} (live {live['turns']})",
    ))  # fmt: skip
    bench.add(Row(
        "13", "the same screen: wall time, offline", batch["wall_s"], "s",
        f"live, {LIVE_AT_ONCE} at a time", live["wall_s"], target="report",
        note=f"{batch['rounds']} rounds, each one Message Batch the demo answers at once "
        f"(the API: minutes to hours); polled every {POLL_S} s",
    ))  # fmt: skip


def main() -> None:
    found = asyncio.run(measure())
    print(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
