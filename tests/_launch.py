"""Launching several CPU ranks under torchrun from a test, without leaving orphans behind.

``torchrun`` stops its workers on SIGTERM, not on SIGKILL; ``subprocess.run(timeout=...)``
sends SIGKILL, which would leave the ranks running (and blocked in a collective for
``DAPO_BENCH_DIST_TIMEOUT_H``). :func:`run_ranks` terminates the launcher instead, and the env
it builds lets a hung collective give up after minutes, and runs torch.distributed in its
DETAIL debug mode: a collective that differs between ranks (a barrier on one, an all_reduce on
the other) is an error naming both, not a silent mismatch (same test times here).
:func:`torchrun_nodes` and :func:`run_nodes` launch one run as several "nodes" on this machine:
one ``torchrun`` per node (``--nnodes``, ``--node-rank``, one rank each), joined by c10d
rendezvous on loopback.
"""

import os
import socket
import subprocess
import sys
import time

LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def rank_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    return {**env, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
            "DAPO_BENCH_DIST_TIMEOUT_H": "0.1", "TORCH_DISTRIBUTED_DEBUG": "DETAIL", **extra}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(cmd: list[str], env: dict, stdin: int | None = None) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=env, stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(procs: list[subprocess.Popen], timeout: float) -> list[subprocess.CompletedProcess]:
    """Wait for the launchers ``procs`` (torchrun), ``timeout`` seconds for all; on timeout stop
    them and their ranks, then raise."""
    deadline, done = time.monotonic() + timeout, []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.terminate()  # torchrun forwards it to the ranks
            try:
                out, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            for p in procs:
                p.kill()
                p.communicate()
            raise AssertionError(f"timed out after {timeout}s: {' '.join(proc.args)}\n"
                                 f"{err[-3000:]}") from None
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def run_ranks(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """Run ``cmd`` (a torchrun command line); on timeout stop it and its ranks, then raise."""
    return finish([start(cmd, env)], timeout)[0]


def torchrun_nodes(args: list[str], nodes: int = 2, port: int | None = None,
                   launcher: str = "torch.distributed.run") -> list[list[str]]:
    """The torchrun command of each of ``nodes`` nodes (one rank each) running ``args`` (``-m
    dapo_bench.cli ...``), joined by c10d rendezvous at 127.0.0.1:``port`` (a free one);
    ``launcher`` may be ``dapo_bench.launch`` (torchrun with one-line failures)."""
    endpoint = f"127.0.0.1:{port or free_port()}"
    return [[sys.executable, "-m", launcher, "--nnodes", str(nodes), "--node-rank", str(r),
             "--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint,
             *args] for r in range(nodes)]


def run_nodes(cmds: list[list[str]], env: dict, timeout: float
              ) -> list[subprocess.CompletedProcess]:
    """Start every node's launcher of :func:`torchrun_nodes` and wait for all of them."""
    return finish([start(cmd, env) for cmd in cmds], timeout)
