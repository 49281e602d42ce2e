"""Bounded sympy work: persistent worker processes with a hard deadline per call.

This is the parent's side (the pool); the loop a worker runs is in ``worker.py``.

A :class:`WorkerPool` keeps up to ``size`` worker processes (``python -m
dapo_bench.verifiers.math.worker FD``), each with sympy and latex2sympy imported once and its
parse cache kept between calls. A call takes an idle worker (starting one if fewer than
``size`` exist), sends the job over a socket pair and waits at most the remaining time; on
overrun the worker is killed (SIGKILL) and replaced later, and the call raises
:class:`Timeout`. This works from any thread; no ``signal.alarm``.

The deadline covers waiting for a free worker and the job itself. The one-off start of a
worker (import of sympy, about 1 s) is bounded separately by ``STARTUP_TIMEOUT`` and is not
charged to the call that happens to trigger it, so a cold start never turns into a spurious
"timeout" verdict.

Health: the pool counts the workers it started and those it lost (died, killed at a deadline,
failed to start); :meth:`WorkerPool.health` reports them with the live workers' pids (an idle
worker found dead there is forgotten and counted), which is what ``dapo-bench serve``'s
``/health`` and ``worker_restarts_total`` read.

Cleanup: :meth:`WorkerPool.close` kills every worker; an ``atexit`` hook closes every pool
still open; a worker exits when its socket closes, and a watchdog thread in it exits the
process within about 0.5 s of its parent dying (even while a sympy call runs).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
import time
import weakref
from multiprocessing.connection import Connection, Pipe

from dapo_bench.verifiers.base import WorkerHealth

STARTUP_TIMEOUT = 120.0
_POOLS: weakref.WeakSet = weakref.WeakSet()


class Timeout(Exception):
    """The job did not finish within its deadline (its worker was killed)."""


class WorkerError(Exception):
    """The worker raised or died; the message says what happened."""


class WorkerDied(WorkerError):
    """The worker died, did not start, or its pool is closed: the machinery failed, not the
    comparison (the verdict is ``verifier_error``)."""


class _Worker:
    def __init__(self, warm: bool = False) -> None:
        parent, child = Pipe(duplex=True)
        env = dict(os.environ, PYTHONHASHSEED="0")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dapo_bench.verifiers.math.worker", str(child.fileno()),
             *(["warm"] if warm else [])],
            pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL, env=env)
        child.close()
        self.conn: Connection = parent
        self.ready = False

    def wait_ready(self) -> None:
        if self.ready:
            return
        if not self.conn.poll(STARTUP_TIMEOUT):
            self.kill()
            raise WorkerDied(f"math worker did not start within {STARTUP_TIMEOUT:.0f}s")
        try:
            msg = self.conn.recv()
        except (EOFError, OSError):
            msg = None
        if msg != "ready":
            self.kill()
            raise WorkerDied(f"math worker failed to start (got {msg!r})")
        self.ready = True

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        self.conn.close()


class WorkerPool:
    """Up to *size* persistent sympy workers, each call with a hard deadline."""

    def __init__(self, size: int = 1) -> None:
        self.size = max(1, int(size))
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()  # idle or busy, until killed or found dead
        self._count = 0  # slots taken: live workers and those being started
        self.started = self.lost = 0  # worker processes started; ended while the pool is open
        self._cond = threading.Condition()
        self._closed = False
        _POOLS.add(self)

    def warm(self) -> None:
        """Start every worker now, each checking ``worker.WARM_UP``'s pairs before it reports
        ready (a server's latency: the parser's tables built before the first request), and
        wait until each is ready (bounded by STARTUP_TIMEOUT). A worker started on first need
        skips the warm-up: a batch pays the tables of the forms it meets, no more."""
        with self._cond:
            new = []
            while self._count < self.size and not self._closed:
                w = _Worker(warm=True)
                new.append(w)
                self._count += 1
                self._live.add(w)
                self.started += 1
        for w in new:
            try:
                w.wait_ready()
            except WorkerError:
                self._drop(w)
                raise
            self._release(w)

    def _acquire(self, deadline: float) -> _Worker:
        with self._cond:
            while True:
                if self._closed:
                    raise WorkerDied("worker pool is closed")
                if self._idle:
                    return self._idle.pop()
                if self._count < self.size:
                    self._count += 1
                    break
                left = deadline - time.monotonic()
                if left <= 0 or not self._cond.wait(left):
                    raise Timeout("no free worker before the deadline")
        try:
            w = _Worker()
        except BaseException:
            with self._cond:
                self._count -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._live.add(w)
            self.started += 1
        return w

    def _release(self, w: _Worker) -> None:
        with self._cond:
            if self._closed:
                self._count -= 1
                self._live.discard(w)
                w.kill()
            else:
                self._idle.append(w)
            self._cond.notify()

    def run(self, op: str, args: tuple, timeout: float):
        """Run ``op(*args)`` in a worker; at most *timeout* seconds (plus a cold start)."""
        deadline = time.monotonic() + timeout
        w: _Worker | None = self._acquire(deadline)
        assert w is not None
        try:
            if not w.ready:
                t0 = time.monotonic()
                w.wait_ready()
                deadline += time.monotonic() - t0  # a cold start is not charged to the call
            w.conn.send((op, args))
            if not w.conn.poll(max(0.0, deadline - time.monotonic())):
                w.kill()
                self._drop(w)
                w = None
                raise Timeout(f"{op} exceeded {timeout:g}s")
            status, value = w.conn.recv()
        except (EOFError, OSError, BrokenPipeError) as e:
            if w is not None:
                w.kill()
                self._drop(w)
                w = None
            raise WorkerDied(f"math worker died: {e!r}") from None
        except WorkerError:  # it did not start (killed already)
            if w is not None:
                self._drop(w)
                w = None
            raise
        finally:
            if w is not None:
                self._release(w)
        if status != "ok":
            raise WorkerError(value)
        return value

    def _drop(self, w: _Worker) -> None:
        """Forget a killed or dead worker: free its slot and count it lost (while the pool is
        open)."""
        with self._cond:
            self._count -= 1
            self._live.discard(w)
            if not self._closed:
                self.lost += 1
            self._cond.notify()

    def close(self) -> None:
        """Kill every worker of this pool; later calls raise WorkerError."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            self._live.difference_update(idle)
            self._cond.notify_all()
        for w in idle:
            w.kill()

    def health(self) -> WorkerHealth:
        """The live workers' pids (idle or busy), and how many workers were started and lost.
        An idle worker that died (killed from outside) is forgotten and counted here; a busy
        one by the call it fails."""
        with self._cond:
            dead = [w for w in self._idle if w.proc.poll() is not None]
            for w in dead:
                self._idle.remove(w)
                self._live.discard(w)
                self._count -= 1
                self.lost += 1
                w.conn.close()
            if dead:
                self._cond.notify_all()
            pids = tuple(sorted(w.proc.pid for w in self._live))
            return WorkerHealth(pids, self.started, self.lost)

    def pids(self) -> list[int]:
        """The pids of the live workers, idle or busy."""
        return list(self.health().pids)


@atexit.register
def _close_all() -> None:
    for pool in list(_POOLS):
        pool.close()
