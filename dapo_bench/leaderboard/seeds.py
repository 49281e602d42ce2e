"""Tables over seeds (``seeds: true``): a row is every run it matches, one per seed.

Each cell is the mean over the row's seeds; its stderr is the standard error of that mean,
sd / sqrt(k) over the k seeds (sample sd, k - 1 in the denominator), or for a single seed that
run's own stderr. A ``gain`` column's per-run value is the paired-bootstrap gain of the run's
final policy over its reference (``comparison.final_vs_reference.<task>``; in a row of a
training run's control eval, ``control_vs_reference``), so the mean gain
is over per-seed PAIRED gains; each row's note lists every seed's gain ± its paired stderr,
so nothing is averaged away. Seeds are ordered by ``seed``, then path: the same files give the
same bytes.

Not covered: pairing across methods (each gain is against the row's own reference), weighting
seeds by their stderr.
"""

from __future__ import annotations

import math

from dapo_bench.leaderboard import spec as S
from dapo_bench.leaderboard.runs import Run

# Which paired comparison of a training run's results a row's gain reads, by the policy the
# row shows (``Run.evaluated``; None: the run itself, whose policy is the final one).
_PAIRING = {None: "final_vs_reference", "final": "final_vs_reference",
            "control": "control_vs_reference"}


def run_gain(run: Run, task: str) -> tuple[float, float | None] | None:
    """(gain, stderr) in points over the reference on ``task`` of the policy the run shows: the
    final one, or the control of an ``evaluated: control`` row; None for the reference itself
    and for an iteration row (results hold no paired comparison per iteration)."""
    pairing = _PAIRING.get(run.evaluated)
    if pairing is None or run.iteration is not None:  # no iteration has its own pairing
        return None
    c = run.get(f"comparison.{pairing}.{task}")
    if not isinstance(c, dict) or c.get("diff") is None:
        return None
    se = c.get("stderr")
    return 100.0 * float(c["diff"]), None if se is None else 100.0 * float(se)


def by_seed(runs: list[Run]) -> list[Run]:
    return sorted(runs, key=lambda r: (r.get("seed") if isinstance(r.get("seed"), int)
                                       else 10**9, r.path))


def mean_se(values: list[float], single_se: float | None) -> tuple[float, float | None]:
    """Mean and the standard error of the mean (one value: ``single_se``)."""
    k = len(values)
    mean = sum(values) / k
    if k == 1:
        return mean, single_se
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (k - 1))
    return mean, sd / math.sqrt(k)


def seed_cells(t: S.Table, runs: list[Run], measured, cell_cls) -> dict:
    """Cells of a row over its seeds' ``runs`` (``measured(t, run)``: one run's cells)."""
    runs = by_seed(runs)
    per = [measured(t, r) for r in runs]
    cells = {}
    for c in t.columns:
        if c.average:
            continue
        have = [x[c.id] for x in per if c.id in x and x[c.id].value is not None]
        if len(have) != len(runs) or not have:
            continue  # a seed without this column: no mean that hides it
        mean, se = mean_se([x.value for x in have], have[0].stderr)
        if c.field is not None:
            se = None
        cells[c.id] = cell_cls(mean, se, have[0].n)
    return cells


def seed_note(t: S.Table, label: str, runs: list[Run]) -> str | None:
    """``label: seeds 0, 1, 2; <task> gains +1.2 ± 0.6, ...`` (None without gain columns)."""
    runs = by_seed(runs)
    seeds = ", ".join(str(r.get("seed", "?")) for r in runs)
    parts = []
    for c in t.columns:
        if c.gain is None:
            continue
        gains = [run_gain(r, c.gain) for r in runs]
        if all(g is None for g in gains):
            continue
        shown = ", ".join("–" if g is None else f"{g[0]:+.{t.decimals}f}"
                          + ("" if g[1] is None else f" ± {g[1]:.{t.decimals}f}") for g in gains)
        parts.append(f"{c.label or c.id} per seed {shown}")
    if not parts:
        return None
    return f"{label}: {len(runs)} seed{'s' if len(runs) != 1 else ''} ({seeds}); " \
           + "; ".join(parts) + "."
