"""Scale-out on this machine: the toy DAPO pipeline with 1 and with N CPU ranks, side by side.

    python bench/scaleout.py                      # 256 problems, 1 vs 2 ranks, 1 thread each

Runs ``dapo-bench train --method dapo`` (toy preset, ``--no-control``, a small setting) once as
one process and once under ``torchrun --nproc-per-node N`` (the torch engine, data parallel;
gloo), each rank with one torch thread, in fresh run directories, and prints every stage's wall
time (from the stage markers) and the speed-up N ranks give, plus whether the merged artifacts
of the two runs are identical (they must be: a chunk's samples depend only on its index).

The peer is the same pipeline on one rank: the ratio is what a second rank buys. Measure on a
quiet machine (the speed-up of 2 ranks needs 2 free cores); the first line prints the load.
``--repeats K`` makes K pairs, interleaved (1 rank, N ranks, 1 rank, ...), so that a slow
spell of the machine falls on both sides; it prints every pair's speed-ups and, per stage, the
median seconds of each side and their ratio.
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


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2


def _same(a: Path, b: Path) -> bool:
    return all((a / "it1" / f).read_bytes() == (b / "it1" / f).read_bytes()
               for f in ("rollouts.jsonl", "mc.jsonl", "advantages.jsonl"))


def main(
    problems: Annotated[int, typer.Option(help="training problems (toy preset otherwise)")] = 256,
    ranks: Annotated[int, typer.Option(help="ranks of the second run")] = 2,
    eval_limit: Annotated[int, typer.Option(help="problems per eval task")] = 500,
    out: Annotated[Path, typer.Option(help="scratch directory (replaced)")] = Path(
        "/tmp/dapo-bench-scaleout"),
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="more DAPO settings, key=value (repeatable), e.g. gen_chunk=32")] = None,
    deepspeed: Annotated[str, typer.Option(help="training engine: none | zero0..zero3")] = "none",
    repeats: Annotated[int, typer.Option(help="pairs of runs, interleaved; medians")] = 1,
) -> None:
    """Time the toy DAPO pipeline on 1 and on N ranks; print per-stage speed-ups."""
    shutil.rmtree(out, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"{problems} problems, 1 vs {ranks} ranks, 1 torch thread each"
          f"{', ' + ' '.join(set_) if set_ else ''}, engine {deepspeed}, {repeats} pair(s)",
          flush=True)
    sets = list(set_ or [])
    pairs = []  # (one's seconds, many's seconds, identical artifacts) per pair
    for k in range(repeats):
        tag = f"-{k + 1}" if repeats > 1 else ""
        wall1 = _train(out, "one" + tag, 1, problems, eval_limit, sets, deepspeed)
        walln = _train(out, "many" + tag, ranks, problems, eval_limit, sets, deepspeed)
        one, many = _seconds(out / f"one{tag}"), _seconds(out / f"many{tag}")
        one["whole command"], many["whole command"] = wall1, walln
        pairs.append((one, many, _same(out / f"one{tag}", out / f"many{tag}")))
        print(f"pair {k + 1}: load average {os.getloadavg()[0]:.2f}", flush=True)
    runs = " | ".join(f"pair {k + 1}" for k in range(repeats))
    print(f"| stage | {runs} | 1 rank, median (s) | {ranks} ranks, median (s) | speed-up |")
    print("|---|" + "---|" * (repeats + 3))
    for s in (*STAGES, "whole command"):
        each = " | ".join(f"{o[s]:.1f} -> {m[s]:.1f} s, {o[s] / max(m[s], 1e-9):.2f}x"
                          for o, m, _ in pairs)
        med1, medn = _median([o[s] for o, _, _ in pairs]), _median([m[s] for _, m, _ in pairs])
        print(f"| {s} | {each} | {med1:.1f} | {medn:.1f} | {med1 / max(medn, 1e-9):.2f}x |")
    same = [ok for _, _, ok in pairs]
    print(f"merged rollouts, MC labels and advantages identical to one process: {all(same)}"
          + (f" ({sum(same)} of {len(same)} pairs)" if len(same) > 1 else ""))


if __name__ == "__main__":
    typer.run(main)
