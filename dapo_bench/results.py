"""The result file: ``runs/<run-id>/results.json``, one per eval or training run.

Schema (version 1); metric values are fractions in [0, 1], rendered as percentages::

    {
      "schema_version": 1,
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
          "n_problems": int, "n_samples": int, "generated_tokens": int,
          "metrics": {"acc": {"value": float, "stderr": float | None}, "pass@8": {...}, ...},
          "breakdown": {"<field>": {"<value>": {"n": int, "acc": float}}}
        }
      },
      "ledger": Ledger.to_dict() | None,             # training runs: compute spent
      "config": {...},                               # the resolved config of the run
      "provenance": {"git_commit": str | None, "packages": {...},
                     "started_at": str, "wall_seconds": float,
                     "run_seconds": float}   # training runs: sum of stage seconds
    }

``acc`` is greedy accuracy when n == 1 and the mean per-sample accuracy (pass@1) otherwise.
Training runs may add ``"history"`` (per-step logs) and ``"iterations"`` (per-iteration results).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dapo_bench.errors import UserError
from dapo_bench.io import atomic_write_json, read_json

SCHEMA_VERSION = 1
REQUIRED = ("schema_version", "run_id", "kind", "method", "model", "tasks", "provenance")


def validate_results(obj: Any, path: str | os.PathLike = "<results>") -> dict:
    """Check the parts of the schema that consumers rely on; raise UserError naming the file."""
    if not isinstance(obj, dict):
        raise UserError(f"{path}: a results file must be a JSON object")
    for key in REQUIRED:
        if key not in obj:
            raise UserError(f"{path}: field {key!r} missing")
    if obj["schema_version"] != SCHEMA_VERSION:
        raise UserError(f"{path}: schema_version {obj['schema_version']!r} is not {SCHEMA_VERSION}")
    if not isinstance(obj["tasks"], dict):
        raise UserError(f"{path}: field 'tasks' must be a mapping")
    for name, task in obj["tasks"].items():
        metrics = task.get("metrics") if isinstance(task, dict) else None
        if not isinstance(metrics, dict):
            raise UserError(f"{path}: tasks.{name}.metrics missing")
        for mname, m in metrics.items():
            if not isinstance(m, dict) or not isinstance(m.get("value"), (int, float)):
                raise UserError(f"{path}: tasks.{name}.metrics.{mname}.value must be a number")
    return obj


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
    **extra: Any,
) -> dict:
    """The one results builder (eval runs and training runs): the schema above, provenance
    filled in (git commit, package versions); ``extra`` adds a training run's fields."""
    from dapo_bench.provenance import git_commit, package_versions

    prov = {"git_commit": git_commit(), "packages": package_versions(),
            "started_at": started_at, "wall_seconds": round(wall_seconds, 3)}
    if run_seconds is not None:
        prov["run_seconds"] = round(run_seconds, 2)
    return {"schema_version": SCHEMA_VERSION, "run_id": run_id, "kind": kind, "method": method,
            "model": model, "backend": backend, "seed": seed, "sampling": sampling,
            "tasks": tasks, "ledger": ledger, "config": config, **extra, "provenance": prov}


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
