"""One `/metrics` for all the workers of a supervisor, and what a worker tells it of its boot.

The supervisor gives every worker it starts a path in its private directory (`DIR/NAME`,
`Settings.gateway_fleet_member`). Around that path a worker keeps:

- `NAME.sock`: a unix socket that answers every connection with the worker's snapshot
  (`Metrics.snapshot()`, JSON) and closes it;
- `NAME.json`: the last snapshot the worker handed out, written (atomically) before it is
  sent, when the worker has started, and once more when it stops. The file outlives the
  worker, so what a dead worker counted is still counted, as prometheus_client's
  multiprocess mode keeps dead processes' files. Its existence also tells the supervisor
  that the worker got as far as serving;
- `NAME.error`: why the worker failed, when it did (`report_failure`).

When a worker has exited, the supervisor folds its last snapshot into one file, `dead.json`
(`bury`: the counters and histograms of every dead worker added up, and their names), and
removes the worker's own files: restarts leave one file, not one per worker that ever ran,
for every scrape to read and connect to.

The worker the kernel hands a scrape to asks every other worker's socket (all at once,
`SCRAPE_TIMEOUT_S` at most) and adds up the snapshots (`Metrics.merged`). A worker that
does not answer in time counts with its last `NAME.json` (it may be slightly behind, never
ahead of what was exported before, so no counter goes down); one whose socket refuses is
dead: its counters and histograms stay, its gauges go. Nothing of this runs on the hot
path: metrics are still plain numbers, read when a scrape asks for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from gateway.ops.metrics import Metrics, Snapshot

log = logging.getLogger(__name__)

SCRAPE_TIMEOUT_S = 2.0
"""How long a scrape waits for the other workers (Prometheus's own timeout is 10 s)."""


@dataclass(frozen=True, order=True)
class Member:
    """A worker's files in the supervisor's directory."""

    path: Path  # DIR/NAME, without a suffix

    @property
    def socket(self) -> Path:
        return self.path.with_name(self.path.name + ".sock")

    @property
    def snapshot(self) -> Path:
        return self.path.with_name(self.path.name + ".json")

    @property
    def error(self) -> Path:
        return self.path.with_name(self.path.name + ".error")

    def booted(self) -> bool:
        return self.snapshot.exists()

    def failure(self) -> str | None:
        """The worker's own account of why it stopped, if it gave one."""
        with contextlib.suppress(OSError):
            return self.error.read_text().strip() or None
        return None


DEAD = "dead.json"


@dataclass(frozen=True)
class Dead:
    """The workers folded into `dead.json`: their names, their numbers added up."""

    names: frozenset[str] = frozenset()
    snapshot: Snapshot | None = None

    @classmethod
    def read(cls, directory: Path) -> Dead:
        try:
            stored = json.loads((directory / DEAD).read_bytes())
            return cls(frozenset(stored["names"]), stored["metrics"])
        except (OSError, ValueError, KeyError, TypeError):  # none yet
            return cls()


def members(directory: Path) -> list[Member]:
    """Every worker that got as far as serving, alive or not yet folded into `dead.json`."""
    return sorted(
        Member(path.with_suffix("")) for path in directory.glob("*.json") if path.name != DEAD
    )


def bury(member: Member) -> None:
    """In the supervisor, once the worker has exited: fold its last numbers into
    `dead.json` (written whole, then renamed), then remove its files. A scrape that lists
    the worker before and reads `dead.json` after sees its name there and skips it."""
    stored = _stored(member)
    directory = member.path.parent
    if stored is not None:
        dead = Dead.read(directory)
        earlier = [] if dead.snapshot is None else [dead.snapshot]
        merged = Metrics.merged([], [*earlier, stored]).snapshot()
        names = sorted(dead.names | {member.path.name})
        body = json.dumps({"names": names, "metrics": merged}, separators=(",", ":"))
        partial = directory / (DEAD + ".partial")
        partial.write_text(body)
        os.replace(partial, directory / DEAD)
    for path in (member.snapshot, member.socket, member.error):
        path.unlink(missing_ok=True)


def publish(metrics: Metrics, member: Member) -> bytes:
    """This worker's snapshot, written to its file before anyone sees it."""
    body = json.dumps(metrics.snapshot(), separators=(",", ":")).encode()
    partial = member.snapshot.with_name(member.snapshot.name + ".partial")
    partial.write_bytes(body)
    os.replace(partial, member.snapshot)  # readers see the old snapshot or the new one
    return body


async def exposition(own: Member, instruments: Metrics) -> bytes:
    """Every worker's metrics added up (see the module's docstring), as text for a scrape."""
    mine = json.loads(publish(instruments, own))
    others = [m for m in members(own.path.parent) if m != own]
    answers = await asyncio.gather(*(_ask(m) for m in others))
    # Each silent worker's file before `dead.json`: a worker is removed only once folded.
    stored = [
        None if isinstance(a, dict) else _stored(m) for m, a in zip(others, answers, strict=True)
    ]
    dead = Dead.read(own.path.parent)
    alive: list[Snapshot] = [mine]
    gone: list[Snapshot] = [] if dead.snapshot is None else [dead.snapshot]
    late = 0
    for member, answer, kept in zip(others, answers, stored, strict=True):
        if not isinstance(answer, str):
            alive.append(answer)
        elif kept is not None and member.path.name not in dead.names:
            (gone if answer == "gone" else alive).append(kept)
            late += answer == "late"
    merged = Metrics.merged(alive, gone)
    buried = len(dead.names) + len(gone) - (dead.snapshot is not None)
    merged.registry.register(_Workers(len(alive) - late, late, buried))
    return generate_latest(merged.registry)


async def serve_snapshots(member: Member, instruments: Metrics) -> asyncio.AbstractServer:
    """Answer every connection on the member's socket with this worker's snapshot."""

    async def answer(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            writer.write(publish(instruments, member))
            await writer.drain()
        writer.close()

    with contextlib.suppress(FileNotFoundError):
        member.socket.unlink()
    server = await asyncio.start_unix_server(answer, path=str(member.socket))
    publish(instruments, member)
    return server


def stop_serving(server: asyncio.AbstractServer, member: Member, instruments: Metrics) -> None:
    """Close the socket and leave the last snapshot: what this worker counted still counts."""
    server.close()
    member.socket.unlink(missing_ok=True)
    publish(instruments, member)


async def _ask(member: Member) -> Snapshot | str:
    """A worker's snapshot from its socket, or `gone` (nobody listens) or `late`."""
    try:
        async with asyncio.timeout(SCRAPE_TIMEOUT_S):
            reader, writer = await asyncio.open_unix_connection(str(member.socket))
            try:
                body = await reader.read()
            finally:
                writer.close()
    except (FileNotFoundError, ConnectionRefusedError):
        return "gone"
    except (TimeoutError, OSError) as exc:
        log.warning("metrics: worker %s did not answer (%r); its last numbers count", member, exc)
        return "late"
    try:
        snapshot: Snapshot = json.loads(body)
    except ValueError:  # it died while writing
        return "gone"
    return snapshot


def _stored(member: Member) -> Snapshot | None:
    try:
        stored: Snapshot = json.loads(member.snapshot.read_bytes())
    except (OSError, ValueError):
        return None
    return stored


class _Workers:
    """How the scrape was put together: workers that answered, that were late, that died."""

    def __init__(self, answered: int, late: int, gone: int) -> None:
        self.counts = {"answered": answered, "late": late, "gone": gone}

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "gateway_metrics_workers",
            "Workers in this scrape: answered, late (their last numbers used) and gone "
            "(exited: counters and histograms kept, gauges dropped).",
            labels=["state"],
        )
        for state, count in self.counts.items():
            family.add_metric([state], count)
        yield family


@contextlib.contextmanager
def report_failure(member_path: str | None) -> Iterator[None]:
    """In a worker: write why it stopped (an exception's last line) for the supervisor."""
    try:
        yield
    except BaseException as exc:
        if isinstance(exc, SystemExit):  # sys.exit("why"), or a status (0: nothing failed)
            text = "" if exc.code in (0, None) else str(exc.code)
        elif isinstance(exc, KeyboardInterrupt):
            text = ""
        else:
            text = "".join(traceback.format_exception_only(exc)).strip()
        if member_path and text:
            with contextlib.suppress(OSError):
                Member(Path(member_path)).error.write_text(text + "\n")
        raise
