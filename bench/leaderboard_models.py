"""Evaluate every model of a leaderboard spec on every task of its tables, then re-render (GPU).

    python bench/leaderboard_models.py [leaderboards/models.yaml] [--backend vllm|hf]
        [--limit N] [--data-dir DIR] [--dry-run]

The spec is the model list: each measured row whose ``match`` names ``model.path`` (a hub id
or a directory) is a model, and the ``task`` columns of its table are the tasks. For table T
and model M this runs, one process per (T, M) so that each model's GPU memory is freed,

    dapo-bench eval --tasks <T's tasks> --model M --out <inputs.dir>/T --run-id <slug of M>

(greedy, the tasks' own prompts and token caps), skipping a run whose results.json exists
(delete it to rerun; a killed run resumes from its samples), then ``dapo-bench leaderboard
SPEC``. ``--limit N`` (a quick pass) writes under ``runs/<spec name>-limitN`` and renders there,
leaving the committed tables alone. A row's ``path`` glob must select ``T/*`` (checked before any work). ``--dry-run``
prints the commands and runs nothing. Not covered: sampling (n > 1), several GPUs per model
(use the vllm backend's own tensor parallelism through ``dapo-bench eval`` directly).
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from dapo_bench.errors import UserError
from dapo_bench.leaderboard.spec import load_spec


@dataclass(frozen=True)
class EvalRun:
    table: str
    row: str
    model: str
    tasks: tuple[str, ...]
    out: Path
    run_id: str

    def command(self, backend: str, limit: int | None, data_dir: str | None) -> list[str]:
        cmd = ["dapo-bench", "eval", "--tasks", ",".join(self.tasks),
               "--model", self.model, "--backend", backend, "--out", str(self.out),
               "--run-id", self.run_id, "--quiet"]
        if limit:
            cmd += ["--limit", str(limit)]
        if data_dir:
            cmd += ["--data-dir", data_dir]
        return cmd


def slug(model: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", model.rsplit("/", 1)[-1].lower()).strip("-")


def runs_dir(spec_path: str | Path, limit: int | None = None) -> Path:
    """The spec's ``inputs.dir``; with ``--limit N``, ``runs/<spec name>-limitN`` (under the
    working directory, git-ignored) so that a quick pass never shadows, or is committed as,
    a full run."""
    spec = load_spec(spec_path)
    if limit:
        return Path("runs") / f"{spec.name}-limit{limit}"
    return Path(spec_path).parent / (spec.inputs.dir if spec.inputs else "runs")


def plan(spec_path: str | Path, limit: int | None = None) -> list[EvalRun]:
    """The eval runs a spec asks for, in table then row order (see the module doc)."""
    spec = load_spec(spec_path)
    root = runs_dir(spec_path, limit)
    out: list[EvalRun] = []
    for t in spec.tables:
        tasks = tuple(c.task for c in t.columns if c.task)
        for r in t.rows:
            model = r.match.get("model.path")
            if model is None:
                continue
            where = f"{spec_path}: tables.{t.id}.rows.{r.id}"
            if isinstance(model, list):
                model = model[0]
            if not tasks:
                raise UserError(f"{where}: table {t.id} has no task columns to evaluate")
            run = EvalRun(t.id, r.id, str(model), tasks, root / t.id, slug(str(model)))
            rel = f"{t.id}/{run.run_id}/results.json"
            globs = r.match.get("path", ["*"])
            if not any(fnmatch.fnmatchcase(rel, g) for g in (globs if isinstance(
                    globs, list) else [globs])):
                raise UserError(f"{where}: match.path {globs!r} does not select {rel}, where "
                                "this script writes the run")
            out.append(run)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("spec", nargs="?", default="leaderboards/models.yaml")
    ap.add_argument("--backend", default="hf", choices=("hf", "vllm"))
    ap.add_argument("--limit", type=int, default=None, help="first N problems of each task")
    ap.add_argument("--data-dir", default=None, help="local benchmark files (DIR/math/...)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    args = ap.parse_args(argv)
    try:
        runs = plan(args.spec, args.limit)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for run in runs:
        cmd = run.command(args.backend, args.limit, args.data_dir)
        done = (run.out / run.run_id / "results.json").is_file()
        print(("# done, skipped: " if done else "") + shlex.join(cmd), flush=True)
        if not (args.dry_run or done):
            rc = subprocess.call([sys.executable, "-m", "dapo_bench.cli", *cmd[1:]])
            if rc != 0:
                print(f"error: {run.model} on {run.table} exited {rc}", file=sys.stderr)
                return rc
    render = ["dapo-bench", "leaderboard", str(args.spec)]
    if args.limit:  # a quick pass renders beside its own runs, not over the committed tables
        d = str(runs_dir(args.spec, args.limit))
        render += ["--runs", d, "--out", d]
    print(shlex.join(render), flush=True)
    if args.dry_run:
        return 0
    return subprocess.call([sys.executable, "-m", "dapo_bench.cli", *render[1:]])


if __name__ == "__main__":
    sys.exit(main())
