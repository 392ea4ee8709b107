"""How the evaluation's answers write an amount, and how a planted error spoils one."""

from __future__ import annotations

import itertools
import random


def money(value: float, rng: random.Random, style: int | None = None) -> str:
    style = rng.randrange(6) if style is None else style
    big = abs(value) >= 1e9
    scale, word, short = (1e9, "billion", "B") if big else (1e6, "million", "M")
    sign = "-" if value < 0 else ""
    v = abs(value) / scale
    return [
        f"{sign}${v:,.1f} {word}",
        f"{sign}${v:,.2f} {word}",
        f"{sign}${abs(value) / 1e6:,.0f} million",
        f"{sign}${v:,.1f}{short}",
        f"{sign}US${v:,.1f} {word}",
        f"{sign}${v:,.3f} {word}",
    ][style]


def still_right(shown: str, value: float) -> bool:
    """Whether `shown` (as `money` writes it) still reads as `value`, within its rounding:
    a mutation that leaves it so plants no error."""
    text = shown.replace("US$", "").replace("$", "").replace(",", "").lstrip("-")
    number, _, word = text.partition(" ")
    scale = {"billion": 1e9, "million": 1e6}.get(word, 1.0)
    if number[-1:] in ("B", "M"):
        number, scale = number[:-1], 1e9 if number[-1] == "B" else 1e6
    decimals = len(number.partition(".")[2])
    try:
        return abs(float(number) * scale - abs(value)) <= 0.5 * 10.0**-decimals * scale * 1.001
    except ValueError:
        return False


def mutate_digits(text: str, rng: random.Random, kind: str) -> str | None:
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if kind == "transposed":
        pairs = [(a, b) for a, b in itertools.pairwise(digits) if b == a + 1 and text[a] != text[b]]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        return text[:a] + text[b] + text[a] + text[b + 1 :]
    if kind == "dropped_digit" and len(digits) >= 3:
        i = rng.choice(digits[1:])
        return text[:i] + text[i + 1 :]
    if kind == "wrong_rounding":
        i = digits[-1]
        last = int(text[i])
        new = last + rng.choice((-1, 1)) if 0 < last < 9 else (1 if last == 0 else 8)
        return text[:i] + str(new) + text[i + 1 :]
    return None
