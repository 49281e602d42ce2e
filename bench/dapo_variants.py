"""DAPO variants (beta, critic, advantage estimator, iterations) that share a finished run's
stages whose inputs they do not change.

    python bench/dapo_variants.py --from RUN_DIR --run-id beta0.1 --set beta=0.1
    python bench/dapo_variants.py --from RUN_DIR --run-id critic16x \\
        --set advantage=critic --set critic.model=/path/to/16x-backbone
    python bench/dapo_variants.py --from RUN_DIR --run-id it2 --set iterations=2 \\
        --budget-flops 2x

A variant is an ordinary DAPO run (``run_training``: same options as the base run's
``config.json``, the base config with ``--set`` on top) in ``--out`` (default: beside the base
run). Before it starts, every stage of the base's first iteration whose inputs the variant
leaves unchanged is copied into the variant's run dir with its marker (artifacts, ledger counts
and seconds), in the pipeline order rollouts -> states -> mc -> critic -> advantages -> actor,
stopping at the first stage whose inputs differ; the run then skips the copied stages as a
resumed run does and computes the rest. The copied stages are what the variant would compute
(the same settings, seeds and reference policy give the same artifacts: the pipeline is
deterministic, ``tests/methods/dapo/test_dapo_resume.py``), so the variant's results, FLOPs ledger
included, are those of a run from scratch, at a fraction of its time. The reference policy's
evaluation is copied too when the eval options are equal.

What a stage depends on (``STAGE_INPUTS``): the data stages on every setting but the critic's,
the estimator's and the actor's, and on the FLOP share of one iteration (``--budget-flops`` /
``iterations``; so ``iterations=2`` at twice the budget shares the whole first iteration of a
one-iteration run); the critic on the critic settings; the advantages on the estimator; the
actor on beta and the actor settings.

Not covered: sharing stages of iterations after the first; methods other than dapo.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
import yaml
from script_cli import run_main  # bench/, beside this script

# each stage of iteration 1, the files it writes (under it1/) and the config fields that it
# depends on beyond the previous stage's (the data stages: everything not listed later)
PIPELINE = ("rollouts", "states", "mc", "critic", "advantages", "actor")
FILES = {"rollouts": ["rollouts.jsonl"], "states": ["states.jsonl"], "mc": ["mc.jsonl"],
         "critic": ["critic"], "advantages": ["advantages.jsonl"],
         "actor": ["actor", "ref_logprobs.json"]}
LATER = {"critic": ("critic",), "advantages": ("advantage", "mc_prior", "min_spread"),
         "actor": ("beta", "actor")}
NOT_DATA = ("iterations", *(f for fs in LATER.values() for f in fs))
# run options that change nothing iteration 1 computes
OPTION_FREE = ("quiet", "out", "run_id", "micro_batch", "eval_tasks", "eval_limit",
               "eval_max_new_tokens", "report_to", "checkpoint_every",
               "control", "control_lr", "control_batch_size", "budget_flops")
EVAL_OPTIONS = ("model", "eval_tasks", "eval_limit", "eval_max_new_tokens", "backend",
                "gen_batch_size", "data_dir")


def _per_iteration(saved: dict) -> float | None:
    b = saved["options"].get("budget_flops")
    return None if b is None else b / saved["config"]["iterations"]


def shared_stages(base: dict, new: dict) -> list[str]:
    """The stages of iteration 1 that ``new`` (a saved config) can take from ``base``."""
    if base["method"] != "dapo" or new["method"] != "dapo":
        return []
    def drop(d: dict, keys: tuple) -> dict:
        return {k: v for k, v in d.items() if k not in keys}

    if (drop(base["options"], OPTION_FREE) != drop(new["options"], OPTION_FREE)
            or _per_iteration(base) != _per_iteration(new)
            or drop(base["config"], NOT_DATA) != drop(new["config"], NOT_DATA)):
        return []
    out = ["rollouts", "states", "mc"]
    for stage in ("critic", "advantages", "actor"):
        if any(base["config"][f] != new["config"][f] for f in LATER[stage]):
            break
        out.append(stage)
    return out


def copy_stages(base_dir: Path, run_dir: Path, stages: list[str], eval_ref: bool) -> list[str]:
    """Copy the artifacts and markers of ``stages`` (and the reference eval); returns what was
    copied. A base stage that did not finish, or whose artifacts are gone (a fresh clone of
    committed runs keeps no JSONL), is not copied (nor any after it)."""
    done = []
    for stage in stages:
        marker = base_dir / "stages" / f"it1.{stage}.json"
        files = [base_dir / "it1" / f for f in FILES[stage]]
        if not marker.is_file() or not all(f.exists() for f in files[:1]):
            break
        (run_dir / "it1").mkdir(parents=True, exist_ok=True)
        (run_dir / "stages").mkdir(parents=True, exist_ok=True)
        for f in files:
            if f.is_dir():
                shutil.copytree(f, run_dir / "it1" / f.name, dirs_exist_ok=True)
            elif f.is_file():
                shutil.copy2(f, run_dir / "it1" / f.name)
        shutil.copy2(marker, run_dir / "stages" / marker.name)
        done.append(stage)
    ref = base_dir / "eval" / "reference"
    # the paired comparison reads the reference's samples (not committed: a fresh clone re-runs it)
    if eval_ref and (ref / "samples.jsonl").is_file() and (
            base_dir / "stages" / "eval.reference.json").is_file():
        shutil.copytree(ref, run_dir / "eval" / "reference", dirs_exist_ok=True)
        (run_dir / "stages").mkdir(parents=True, exist_ok=True)
        shutil.copy2(base_dir / "stages" / "eval.reference.json",
                     run_dir / "stages" / "eval.reference.json")
        done.append("eval.reference")
    return done


def main(
    from_: Annotated[Path, typer.Option("--from", help="a DAPO run dir (its config.json)")],
    run_id: Annotated[str, typer.Option(help="the variant's run id")],
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value (repeat)")] = None,
    out: Annotated[Path | None, typer.Option(help="parent dir [default: the base's]")] = None,
    budget_flops: Annotated[str | None, typer.Option(
        help="F, or Nx (N times the base's) [default: the base's]")] = None,
    control: Annotated[bool, typer.Option(help="train the equal-compute SFT control")] = False,
    eval_tasks: Annotated[str | None, typer.Option(
        help="comma-separated eval tasks, e.g. arith_dev for tuning [default: the base's]")
    ] = None,
    threads: Annotated[int, typer.Option(help="torch threads")] = 1,
) -> None:
    """Run one DAPO variant of a finished run, sharing the stages it does not change."""
    import dataclasses

    import torch

    from dapo_bench.config import to_dict
    from dapo_bench.errors import UserError
    from dapo_bench.io import read_json
    from dapo_bench.methods import METHODS
    from dapo_bench.run import RunOptions, resolve_config, run_training

    torch.set_num_threads(threads)
    cfg_path = from_ / "config.json"
    if not cfg_path.is_file():
        raise UserError(f"{cfg_path}: no such file (--from takes a run dir)")
    base = read_json(cfg_path)
    base_opts = RunOptions(**{**base["options"],
                              "eval_tasks": tuple(base["options"]["eval_tasks"])})
    opts, b = base_opts, base_opts.budget_flops
    if budget_flops:
        b = float(budget_flops[:-1]) * (b or 0) if budget_flops.endswith("x") else float(
            budget_flops)
        if not b:
            raise UserError("--budget-flops Nx needs a base run with a budget")
    opts = dataclasses.replace(opts, run_id=run_id, out=str(out or from_.parent),
                               budget_flops=b, control=control, quiet=True)
    if eval_tasks:
        opts = dataclasses.replace(opts, eval_tasks=tuple(eval_tasks.split(",")))
    overrides = list(set_ or [])
    # the base's resolved config as the YAML layer over its preset, --set on top
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as tmp:
        yaml.safe_dump(base["config"], tmp)
    spec = METHODS.get(base["method"])
    # the base as this code reads it: a field added since it ran has its default on both sides
    base = {**base, **_json({"options": to_dict(base_opts), "config": to_dict(
        resolve_config(spec, base_opts, base["preset"], tmp.name, [])[1])})}
    preset, cfg = resolve_config(spec, opts, base["preset"], tmp.name, overrides)
    new = _json({"method": base["method"], "options": to_dict(opts), "config": to_dict(cfg)})
    run_dir = Path(opts.out) / run_id
    if (run_dir / "config.json").is_file():
        print(f"{run_dir}: exists; resuming it", file=sys.stderr)
    else:
        copied = copy_stages(from_, run_dir, shared_stages(base, new),
                             all(base["options"].get(k) == new["options"].get(k)
                                 for k in EVAL_OPTIONS))
        print(f"{run_dir}: shares {', '.join(copied) or 'nothing'} with {from_}",
              file=sys.stderr)
    try:
        run_training(base["method"], opts, preset=preset, config_yaml=tmp.name,
                     overrides=overrides)
    finally:
        Path(tmp.name).unlink(missing_ok=True)


def _json(obj: object) -> dict:
    import json

    return json.loads(json.dumps(obj))


if __name__ == "__main__":
    run_main(main)
