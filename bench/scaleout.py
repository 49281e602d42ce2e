"""Scale-out on this machine: the toy DAPO pipeline with 1 and with N CPU ranks, side by side.

    python bench/scaleout.py                      # 256 problems, 1 vs 2 ranks, 1 thread each

Runs ``dapo-bench train --method dapo`` (toy preset, ``--no-control``, a small setting) once as
one process and once under ``torchrun --nproc-per-node N`` (the torch engine, data parallel;
gloo), each rank with one torch thread, in fresh run directories, and prints every stage's wall
time (from the stage markers) and the speed-up N ranks give, plus whether the merged artifacts
of the two runs are identical (they must be: a chunk's samples depend only on its index).

The peer is the same pipeline on one rank: the ratio is what a second rank buys. Measure on a
quiet machine (the speed-up of 2 ranks needs 2 free cores); the first line prints the load.
Not covered: GPUs (see ``bench/gpu_check.sh``), several nodes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

STAGES = ("it1.rollouts", "it1.mc", "it1.critic", "it1.advantages", "it1.actor",
          "eval.reference", "eval.final")


def train_command(out: Path, run_id: str, ranks: int, problems: int, sets: list[str],
                  deepspeed: str = "none") -> tuple[list[str], dict]:
    """(command, env) of the toy DAPO run ``run_id`` on ``ranks`` ranks, one thread each."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    cli = ["-m", "dapo_bench.cli", "train", "--method", "dapo", "--no-control", "--quiet",
           "--threads", "1", "--out", str(out), "--run-id", run_id, "--set",
           f"n_problems={problems}", "--deepspeed", deepspeed]
    for kv in sets:
        cli += ["--set", kv]
    cmd = [sys.executable, *cli] if ranks == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
        str(ranks), *cli]
    return cmd, env


def _train(out: Path, run_id: str, ranks: int, problems: int, eval_limit: int,
           sets: list[str], deepspeed: str) -> float:
    cmd, env = train_command(out, run_id, ranks, problems, sets, deepspeed)
    cmd += ["--eval-limit", str(eval_limit)]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{run.stderr[-3000:]}")
    return time.perf_counter() - t0


def _seconds(run: Path) -> dict[str, float]:
    return {s: json.loads((run / "stages" / f"{s}.json").read_text())["seconds"] for s in STAGES}


def main(
    problems: Annotated[int, typer.Option(help="training problems (toy preset otherwise)")] = 256,
    ranks: Annotated[int, typer.Option(help="ranks of the second run")] = 2,
    eval_limit: Annotated[int, typer.Option(help="problems per eval task")] = 500,
    out: Annotated[Path, typer.Option(help="scratch directory (replaced)")] = Path(
        "/tmp/dapo-bench-scaleout"),
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="more DAPO settings, key=value (repeatable), e.g. gen_chunk=32")] = None,
    deepspeed: Annotated[str, typer.Option(help="training engine: none | zero0..zero3")] = "none",
) -> None:
    """Time the toy DAPO pipeline on 1 and on N ranks; print per-stage speed-ups."""
    shutil.rmtree(out, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"{problems} problems, 1 vs {ranks} ranks, 1 torch thread each"
          f"{', ' + ' '.join(set_) if set_ else ''}, engine {deepspeed}", flush=True)
    sets = list(set_ or [])
    wall1 = _train(out, "one", 1, problems, eval_limit, sets, deepspeed)
    walln = _train(out, "many", ranks, problems, eval_limit, sets, deepspeed)
    one, many = _seconds(out / "one"), _seconds(out / "many")
    print(f"| stage | 1 rank (s) | {ranks} ranks (s) | speed-up |")
    print("|---|---|---|---|")
    for s in STAGES:
        print(f"| {s} | {one[s]:.1f} | {many[s]:.1f} | {one[s] / max(many[s], 1e-9):.2f}x |")
    print(f"| whole command | {wall1:.1f} | {walln:.1f} | {wall1 / walln:.2f}x |")
    same = all((out / "one" / "it1" / f).read_bytes() == (out / "many" / "it1" / f).read_bytes()
               for f in ("rollouts.jsonl", "mc.jsonl", "advantages.jsonl"))
    print(f"merged rollouts, MC labels and advantages identical to one process: {same}")


if __name__ == "__main__":
    typer.run(main)
