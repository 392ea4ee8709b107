"""Prompt caching as the Messages API accounts for it, for the fake.

The prompt is a sequence of blocks in the API's order: tool definitions, system blocks,
then every message's content blocks. A `cache_control` breakpoint makes the prefix up to
and including its block cacheable (if it is at least `min_tokens` long). A later request
reads from the cache the longest earlier-written prefix that is byte-identical to its
own (the markers themselves are not part of the prefix), looking back at most 20 blocks
before each of its breakpoints; from there to its last breakpoint it writes; the rest is
plain input. Tokens are counted at about four characters each.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

LOOKBACK_BLOCKS = 20
MAX_BREAKPOINTS = 4


def prompt_blocks(body: dict[str, Any]) -> list[tuple[bytes, bool]]:
    """Each block of the prompt as (canonical bytes without its marker, has a marker)."""
    blocks: list[tuple[bytes, bool]] = []

    def add(where: str, block: Any) -> None:
        marked = isinstance(block, dict) and "cache_control" in block
        if marked:
            block = {k: v for k, v in block.items() if k != "cache_control"}
        blocks.append((where.encode() + orjson.dumps(block, option=orjson.OPT_SORT_KEYS), marked))

    head = orjson.dumps([body.get("model"), body.get("thinking")], option=orjson.OPT_SORT_KEYS)
    blocks.append((head, False))  # another model or thinking setting: another cache
    for tool in body.get("tools") or []:
        add("tool:", tool)
    system = body.get("system")
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
        add("system:", block)
    for n, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for block in parts or []:
            add(f"{n}:{message.get('role')}:", block)
    return blocks


def tokens(data: bytes) -> int:
    return max(1, len(data) // 4)


@dataclass
class PromptCache:
    min_tokens: int = 1_024
    _written: set[bytes] = field(default_factory=set)

    def account(self, body: dict[str, Any]) -> dict[str, int]:
        """Usage for `body` (input, cache read, cache write), and write its prefixes."""
        blocks = prompt_blocks(body)
        hashes, sizes = _prefixes(blocks)
        marks = [i for i, (_, marked) in enumerate(blocks) if marked]
        if len(marks) > MAX_BREAKPOINTS:
            raise ValueError(
                f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(marks)}."
            )
        total = sizes[-1]
        read_end = self._longest_hit(hashes, marks)
        read = sizes[read_end] if read_end >= 0 else 0
        write_end = max((m for m in marks if sizes[m] >= self.min_tokens), default=-1)
        written = sizes[write_end] - read if write_end > read_end else 0
        for mark in marks:
            if sizes[mark] >= self.min_tokens:
                self._written.add(hashes[mark])
        return {
            "input_tokens": total - read - written,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }

    def _longest_hit(self, hashes: list[bytes], marks: list[int]) -> int:
        best = -1
        for mark in marks:
            for index in range(mark, max(-1, mark - LOOKBACK_BLOCKS), -1):
                if hashes[index] in self._written:
                    best = max(best, index)
                    break
        return best


def _prefixes(blocks: list[tuple[bytes, bool]]) -> tuple[list[bytes], list[int]]:
    """The hash and the token count of every prefix ending at each block."""
    hashes: list[bytes] = []
    sizes: list[int] = []
    digest, size = b"", 0
    for data, _ in blocks:
        digest = hashlib.sha256(digest + data).digest()
        size += tokens(data)
        hashes.append(digest)
        sizes.append(size)
    return hashes, sizes
