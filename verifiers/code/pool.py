"""The parent's side of the sandbox: a pool of pre-loaded worker processes, one per core.

Each worker is a fresh interpreter (``python -s -P``, booting
``dapo_bench.verifiers.code.worker``) with a minimal environment (no secrets of ours) and
``PYTHONHASHSEED=0`` (so every candidate and checker, forked from it, hashes as one process
with that seed would), its own random unprivileged uid, and its own private temp base. `Pool.run(jobs)` sends jobs to
idle workers (one thread per worker) and returns the raw results in order; a worker that dies
is restarted and its job is a ``sandbox_error``. Calls from several threads at once share the
workers: each worker serves one call at a time (a free list), never two jobs at once.
`Pool.layers()` runs the probe once and caches ``layer -> (active, detail)``. `Pool.health()`:
the live workers' pids and how many workers were started and lost (died, killed at a deadline,
gone on their own, failed to start), each counted once, as ``dapo-bench serve`` reports them.

Not here: test parsing and grading (``formats``, ``compare``, ``api``).
"""

from __future__ import annotations

import os
import queue
import random
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from dapo_bench.verifiers.base import WorkerHealth
from dapo_bench.verifiers.code import probe, wire

import dapo_bench

_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": "/nonexistent",
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}
# Not -I: it implies -E, which ignores PYTHONHASHSEED, and every worker (and the checkers and
# programs it forks) would hash str with a seed of its own, so a verdict could hang on set
# order. The environment is ours (_ENV), so -E adds nothing; -s and -P are the rest of -I.
_FLAGS = ["-s", "-P"] if sys.version_info >= (3, 11) else ["-s"]
_HELLO_TIMEOUT = 60.0


class WorkerDied(Exception):
    pass


class BadReply(WorkerDied):
    """The worker's reply does not decode, or is too large: the job is ``bad_reply``."""


_REPLY_LIMIT = 1 << 30


# The worker imports the same dapo_bench as this process (not whichever one is installed).
_ROOT = str(Path(dapo_bench.__file__).resolve().parents[1])
_BOOT = (f"import sys; sys.path.insert(0, {_ROOT!r}); "
         "from dapo_bench.verifiers.code.worker import main; main()")


class _Worker:
    def __init__(self, uid: int, checker_uid: int, tmp: str, landlock: bool):
        self.uid, self.tmp = uid, tmp
        cmd = [sys.executable, *_FLAGS, "-c", _BOOT, "--uid", str(uid),
               "--checker-uid", str(checker_uid), "--tmp", tmp]
        if not landlock:
            cmd.append("--no-landlock")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=_ENV, cwd="/",
                                     close_fds=True)
        self.lost = False  # counted in its pool's ``lost``
        try:
            self.hello = self._recv(time.monotonic() + _HELLO_TIMEOUT)[0]
        except WorkerDied:  # never leave a worker that did not start behind
            self.proc.kill()
            self.close()
            raise

    def _recv(self, deadline: float) -> tuple[dict, list[bytes]]:
        stdout = self.proc.stdout
        assert stdout is not None  # a PIPE
        fd = stdout.fileno()
        buf = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise WorkerDied("worker did not answer in time")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise WorkerDied(f"worker exited ({self.proc.poll()})")
            buf += chunk
            try:
                frames = wire.parse_stream(buf)
            except (ValueError, RecursionError) as e:
                raise BadReply(f"undecodable reply from the worker: {e}"[:300]) from None
            if frames:
                return frames[0]
            if len(buf) > _REPLY_LIMIT:
                raise BadReply(f"a reply from the worker over {_REPLY_LIMIT} bytes")

    def call(self, job: dict, timeout: float) -> tuple[dict, list[bytes]]:
        stdin = self.proc.stdin
        assert stdin is not None  # a PIPE
        try:
            wire.write_all(stdin.fileno(), wire.encode(job))
        except OSError as e:
            raise WorkerDied(f"worker gone: {e}") from None
        return self._recv(time.monotonic() + timeout)

    def close(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None  # a PIPE
        try:
            stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def job_timeout(job: dict) -> float:
    """The parent's patience for one job: the worker's backstop plus a margin."""
    lim = job["limits"]
    wall = lim["wall_s"] if lim.get("wall_s") else 2 * lim["time_s"] + 1
    n = max(1, len(job.get("cases") or job.get("checks") or [0]))
    return n * (wall + 0.5) + 35


class Pool:
    def __init__(self, workers: int | None = None, *, landlock: bool = True):
        self.size = max(1, workers or os.cpu_count() or 1)
        self._landlock = landlock
        self._base = tempfile.mkdtemp(prefix="dapo-sandbox-")
        os.chmod(self._base, 0o711)
        rng = random.SystemRandom()
        self._uids = rng.sample(range(2_000_000, 2_000_000_000), 2 * self.size)  # + checkers
        self._workers: list[_Worker | None] = [None] * self.size
        self._free: queue.Queue[int] = queue.Queue()  # workers no call is using
        self._layers: dict | None = None
        self.started = self.lost = 0  # worker processes started; ended while the pool is open
        self._closing = False
        self._count_lock = threading.Lock()
        try:
            for i in range(self.size):
                self._workers[i] = self._spawn(i)
                self._free.put(i)
        except BaseException:
            self.close()
            raise

    @property
    def checker_uids(self) -> set[int]:
        """The uids of the workers' checker servers (they live as long as their worker)."""
        return set(self._uids[self.size:])

    def _spawn(self, i: int) -> _Worker:
        tmp = os.path.join(self._base, f"w{i}")
        os.makedirs(tmp, mode=0o711, exist_ok=True)
        with self._count_lock:
            self.started += 1
        try:
            return _Worker(self._uids[i], self._uids[self.size + i], tmp, self._landlock)
        except WorkerDied:
            self._lose(None)
            raise

    def _lose(self, w: _Worker | None) -> None:
        """Count a worker that ended while the pool is open, once (None: one that did not
        start)."""
        with self._count_lock:
            if self._closing or (w is not None and w.lost):
                return
            if w is not None:
                w.lost = True
            self.lost += 1

    def health(self) -> WorkerHealth:
        """The live workers' pids, and how many workers were started and lost (one found dead
        here is counted now and replaced by the next call that takes its slot)."""
        pids = []
        for w in list(self._workers):
            if w is None:
                continue
            if w.proc.poll() is None:
                pids.append(w.proc.pid)
            else:
                self._lose(w)
        with self._count_lock:
            return WorkerHealth(tuple(sorted(pids)), self.started, self.lost)

    def _call(self, i: int, job: dict) -> tuple[dict, list[bytes]]:
        w = self._workers[i]
        try:
            if w is not None and w.proc.poll() is not None:  # it exited between jobs
                self._lose(w)
                w.close()
                w = self._workers[i] = None
            if w is None:
                w = self._workers[i] = self._spawn(i)
            head, blobs = w.call(job, job_timeout(job))
            if head.get("bye"):  # the worker is going away (its zygote died): start afresh
                self._lose(w)
                w.close()
                self._workers[i] = None
            return head, blobs
        except WorkerDied as e:
            if w is not None:
                self._lose(w)
                w.proc.kill()
                w.close()
            self._workers[i] = None
            reason = "bad_reply" if isinstance(e, BadReply) else "sandbox_error"
            return {"results": [], "fatal": {"fatal": str(e)}, "reason": reason}, []

    def run(self, jobs: list[dict], on_done=None) -> list[tuple[dict, list[bytes]]]:
        """Run jobs on all workers; results in input order. ``on_done(k)`` after each. Safe to
        call from several threads: a serving thread takes a worker off the free list first."""
        out: list = [None] * len(jobs)
        nxt = iter(range(len(jobs)))
        lock = threading.Lock()

        def serve() -> None:
            i = self._free.get()
            try:
                while True:
                    with lock:
                        k = next(nxt, None)
                    if k is None:
                        return
                    out[k] = self._call(i, jobs[k])
                    if on_done is not None:
                        with lock:
                            on_done(k)
            finally:
                self._free.put(i)

        n = min(self.size, len(jobs))
        if n <= 1:
            serve()
            return out
        threads = [threading.Thread(target=serve, daemon=True) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return out

    def layers(self) -> dict[str, tuple[bool, str]]:
        """Probe once (in a free worker, as a program would run) and cache the answer."""
        if self._layers is None:
            job = {"kind": "probe", "program": "", "limits": {"time_s": 5.0}}
            i = self._free.get()
            try:
                head, _ = self._call(i, job)
                worker = self._workers[i]
                hello = worker.hello if worker else {}
            finally:
                self._free.put(i)
            report = None
            for r in head.get("results", []):
                report = r.get("probe", report)
            self._layers = probe.summarise(hello, report)
        return self._layers

    def isolated(self) -> tuple[bool, str]:
        return probe.isolated(self.layers())

    def close(self) -> None:
        with self._count_lock:
            self._closing = True
        for i, w in enumerate(self._workers):
            if w is not None:
                w.close()
                self._workers[i] = None
        shutil.rmtree(self._base, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
