"""The server's verifying side: one math verifier and N code lanes, a bounded admission count,
reruns of infrastructure errors, and a watch on the verifier worker processes.

``workers`` (``dapo-bench serve --workers N``) is the number of verifier worker processes of
each verifier, not of HTTP processes: the server is one uvicorn process (the event loop parses
and answers requests) driving N math workers (one :class:`MathVerifier`, thread-safe, with
``fast_in_workers``: a batch of 16 items or more is checked in the workers, sympy or not) and N
code lanes, each a :class:`CodeVerifier` with one sandbox worker (its own uids, its checker in a
process of its own), so that a slow program holds one lane and not the whole batch. The server
never runs candidate code itself: it calls the same verifier API as ``dapo-bench verify``.

A verdict that is an infrastructure error (``Verdict.infra_error``, the reasons in
``verifiers.base.INFRA_REASONS``: a code worker died, ``sandbox_error`` or ``checker_crashed``;
a math worker died, ``verifier_error``) is run once more, after the
verifier has replaced the worker; if it fails again it is answered as that error, which never
passes. Items are admitted by count: a request that would take the admitted items over
``queue_size`` is refused (the caller answers 429), unless nothing is admitted (so one large
batch is never starved).

Not here: HTTP, validation, the row format (``app``, ``rows``).
"""

from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from dapo_bench.serve.metrics import Metrics
from dapo_bench.verifiers.base import Verdict
from dapo_bench.verifiers.code import CodeVerifier
from dapo_bench.verifiers.math import MathVerifier

WORKER_CMDS = {"dapo_bench.verifiers.math.serve": "math", "dapo_bench.verifiers.code.worker":
               "code"}


def serialize_ast_parse() -> None:
    """Make this process's ``ast.parse`` calls take turns (once; Python < 3.13).

    CPython before 3.13 keeps the AST constructor's recursion depth per interpreter, not per
    thread: two threads in ``ast.parse`` at once (a garbage collection mid-parse lets another
    thread run) can fail with ``SystemError: AST constructor recursion depth mismatch``
    (python/cpython gh-106905). The server parses test code in several threads (the event loop
    validating a request, every code lane in ``CodeVerifier.verify``): bench/serve_load.py met
    it once in 45,000 items, as a 500. The CLI parses in one thread and is not affected.
    """
    import ast

    if sys.version_info >= (3, 13) or getattr(ast.parse, "serialized", False):
        return
    parse, lock = ast.parse, threading.Lock()

    def serialized(*args, **kwargs):
        with lock:
            return parse(*args, **kwargs)

    serialized.serialized = True
    ast.parse = serialized


def infrastructure_error(v: Verdict) -> bool:
    """Whether the verifying machinery failed (not the candidate): worth one rerun."""
    return v.infra_error


class Engine:
    def __init__(self, workers: int, timeout: float | None, queue_size: int,
                 metrics: Metrics) -> None:
        serialize_ast_parse()
        self.workers, self.queue_size, self.metrics = workers, queue_size, metrics
        opts = {} if timeout is None else {"timeout": timeout}
        # the fast path in the workers too: this process parses and answers HTTP
        self.math = MathVerifier(workers=workers, fast_in_workers=True, **opts)
        self._lanes: queue.Queue[CodeVerifier] = queue.Queue()
        self._all_lanes = [CodeVerifier(workers=1, **opts) for _ in range(workers)]
        self._math_exec = ThreadPoolExecutor(workers + 1, thread_name_prefix="math")
        self._code_exec = ThreadPoolExecutor(workers, thread_name_prefix="code")
        self.admitted = 0
        self.code_problem: str | None = None  # why the code sandbox cannot grade, if it cannot
        self._pids: dict[int, str] = {}
        self._pids_lock = threading.Lock()
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._watch_workers, daemon=True)

    def start(self) -> None:
        """Start every worker now (sympy imported, sandbox probed), in parallel."""
        hello = ("print(1)", {"inputs": [""], "outputs": ["1\n"]})
        warm = self._math_exec.submit(self.math.warm)
        hellos = [self._code_exec.submit(lane.verify, *hello) for lane in self._all_lanes]
        warm.result()
        for h in hellos:
            v = h.result()
            if not v.passed:  # e.g. not isolated: every code verdict would be sandbox_error
                self.code_problem = (v.details.get("first_failure") or {}).get("error", v.reason)
        for lane in self._all_lanes:
            self._lanes.put(lane)
        self._scan()
        self._watch.start()

    def worker_pids(self) -> dict[str, list[int]]:
        with self._pids_lock:
            out: dict[str, list[int]] = {"math": [], "code": []}
            for pid, kind in sorted(self._pids.items()):
                out[kind].append(pid)
            return out

    # admission: called on the event loop's thread only
    def admit(self, n: int) -> bool:
        if self.admitted and self.admitted + n > self.queue_size:
            return False
        self.admitted += n
        self.metrics.queue.set(self.admitted)
        return True

    def release(self, n: int) -> None:
        self.admitted -= n
        self.metrics.queue.set(self.admitted)

    async def run(self, verifier: str, preds: list, golds: list, finished: list[bool]
                  ) -> list[Verdict]:
        """Verdicts in input order (the caller has admitted ``len(preds)`` items)."""
        loop = asyncio.get_running_loop()
        if verifier == "math":
            out = await loop.run_in_executor(self._math_exec, self._math_batch, preds, golds,
                                             finished)
        else:
            out = list(await asyncio.gather(*(
                loop.run_in_executor(self._code_exec, self._code_one, p, g)
                for p, g in zip(preds, golds))))
        self.metrics.items.labels(verifier).inc(len(out))
        for v in out:
            self.metrics.verdicts.labels(verifier, v.reason).inc()
        return out

    def _math_batch(self, preds: list, golds: list, finished: list[bool]) -> list[Verdict]:
        out = self.math.verify_batch(preds, golds, finished=finished)
        again = [i for i, v in enumerate(out) if infrastructure_error(v)]
        if again:
            self.metrics.rerun.labels("math").inc(len(again))
            redo = self.math.verify_batch([preds[i] for i in again], [golds[i] for i in again],
                                          finished=[finished[i] for i in again])
            for i, v in zip(again, redo):
                out[i] = v
        return out

    def _code_one(self, program: str, tests) -> Verdict:
        lane = self._lanes.get()
        try:
            v = lane.verify(program, tests)
            if infrastructure_error(v):
                self.metrics.rerun.labels("code").inc()
                v = lane.verify(program, tests)
            return v
        finally:
            self._lanes.put(lane)

    def _scan(self) -> None:
        """Note this process's verifier workers; count those that ended since the last scan."""
        me, now = str(os.getpid()), {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    stat = f.read()
                if stat[stat.rindex(b")") + 2:].split()[1].decode() != me:
                    continue
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().decode(errors="replace")
            except (OSError, ValueError, IndexError):
                continue
            kind = next((k for m, k in WORKER_CMDS.items() if m in cmd), None)
            if kind:
                now[int(pid)] = kind
        with self._pids_lock:
            for pid, kind in self._pids.items():
                if pid not in now:
                    self.metrics.restarts.labels(kind).inc()
            self._pids = now

    def _watch_workers(self) -> None:
        while not self._stop.wait(0.25):
            self._scan()

    def close(self) -> None:
        self._stop.set()
        if self._watch.is_alive():
            self._watch.join()
        self._math_exec.shutdown(wait=True)
        self._code_exec.shutdown(wait=True)
        self.math.close()
        for lane in self._all_lanes:
            lane.close()
