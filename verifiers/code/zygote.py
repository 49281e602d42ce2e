"""The program processes of assert-based tests, forked from a process that never saw a test.

A worker forks its zygote once, at start-up, before it reads any job: the zygote's memory holds
the pre-loaded modules and nothing else (no test code, no expected value, of this job or of an
earlier one, is in it or in freed memory a program could scan). It forks each program process
ahead of its job (so the fork overlaps the worker's other work) and says ``{"pid"}``; per chunk
of checks the worker sends, over a unix socket, the program side of the two pipes to the
checker and the job (program text, limits, target names, uid, temp dir), which the waiting fork
reads itself (the zygote never does); the fork closes the socket, confines itself
(`layers.confine_child`) and serves calls (`proxy.serve`). The zygote says ``{"wstatus",
"cpu"}`` once the program process has ended, so the worker can judge its death (time limit,
signal, exit), and forks the next.
"""

from __future__ import annotations

import os
import socket
import sys

from dapo_bench.verifiers.code import child, harness, layers, proxy, wire
from dapo_bench.verifiers.code.limits import Limits

_GO = b"G"


def _program(sock: socket.socket, abi: int, bpf) -> None:
    """In the forked program process (forked ahead, waiting for its job); never returns."""
    try:
        layers.prctl(1, 9)  # PR_SET_PDEATHSIG: go with the zygote
        data, fds, _flags, _addr = socket.recv_fds(sock, 1, 2)
        if data != _GO or len(fds) != 2:
            os._exit(0)
        req_fd, rep_fd = fds
        msg = wire.recv(sock.fileno())
        job = msg[0] if msg else {}
        child.close_others({req_fd, rep_fd})
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.close(devnull)
        lim = Limits.from_dict(job["limits"])
        layers.confine_child(job.get("uid"), job["tmpdir"], lim, abi, bpf)
        sys.stderr = sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - as long as the process
        hard = int(harness.cpu_used() + lim.time_s * max(1, int(job.get("n", 1))) + 3)
        harness.cpu_budget(lim.time_s, hard)
    except BaseException as e:  # noqa: BLE001
        try:
            wire.send(rep_fd, {"load": "sandbox_error",
                               "error": f"program confinement failed: {e!r}"[:300]})
        finally:
            os._exit(0)
    try:
        proxy.serve(job, req_fd, rep_fd, lim, hard)
    finally:
        os._exit(0)


def _loop(sock: socket.socket, abi: int, bpf) -> None:
    """Fork the next program process ahead of its job (it reads the job itself), say its pid,
    wait for its end, say its status; again. Ends when the worker is gone."""
    while True:
        pid = os.fork()
        if pid == 0:
            _program(sock, abi, bpf)
        try:
            wire.send(sock.fileno(), {"pid": pid})
            _, wstatus, ru = os.wait4(pid, 0)
            wire.send(sock.fileno(), {"wstatus": wstatus, "cpu": ru.ru_utime + ru.ru_stime})
        except OSError:
            return


class Zygote:
    """The worker's handle on its zygote."""

    def __init__(self, abi: int, bpf, close: tuple[int, ...]):
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.pid = os.fork()
        if self.pid == 0:
            try:
                self.sock.close()
                for fd in close:
                    os.close(fd)
                layers.prctl(1, 9)  # PR_SET_PDEATHSIG: go with the worker
                _loop(theirs, abi, bpf)
            finally:
                os._exit(0)
        theirs.close()

    def alive(self) -> bool:
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False

    def spawn(self, job: dict, req_fd: int, rep_fd: int) -> int:
        """Start a program process on the given pipe ends (program side); -> its pid."""
        socket.send_fds(self.sock, [_GO], [req_fd, rep_fd])
        wire.send(self.sock.fileno(), job)
        msg = wire.recv(self.sock.fileno())
        if msg is None or "pid" not in msg[0]:
            raise OSError("the zygote is gone")
        return int(msg[0]["pid"])

    def reap(self) -> tuple[int, float]:
        """After the program process was killed: -> (wait status, CPU seconds)."""
        msg = wire.recv(self.sock.fileno())
        if msg is None:
            raise OSError("the zygote is gone")
        return int(msg[0]["wstatus"]), float(msg[0]["cpu"])

