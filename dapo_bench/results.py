"""The result file: ``runs/<run-id>/results.json``, one per eval or training run.

Schema (version 2; docs/results.md documents it beside lm-evaluation-harness's); metric values
are fractions in [0, 1], rendered as percentages::

    {
      "schema_version": 2,
      "run_id": "20261202-143000-math-tiny",
      "kind": "eval" | "train",
      "method": "base" | "dapo" | "sft" | ...,      # "base" for a plain eval of a model
      "model": {"path": str, "hash": str, "n_params": int, "name": str},
      "backend": "hf" | "vllm",
      "seed": int,
      "sampling": {"n": int, "temperature": float, "top_p": float, "max_new_tokens": int},
      "tasks": {
        "<task>": {
          "version": str, "hash": str, "prompt_template": str,
          "verifier": {"name": str, "version": str},
          "spec": {...},                             # TaskSpec.to_dict(): the parsed spec
          "source": str, "split": str | None,
          "n_problems": int,                         # problems scored (after --limit)
          "n_problems_total": int,                   # problems in the source (before --limit)
          "rows_hash": str,                          # io.rows_digest of the rows used
          "n_samples": int, "generated_tokens": int,
          "metrics": {"acc": {"value": float, "stderr": float | None}, "pass@8": {...}, ...},
          "breakdown": {"<field>": {"<value>": {"n": int, "acc": float,
                                                 "stderr": float | None}}},
          "infra_errors": {"problems": int, "samples": int, "reasons": [str], "ids": [str]}
                     # only where the verifier failed on its own side twice: those problems
                     # are left out of n_problems, the metrics and the breakdown
        }
      },
      "suites": {                                    # each suite whose tasks all ran
        "<suite>": {"tasks": [str], "n_problems": int,
                    "macro": {"acc": {"value": float, "stderr": float | None}, ...},
                    "micro": {"acc": {...}, ...}}
      },
      "ledger": Ledger.to_dict() | None,             # training runs: compute spent
      "config": {...},                               # the resolved config of the run
      "provenance": {"git_commit": str | None, "packages": {...},
                     "started_at": str, "wall_seconds": float,
                     "run_seconds": float}   # training runs: sum of stage seconds
    }

``acc`` is greedy accuracy when n == 1 and the mean per-sample accuracy (pass@1) otherwise.
A suite's ``macro`` value is the unweighted mean over its tasks (a paper's "average" column),
``micro`` the mean over all its problems (tasks weighted by ``n_problems``); both only
for metrics every task of the suite has, stderr combined assuming independent tasks (None when
a task has none). Version 1 files (no suites, spec, totals, rows hash or breakdown stderr) still load.
Training runs may add ``"history"`` (per-step logs) and ``"iterations"`` (per-iteration results).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.io import atomic_write_json, read_json

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)  # what load_results accepts (the leaderboard reads old runs too)
REQUIRED = ("schema_version", "run_id", "kind", "method", "model", "tasks", "provenance")


def validate_results(obj: Any, path: str | os.PathLike = "<results>") -> dict:
    """Check the parts of the schema that consumers rely on; raise UserError naming the file."""
    if not isinstance(obj, dict):
        raise UserError(f"{path}: a results file must be a JSON object")
    for key in REQUIRED:
        if key not in obj:
            raise UserError(f"{path}: field {key!r} missing")
    version = obj["schema_version"]
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        known = ", ".join(map(str, READABLE_VERSIONS))
        raise UserError(f"{path}: schema_version {version!r} is not one of {known}")
    if not isinstance(obj["tasks"], dict):
        raise UserError(f"{path}: field 'tasks' must be a mapping")
    for name, task in obj["tasks"].items():
        metrics = task.get("metrics") if isinstance(task, dict) else None
        if not isinstance(metrics, dict):
            raise UserError(f"{path}: tasks.{name}.metrics missing")
        for mname, m in metrics.items():
            if not isinstance(m, dict) or not isinstance(m.get("value"), (int, float)):
                raise UserError(f"{path}: tasks.{name}.metrics.{mname}.value must be a number")
    if not isinstance(obj.get("suites", {}), dict):
        raise UserError(f"{path}: field 'suites' must be a mapping")
    return obj


def _combine(values: list[float], stderrs: list, weights: list[float]) -> dict:
    """Weighted mean of task values and its stderr (independent tasks): sqrt(sum (w se)^2)."""
    total = sum(weights)
    value = sum(w * v for w, v in zip(weights, values)) / total
    if any(se is None for se in stderrs):
        return {"value": value, "stderr": None}
    return {"value": value,
            "stderr": math.sqrt(sum((w * se) ** 2 for w, se in zip(weights, stderrs))) / total}


def suite_summary(tasks: dict, names: Sequence[str]) -> dict:
    """A suite's block: macro (each task weighs 1) and micro (each problem weighs 1) means of
    every metric all of its tasks report."""
    missing = [n for n in names if n not in tasks]
    if missing:
        raise ValueError(f"suite tasks not in the results: {missing}")
    blocks = [tasks[n] for n in names]
    common = [m for m in blocks[0]["metrics"] if all(m in b["metrics"] for b in blocks)]
    sizes = [int(b["n_problems"]) for b in blocks]
    out: dict[str, Any] = {"tasks": list(names), "n_problems": sum(sizes), "macro": {},
                           "micro": {}}
    for m in common:
        values = [float(b["metrics"][m]["value"]) for b in blocks]
        stderrs = [b["metrics"][m].get("stderr") for b in blocks]
        out["macro"][m] = _combine(values, stderrs, [1.0] * len(blocks))
        out["micro"][m] = _combine(values, stderrs, [float(n) for n in sizes])
    return out


def build_results(
    *,
    run_id: str,
    kind: str,
    method: str,
    model: dict,
    backend: str,
    seed: int,
    sampling: dict | None,
    tasks: dict,
    config: dict,
    started_at: str,
    wall_seconds: float,
    ledger: dict | None = None,
    run_seconds: float | None = None,
    suites: Mapping[str, Sequence[str]] | None = None,
    **extra: Any,
) -> dict:
    """The one results builder (eval runs and training runs): the schema above, provenance
    filled in (git commit, package versions); ``suites`` ({name: task names}, each task in
    ``tasks``) get their averages; ``extra`` adds a training run's fields."""
    from dapo_bench.provenance import git_commit, package_versions

    prov = {"git_commit": git_commit(), "packages": package_versions(),
            "started_at": started_at, "wall_seconds": round(wall_seconds, 3)}
    if run_seconds is not None:
        prov["run_seconds"] = round(run_seconds, 2)
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id, "kind": kind, "method": method,
            "model": model, "backend": backend, "seed": seed, "sampling": sampling,
            "tasks": tasks,
            "suites": {name: suite_summary(tasks, names) for name, names in (suites or {}).items()},
            "ledger": ledger, "config": config, **extra, "provenance": prov}


def now_utc() -> str:
    """The ``started_at`` stamp of a run."""
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def load_results(path: str | os.PathLike) -> dict:
    return validate_results(read_json(path), path)


def write_results(run_dir: str | os.PathLike, obj: dict) -> Path:
    path = Path(run_dir) / "results.json"
    validate_results(obj, path)
    atomic_write_json(path, obj)
    return path
