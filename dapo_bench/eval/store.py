"""The resumable sample log of an eval run: ``<run_dir>/samples.jsonl`` + ``eval_config.json``.

One JSON line per problem, appended (flushed, fsynced) once the problem's n completions are
generated AND verified::

    {"task", "task_hash", "id", "prompt", "gold", "subjects",
     "samples": [{"text", "n_tokens", "finish_reason", "extracted", "passed", "reason"}, ...]}

``eval_config.json`` holds what the samples depend on (model hash, backend, sampling, seed;
per task: split, max_new_tokens, prompt template, verifier settings, spec hash, and the hash of
the data rows used). Each sample line also has ``row_hash``, the hash of the data row it was
made from, and ``seconds``, its share of the generation and verification time (so a resumed
run reports the time of all its parts). A rerun in the same directory with the same settings
reuses every logged problem whose row is unchanged and generates only the missing ones; with
other settings or other data it stops with a UserError naming the flag or field that differs
(and the problem id) rather than mixing samples. Settings bind only once a sample exists: a
run rejected before its first sample leaves nothing that refuses the corrected command. A line
cut short by a kill is dropped and its problem redone. When a problem has several lines, the
last one counts (a re-verified row is appended after the row it replaces).

A newer version of the same verifier with the same options is not a different setting: the
task is listed in :attr:`SampleStore.stale` and the runner re-verifies its logged samples
(their text and finish_reason, no generation) before going on; its fingerprint keeps the old
version until :meth:`SampleStore.reverified` records the new one, so a run killed midway
re-verifies again.

Several ranks: each rank appends its problems to its own shard (``samples.rank<r>.jsonl``); a
store reads the merged file and every shard, :meth:`SampleStore.sync` (a collective) makes every
rank see every row, all ranks the same rows (the runner cuts a task's pending problems into
chunks from them, so the ranks must agree), and :meth:`SampleStore.merge` writes
``samples.jsonl`` in problem order (what one process writes) and removes the shards.

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


# fingerprint key -> the flag a user changes it with (errors name the flag, not the key)
FLAGS = {"model_hash": "--model", "backend": "--backend", "n": "--n",
         "temperature": "--temperature", "top_p": "--top-p", "seed": "--seed",
         "backend_settings": "--api/--extra-body/--tokenizer"}
# a sample whose request the generator could not get answered (Completion.error): no verdict,
# an infrastructure outcome like the verifier's own failures (INFRA_REASONS)
GENERATION_ERROR = "generation_error"
# per-task fingerprint key -> what it is (checked in this order; "spec" last: any other edit)
TASK_FIELDS = {"split": "the split", "max_new_tokens": "--max-new-tokens",
               "prompt": "the prompt template", "verifier": "the verifier settings",
               "spec": "the task spec file"}


class SampleStore:
    """``problems``: task name -> {problem id: row hash} of this run; a logged sample is only
    reused when the row it was made from has the same hash (``--data-file`` A then B with the
    same ids is refused, a larger ``--limit`` extends)."""

    def __init__(self, run_dir: str | os.PathLike, fingerprint: dict[str, Any],
                 problems: dict[str, dict[str, str]] | None = None):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / SAMPLES
        self.rows: dict[tuple[str, str], dict] = {}
        self.stale: dict[str, tuple[str, str]] = {}  # task -> (old, new) verifier version
        self._read()
        self._cfg_path = self.run_dir / CONFIG
        self._pending_fp: dict[str, dict] = {}
        if self._cfg_path.exists():
            old = read_json(self._cfg_path)
            if self.rows:  # settings bind only once samples exist (a rejected run binds nothing)
                self._check(self._cfg_path, old, fingerprint, problems or {})
            tasks = {**old.get("tasks", {}), **fingerprint.get("tasks", {})}
            for name in self.stale:  # the old version until its rows are re-verified
                self._pending_fp[name] = tasks[name]
                tasks[name] = old["tasks"][name]
            fingerprint = {**fingerprint, "tasks": tasks}
        self._fingerprint = fingerprint
        if dist.is_main():
            atomic_write_json(self._cfg_path, fingerprint)
        dist.barrier()
        self._log: JsonlAppender | None = None
        self._replaced = False

    def _check(self, cfg_path: Path, old: dict, new: dict,
               problems: dict[str, dict[str, str]]) -> None:
        """UserError naming the first setting or data row that differs from the samples'."""
        where = f"{cfg_path.parent}: this run directory holds samples made with"
        diff = [FLAGS.get(k, k) for k in sorted(set(old) | set(new))
                if k != "tasks" and old.get(k) != new.get(k)]
        if diff:
            raise UserError(f"{where} other settings ({', '.join(diff)} differ"
                            f"{'s' if len(diff) == 1 else ''}); use another --run-id or --out")
        tasks = {r[0] for r in self.rows}
        for name, fp in new.get("tasks", {}).items():
            was = old.get("tasks", {}).get(name)
            if name not in tasks or was is None:
                continue
            if not isinstance(was, dict):  # written by an older dapo-bench
                raise UserError(f"{where} an older dapo-bench (task {name}); use a new run")
            v_old, v_new = dict(was.get("verifier") or {}), dict(fp.get("verifier") or {})
            if v_old.pop("version", None) != v_new.pop("version", None) and v_old == v_new:
                self.stale[name] = (str(was["verifier"].get("version")),
                                    str(fp["verifier"].get("version")))
                was = {**was, "verifier": fp["verifier"]}
            for k, what in TASK_FIELDS.items():
                if was.get(k) != fp.get(k):
                    raise UserError(f"{where} other settings (task {name}: {what} differs: "
                                    f"{was.get(k)} -> {fp.get(k)}); use another --run-id")
        for name, hashes in problems.items():
            for pid, h in hashes.items():
                row = self.rows.get((name, pid))
                if row is not None and row.get("row_hash") != h:
                    raise UserError(
                        f"{where} other data (task {name}, problem id {pid!r}: the data row "
                        f"differs from the one its sample was made from; data hash "
                        f"{old.get('tasks', {}).get(name, {}).get('data')} -> "
                        f"{new['tasks'][name].get('data')}); use another --run-id")

    def _shards(self) -> list[Path]:
        return sorted(self.run_dir.glob("samples.rank*.jsonl"))

    def _read(self) -> None:
        for p in [self.path, *self._shards()]:
            if p.exists():
                for row in iter_jsonl(p, allow_partial_tail=True):
                    self.rows[(row["task"], str(row["id"]))] = row  # the last line counts

    def sync(self) -> None:
        """Every rank sees every rank's rows, and the same rows (a collective; a no-op in one
        process): no rank writes again until every rank has read. Without the second barrier a
        rank that read late saw the other's first rows of the next task, cut that task's pending
        problems into other chunks, and a problem was made by nobody."""
        if dist.world_size() > 1:
            self.close()
            dist.barrier()
            self._read()
            dist.barrier()

    def merge(self, order: list[tuple[str, str]]) -> None:
        """Write ``samples.jsonl`` from the shards in ``order`` (rank 0; a collective); rows
        of problems this run does not cover follow, as they were."""
        self.sync()
        # several ranks: any rank's new row is in a shard; one process: a replaced row was
        # appended after the row it replaces
        if dist.is_main() and (self._shards() or self._replaced):
            first = [k for k in order if k in self.rows]
            seen = set(first)
            rest = [k for k in self.rows if k not in seen]
            atomic_write_jsonl(self.path, [self.rows[k] for k in first + rest])
            for p in self._shards():
                p.unlink()
        self._replaced = False
        dist.barrier()

    def reverified(self, task: str) -> None:
        """Every logged row of ``task`` is re-verified (and synced): record the new verifier
        version in the fingerprint (a collective)."""
        if task in self.stale:
            self._fingerprint["tasks"][task] = self._pending_fp.pop(task)
            del self.stale[task]
            if dist.is_main():
                atomic_write_json(self._cfg_path, self._fingerprint)
            dist.barrier()

    def get(self, task: str, pid: str) -> dict | None:
        return self.rows.get((task, pid))

    def count(self, task: str) -> int:
        """Logged problems of ``task``."""
        return sum(1 for t, _ in self.rows if t == task)

    def add(self, row: dict) -> None:
        if self._log is None:
            own = self.path if dist.world_size() == 1 else (
                self.run_dir / f"samples.rank{dist.rank()}.jsonl")
            self._log = JsonlAppender(own)
        self._log.write(row)
        key = (row["task"], str(row["id"]))
        self._replaced |= key in self.rows
        self.rows[key] = row

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def infra_samples(row: dict | None) -> list[dict]:
    """A logged row's samples with no verdict on the answer: the verifier failed on its own
    side (``INFRA_REASONS``) or the request for it failed (``GENERATION_ERROR``)."""
    from dapo_bench.verifiers.base import INFRA_REASONS

    return [s for s in (row or {}).get("samples", ())
            if s["reason"] in INFRA_REASONS or s["reason"] == GENERATION_ERROR]


def per_problem_scores(run_dir: str | os.PathLike, task: str) -> dict[str, float]:
    """Problem id -> mean score of its samples, from a run's samples.jsonl; a problem with an
    infrastructure error is left out, as the run's metrics leave it out."""
    path = Path(run_dir) / SAMPLES
    out = {}
    for row in iter_jsonl(path, allow_partial_tail=True):
        if row.get("task") == task and not infra_samples(row):
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
