"""What watching a run costs: the same small toy run with and without ``--report-to tensorboard``
(and ``--report-to tensorboard --canaries 0.02`` where the CLI has ``--canaries``, and
``--report-to wandb`` offline where wandb is installed), side by side in alternating rounds,
each a fresh ``dapo-bench train`` process in a fresh run dir.

    python bench/watch_overhead.py [--method dapo] [--rounds 3] [--set n_problems=256 ...]

Prints each round's wall-clock and CPU seconds (user + system of the run's process and the
children it waited for, e.g. wandb's service), the medians, and each watched variant's median
ratio to the plain run, for both (the target: 1.05 or less). On a machine whose wall clock
swings (a shared VM), the CPU ratio is the steadier one. The default run is a small toy DAPO (the toy preset
with 256 problems, no control, 200 eval problems): every DAPO stage, a few dozen actor steps.
The ratio is of whole runs (process start, model load, sampling, training, eval): what a user
pays. The runs share the machine with whatever else runs: run it on a quiet machine, or read
the per-round ratios (each round runs the variants back to back, in alternating order).

W&B runs with ``WANDB_MODE=offline`` (no network here): its cost includes its service process
(``wandb-core``), which shares the machine with the run, as it does for a user; uploading
(``wandb sync``) is not timed. Not covered: multi-rank runs.
"""

from __future__ import annotations

import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import typer
from script_cli import run_main  # bench/, beside this script

CLI = [sys.executable, "-m", "dapo_bench.cli", "train"]
SMALL = {"dapo": ["n_problems=256"], "grpo": ["max_steps=40"]}


def variants() -> dict[str, list[str]]:
    """plain, tensorboard, and tensorboard + canaries when ``train`` has ``--canaries``."""
    out = {"plain": [], "tensorboard": ["--report-to", "tensorboard"]}
    helptext = subprocess.run([*CLI, "--help"], check=False, capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "200"}).stdout
    if "--canaries" in helptext:
        out["tensorboard+canaries"] = ["--report-to", "tensorboard", "--canaries", "0.02"]
    if importlib.util.find_spec("wandb") is not None:
        out["wandb-offline"] = ["--report-to", "wandb"]
    return out


def one_run(method: str, sets: list[str], flags: list[str], threads: int) -> float:
    with tempfile.TemporaryDirectory() as out:
        cmd = [*CLI, "--method", method, "--out", out, "--run-id", "r", "--no-control",
               "--eval-limit", "200", "--quiet", "--threads", str(threads), *flags]
        for s in sets:
            cmd += ["--set", s]
        env = {**os.environ, "WANDB_MODE": "offline", "WANDB_SILENT": "true"}
        t, ru = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
        secs = time.perf_counter() - t
        ru2 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru2.ru_utime + ru2.ru_stime - ru.ru_utime - ru.ru_stime
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
        written = {"tensorboard": "tensorboard/events.*", "wandb": "wandb/offline-run-*/*.wandb"}
        if "--report-to" in flags and not list(Path(out, "r").glob(
                written[flags[flags.index("--report-to") + 1]])):
            raise SystemExit(f"{' '.join(cmd)}: no event file written")
        return secs, cpu


def main(
    method: Annotated[str, typer.Option(help="dapo | grpo (or any method)")] = "dapo",
    rounds: Annotated[int, typer.Option(help="rounds of every variant")] = 3,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="config override (default: a small run of the method)")] = None,
    threads: Annotated[int, typer.Option(help="torch threads of each run")] = 1,
) -> None:
    """Time a toy run with and without --report-to tensorboard (and --canaries 0.02)."""
    sets = list(set_) if set_ else SMALL.get(method, [])
    vs = variants()
    times: dict[str, list[float]] = {v: [] for v in vs}
    cpus: dict[str, list[float]] = {v: [] for v in vs}
    for r in range(rounds):
        order = list(vs) if r % 2 == 0 else list(reversed(vs))
        for v in order:
            secs, cpu = one_run(method, sets, vs[v], threads)
            times[v].append(secs)
            cpus[v].append(cpu)
        print(f"round {r + 1}: " + ", ".join(f"{v} {times[v][-1]:.1f}s ({cpus[v][-1]:.1f} "
                                             f"CPU-s)" for v in vs), flush=True)
    print(f"{method} {' '.join(sets)}: median of {rounds} rounds")
    for name, xs in (("wall", times), ("CPU", cpus)):
        base = statistics.median(xs["plain"])
        for v in vs:
            med = statistics.median(xs[v])
            per = [t / p for t, p in zip(xs[v], xs["plain"])]
            print(f"  {name:4s} {v:22s} {med:7.1f}s  ratio {med / base:.3f}  (per round: "
                  f"{', '.join(f'{x:.3f}' for x in per)})")


if __name__ == "__main__":
    run_main(main)
