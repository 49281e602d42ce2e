"""A pre-loaded worker: ``python -s -P -m dapo_bench.verifiers.code.worker --uid N --tmp DIR``.

Started by `pool.Pool` (one per core) as a fresh interpreter, so nothing of the parent's
memory (expected outputs included) is in it. It sets up its namespaces once, imports the
modules programs commonly use, forks its `zygote` (before any job), says hello, then serves
jobs read from fd 0. Stdin and call-based: it forks confined children (see `child`) over chunks
of the program's tests, reads each test's stdout from the memfd it gave the child.
Assert-based: per chunk, the zygote forks the program process and the `checker` server gets the
checks and the pipes between the two. Either way it is the per-test wall-clock watchdog, judges
deaths, and makes sure no process of the program's uid outlives the job. Results go to fd 1.

It never runs untrusted code itself, and holds no expected outputs of stdin or call tests.
"""

from __future__ import annotations

import argparse
import importlib
import os
import select
import shutil
import signal
import sys
import tempfile
import time

from dapo_bench.verifiers.code import child, harness, landlock, layers, wire  # noqa: F401
from dapo_bench.verifiers.code.checker import Checker
from dapo_bench.verifiers.code.zygote import Zygote

PRELOAD = (
    "math", "cmath", "collections", "itertools", "functools", "heapq", "bisect", "re", "string",
    "random", "typing", "fractions", "decimal", "statistics", "operator", "copy", "array",
    "datetime", "json", "dataclasses", "enum", "hashlib", "textwrap", "unicodedata", "io",
    "sortedcontainers", "pyseccomp",
)


def _sweep(uid: int | None) -> None:
    """Kill every process of the private ``uid`` (from a helper that takes that uid)."""
    if uid is None or uid == 0:
        return
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getuid() == uid:
                os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _reap() -> None:
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


CHUNK = 64  # tests per child at most (one output memfd each)


def _death(wstatus: int, cpu: float, lim: dict, kind: str) -> tuple[str, str]:
    """The status of a test during which the child died without reporting."""
    if os.WIFSIGNALED(wstatus):
        sig = os.WTERMSIG(wstatus)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= lim["time_s"]):
            return "time_limit", f"CPU over {lim['time_s']:g}s"
        if sig == signal.SIGXFSZ:
            return "output_limit", "file size limit"
        return "runtime_error", f"killed by {signal.Signals(sig).name}"
    code = os.WEXITSTATUS(wstatus)
    if code == 0 and kind == "stdio":
        return "ok", ""  # e.g. os._exit(0) after writing the answer
    return "runtime_error", f"exited during the test (status {code})"


class _Job:
    """One program: forks children over chunks of its tests and watches them."""

    def __init__(self, job: dict, uid, tmpdir: str, abi: int, bpf, keep_fds: tuple,
                 checker: Checker | None = None, zygote: Zygote | None = None):
        self.job, self.uid, self.tmpdir, self.abi, self.bpf = job, uid, tmpdir, abi, bpf
        self.keep_fds = keep_fds
        self.checker, self.zygote = checker, zygote  # assert-based tests only
        self.kind = job["kind"]
        self.lim = job["limits"]
        self.wall = self.lim.get("wall_s") or 2 * self.lim["time_s"] + 1
        self.n = 1 if self.kind == "probe" else len(job.get("cases") or job.get("checks") or [])
        self.cap = int(self.lim.get("output_mb", 16.0) * 1024 * 1024)
        self.results: dict[int, dict] = {}
        self.blobs: list[bytes] = []
        self.tokens: list[str] = []
        self.fatal: str | None = None
        self.abnormal = False
        self.t0 = time.monotonic()
        self.backstop = self.t0 + self.n * (self.wall + 0.5) + 5

    def _server(self) -> tuple[Checker, Zygote]:
        """The checker server and the zygote: assert-based jobs only, which run_job gives both."""
        assert self.checker is not None and self.zygote is not None
        return self.checker, self.zygote

    def _record(self, k: int, head: dict, out_fd: int, t_test: float) -> None:
        res = {key: head[key] for key in ("status", "error", "cpu", "value", "probe", "calls")
               if key in head}
        res["wall"] = time.monotonic() - t_test
        if self.kind == "stdio":
            size = os.fstat(out_fd).st_size
            data = os.pread(out_fd, min(size, self.cap + 1), 0) if size else b""
            if size > self.cap and res["status"] in ("ok", "runtime_error"):
                res["status"], res["error"] = "output_limit", f"stdout over {self.cap} bytes"
            res["blob"] = len(self.blobs)
            self.blobs.append(data)
        self.results[k] = res

    def _fork(self, target, *args) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                for fd in self.keep_fds:
                    os.close(fd)
                target(*args)
            finally:
                os._exit(0)
        return pid

    def _spawn(self, start: int, stop: int, outs: list[int]) -> tuple[int, int, int | None]:
        """Fork the test process(es) for tests start..stop-1; -> (pid reporting, its report
        pipe, pid of the program process or None). Assert-based: a program process from the
        zygote and a checker forked here, joined by two pipes; only the checker reports."""
        r, w = os.pipe()
        if self.kind != "assert":
            pid = self._fork(child.run, self.job, start, stop, outs, w, self.uid, self.tmpdir,
                             self.abi, self.bpf)
            os.close(w)
            return pid, r, None
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        part = {k: self.job.get(k) for k in ("program", "preamble", "limits", "targets")}
        checker, zygote = self._server()
        prog = zygote.spawn(dict(part, uid=self.uid, tmpdir=self.tmpdir, n=stop - start),
                                 req_r, rep_w)
        os.close(req_r)
        os.close(rep_w)
        pid = checker.run(self.job, start, stop, (req_w, rep_r, w), self.keep_fds)
        for fd in (req_w, rep_r, w):
            os.close(fd)
        return pid, r, prog

    def _chunk(self, start: int) -> int:
        """Run a child from test ``start``; -> the next test to run, or -1 to stop."""
        stop = min(self.n, start + CHUNK)
        outs = [os.memfd_create("out", 0) for _ in range(start, stop)] \
            if self.kind != "assert" else []
        pid, r, prog = self._spawn(start, stop, outs)
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(r, select.POLLIN)
        poller.register(pidfd, select.POLLIN)
        cur, t_test, buf = start, time.monotonic(), bytearray()
        killed, halt, exited, eof = None, False, False, False

        def handle(frames) -> None:
            nonlocal cur, t_test, halt
            for head, _ in frames:
                if head.get("i") == cur and not halt:
                    self._record(cur, head, outs[cur - start] if outs else -1, t_test)
                    st = self.results[cur]["status"]
                    cur, t_test = cur + 1, time.monotonic()
                    fails = self.lim.get("fail_fast", True) and st in child.FAILS
                    halt = bool(fails or head.get("dirty"))
                elif "done" in head:
                    self.tokens.append(str(head["done"]))
                elif "fatal" in head:
                    self.fatal, halt = str(head["fatal"]), True

        while not (halt or exited or eof):  # the child exits after its last test
            left = min(t_test + self.wall, self.backstop) - time.monotonic()
            if left <= 0:
                if cur < stop:
                    killed = ("time_limit", f"wall clock over {self.wall:g}s")
                break
            for fd, _ev in poller.poll(left * 1000):
                if fd == pidfd:
                    exited = True
                    continue
                chunk = os.read(r, 1 << 20)
                if not chunk:
                    eof = True
                    poller.unregister(r)
                buf += chunk
            try:
                handle(wire.parse_stream(buf))
            except ValueError:
                killed = ("bad_reply", "corrupt report from the test process")
                break
            if len(buf) > 1 << 20:
                killed = ("bad_reply", "report over 1 MiB")
                break
        server = prog is not None  # the checker server lives on, unless it failed
        for group in (prog,) if server and killed is None and not exited else (pid, prog):
            try:
                if group is not None:
                    os.killpg(group, signal.SIGKILL)  # the process and all it started
            except (ProcessLookupError, PermissionError):
                pass
        if killed is None and not eof:  # drain what the dead child wrote
            while poller.poll(1000):
                chunk = os.read(r, 1 << 20)
                if not chunk:
                    break
                buf += chunk
            try:
                handle(wire.parse_stream(buf))
            except ValueError:
                killed = ("bad_reply", "corrupt report from the test process")
        if killed is None and buf and cur < stop:
            killed = ("bad_reply", f"a report cut short ({len(buf)} bytes left)")
        wstatus, ru = 0, None
        if not server:
            _, wstatus, ru = os.wait4(pid, 0)
        elif killed is not None or exited:
            stopped = self._server()[0].stop()
            assert stopped is not None  # it ran this chunk: a server to stop and a status
            wstatus, ru = stopped, None
        os.close(r)
        os.close(pidfd)
        if prog is not None:
            self._judge_program(start, stop, *self._server()[1].reap())
        fail_fast = self.lim.get("fail_fast", True)
        nxt = cur
        if self.fatal is not None:
            nxt = -1
        elif cur < stop and not halt:  # died, or killed by us, during test `cur`
            self.abnormal = True
            cpu = ru.ru_utime + ru.ru_stime if ru is not None else 0.0
            if server and killed is None:
                if not exited:
                    self._server()[0].stop()
                st, err = "checker_crashed", f"the checker stopped before test {cur}"
            else:
                st, err = killed or _death(wstatus, cpu, self.lim, self.kind)
            self._record(cur, {"status": st, "error": err, "cpu": cpu},
                         outs[cur - start] if outs else -1, t_test)
            nxt = -1 if fail_fast and st in child.FAILS else cur + 1
        elif halt and fail_fast and self.results[cur - 1]["status"] in child.FAILS:
            nxt = -1
        for fd in outs:
            os.close(fd)
        return nxt if nxt < self.n else -1

    def _judge_program(self, start: int, stop: int, wstatus: int, cpu: float) -> None:
        """A check whose program process ended during a call gets the program's death."""
        for k in range(start, stop):
            res = self.results.get(k)
            if res is not None and res["status"] == "program_gone":
                self.abnormal = True
                st, err = _death(wstatus, cpu, self.lim, "assert")
                res["status"], res["error"] = st, f"the program process {err}"
        done = [k for k in range(start, stop) if k in self.results]
        if done:
            self.results[done[-1]]["cpu"] = float(self.results[done[-1]].get("cpu") or 0) + cpu

    def run(self) -> tuple[dict, list[bytes]]:
        start = 0
        while 0 <= start < self.n and time.monotonic() < self.backstop:
            start = self._chunk(start)
        if self.abnormal or self.fatal:
            _sweep(self.uid)
        _reap()
        results = [dict(self.results[k], i=k) for k in sorted(self.results)]
        head = {"results": results, "tokens": self.tokens, "seconds": time.monotonic() - self.t0,
                "fatal": self.fatal}
        return head, self.blobs


def run_job(job: dict, uid, tmp_base: str, abi: int, bpf, keep_fds: tuple,
            checker: Checker | None = None, zygote: Zygote | None = None):
    tmpdir = tempfile.mkdtemp(dir=tmp_base)
    try:
        if job.get("kind") == "assert" and (zygote is None or checker is None):
            raise RuntimeError("no zygote or checker for assert-based tests")
        return _Job(job, uid, tmpdir, abi, bpf, keep_fds, checker, zygote).run()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--uid", type=int, default=-1)
    ap.add_argument("--checker-uid", type=int, default=-1)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--disk-mb", type=int, default=256)
    ap.add_argument("--no-landlock", action="store_true")
    args = ap.parse_args(argv)
    jobs_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    uid = args.uid if args.uid > 0 and os.geteuid() == 0 else None
    checker_uid = args.checker_uid if args.checker_uid > 0 and uid is not None else None
    try:
        ns = layers.enter_worker_namespaces(args.tmp, args.disk_mb)
        ns_error = ""
    except OSError as e:
        ns, ns_error = {}, str(e)
    abi = 0 if args.no_landlock else landlock.abi_version()
    try:
        bpf, bpf_error = layers.seccomp_bpf(os.getpid()), ""
    except Exception as e:  # noqa: BLE001 - reported by the probe as an inactive layer
        bpf, bpf_error = None, repr(e)
    for mod in PRELOAD:
        try:
            importlib.import_module(mod)
        except ImportError:
            pass
    zygote = Zygote(abi, bpf, (jobs_fd, out_fd))  # before any job: it never sees a test
    chk_dir = os.path.join(args.tmp, "checker")
    os.makedirs(chk_dir, mode=0o700, exist_ok=True)
    chk = Checker(checker_uid, chk_dir, abi, bpf, ())
    wire.send(out_fd, {"hello": True, "ns": ns, "ns_error": ns_error, "abi": abi,
                       "uid": uid, "pid": os.getpid(), "seccomp_error": bpf_error})
    while True:
        msg = wire.recv(jobs_fd)
        if msg is None:
            break
        job = msg[0]
        try:
            keep: tuple[int, ...] = (jobs_fd, out_fd, zygote.sock.fileno())
            if chk.sock is not None:
                keep += (chk.sock.fileno(),)
            head, blobs = run_job(job, uid, args.tmp, abi, bpf, keep, chk, zygote)
        except Exception as e:  # noqa: BLE001 - reported as sandbox_error for this job
            head, blobs = {"results": [], "fatal": {"fatal": f"worker: {e!r}"[:300]}}, []
        head["id"] = job.get("id")
        head["bye"] = not zygote.alive()  # a new one forked now would hold earlier test code
        wire.send(out_fd, head, blobs)
        if head["bye"]:
            break
    sys.exit(0)


if __name__ == "__main__":
    main()
