"""The checker process of assert-based tests: it runs the test code and never a line of the
program's.

A server: forked by the worker at start-up (`Checker`), confined once like a program
(`layers.confine_child`) under its own uid, with its own temp dir, and reused for every job of
that worker (started again after a death or a wall-clock overrun). Per chunk of checks it gets
the report pipe, which the program process never has, and its two pipes to the program. In the namespace the checks run in, the target names (`scan.targets`)
are `proxy.Remote` proxies of what the program process defines; everything else (built-ins,
``math.isclose``, ``AssertionError``, the test's helpers, HumanEval's prompt) is the checker's
own, which nothing of the program can reach. A check's status: ok, wrong_answer (an assertion
failed), runtime_error, unsupported_test (an argument a proxy cannot carry), or the channel's
status when it broke (bad_reply, or program_gone, which the worker turns into the program's
death: time_limit, memory_limit, runtime_error).
"""

from __future__ import annotations

import builtins
import os
import resource
import signal
import socket
import sys

from dapo_bench.verifiers.code import child, harness, layers, proxy, wire
from dapo_bench.verifiers.code.limits import Limits


def _compile(job: dict):
    comp = (lambda src, name: harness.compile_source(src, name) if src else None)
    pre = comp(harness.PREAMBLE, "<preamble>") if job.get("preamble") else None
    return (pre, comp(job.get("prompt"), "<prompt>"), comp(job.get("setup"), "<test>"),
            [comp(c, "<check>") for c in job["checks"]])


def _status(e: BaseException) -> str:
    return "wrong_answer" if isinstance(e, AssertionError) else harness._status_of(e)


def _checks(job: dict, lim: Limits, start: int, stop: int, ch: proxy.Channel, send) -> None:
    hard = resource.RLIM_INFINITY  # a server: its hard limit could never be raised again
    harness.cpu_budget(lim.time_s, hard)

    def all_fail(status: str, error: str) -> None:
        for k in range(start, stop):
            send(i=k, status=status, error=error[:300], cpu=0.0, calls=0)

    try:
        pre, prompt, setup, checks = _compile(job)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return all_fail("bad_test", f"the test code does not compile: {e!r}")
    try:
        hello = ch.recv()
    except proxy.Stop:
        assert ch.broken is not None  # recv raises Stop only once it has set why
        return all_fail(*ch.broken)
    if "load" in hello:
        return all_fail(str(hello.get("load")), str(hello.get("error", "")))
    env = {"__name__": "__test__", "__builtins__": builtins}
    try:
        for code in (pre, prompt):
            if code is not None:
                exec(code, env)  # noqa: S102 - dataset text, in the checker only
        for name, n in hello.get("refs", []):
            if name in job.get("targets", []) and type(n) is int:
                env[name] = ch.remote(n, name)
        if setup is not None:
            exec(setup, env)  # noqa: S102
    except (proxy.Stop, Exception) as e:  # noqa: BLE001
        return all_fail(*(ch.broken or ("runtime_error", "test setup: " + harness._err(e))))
    for k in range(start, stop):
        harness.cpu_budget(lim.time_s, hard)
        c0, calls0 = harness.cpu_used(), ch.calls
        ch.test = k
        status, err = "ok", ""
        try:
            exec(checks[k], env)  # noqa: S102
        except BaseException as e:  # noqa: BLE001 - SystemExit inside a check fails it too
            status, err = _status(e), harness._err(e)
        if ch.broken is not None:
            status, err = ch.broken
        cpu = harness.cpu_used() - c0
        if cpu > lim.time_s and status == "ok":
            status, err = "time_limit", f"checker CPU {cpu:.2f}s over {lim.time_s:g}s"
        send(i=k, status=status, error=err, cpu=cpu, calls=ch.calls - calls0)
        if lim.fail_fast and status in child.FAILS:
            return
    if stop == len(checks):
        send(done=job["token"])


CHECKER_LIMITS = Limits(time_s=4.0, memory_mb=4096, nproc=16)  # for test code, not programs
_GO = b"C"


def _serve(sock: socket.socket, uid: int | None, tmpdir: str, abi: int, bpf) -> None:
    """The checker server, forked by the worker once and confined once; never returns. Per
    chunk it receives the three pipe ends (request write end, reply read end, report pipe) and
    the job, runs the checks, and closes the pipes (the worker sees the end of the report)."""
    failed = ""
    try:
        child.close_others({sock.fileno()})
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        layers.confine_child(uid, tmpdir, CHECKER_LIMITS, abi, bpf)
        sys.stderr = sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - as long as the process
    except BaseException as e:  # noqa: BLE001 - every chunk is then a sandbox_error
        failed = f"checker confinement failed: {e!r}"[:300]
    while True:
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY,) * 2)
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1, 3)
            msg = wire.recv(sock.fileno()) if data == _GO and len(fds) == 3 else None
        except OSError:
            os._exit(0)
        if msg is None:
            os._exit(0)
        req_fd, rep_fd, res_fd = fds
        send = (lambda fd=res_fd, **m: wire.send(fd, m))
        try:
            if failed:
                raise RuntimeError(failed)
            job, start, stop = msg[0]["job"], int(msg[0]["start"]), int(msg[0]["stop"])
            lim = Limits.from_dict(job["limits"])
            ch = proxy.Channel(req_fd, rep_fd, int(lim.output_mb * 1024 * 1024) + 4096)
            _checks(job, lim, start, stop, ch, send)
        except BaseException as e:  # noqa: BLE001
            try:
                send(fatal=failed or f"checker: {e!r}"[:300])
            except BaseException:  # noqa: BLE001, S110 - the report pipe may be gone
                pass
        finally:
            for fd in fds:
                os.close(fd)


class Checker:
    """The worker's handle on its checker server (started again after it died or was
    killed)."""

    def __init__(self, uid: int | None, tmpdir: str, abi: int, bpf, close: tuple[int, ...]):
        self.uid, self.tmpdir, self.abi, self.bpf, self.close = uid, tmpdir, abi, bpf, close
        self.pid: int | None = None
        self.sock: socket.socket | None = None

    def _start(self) -> None:
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                self.sock.close()
                for fd in self.close:
                    os.close(fd)
                _serve(theirs, self.uid, self.tmpdir, self.abi, self.bpf)
            finally:
                os._exit(0)
        theirs.close()

    def run(self, job: dict, start: int, stop: int, fds: tuple[int, int, int],
            others: tuple[int, ...]) -> int:
        """Hand a chunk to the server (started if needed; ``others``: descriptors a new one
        must not keep); -> its pid."""
        if self.pid is None:
            self.close = tuple(others)
            self._start()
        msg = {"job": job, "start": start, "stop": stop}
        try:
            self._hand(fds, msg)
        except OSError:
            self.stop()
            self._start()
            self._hand(fds, msg)
        assert self.pid is not None  # _start() set it
        return self.pid

    def _hand(self, fds: tuple[int, int, int], msg: dict) -> None:
        sock = self.sock
        assert sock is not None  # _start() set it
        socket.send_fds(sock, [_GO], list(fds))
        wire.send(sock.fileno(), msg)

    def stop(self) -> int | None:
        """Kill the server (after a wall-clock overrun or a death); -> its wait status."""
        if self.pid is None:
            return None
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            _, wstatus = os.waitpid(self.pid, 0)
        except ChildProcessError:  # already reaped by the worker's clean-up
            wstatus = 0
        assert self.sock is not None  # set with the pid by _start()
        self.sock.close()
        self.pid, self.sock = None, None
        return wstatus
