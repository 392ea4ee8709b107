"""A value worked out from the UTC date once a day, not once a call: a run start asks for
today's date (for the model) and the spend periods it is charged to."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Generic, TypeVar

T = TypeVar("T")


class Daily(Generic[T]):
    """`daily(now)`: `make` of the UTC day of `now` (seconds since the epoch), remade when
    `now` leaves the day it was made for (either way: a clock set back is a day too)."""

    def __init__(self, make: Callable[[datetime], T]) -> None:
        self._make = make
        self._day: tuple[float, float, T] | None = None  # start, end, value

    def __call__(self, now: float) -> T:
        day = self._day  # one tuple: a thread sees the old day or the new, whole
        if day is not None and day[0] <= now < day[1]:
            return day[2]
        moment = datetime.fromtimestamp(now, UTC)
        midnight = datetime(moment.year, moment.month, moment.day, tzinfo=UTC).timestamp()
        value = self._make(moment)
        self._day = (midnight, midnight + 86_400, value)
        return value
