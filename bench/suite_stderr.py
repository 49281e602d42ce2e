"""A suite average's stderr: ours (``results.suite_summary``) beside lm-evaluation-harness's.

    python bench/suite_stderr.py

Two synthetic tasks of very unequal size and accuracy (1,319 problems at ~90%, 30 at ~10%,
seeded), each with its bootstrap stderr as ``results.json`` holds it. Printed for the macro
(each task weighs 1) and micro (each problem weighs 1) means: our stderr, a stratified
bootstrap of that mean (10,000 resamples of each task's problems: the reference), and the
pooled-variance formula lm-evaluation-harness gives a group whatever its weighting
(``pooled_sample_stderr`` in its ``lm_eval/api/metrics.py``: sqrt(sum (n_i - 1) n_i se_i^2 /
(N - k) / N)), re-expressed here from its formula.

Not covered: metrics other than a mean of per-problem scores; correlated tasks.
"""

from __future__ import annotations

import math

import numpy as np

from dapo_bench.eval.metrics import bootstrap_stderr
from dapo_bench.results import suite_summary


def main(B: int = 10_000, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    scores = {"big_easy": (rng.random(1319) < 0.9).astype(float),
              "small_hard": (rng.random(30) < 0.1).astype(float)}
    tasks = {name: {"n_problems": len(x),
                    "metrics": {"acc": {"value": float(x.mean()), "stderr": bootstrap_stderr(x)}}}
             for name, x in scores.items()}
    summary = suite_summary(tasks, list(tasks))
    means = [x[rng.integers(0, len(x), (B, len(x)))].mean(axis=1) for x in scores.values()]
    sizes = [len(x) for x in scores.values()]
    ses = [t["metrics"]["acc"]["stderr"] for t in tasks.values()]
    pooled = math.sqrt(sum((n - 1) * n * se**2 for n, se in zip(sizes, ses))
                       / (sum(sizes) - len(sizes)) / sum(sizes))
    ref = {"macro": (sum(means) / len(means)).std(ddof=1),
           "micro": (sum(m * n for m, n in zip(means, sizes)) / sum(sizes)).std(ddof=1)}
    print("average  value   ours    stratified bootstrap  lm-eval pooled formula")
    for kind in ("macro", "micro"):
        acc = summary[kind]["acc"]
        print(f"{kind:7s}  {acc['value']:.4f}  {acc['stderr']:.4f}  {ref[kind]:.4f}"
              f"                {pooled:.4f}")


if __name__ == "__main__":
    main()
