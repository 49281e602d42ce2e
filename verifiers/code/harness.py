"""What runs inside a confined test process of stdin/stdout and call-based tests.

Imported by the worker before any untrusted code exists, so the references captured here
(builtins, ``os.write``, ``os._exit``, ``json.loads``) are the pristine ones.

* stdio: the program runs as ``__main__`` with fd 0 = the test input; its stdout goes to the
  runner, which hands it to the parent for comparison. No expected output is ever here.
* call: the program is executed, the function called with the test's arguments, and the
  result is reduced to plain values and serialised to JSON (`values.to_json`); the parent
  compares data. An object whose ``__eq__`` always returns True is not plain: wrong answer.

Assert-based tests (HumanEval, MBPP, LeetCode ``check``) do not run here: their checks run in
a checker process of their own (`checker`) that calls the program, in its own process
(`zygote`, `proxy.serve`), through proxies that carry only plain data. See docs/code-sandbox.md
for what is contained and what is not.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import resource
import sys
import threading

# Module globals, so that a program patching the builtins module cannot change what the
# harness catches or calls (child.py and wire.py do the same).
from builtins import (  # noqa: UP029
    BaseException,
    MemoryError,
    NameError,
    OSError,
    RecursionError,
    SystemExit,
    TypeError,
    ValueError,
    callable,
    dict,
    getattr,
    int,
    list,
    str,
    tuple,
)

from dapo_bench.verifiers.code.values import NotPlain, to_json

_write, _exit, _loads = os.write, os._exit, json.loads
_type, _isinstance = type, isinstance
_getrusage, _setrlimit = resource.getrusage, resource.setrlimit

# What LeetCode / LiveCodeBench harnesses put before a call-based program.
PREAMBLE = """\
from typing import *
from collections import *
from itertools import *
from functools import *
from heapq import *
from bisect import *
from math import *
from string import *
from operator import *
import collections, itertools, functools, heapq, bisect, math, string, re, random, sys
try:
    from sortedcontainers import SortedList, SortedDict, SortedSet
except ImportError:
    pass
"""


def cpu_used() -> float:
    ru = _getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def cpu_budget(seconds: float, hard: int) -> None:
    """Let the next test use ``seconds`` more CPU (whole seconds; the kernel's granularity)."""
    soft = min(hard, int(-(-(cpu_used() + seconds) // 1)))
    _setrlimit(resource.RLIMIT_CPU, (soft, hard))


def dirty() -> bool:
    """Does something of the last test live on (a thread, a child process)?"""
    if threading.active_count() > 1:
        return True
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _status_of(e: BaseException) -> str:
    if _isinstance(e, MemoryError):
        return "memory_limit"
    if _isinstance(e, OSError) and getattr(e, "errno", None) == errno.EFBIG:
        return "output_limit"
    return "runtime_error"


def _err(e: BaseException) -> str:
    return f"{_type(e).__name__}: {e}"[:300]


def _streams(data: bytes, out_fd: int) -> io.TextIOWrapper:
    """fd 0 = a fresh memfd holding ``data``; fd 1 = the (emptied) output memfd ``out_fd``."""
    inp = os.memfd_create("stdin", 0)
    if data:
        view = memoryview(data)
        while view:
            view = view[os.write(inp, view):]
        os.lseek(inp, 0, 0)
    os.dup2(inp, 0)
    os.close(inp)
    os.ftruncate(out_fd, 0)
    os.lseek(out_fd, 0, 0)
    os.dup2(out_fd, 1)
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                 encoding="utf-8", errors="replace")
    out = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False), 1 << 16),
                           encoding="utf-8", errors="replace")
    sys.stdout = out
    return out


def stdio_test(code, data: bytes, out_fd: int) -> tuple[str, str]:
    """Run the program once as ``__main__`` on ``data``; stdout lands in ``out_fd``."""
    out = _streams(data, out_fd)
    status, err = "ok", ""
    try:
        exec(code, {"__name__": "__main__", "__builtins__": builtins})  # noqa: S102 - running it is the point
    except SystemExit as e:
        if e.code not in (None, 0):
            status, err = "runtime_error", f"exit status {e.code!r}"[:300]
    except BaseException as e:  # noqa: BLE001 - the program's failure is the verdict
        status, err = _status_of(e), _err(e)
    try:
        out.flush()
    except BaseException as e:  # noqa: BLE001
        if status == "ok":
            status, err = _status_of(e), _err(e)
    return status, err


def compile_source(src: str, name: str):
    """Compile test or program text as plain Python would: ``dont_inherit=True``, so this
    module's own ``from __future__ import annotations`` does not leak into it (an undefined
    name in an annotation raises, as it does when the file runs on its own)."""
    return compile(src, name, "exec", dont_inherit=True)


def load_program(code, preamble) -> dict:
    """Execute the program (for call- and assert-based tests); -> its namespace."""
    ns = {"__name__": "solution"}
    if preamble is not None:
        exec(preamble, ns)  # noqa: S102 - running it is the point
    exec(code, ns)  # noqa: S102 - running it is the point
    return ns


def call_test(ns: dict, fn_name: str, args_json: str, out_fd: int) -> tuple[str, str, str]:
    """Call the function on one argument list; -> (status, error, JSON of the plain result)."""
    out = _streams(b"", out_fd)
    try:
        fn = ns.get(fn_name) if fn_name else None
        sol = ns.get("Solution")
        if sol is not None and not callable(fn):
            inst = sol()
            if not fn_name:
                names = [n for n in _type(inst).__dict__ if not n.startswith("_")]
                fn_name = names[0] if names else ""
            fn = getattr(inst, fn_name, None)
        if not callable(fn):
            raise NameError(f"function {fn_name!r} not defined")
        args = _loads(args_json)
        value = fn(*args) if _isinstance(args, list) else fn(args)
        out.flush()
        try:
            return "ok", "", to_json(value)
        except (NotPlain, TypeError, ValueError, RecursionError) as e:
            return "wrong_answer", _err(e), ""
    except SystemExit as e:
        return "runtime_error", f"exit status {e.code!r}"[:300], ""
    except BaseException as e:  # noqa: BLE001
        return _status_of(e), _err(e), ""
