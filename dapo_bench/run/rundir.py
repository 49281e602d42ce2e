"""A run's directory and its identity: ``runs/<run-id>/config.json``.

The run id, unless ``--run-id`` names it, is a function of the settings that change what a run
computes (:func:`identity`: the saved config minus cosmetic and eval-only options), so
rerunning a command resumes it. :func:`claim_run_dir` writes ``config.json``, or refuses a run
dir that holds a run of another config (naming the flag that differs) or whose evaluation a
rerun would shrink.

Not covered: several runs writing one directory at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dapo_bench.config import flag
from dapo_bench.errors import UserError
from dapo_bench.io import atomic_write_json, read_json
from dapo_bench.methods.base import MethodSpec
from dapo_bench.run.resolve import RunOptions

# options that change nothing a run computes: a resumed run may differ in them (micro_batch
# changes memory, not the update: the same run to float rounding; --threads the speed, to float
# rounding too; checkpoints, --report-to and --stop-on-cheat change nothing)
COSMETIC = ("quiet", "out", "run_id", "micro_batch", "checkpoint_every", "stop_on_cheat",
            "report_to", "threads")
# options added after runs were made that change nothing at their default: left out of the
# identity when at it, so run ids of runs that do not use them stay what they were
LATER = {"canaries": 0.0}
# options of the evaluation only: not part of the run id; a resumed run may extend them (more
# eval tasks, a larger --eval-limit) without redoing generation or training
EVAL_OPTIONS = ("eval_tasks", "eval_limit", "eval_max_new_tokens", "eval_serve")


def identity(saved: dict) -> dict:
    """What a run dir's training depends on: its saved config minus the cosmetic and the
    eval-only options."""
    out = _jsonable(saved)
    for k in (*COSMETIC, *EVAL_OPTIONS):
        out["options"].pop(k, None)
    for k, default in LATER.items():
        if out["options"].get(k) == default:
            out["options"].pop(k)
    return out


def default_run_id(method: str, opts: RunOptions, saved: dict) -> str:
    """``<method>-<task>-<hash8 of the settings>``: the same command gives the same run dir."""
    from dapo_bench.provenance import settings_run_id

    return settings_run_id(f"{method}-{opts.task.replace(':', '-')}", identity(saved))


def claim_run_dir(run_dir: Path, saved: dict, spec: MethodSpec) -> None:
    """Write ``config.json``, or check that the run dir holds a run of the same config (and
    eval options that only extend the evaluation already made there)."""
    cfg_path = run_dir / "config.json"
    # the config binds once the run dir holds work: a run rejected right after claiming it
    # (config.json alone) does not block the corrected command
    if cfg_path.is_file() and any(p.name != "config.json" for p in run_dir.iterdir()):
        old = _as_now(read_json(cfg_path), spec)
        diff = _first_difference(identity(old), identity(saved))
        if diff:
            raise UserError(f"{cfg_path}: this run dir holds a run with another config "
                            f"({_flag_of(diff, spec)} differs: {_at(old, diff)} -> "
                            f"{_at(saved, diff)}); pass another --run-id or remove the directory")
        if (run_dir / "eval").is_dir():
            _check_eval_extends(cfg_path, old["options"], _jsonable(saved["options"]))
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(cfg_path, saved)


def _as_now(saved: dict, spec: MethodSpec) -> dict:
    """A saved config as this code reads it: an option or config field added since it was
    written has its default (which is what that run did), so a new field does not make an old
    run dir another run's."""
    from dapo_bench.config import load_config, to_dict

    try:
        cfg = to_dict(load_config(spec.config_cls, None, [], base=saved["config"]))
    except (UserError, ValueError, TypeError):  # not this method's config: left to differ
        return saved
    return {**saved, "options": {**to_dict(RunOptions()), **saved["options"]},
            "config": cfg}


def _check_eval_extends(cfg_path: Path, old: dict, new: dict) -> None:
    """A run whose eval has started may add eval tasks or problems, not drop or change them."""
    why = ""
    if old.get("eval_max_new_tokens") != new.get("eval_max_new_tokens"):
        why = (f"--eval-max-new-tokens differs: {old.get('eval_max_new_tokens')} -> "
               f"{new.get('eval_max_new_tokens')}")
    elif not set(old.get("eval_tasks") or ()) <= set(new.get("eval_tasks") or ()):
        why = (f"--eval-tasks drops {', '.join(sorted(set(old['eval_tasks']) - set(new['eval_tasks'])))}")
    elif new.get("eval_limit") is not None and (old.get("eval_limit") is None
                                                or new["eval_limit"] < old["eval_limit"]):
        why = f"--eval-limit {new['eval_limit']} is below {old.get('eval_limit') or 'all'}"
    if why:
        res = cfg_path.parent / "results.json"
        final = read_json(res)["model"]["path"] if res.is_file() else "FINAL_POLICY_DIR"
        raise UserError(f"{cfg_path}: this run's evaluation was made with other eval options "
                        f"({why}); a rerun may only add eval tasks or problems; evaluate its "
                        f"policy with `dapo-bench eval --model {final}` or pass another --run-id")


def _flag_of(dotted: str, spec: MethodSpec) -> str:
    """The flag a user changes a saved field with: options.seed -> --seed, config.beta ->
    --beta (a method flag) or --set beta."""
    head, _, rest = dotted.partition(".")
    if head == "options":
        return flag(rest)
    if head == "config":
        return flag(rest) if rest in spec.flags else f"--set {rest}"
    return f"--{head}"


def _at(saved: dict, dotted: str) -> Any:
    node: Any = saved
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _first_difference(old: Any, new: Any, where: str = "") -> str:
    """The dotted path of the first field where ``old`` and ``new`` differ ('' if equal)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            d = _first_difference(old.get(k), new.get(k), f"{where}.{k}" if where else k)
            if d:
                return d
        return ""
    return "" if old == new else (where or "config")


def _jsonable(obj: Any) -> Any:
    import json

    return json.loads(json.dumps(obj))
