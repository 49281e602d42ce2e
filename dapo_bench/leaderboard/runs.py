"""Result files for a leaderboard: find, load, validate, expand iterations, match rows.

Files come from a spec's ``inputs`` (globs and named files under a runs directory), sorted by
path so that rendering never depends on directory order. Each file goes through
``dapo_bench.results.load_results``; a file that fails is skipped with its one-line reason or
raised, per the spec's ``on_bad_*`` option. A training run's ``iterations`` (per-iteration
results objects) become extra runs with ``iteration`` = 1, 2, ...; they inherit the parent's
fields (method, model, config, provenance) and override what they carry (tasks, ledger).
An iteration without a ledger gets the FLOPs of the parent's ledger stages ``it1.``..``itK.``
(cumulative). A training run's ``evals`` (``{reference|final|control: {task: {value, stderr,
n}}}``) become runs with ``evaluated`` = that key: ``reference`` is the base model,
``control`` the equal-compute SFT control (given the parent's FLOPs by construction).
Derived runs match a row only when its ``match`` names ``iteration`` or ``evaluated``.

Not covered: deciding which runs go into which table row beyond equality matching.
"""

from __future__ import annotations

import fnmatch
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
    evaluated: str | None = None

    def get(self, dotted: str, default: Any = None) -> Any:
        """A dotted field; ``a|b`` tries ``a`` then ``b``; a number indexes a list
        (``iterations.0.advantages.kept_states``); ``path``, ``iteration`` and ``evaluated``
        are the run's own attributes."""
        for alt in dotted.split("|"):
            if alt in ("path", "iteration", "evaluated"):
                return getattr(self, alt)
            node: Any = self.data
            for part in alt.split("."):
                if isinstance(node, list) and part.isdigit() and int(part) < len(node):
                    node = node[int(part)]
                elif isinstance(node, dict) and part in node:
                    node = node[part]
                else:
                    node = _MISSING
                    break
            if node is not _MISSING:
                return node
        return default

    @property
    def derived(self) -> bool:
        return self.iteration is not None or self.evaluated is not None

    def task_metric(self, task: str | None, metric: str) -> dict | None:
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


def _eval_tasks(ev: Any, where: str, parent: Any = None) -> dict:
    """``{task: {value, stderr, n}}`` (a training run's evals) as results ``tasks``; the
    parent's task info (verifier, prompt template) is kept, its metrics are not."""
    if not isinstance(ev, dict):
        raise UserError(f"{where}: expected {{task: {{value, stderr, n}}}}")
    tasks = {}
    for task, m in ev.items():
        if not isinstance(m, dict) or not isinstance(m.get("value"), (int, float)):
            raise UserError(f"{where}.{task}.value must be a number")
        info = parent.get(task) if isinstance(parent, dict) else None
        info = {k: v for k, v in info.items() if k not in ("metrics", "breakdown")} \
            if isinstance(info, dict) else {}
        tasks[task] = {**info, "n_problems": m.get("n"),
                       "metrics": {"acc": {"value": m["value"], "stderr": m.get("stderr")}}}
    return tasks


def _stage_flops(ledger: Any, upto: int) -> float | None:
    stages = ledger.get("stages") if isinstance(ledger, dict) else None
    if not isinstance(stages, dict):
        return None
    prefixes = tuple(f"it{j}." for j in range(1, upto + 1))
    vals = [s.get("flops", 0.0) for name, s in stages.items()
            if name.startswith(prefixes) and isinstance(s, dict)]
    return float(sum(vals)) if vals else None


def load_run(path: Path, rel: str) -> list[Run]:
    """The run of one results file, then its iterations and evals as derived runs."""
    data = load_results(path)
    runs = [Run(rel, data)]
    parent = {k: v for k, v in data.items() if k not in ("iterations", "history", "evals")}
    iters = data.get("iterations") or []
    if not isinstance(iters, list):
        raise UserError(f"{path}: field 'iterations' must be a list")
    for i, it in enumerate(iters, 1):
        where = f"{path}: iterations[{i - 1}]"
        if not isinstance(it, dict):
            raise UserError(f"{where} must be an object")
        merged = {**parent, **it}
        if "tasks" not in it:
            merged["tasks"] = _eval_tasks(it["eval"], f"{where}.eval", data["tasks"]) \
                if "eval" in it else {}
        if "ledger" not in it:
            flops = _stage_flops(data.get("ledger"), i)
            merged["ledger"] = None if flops is None else {"flops": flops}
        validate_results(merged, where)
        runs.append(Run(f"{rel}#iter{i}", merged, iteration=i))
    evals = data.get("evals") or {}
    if not isinstance(evals, dict):
        raise UserError(f"{path}: field 'evals' must be a mapping")
    for key in sorted(evals):
        merged = {**parent, "tasks": _eval_tasks(evals[key], f"{path}: evals.{key}",
                                                  data["tasks"])}
        # Wall time belongs to the whole training run, not to one of its evaluated policies.
        prov = data.get("provenance")
        merged["provenance"] = {**prov, "wall_seconds": None} if isinstance(prov, dict) else prov
        if key == "reference":
            merged["ledger"] = None
        runs.append(Run(f"{rel}#{key}", merged, evaluated=key))
    return runs


def matches(run: Run, match: dict) -> bool:
    """Equality on dotted fields; a list means any of; ``path`` takes glob patterns. A derived
    run (an iteration or an eval of a training run) matches only a ``match`` that names
    ``iteration`` or ``evaluated``, so a plain row never picks up a derived copy."""
    if run.iteration is not None and "iteration" not in match:
        return False
    if run.evaluated is not None and "evaluated" not in match:
        return False
    for key, want in match.items():
        have = run.get(key, _MISSING)
        options = want if isinstance(want, list) else [want]
        if key == "path":
            if not any(fnmatch.fnmatchcase(str(have), str(w)) for w in options):
                return False
        elif not any(_eq(have, w) for w in options):
            return False
    return True


def _eq(have: Any, want: Any) -> bool:
    if have is _MISSING or have is None and want is not None:
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
