"""The once-a-day values (today's date for the model, the spend periods) and the pooled
random ids: each must give what working it out every call gave."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

import pytest

from gateway import ids
from gateway.days import Daily
from gateway.providers.plan import today_text
from gateway.store.spend import periods

MIDNIGHT = datetime(2026, 12, 31, tzinfo=UTC).timestamp()


def test_a_daily_value_is_made_once_a_day_and_again_past_either_end() -> None:
    made: list[str] = []

    def make(day: datetime) -> str:
        made.append(day.date().isoformat())
        return made[-1]

    daily = Daily(make)
    assert daily(MIDNIGHT) == daily(MIDNIGHT + 86_399.9) == "2026-12-31"
    assert made == ["2026-12-31"]
    assert daily(MIDNIGHT + 86_400) == "2027-01-01"  # the next day begins at midnight
    assert daily(MIDNIGHT - 0.001) == "2026-12-30"  # a clock set back is a day too
    assert daily(MIDNIGHT + 10) == "2026-12-31"
    assert made == ["2026-12-31", "2027-01-01", "2026-12-30", "2026-12-31"]


def test_the_periods_and_the_date_are_what_the_clock_says() -> None:
    assert periods(MIDNIGHT + 86_399) == ("2026-12-31", "2026-12")
    assert periods(MIDNIGHT + 86_400) == ("2027-01-01", "2027-01")
    assert today_text() == f"Today's date is {datetime.now(UTC).date().isoformat()}."


def test_ids_are_hex_of_the_length_asked_and_never_repeat_across_refills() -> None:
    count = 3 * ids.POOL_BYTES // 16  # three refills of the pool
    made = [ids.token_hex(16) for _ in range(count)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", one) for one in made)
    assert len(set(made)) == count
    assert len(ids.token_hex(12)) == 24
    assert len(ids.token_hex(ids.POOL_BYTES + 1)) == 2 * (ids.POOL_BYTES + 1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_draws_fresh_ids_not_its_parents_next_ones() -> None:
    ids.token_hex(16)  # the pool holds bytes the parent has not handed out yet
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's side
        os.write(write, ids.token_hex(16).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    theirs = os.read(read, 64).decode()
    os.close(read)
    assert len(theirs) == 32
    assert theirs != ids.token_hex(16)  # the parent's next id, which the child also held
