"""The resumable sample log of an eval run: ``<run_dir>/samples.jsonl`` + ``eval_config.json``.

One JSON line per problem, appended (flushed, fsynced) once the problem's n completions are
generated AND verified::

    {"task", "task_hash", "id", "prompt", "gold", "subjects",
     "samples": [{"text", "n_tokens", "finish_reason", "extracted", "passed", "reason"}, ...]}

``eval_config.json`` holds what the samples depend on (model hash, backend, sampling, seed,
task hashes). A rerun in the same directory with the same settings reuses every logged problem
and generates only the missing ones; with different settings it stops with a UserError rather
than mixing samples. A line cut short by a kill is dropped and its problem redone.

Several ranks: each rank appends its problems to its own shard (``samples.rank<r>.jsonl``); a
store reads the merged file and every shard, :meth:`SampleStore.sync` (a collective) makes every
rank see every row, and :meth:`SampleStore.merge` writes ``samples.jsonl`` in problem order
(what one process writes) and removes the shards.

Not covered: two runs writing one run directory at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dapo_bench import dist
from dapo_bench.errors import UserError
from dapo_bench.io import (
    JsonlAppender,
    atomic_write_json,
    atomic_write_jsonl,
    iter_jsonl,
    read_json,
)

SAMPLES = "samples.jsonl"
CONFIG = "eval_config.json"


class SampleStore:
    def __init__(self, run_dir: str | os.PathLike, fingerprint: dict[str, Any]):
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        cfg_path = self.run_dir / CONFIG
        if cfg_path.exists():
            old = read_json(cfg_path)
            diff = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k)
                          and k != "tasks")
            if diff:
                raise UserError(
                    f"{cfg_path}: this run directory holds samples made with other settings "
                    f"({', '.join(diff)} differ); use another --run-id or --out"
                )
            tasks = {**old.get("tasks", {}), **fingerprint.get("tasks", {})}
            for name, h in fingerprint.get("tasks", {}).items():
                if name in old.get("tasks", {}) and old["tasks"][name] != h:
                    raise UserError(f"{cfg_path}: task {name} changed since these samples were "
                                    f"made (spec hash {old['tasks'][name]} -> {h}); use a new run")
            fingerprint = {**fingerprint, "tasks": tasks}
        if dist.is_main():
            atomic_write_json(cfg_path, fingerprint)
        dist.barrier()
        self.path = self.run_dir / SAMPLES
        self.rows: dict[tuple[str, str], dict] = {}
        self._read()
        self._log: JsonlAppender | None = None

    def _shards(self) -> list[Path]:
        return sorted(self.run_dir.glob("samples.rank*.jsonl"))

    def _read(self) -> None:
        for p in [self.path, *self._shards()]:
            if p.exists():
                for row in iter_jsonl(p, allow_partial_tail=True):
                    self.rows.setdefault((row["task"], str(row["id"])), row)

    def sync(self) -> None:
        """Every rank sees every rank's rows (a collective; a no-op in one process)."""
        if dist.world_size() > 1:
            self.close()
            dist.barrier()
            self._read()

    def merge(self, order: list[tuple[str, str]]) -> None:
        """Write ``samples.jsonl`` from the shards in ``order`` (rank 0; a collective)."""
        self.sync()
        if dist.is_main() and self._shards():
            atomic_write_jsonl(self.path, [self.rows[k] for k in order if k in self.rows])
            for p in self._shards():
                p.unlink()
        dist.barrier()

    def get(self, task: str, pid: str) -> dict | None:
        return self.rows.get((task, pid))

    def add(self, row: dict) -> None:
        if self._log is None:
            own = self.path if dist.world_size() == 1 else (
                self.run_dir / f"samples.rank{dist.rank()}.jsonl")
            self._log = JsonlAppender(own)
        self._log.write(row)
        self.rows[(row["task"], str(row["id"]))] = row

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def per_problem_scores(run_dir: str | os.PathLike, task: str) -> dict[str, float]:
    """Problem id -> mean score of its samples, from a run's samples.jsonl."""
    path = Path(run_dir) / SAMPLES
    out = {}
    for row in iter_jsonl(path, allow_partial_tail=True):
        if row.get("task") == task:
            s = row["samples"]
            out[str(row["id"])] = sum(bool(x["passed"]) for x in s) / len(s)
    if not out:
        raise UserError(f"{path}: no samples of task {task!r}")
    return out


def compare_runs(run_a: str | os.PathLike, run_b: str | os.PathLike, task: str, **kw: Any) -> dict:
    """Paired bootstrap of run b's gain over run a on the problems both evaluated."""
    from dapo_bench.eval.metrics import paired_bootstrap

    a, b = per_problem_scores(run_a, task), per_problem_scores(run_b, task)
    try:
        return paired_bootstrap(a, b, **kw)
    except ValueError as e:
        raise UserError(f"compare {run_a} vs {run_b} on {task}: {e}") from None
