"""The server's verifying side: every registered verifier run the way its class says, a
bounded admission count, reruns of infrastructure errors, and a watch on the verifier worker
processes.

``workers`` (``dapo-bench serve --workers N``) is the number of verifier worker processes of
each verifier, not of HTTP processes: the server is one uvicorn process (the event loop parses
and answers requests) driving, per verifier, either one shared instance with N workers (a
thread-safe verifier that spreads a batch over them: math, with its ``serve_options``
``fast_in_workers``: a batch of 16 items or more is checked in the workers, sympy or not) or,
for a class with ``serve_lanes``, N lanes of one instance with one worker each (code: each a
:class:`CodeVerifier` with one sandbox worker, its own uids, its checker in a process of its
own), so that a slow program holds one lane and not the whole batch. The server never runs
candidate code itself: it calls the same verifier API as ``dapo-bench verify``.

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
from dapo_bench.verifiers.base import VERIFIERS, Verdict


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


def worth_rerun(v: Verdict) -> bool:
    """Whether the verifying machinery failed (not the candidate) in a way worth one rerun: a
    worker that died. Not a ``timeout``: the item had its whole deadline, and a rerun would
    answer after twice that."""
    return v.infra_error and v.reason != "timeout"


class _Shared:
    """One instance of a thread-safe verifier with *workers* workers, a batch at a time from
    several threads; an item that failed in the verifier itself is rerun once."""

    def __init__(self, name: str, cls: type, workers: int, opts: dict, metrics: Metrics):
        self.name, self.metrics = name, metrics
        self.verifier = cls(workers=workers, **cls.serve_options, **opts)
        self.exec = ThreadPoolExecutor(workers + 1, thread_name_prefix=name)

    def probe(self) -> str | None:
        return self.exec.submit(self.verifier.probe).result()

    async def run(self, preds: list, golds: list, finished: list[bool]) -> list[Verdict]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.exec, self._batch, preds, golds, finished)

    def _batch(self, preds: list, golds: list, finished: list[bool]) -> list[Verdict]:
        out = self.verifier.verify_batch(preds, golds, finished=finished)
        again = [i for i, v in enumerate(out) if worth_rerun(v)]
        if again:
            self.metrics.rerun.labels(self.name).inc(len(again))
            redo = self.verifier.verify_batch([preds[i] for i in again],
                                              [golds[i] for i in again],
                                              finished=[finished[i] for i in again])
            for i, v in zip(again, redo):
                out[i] = v
        return out

    def close(self) -> None:
        self.exec.shutdown(wait=True)
        self.verifier.close()


class _Lanes:
    """*workers* instances of one worker each; an item takes a free lane, so a slow item holds
    one lane, not a batch; an item that failed in the verifier itself is rerun once."""

    def __init__(self, name: str, cls: type, workers: int, opts: dict, metrics: Metrics):
        self.name, self.metrics = name, metrics
        self.all = [cls(workers=1, **cls.serve_options, **opts) for _ in range(workers)]
        self.free: queue.Queue = queue.Queue()
        self.exec = ThreadPoolExecutor(workers, thread_name_prefix=name)

    def probe(self) -> str | None:
        problems = [f.result() for f in [self.exec.submit(lane.probe) for lane in self.all]]
        for lane in self.all:
            self.free.put(lane)
        return next((p for p in problems if p), None)

    async def run(self, preds: list, golds: list, finished: list[bool]) -> list[Verdict]:
        loop = asyncio.get_running_loop()
        return list(await asyncio.gather(*(
            loop.run_in_executor(self.exec, self._one, p, g, f)
            for p, g, f in zip(preds, golds, finished))))

    def _one(self, pred, gold, finished: bool) -> Verdict:
        lane = self.free.get()
        try:
            (v,) = lane.verify_batch([pred], [gold], finished=[finished])
            if worth_rerun(v):
                self.metrics.rerun.labels(self.name).inc()
                (v,) = lane.verify_batch([pred], [gold], finished=[finished])
            return v
        finally:
            self.free.put(lane)

    def close(self) -> None:
        self.exec.shutdown(wait=True)
        for lane in self.all:
            lane.close()


class Engine:
    def __init__(self, workers: int, timeout: float | None, queue_size: int,
                 metrics: Metrics) -> None:
        serialize_ast_parse()
        self.workers, self.queue_size, self.metrics = workers, queue_size, metrics
        opts = {} if timeout is None else {"timeout": timeout}
        self.runners = {e.name: (_Lanes if e.obj.serve_lanes else _Shared)(
            e.name, e.obj, workers, opts, metrics) for e in VERIFIERS}
        self.worker_cmds = {e.obj.worker_module: e.name for e in VERIFIERS
                            if e.obj.worker_module}
        self.admitted = 0
        self.problems: dict[str, str] = {}  # verifier -> why it cannot grade (none: it can)
        self._pids: dict[int, str] = {}
        self._pids_lock = threading.Lock()
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._watch_workers, daemon=True)

    def start(self) -> None:
        """Start every worker now (sympy imported, sandbox probed), verifiers in parallel."""
        with ThreadPoolExecutor(len(self.runners)) as ex:
            found = dict(zip(self.runners, ex.map(lambda r: r.probe(), self.runners.values())))
        self.problems = {name: why for name, why in found.items() if why}
        self._scan()
        self._watch.start()

    def worker_pids(self) -> dict[str, list[int]]:
        with self._pids_lock:
            out: dict[str, list[int]] = {name: [] for name in self.runners}
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
        out = await self.runners[verifier].run(preds, golds, finished)
        self.metrics.items.labels(verifier).inc(len(out))
        for v in out:
            self.metrics.verdicts.labels(verifier, v.reason).inc()
        return out

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
            kind = next((k for m, k in self.worker_cmds.items() if m in cmd), None)
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
        for runner in self.runners.values():
            runner.close()
