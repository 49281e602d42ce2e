"""Result files for a leaderboard: find, load, validate, expand iterations, match rows.

Files come from a spec's ``inputs`` (globs and named files under a runs directory), sorted by
path so that rendering never depends on directory order. Each file goes through
``dapo_bench.results.load_results``; a file that fails is skipped with its one-line reason or
raised, per the spec's ``on_bad_*`` option. A training run's ``iterations`` (per-iteration
results objects) become extra runs with ``iteration`` = 1, 2, ...; they inherit the parent's
fields (method, model, config, provenance) and override what they carry (tasks, ledger).

Not covered: deciding which runs go into which table row beyond equality matching.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.leaderboard.spec import Inputs
from dapo_bench.results import load_results, validate_results

_MISSING = object()


@dataclass(frozen=True)
class Run:
    """One result (a file, or one iteration of a file). ``path`` is relative to the runs dir,
    with ``#iterN`` for iterations, so outputs never hold machine-specific absolute paths."""

    path: str
    data: dict
    iteration: int | None = None

    def get(self, dotted: str, default: Any = None) -> Any:
        if dotted == "iteration":
            return self.iteration
        node: Any = self.data
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    def task_metric(self, task: str, metric: str) -> dict | None:
        m = self.get(f"tasks.{task}.metrics.{metric}")
        return m if isinstance(m, dict) else None

    def sort_key(self) -> tuple:
        return (str(self.get("run_id", "")), self.path)


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return os.path.relpath(path.resolve(), root.resolve()).replace(os.sep, "/")


def collect(inputs: Inputs, runs_dir: Path) -> tuple[list[Run], list[Skipped]]:
    """Load every result file of ``inputs`` under ``runs_dir``; return runs and skipped files.

    A glob that matches nothing is not an error (the runs may not exist yet); a named file
    that does not exist is (unless ``on_bad_file: skip``)."""
    if not runs_dir.is_dir() and inputs.files and inputs.on_bad_file == "error":
        raise UserError(f"{runs_dir}: runs directory does not exist")
    found: dict[Path, str] = {}
    if runs_dir.is_dir():
        for pattern in inputs.globs:
            for p in runs_dir.glob(pattern):
                if p.is_file():
                    found.setdefault(p.resolve(), "glob")
    for f in inputs.files:
        found[(runs_dir / f).resolve()] = "file"
    runs: list[Run] = []
    skipped: list[Skipped] = []
    for p in sorted(found, key=lambda q: _rel(q, runs_dir)):
        rel = _rel(p, runs_dir)
        policy = inputs.on_bad_glob if found[p] == "glob" else inputs.on_bad_file
        try:
            runs.extend(load_run(p, rel))
        except UserError as e:
            if policy == "error":
                raise
            skipped.append(Skipped(rel, _strip_path(str(e), p)))
    return runs, skipped


def _strip_path(msg: str, p: Path) -> str:
    # Keep ':line' but drop the absolute path: outputs must not depend on the checkout location.
    s = str(p)
    return msg[len(s):].lstrip(": ") if msg.startswith(s) else msg


def load_run(path: Path, rel: str) -> list[Run]:
    """The run of one results file, then one run per entry of its ``iterations``."""
    data = load_results(path)
    runs = [Run(rel, data)]
    iters = data.get("iterations")
    if iters is None:
        return runs
    if not isinstance(iters, list):
        raise UserError(f"{path}: field 'iterations' must be a list")
    parent = {k: v for k, v in data.items() if k not in ("iterations", "history")}
    for i, it in enumerate(iters, 1):
        if not isinstance(it, dict):
            raise UserError(f"{path}: iterations[{i - 1}] must be an object")
        merged = {**parent, **it}
        validate_results(merged, f"{path}: iterations[{i - 1}]")
        runs.append(Run(f"{rel}#iter{i}", merged, iteration=i))
    return runs


def matches(run: Run, match: dict) -> bool:
    """Equality on dotted fields; a list means any of. Iteration runs match only a ``match``
    that names ``iteration``, so a plain row never picks up a per-iteration copy."""
    if "iteration" not in match and run.iteration is not None:
        return False
    for key, want in match.items():
        have = run.get(key, _MISSING)
        options = want if isinstance(want, list) else [want]
        if not any(_eq(have, w) for w in options):
            return False
    return True


def _eq(have: Any, want: Any) -> bool:
    if have is _MISSING:
        return False
    if isinstance(have, (int, float)) and isinstance(want, (int, float)):
        if isinstance(have, bool) or isinstance(want, bool):
            return have is want
        return abs(float(have) - float(want)) <= 1e-12 * max(1.0, abs(float(want)))
    return have == want


def pick(runs: list[Run], where: str, policy: str) -> Run | None:
    """The one run for a row: none, the only one, or by ``policy`` when several match."""
    if not runs:
        return None
    if len(runs) == 1:
        return runs[0]
    if policy == "last":
        return max(runs, key=Run.sort_key)
    names = ", ".join(r.path for r in sorted(runs, key=Run.sort_key))
    raise UserError(f"{where}: {len(runs)} result files match ({names}); narrow the row's "
                    "match (e.g. run_id) or set the table's pick: last")
