"""Eval metrics over per-problem sample verdicts; pure functions, numpy only.

- ``pass_at_k(n, c, k)``: the unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k),
  computed as a stable product; the chance that at least one of k samples drawn without
  replacement from the n generated is correct.
- ``maj_at_k(keys, passed, k)``: majority vote over the FIRST k samples' normalised answers;
  samples without an answer (key None) do not vote; a tie for the top count goes to the tied
  answer seen first in sample order, and the winner scores its first sample's verdict. This is
  the convention of Qwen2.5-Math's evaluation (``rm_maj_eval.py``) and lm-evaluation-harness's
  ``majority_vote`` filter (both ``Counter.most_common(1)``, whose ties keep first-seen order),
  so maj@k compares with published numbers. maj@2 is then the first voting sample's verdict
  (acc's expectation when every sample answers; counting a tie as wrong put it below acc).
  Samples are i.i.d., so the first k are an unbiased draw of k (no averaging over subsets).
- ``bootstrap_stderr(values)``: standard deviation of the mean over ``B`` resamples of the
  problems (seeded, deterministic).
- ``paired_bootstrap(a, b)``: gain b - a on the same problems with its bootstrap stderr, 95%
  interval and the fraction of resamples where the gain is <= 0 (a one-sided p-value).
- ``task_metrics``/``breakdown``: the result file's ``metrics`` and ``breakdown`` blocks.

Not covered: stratified or cluster bootstraps, multiple-comparison corrections.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np

DEFAULT_B = 1000


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def maj_at_k(keys: Sequence[str | None], passed: Sequence[bool], k: int) -> float:
    if not 1 <= k <= len(keys) or len(keys) != len(passed):
        raise ValueError(f"maj@k needs 1 <= k <= n and one verdict per key (k={k})")
    votes = Counter(key for key in keys[:k] if key is not None)
    if not votes:
        return 0.0
    # A Counter keeps first-seen order and most_common sorts stably: a tie goes to the answer
    # seen first.
    top = votes.most_common(1)[0][0]
    return 1.0 if passed[keys.index(top)] else 0.0


def bootstrap_stderr(values: Sequence[float], B: int = DEFAULT_B, seed: int = 0) -> float | None:
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(B, len(x)))
    return float(x[idx].mean(axis=1).std(ddof=1))


def paired_bootstrap(
    a: dict[str, float], b: dict[str, float], B: int = 10000, seed: int = 0
) -> dict:
    """Gain of b over a on the problems both score (keys: problem ids)."""
    common = sorted(set(a) & set(b))
    if len(common) < 2:
        raise ValueError(f"paired bootstrap needs 2+ shared problems, got {len(common)}")
    d = np.array([b[k] - a[k] for k in common], dtype=float)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(B, len(d)))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return {
        "n": len(common),
        "a": float(np.mean([a[k] for k in common])),
        "b": float(np.mean([b[k] for k in common])),
        "diff": float(d.mean()),
        "stderr": float(means.std(ddof=1)),
        "ci95": [float(lo), float(hi)],
        "p_le_0": float((means <= 0).mean()),
    }


def ks_for(n: int) -> list[int]:
    """k values reported for n samples: powers of two below n, and n itself."""
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64, 128, 256) if k < n]
    return ks + [n]


def task_metrics(
    passed: list[list[bool]], keys: list[list[str | None]] | None, kinds: Iterable[str],
    B: int = DEFAULT_B,
) -> dict[str, dict]:
    """Metrics of one task: ``passed[i]`` / ``keys[i]`` are problem i's n samples."""
    kinds = set(kinds)
    n = len(passed[0]) if passed else 0
    out: dict[str, dict] = {}

    def add(name: str, per_problem: list[float]) -> None:
        out[name] = {"value": float(np.mean(per_problem)) if per_problem else 0.0,
                     "stderr": bootstrap_stderr(per_problem, B)}

    add("acc", [sum(p) / len(p) for p in passed])
    if n > 1 and "pass@k" in kinds:
        for k in ks_for(n)[1:]:
            add(f"pass@{k}", [pass_at_k(n, sum(p), k) for p in passed])
    if n > 1 and "maj@k" in kinds and keys is not None:
        for k in ks_for(n)[1:]:
            add(f"maj@{k}", [maj_at_k(kk, p, k) for kk, p in zip(keys, passed)])
    return out


def breakdown(subjects: list[dict[str, str]], scores: list[float],
              B: int = DEFAULT_B) -> dict[str, dict]:
    """Per subject field and value: problem count, mean score and its bootstrap stderr (over
    that value's problems; None for a single problem)."""
    acc: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for subj, s in zip(subjects, scores):
        for field, value in subj.items():
            acc[field][value].append(s)
    return {
        f: {v: {"n": len(xs), "acc": float(np.mean(xs)), "stderr": bootstrap_stderr(xs, B)}
            for v, xs in sorted(vals.items())}
        for f, vals in sorted(acc.items())
    }
