"""What runs inside a confined test process: the program, then its test in one of three forms.

Imported by the worker before any untrusted code exists, so the references captured here
(builtins, ``os.write``, ``os._exit``, ``json.dumps``) are the pristine ones.

* stdio: the program runs as ``__main__`` with fd 0 = the test input; its stdout goes to the
  runner, which hands it to the parent for comparison. No expected output is ever here.
* call: the program is executed, the function called with the test's arguments, and the
  result is reduced to exact built-in values (`plain`) and serialised to JSON here; the parent
  compares data. An object whose ``__eq__`` always returns True is not plain: wrong answer.
* assert (HumanEval, MBPP, LeetCode ``check``): the test code is rewritten so that every
  ``assert a == b`` compares `plain` values, it runs with a snapshot of the built-ins taken
  before the program ran, and a token is written only after the last check, so ``exit(0)``
  before the checks cannot pass.

Not covered: a program written against this harness can forge an assert-based pass (it shares
the process with the checks and can find the token); expected values of assert-based tests
are in the test code by nature. Stdio and call-based results cannot be forged that way.
"""

from __future__ import annotations

import ast
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
    AssertionError,
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

_BUILTINS = dict(builtins.__dict__)
_write, _exit, _dumps, _loads = os.write, os._exit, json.dumps, json.loads
_type, _isinstance, _len = type, isinstance, len
_getrusage, _setrlimit = resource.getrusage, resource.setrlimit
_EXACT = (int, float, str, bool, type(None), bytes, complex)
_NOT_PLAIN = object()

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


class NotPlain(Exception):
    pass


def plain(x, depth: int = 0):
    """Reduce ``x`` to exact built-in values using the base types' own methods (so subclass
    overrides are ignored); numpy values become Python values. Raises NotPlain otherwise."""
    if depth > 200:
        raise NotPlain("too deep")
    t = _type(x)
    if t in _EXACT:
        return x
    if t is list or t is tuple or t is set or t is frozenset:
        items = [plain(v, depth + 1) for v in t.__iter__(x)]
        return items if t is list else (tuple(items) if t is tuple else t(items))
    if t is dict:
        return {plain(k, depth + 1): plain(v, depth + 1) for k, v in dict.items(x)}
    for base, conv in ((bool, bool.__bool__), (int, int.__index__), (float, float.__float__),
                       (str, str.__str__)):
        if _isinstance(x, base):
            return plain(conv(x), depth + 1)
    if _isinstance(x, dict):
        return plain(dict(dict.items(x)), depth + 1)
    if _isinstance(x, tuple):
        return plain(tuple(tuple.__iter__(x)), depth + 1)
    if _isinstance(x, list):
        return plain(list(list.__iter__(x)), depth + 1)
    np = sys.modules.get("numpy")
    if np is not None and _isinstance(np, _type(sys)):
        if _isinstance(x, np.ndarray):
            return plain(np.ndarray.tolist(x), depth + 1)
        if _isinstance(x, np.generic):
            return plain(np.generic.item(x), depth + 1)
    raise NotPlain(f"a {t.__name__!s} is not a plain value")


def safe_eq(a, b) -> bool:
    """``a == b`` on plain values; a non-plain side against a plain one is unequal."""
    try:
        pa = plain(a)
    except (NotPlain, RecursionError):
        pa = _NOT_PLAIN
    try:
        pb = plain(b)
    except (NotPlain, RecursionError):
        pb = _NOT_PLAIN
    if pa is _NOT_PLAIN and pb is _NOT_PLAIN:
        return bool(a == b)  # the test compares objects of its own classes
    if pa is _NOT_PLAIN or pb is _NOT_PLAIN:
        return False
    return bool(pa == pb)


def to_json(x) -> str:
    """Serialise a call result as JSON (tuples -> lists, sets -> sorted lists)."""
    def conv(v):
        if _isinstance(v, (list, tuple)):
            return [conv(i) for i in v]
        if _isinstance(v, (set, frozenset)):
            return sorted((conv(i) for i in v), key=repr)
        if _isinstance(v, dict):
            return {str(k) if not _isinstance(k, str) else k: conv(i) for k, i in v.items()}
        if _isinstance(v, bytes):
            return v.decode("latin-1")
        if _isinstance(v, complex):
            return [v.real, v.imag]
        return v
    return _dumps(conv(plain(x)))


class _EqRewriter(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert):
        self.generic_visit(node)
        t = node.test
        if _isinstance(t, ast.Compare) and _len(t.ops) == 1 and \
                _isinstance(t.ops[0], (ast.Eq, ast.NotEq)):
            call = ast.Call(ast.Name("__dapo_eq__", ast.Load()), [t.left, t.comparators[0]], [])
            node.test = call if _isinstance(t.ops[0], ast.Eq) else ast.UnaryOp(ast.Not(), call)
        return node


def compile_checks(src: str, filename: str = "<test>"):
    """Compile test code with every ``assert a == b`` routed through `safe_eq`."""
    tree = ast.fix_missing_locations(_EqRewriter().visit(ast.parse(src, filename)))
    return compile(tree, filename, "exec")


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
    if _isinstance(e, OSError) and e.errno == errno.EFBIG:
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


def check_env(ns: dict, setup) -> dict:
    """The namespace checks run in: the program's names, pristine built-ins, `safe_eq`."""
    env = dict(ns)
    env["__builtins__"] = dict(_BUILTINS)
    env["__dapo_eq__"] = safe_eq
    if setup is not None:
        exec(setup, env)  # noqa: S102 - running it is the point
    return env


def assert_test(env: dict, check, out_fd: int) -> tuple[str, str]:
    _streams(b"", out_fd)
    try:
        exec(check, env)  # noqa: S102 - running it is the point
        return "ok", ""
    except AssertionError as e:
        return "wrong_answer", _err(e)
    except BaseException as e:  # noqa: BLE001 - SystemExit inside a check fails it too
        return _status_of(e), _err(e)
