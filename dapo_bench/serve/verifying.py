"""The server's verifying side: every registered verifier run the way its class says, a
bounded admission count, reruns of infrastructure errors, and the verifier workers' health.

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

Worker health comes from the verifiers' own pools (``Kind.worker_health``: the math
``WorkerPool``, the code sandbox ``Pool``), never from the process table: :meth:`Engine.
worker_health` sums each verifier's (over its lanes), and adds the workers lost since it last
looked to ``worker_restarts_total``; ``/health`` and ``/metrics`` call it, so both say what
the pools know at that moment.

Not here: HTTP, validation, the row format (``app``, ``rows``).
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from dapo_bench.serve.prometheus import Metrics
from dapo_bench.verifiers.base import VERIFIERS, Kind, Verdict, WorkerHealth


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

    setattr(serialized, "serialized", True)  # noqa: B010 - mypy sees no attributes on a def
    ast.parse = serialized


def worth_rerun(v: Verdict) -> bool:
    """Whether the verifying machinery failed (not the candidate) in a way worth one rerun: a
    worker that died. Not a ``timeout``: the item had its whole deadline, and a rerun would
    answer after twice that."""
    return v.infra_error and v.reason != "timeout"


class _Shared:
    """One instance of a thread-safe verifier with *workers* workers, a batch at a time from
    several threads; an item that failed in the verifier itself is rerun once."""

    def __init__(self, name: str, cls: type[Kind], workers: int, opts: dict, metrics: Metrics):
        self.name, self.metrics = name, metrics
        self.verifier = cls(workers=workers, **cls.serve_options, **opts)
        self.exec = ThreadPoolExecutor(workers + 1, thread_name_prefix=name)

    def probe(self) -> str | None:
        return self.exec.submit(self.verifier.probe).result()

    def health(self) -> WorkerHealth:
        return self.verifier.worker_health()

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

    def __init__(self, name: str, cls: type[Kind], workers: int, opts: dict, metrics: Metrics):
        self.name, self.metrics = name, metrics
        self.all = [cls(workers=1, **cls.serve_options, **opts) for _ in range(workers)]
        self.free: queue.Queue = queue.Queue()
        self.exec = ThreadPoolExecutor(workers, thread_name_prefix=name)

    def probe(self) -> str | None:
        problems = [f.result() for f in [self.exec.submit(lane.probe) for lane in self.all]]
        for lane in self.all:
            self.free.put(lane)
        return next((p for p in problems if p), None)

    def health(self) -> WorkerHealth:
        return sum((lane.worker_health() for lane in self.all), WorkerHealth())

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
        self.admitted = 0
        self.problems: dict[str, str] = {}  # verifier -> why it cannot grade (none: it can)
        self._lost: dict[str, int] = {}  # verifier -> workers lost, as worker_health last saw
        self._health_lock = threading.Lock()

    def start(self) -> None:
        """Start every worker now (sympy imported, sandbox probed), verifiers in parallel."""
        with ThreadPoolExecutor(len(self.runners)) as ex:
            found = dict(zip(self.runners, ex.map(lambda r: r.probe(), self.runners.values())))
        self.problems = {name: why for name, why in found.items() if why}

    def worker_health(self) -> dict[str, WorkerHealth]:
        """Each verifier's workers as its pools report them now; the workers lost since the
        last call are added to ``worker_restarts_total{verifier}``."""
        with self._health_lock:
            out = {name: runner.health() for name, runner in self.runners.items()}
            for name, h in out.items():
                new = h.lost - self._lost.get(name, 0)
                if new > 0:
                    self.metrics.restarts.labels(name).inc(new)
                self._lost[name] = h.lost
            return out

    def worker_pids(self) -> dict[str, list[int]]:
        """Verifier -> the pids of its live workers (sorted)."""
        return {name: sorted(h.pids) for name, h in self.worker_health().items()}

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

    def close(self) -> None:
        for runner in self.runners.values():
            runner.close()
