"""Where a DAPO generation stage's CPU goes on 1 and on N ranks: the ceiling of its speed-up.

    python bench/scaleout_cpu.py                  # shipped preset (2,048 problems), it1.rollouts

Runs ``dapo-bench train --method dapo`` (toy preset, one torch thread per rank) as one process,
then under ``torchrun --nproc-per-node N``, each until ``--stage`` has its marker (the run is
then stopped: the later stages are not timed). Every 0.1 s it reads, from ``/proc``, the CPU
seconds (user + system) of every process the launch started: the ranks (``dapo_bench.cli``)
and their helpers (the math verifier's workers, the launcher). It prints, per run, the stage's
wall seconds (its marker), the CPU seconds of the ranks and of the helpers over the stage
(from the first chunk logged to the marker: start-up and the first chunk are left out of both
runs alike), and the speed-up two ways:

- wall: 1-rank stage seconds / N-rank stage seconds (depressed by any other load);
- CPU bound: what N free cores allow. One rank's stage cannot end before its rank's CPU
  seconds; N ranks on N cores cannot end before all the CPU seconds / N (nor before the
  busiest rank's). The ratio of the two bounds is the best speed-up these CPU figures permit,
  whatever else runs on the machine.

The ranks' merged artifacts are not compared here (``bench/scaleout.py`` does). Linux only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from scaleout import train_command

TICK = os.sysconf("SC_CLK_TCK")


def _tree(root: int) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        try:
            todo += [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        except OSError:
            pass
    return out


def _cpu(pid: int) -> tuple[str, float, float] | None:
    """(kind, CPU seconds of all its threads, of its main thread) of ``pid``; kind is ``rank``
    for a dapo_bench.cli process, else ``helper``."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        secs = [_ticks(Path(f"/proc/{pid}{t}/stat").read_text()) for t in ("", f"/task/{pid}")]
    except OSError:
        return None
    launcher = "torch.distributed.run" in cmd
    return ("helper" if launcher or "dapo_bench.cli" not in cmd else "rank"), secs[0], secs[1]


def _ticks(stat: str) -> float:
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def _run(out: Path, run_id: str, ranks: int, problems: int, stage: str,
         sets: list[str]) -> dict:
    cmd, env = train_command(out, run_id, ranks, problems, sets)
    it, name = stage.split(".", 1)
    logs = out / run_id / it
    marker = out / run_id / "stages" / f"{stage}.json"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    seen: dict[int, tuple[str, float, float]] = {}
    history: list[tuple[float, int, dict]] = []  # (time, rows logged, CPU so far)
    shards = f"{name}.rank*.jsonl" if ranks > 1 else f"{name}.jsonl"
    try:
        while not marker.exists():
            if proc.poll() is not None:
                sys.exit(f"error: {' '.join(cmd)} ended first:\n{proc.stderr.read()[-3000:]}")
            for pid in _tree(proc.pid):
                if (c := _cpu(pid)) is not None:
                    seen[pid] = c
            if files := list(logs.glob(shards)):
                history.append((time.perf_counter(), _rows(files), dict(seen)))
            time.sleep(0.1)
        for pid in _tree(proc.pid):
            if (c := _cpu(pid)) is not None:
                seen[pid] = c
        t_end = time.perf_counter()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()
    final = _rows([logs / f"{name}.jsonl"])
    t_start, _, start = history[0]  # the first chunk logged
    # every row logged (the marker may follow the last row within one poll: then the end)
    t_logged, _, logged = next((h for h in history if h[1] >= final), (t_end, final, seen))
    out_: dict = {"stage_s": json.loads(marker.read_text())["seconds"],
                  "window_s": t_end - t_start, "tail_s": t_end - t_logged, "rank_cpu": [],
                  "main_cpu": [], "tail_cpu": [], "helper_cpu": 0.0}
    for pid, (kind, secs, main) in seen.items():
        before = start.get(pid, (kind, 0.0, 0.0))
        if kind == "rank":
            out_["rank_cpu"].append(secs - before[1])
            out_["main_cpu"].append(main - before[2])
            out_["tail_cpu"].append(secs - logged.get(pid, (kind, secs, main))[1])
        else:
            out_["helper_cpu"] += secs - before[1]
    for k in ("rank_cpu", "main_cpu", "tail_cpu"):
        out_[k].sort(reverse=True)
    return out_


def _rows(files: list[Path]) -> int:
    n = 0
    for f in files:
        try:
            n += f.read_bytes().count(b"\n")
        except OSError:  # a shard merged away while read
            return 0
    return n


def main(
    problems: Annotated[int, typer.Option(help="training problems")] = 2048,
    stage: Annotated[str, typer.Option(help="the stage timed (the run stops at its marker)")] = (
        "it1.rollouts"),
    ranks: Annotated[int, typer.Option(help="ranks of the second run")] = 2,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="more DAPO settings, key=value (repeatable)")] = None,
    out: Annotated[Path, typer.Option(help="scratch folder (replaced)")] = Path(
        "/tmp/dapo-bench-scaleout-cpu"),
) -> None:
    """CPU seconds and speed-up of one DAPO stage on 1 and on N ranks."""
    import shutil

    shutil.rmtree(out, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {problems} "
          f"problems, {stage}, 1 vs {ranks} ranks, 1 torch thread each", flush=True)
    one = _run(out, "one", 1, problems, stage, list(set_ or []))
    many = _run(out, "many", ranks, problems, stage, list(set_ or []))
    print("| run | stage (s) | window (s) | rank CPU (s) | of it, main threads (s) | helper CPU "
          "(s) | CPU / window | after the last row: wall (s), rank CPU (s) |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for label, r in (("1 rank", one), (f"{ranks} ranks", many)):
        cpu = sum(r["rank_cpu"]) + r["helper_cpu"]
        ranks_s, main_s, tail = (" + ".join(f"{c:.2f}" for c in r[k])
                                 for k in ("rank_cpu", "main_cpu", "tail_cpu"))
        print(f"| {label} | {r['stage_s']:.1f} | {r['window_s']:.1f} | {ranks_s} | {main_s} | "
              f"{r['helper_cpu']:.1f} | {cpu / r['window_s']:.2f} | {r['tail_s']:.2f}, {tail} |")
    bound1 = max(one["rank_cpu"][0], (sum(one["rank_cpu"]) + one["helper_cpu"]) / ranks)
    boundn = max(many["rank_cpu"][0], (sum(many["rank_cpu"]) + many["helper_cpu"]) / ranks)
    print(f"wall speed-up (stage markers): {one['stage_s'] / many['stage_s']:.2f}x; "
          f"CPU-bound speed-up on {ranks} free cores: {bound1 / boundn:.2f}x "
          f"({bound1:.1f} s vs {boundn:.1f} s); load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    typer.run(main)
