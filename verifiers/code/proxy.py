"""The call protocol between the checker process and the program process (assert-based tests).

Only packed plain data (`values`) crosses, as `wire` frames over two pipes:

* program -> checker, once: ``{"refs": [[name, n], ...]}`` (the target names the program
  defines) or ``{"load": status, "error": text}`` (the program failed to load).
* checker -> program: ``{"i": test, "f": n, "a": [args], "k": {name: arg}}`` (call handle n)
  or ``{"i": test, "g": n, "n": attr}`` (read an attribute of handle n).
* program -> checker: ``{"v": value, "w"?: [args, kwargs]}`` (``w``: the arguments after the
  call, when the call changed them) or ``{"x": exception name, "m": message, "st": status,
  "end"?: true}``.

`Channel` and `Remote` are the checker's side: a `Remote` is a proxy (the function under test,
``Solution``, an object the program returned) whose calls go through the channel. A reply over
the size limit, one that does not decode to plain data, or the program process ending breaks
the channel for good: every later call fails and the test's status is the channel's
(``bad_reply`` or the program's death, judged by the worker), whatever the test code catches.
`serve` is the program's side; it runs in the program's process, which the program controls,
so nothing in it is trusted: the checker believes only the data it decodes.
"""

from __future__ import annotations

import builtins
from builtins import (  # noqa: UP029 - see harness.py: serve runs where the program can patch
    BaseException,
    Exception,
    KeyboardInterrupt,
    KeyError,
    MemoryError,
    OverflowError,
    RecursionError,
    SystemExit,
    TypeError,
    ValueError,
    any,
    dict,
    getattr,
    id,
    int,
    isinstance,
    len,
    list,
    set,
    str,
    type,
    zip,
)
from typing import TYPE_CHECKING

from dapo_bench.verifiers.code import harness, values, wire
from dapo_bench.verifiers.code.values import BadValue, NotPlain

if TYPE_CHECKING:
    from typing import NoReturn

_EXCEPTIONS = {n: v for n, v in vars(builtins).items()
               if isinstance(v, type) and issubclass(v, Exception)}


class ProgramError(Exception):
    """The program raised an exception that is not a built-in one."""


class Stop(BaseException):
    """The channel is broken or the call cannot be expressed; `Channel.broken` says why."""


class Channel:
    def __init__(self, req_fd: int, rep_fd: int, limit: int):
        self.req_fd, self.rep_fd, self.limit = req_fd, rep_fd, limit
        self.test = 0
        self.calls = 0
        self.broken: tuple[str, str] | None = None  # (status, error), sticky
        self._remotes: dict[int, Remote] = {}

    def _break(self, status: str, error: str) -> NoReturn:
        if self.broken is None:
            self.broken = (status, error[:300])
        raise Stop(error)

    def recv(self) -> dict:
        try:
            frame = wire.recv(self.rep_fd, self.limit)
        except wire.FrameError as e:
            self._break("bad_reply", f"reply from the program process: {e}")
        except OSError as e:
            self._break("program_gone", f"the program process ended ({e})")
        if frame is None:
            self._break("program_gone", "the program process ended during a call")
        return frame[0]

    def remote(self, n: int, name: str = "") -> Remote:
        r = self._remotes.get(n)
        if r is None:
            r = self._remotes[n] = Remote(self, n, name)
        return r

    def _ref(self, x) -> int | None:
        return x._n if type(x) is Remote and x._ch is self else None

    def _pack(self, x):
        try:
            return values.pack(x, self._ref)
        except NotPlain as e:
            self.broken = self.broken or ("unsupported_test", f"an argument: {e}")
            raise Stop(str(e)) from None

    def _ask(self, msg: dict):
        if self.broken is not None:
            raise Stop(self.broken[1])
        self.calls += 1
        try:
            wire.send(self.req_fd, msg)
        except OSError as e:
            self._break("program_gone", f"the program process ended ({e})")
        reply = self.recv()
        if "x" in reply:
            name, text = str(reply.get("x")), str(reply.get("m", ""))[:300]
            if reply.get("end"):  # SystemExit, MemoryError, ...: the test fails
                st = reply.get("st")
                self._break(st if st in ("memory_limit", "runtime_error") else "runtime_error",
                            f"{name}: {text}")
            cls = _EXCEPTIONS.get(name)
            raise (cls(text) if cls is not None else ProgramError(f"{name}: {text}"))
        try:
            return values.unpack(reply["v"], self.remote), reply.get("w")
        except (BadValue, KeyError, TypeError) as e:
            self._break("bad_reply", f"reply from the program process: {e}")

    def call(self, n: int, args: tuple, kwargs: dict):
        msg = {"i": self.test, "f": n, "a": [self._pack(a) for a in args],
               "k": {str(k): self._pack(v) for k, v in kwargs.items()}}
        value, back = self._ask(msg)
        if back is not None:
            self._write_back(args, kwargs, back)
        return value

    def getattr(self, n: int, attr: str):
        return self._ask({"i": self.test, "g": n, "n": attr})[0]

    def _write_back(self, args: tuple, kwargs: dict, back) -> None:
        """The mutation rule: arguments the program changed are updated in place here."""
        try:
            new_args, new_kw = back
            pairs = list(zip(args, new_args)) + [(v, new_kw[k]) for k, v in kwargs.items()
                                                 if k in new_kw]
            for old, packed in pairs:
                if type(old) not in (list, dict, set):
                    continue
                new = values.unpack(packed, self.remote)
                if type(new) is not type(old):
                    continue
                if type(old) is list:
                    old[:] = new
                else:
                    old.clear()
                    old.update(new)
        except (BadValue, TypeError, ValueError, KeyError) as e:
            self._break("bad_reply", f"arguments sent back: {e}")


class Remote:
    """A proxy of an object of the program: calling it or reading an attribute asks the
    program process; comparing it compares the proxy itself (never the program's ``__eq__``)."""

    __slots__ = ("_ch", "_n", "_name")

    def __init__(self, ch: Channel, n: int, name: str = ""):
        self._ch, self._n, self._name = ch, n, name

    def __call__(self, *args, **kwargs):
        return self._ch.call(self._n, args, kwargs)

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return self._ch.getattr(self._n, attr)

    def __repr__(self) -> str:
        return f"<the program's {self._name or 'object'}>"


# ----------------------------------------------------------------------- the program's side


def _reply(fd: int, msg: dict) -> None:
    wire.send(fd, msg)


def serve(job: dict, req_fd: int, rep_fd: int, lim, hard: int) -> None:
    """Load the program, say which targets it defines, then answer calls until the checker
    closes the channel."""
    try:
        code = harness.compile_source(job["program"], "<program>")
        pre = harness.compile_source(harness.PREAMBLE, "<preamble>") if job.get("preamble") \
            else None
        ns = harness.load_program(code, pre)
    except BaseException as e:  # noqa: BLE001 - SyntaxError, SystemExit: exit before the tests
        prefix = "compile: " if isinstance(e, SyntaxError) else "loading the program: "
        _reply(rep_fd, {"load": harness._status_of(e), "error": prefix + harness._err(e)})
        return
    objs = [ns[n] for n in job.get("targets", []) if n in ns]
    index = {id(o): k for k, o in enumerate(objs)}

    def keep(x) -> int:
        k = index.get(id(x))
        if k is None:
            k = index[id(x)] = len(objs)
            objs.append(x)
        return k

    _reply(rep_fd, {"refs": [[n, index[id(ns[n])]] for n in job.get("targets", []) if n in ns]})
    test: int | None = -1  # the test the last call was for
    while True:
        frame = wire.recv(req_fd)
        if frame is None:
            return
        msg = frame[0]
        if msg.get("i") != test:
            test = msg.get("i")
            harness.cpu_budget(lim.time_s, hard)
        try:
            if "g" in msg:
                out = {"v": values.pack(getattr(objs[msg["g"]], msg["n"]), keep)}
            else:
                args = [values.unpack(a, objs.__getitem__) for a in msg["a"]]
                kw = {k: values.unpack(v, objs.__getitem__) for k, v in msg["k"].items()}
                out = {"v": values.pack(objs[msg["f"]](*args, **kw), keep)}
                if any(type(a) in (list, dict, set) for a in (*args, *kw.values())):
                    back = [[values.pack(a, keep) for a in args],
                            {k: values.pack(v, keep) for k, v in kw.items()}]
                    if back != [msg["a"], msg["k"]]:
                        out["w"] = back
        except (Exception, SystemExit, KeyboardInterrupt) as e:  # noqa: BLE001
            end = not isinstance(e, Exception) or isinstance(e, (MemoryError, RecursionError))
            out = {"x": type(e).__name__, "m": str(e)[:300], "st": harness._status_of(e)}
            if end:
                out["end"] = True
        try:
            _reply(rep_fd, out)
        except (ValueError, OverflowError) as e:  # e.g. an int too long for JSON
            _reply(rep_fd, {"x": type(e).__name__, "m": str(e)[:300], "st": "runtime_error"})
