"""`python bench/opcount_hook.py python -m MODULE ARGS...`: run MODULE as `python -m` would,
with a Python opcode counter that SIGUSR1 switches on and SIGUSR2 switches off.

Switched off, it writes what it counted to `$OPCOUNT_OUT` (JSON: one row a code object,
its file, first line, name and opcodes executed). `bench.perrun` runs a gateway under it
from any tree (this file is given by path, so the tree measured needs no copy of it): a
warm-up, then the counter on for a number of runs. Counting is by `sys.settrace` with
`f_trace_opcodes`, main thread only; a coroutine resumed after the switch is counted from
its next step. The counts do not depend on the machine's load; the process runs ~10x
slower while counting.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
from types import CodeType, FrameType
from typing import Any

_counts: dict[CodeType, int] = {}
_calls: dict[tuple[CodeType, CodeType | None], int] = {}
"""Frames entered (a coroutine's resumptions too), by code and caller's code."""


def _local(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "opcode":
        code = frame.f_code
        _counts[code] = _counts.get(code, 0) + 1
    return _local


def _global(frame: FrameType, event: str, arg: Any) -> Any:
    back = frame.f_back
    key = (frame.f_code, None if back is None else back.f_code)
    _calls[key] = _calls.get(key, 0) + 1
    frame.f_trace_lines = False
    frame.f_trace_opcodes = True
    return _local


def _on(signum: int, frame: FrameType | None) -> None:
    _counts.clear()
    _calls.clear()
    sys.settrace(_global)


def _off(signum: int, frame: FrameType | None) -> None:
    sys.settrace(None)
    rows = [
        {"file": code.co_filename, "line": code.co_firstlineno, "name": _name(code), "n": n}
        for code, n in _counts.items()
    ]
    rows += [
        {
            "file": code.co_filename,
            "line": code.co_firstlineno,
            "name": _name(code),
            "calls": n,
            "caller": None if caller is None else f"{caller.co_filename}:{_name(caller)}",
        }
        for (code, caller), n in _calls.items()
    ]
    out = os.environ["OPCOUNT_OUT"]
    with open(out + ".part", "w") as file:
        json.dump(rows, file)
    os.replace(out + ".part", out)


def _name(code: CodeType) -> str:
    """Its qualified name; for code made by `exec` (a dataclass's `__init__`, say), with
    its first arguments, which tell whose it is."""
    if code.co_filename != "<string>":
        return code.co_qualname
    return f"{code.co_qualname}({', '.join(code.co_varnames[: min(code.co_argcount, 4)])})"


def main() -> None:
    # argv: [this file, python, "-m", module, args...]
    if len(sys.argv) < 4 or sys.argv[2] != "-m":
        raise SystemExit(__doc__)
    module = sys.argv[3]
    sys.argv = [module, *sys.argv[4:]]
    sys.path[0] = os.getcwd()  # as `python -m` has it, not this file's folder
    signal.signal(signal.SIGUSR1, _on)
    signal.signal(signal.SIGUSR2, _off)
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
