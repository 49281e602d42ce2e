"""Fixed round-robin rank shares against the work queue, on the chunk costs of real runs.

    python bench/work_queue.py                         # the committed SmolLM2 runs, 2 ranks
    python bench/work_queue.py RUN_DIR... --ranks 4 --scale 0.001

Each eval row in ``samples.jsonl`` keeps its share of its chunk's generation time
(``seconds``). This cuts every task's problems into the chunks a fresh run on N ranks makes
(``dist.even_chunks``, chunks of 64), takes each chunk's cost from those seconds, and replays the
stage under ``torchrun``: every rank sleeps ``cost x scale`` for each chunk it takes, once with
the fixed shares eval used before (chunk k on rank k mod N) and once with ``dist.WorkQueue``
(the real one: a counter in the gloo group's store). It prints each task's makespan (the last
rank's finish) in the runs' seconds, the time the first rank to finish then idles, and the
ratio; the same schedules computed in-process are printed beside them as a check.

A replay, not generation: chunk costs come from rows made by runs that were cut into other
chunks (resumed runs, other ``--limit``s), and the ranks only sleep, so it measures the
scheduling alone. The peer is the fixed share (what eval did until 2026-12-04).
"""

from __future__ import annotations

import heapq
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Annotated

import typer

ROOT = Path(__file__).resolve().parent.parent
RUNS = [ROOT / "leaderboards/runs/smollm2/math-full", ROOT / "leaderboards/runs/smollm2/code-full"]


def chunk_costs(run_dirs: list[Path], ranks: int, chunk: int = 64) -> dict[str, list[float]]:
    from dapo_bench import dist

    per_task: dict[str, list[float]] = defaultdict(list)
    for run in run_dirs:
        for line in (run / "samples.jsonl").read_text().splitlines():
            row = json.loads(line)
            per_task[row["task"]].append(float(row["seconds"]))
    return {t: [sum(c) for c in dist.even_chunks(s, chunk, ranks)] for t, s in per_task.items()}


def simulate(costs: list[float], ranks: int) -> tuple[float, float]:
    """(fixed shares, queue) makespans: the queue starts rank r on chunk r, then the rank free
    first takes the next chunk."""
    fixed = max(sum(costs[r::ranks]) for r in range(ranks))
    free = [(c, r) for r, c in enumerate(costs[:ranks])]
    heapq.heapify(free)
    for c in costs[ranks:]:
        t, r = heapq.heappop(free)
        heapq.heappush(free, (t + c, r))
    return fixed, max((t for t, _ in free), default=0.0)


def worker(plan_file: str, out_file: str) -> None:
    from dapo_bench import dist

    plan = json.loads(Path(plan_file).read_text())
    scale, got = plan["scale"], {}
    for task, costs in plan["costs"].items():
        for mode in ("fixed", "queue"):
            dist.barrier()
            t0 = time.perf_counter()
            mine = (range(dist.rank(), len(costs), dist.world_size()) if mode == "fixed"
                    else dist.WorkQueue(len(costs)))
            for k in mine:
                time.sleep(costs[k] * scale)
            ends = dist.all_gather(time.perf_counter() - t0)
            got[f"{task}/{mode}"] = [e / scale for e in ends]
    if dist.is_main():
        Path(out_file).write_text(json.dumps(got))


def main(run_dirs: Annotated[list[Path] | None, typer.Argument()] = None,
         ranks: int = 2, scale: float = 0.002) -> None:
    costs = chunk_costs(run_dirs or RUNS, ranks)
    with tempfile.TemporaryDirectory() as tmp:
        plan, out = Path(tmp) / "plan.json", Path(tmp) / "out.json"
        plan.write_text(json.dumps({"costs": costs, "scale": scale}))
        subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                        "--nproc_per_node", str(ranks), __file__, "--worker", str(plan),
                        str(out)], check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        got = json.loads(out.read_text())
    print(f"{ranks} ranks, chunk costs x {scale:g} replayed; seconds of the original runs")
    print("| task | chunks | fixed shares (s) | idle | work queue (s) | idle | speed-up | "
          "computed fixed / queue |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    sums = [0.0, 0.0]
    for task, c in costs.items():
        fixed, queue = got[f"{task}/fixed"], got[f"{task}/queue"]
        sf, sq = simulate(c, ranks)
        sums[0], sums[1] = sums[0] + max(fixed), sums[1] + max(queue)
        print(f"| {task} | {len(c)} | {max(fixed):,.0f} | {max(fixed) - min(fixed):,.0f} | "
              f"{max(queue):,.0f} | {max(queue) - min(queue):,.0f} | "
              f"{max(fixed) / max(max(queue), 1e-9):.3f}x | {sf:,.0f} / {sq:,.0f} |")
    print(f"| all | | {sums[0]:,.0f} | | {sums[1]:,.0f} | | {sums[0] / sums[1]:.3f}x | |")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        typer.run(main)
