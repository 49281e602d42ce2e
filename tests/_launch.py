"""Launching several CPU ranks under torchrun from a test, without leaving orphans behind.

``torchrun`` stops its workers on SIGTERM, not on SIGKILL; ``subprocess.run(timeout=...)``
sends SIGKILL, which would leave the ranks running (and blocked in a collective for
``DAPO_BENCH_DIST_TIMEOUT_H``). :func:`run_ranks` terminates the launcher instead, and the env
it builds lets a hung collective give up after minutes, and runs torch.distributed in its
DETAIL debug mode: a collective that differs between ranks (a barrier on one, an all_reduce on
the other) is an error naming both, not a silent mismatch (same test times here).
"""

import os
import subprocess

LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def rank_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    return {**env, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
            "DAPO_BENCH_DIST_TIMEOUT_H": "0.1", "TORCH_DISTRIBUTED_DEBUG": "DETAIL", **extra}


def run_ranks(cmd: list[str], env: dict, timeout: float) -> subprocess.CompletedProcess:
    """Run ``cmd`` (a torchrun command line); on timeout stop it and its ranks, then raise."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()  # torchrun forwards it to the ranks
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        raise AssertionError(f"timed out after {timeout}s: {' '.join(cmd)}\n{err[-3000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
