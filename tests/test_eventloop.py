"""The event loop setting: uvloop when installed, asyncio's own on request."""

from __future__ import annotations

import asyncio
import importlib.util

import pytest

from gateway.ops import eventloop

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None


async def _name() -> str:
    return eventloop.loop_name(asyncio.get_running_loop())


def test_asyncio_is_asyncio() -> None:
    assert eventloop.run(_name(), "asyncio") == "asyncio"


def test_auto_takes_uvloop_when_installed() -> None:
    assert eventloop.run(_name(), "auto") == ("uvloop" if HAS_UVLOOP else "asyncio")


def test_auto_falls_back_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> object:
        raise ImportError(name)

    monkeypatch.setattr("gateway.ops.eventloop.importlib.import_module", missing)
    assert eventloop.loop_factory("auto") is asyncio.new_event_loop
    with pytest.raises(RuntimeError, match="uvloop is not installed"):
        eventloop.loop_factory("uvloop")


def test_unknown_choice_is_refused() -> None:
    with pytest.raises(ValueError, match="auto, uvloop or asyncio"):
        eventloop.loop_factory("trio")
