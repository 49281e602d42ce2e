"""The method interface and the shared training run: ``run_training(method, opts, ...)``.

A method is registered in ``METHODS`` with :func:`register_method`: a function
``fn(ctx: RunContext, cfg) -> MethodOutput`` plus a frozen config dataclass (its docstring is the
user reference), named presets (``default`` = paper settings; ``toy`` = tuned for the embedded
arith task's shipped policy) and the command-line flags it takes besides ``--set``.
``run_training``:

1. checks every option and resolves the config (preset -> YAML -> ``key=value`` overrides)
   BEFORE anything is written, then makes ``runs/<run-id>/`` with ``config.json`` (refusing to
   resume a run dir with another config, and naming the field that differs);
2. runs the method, whose stages go through ``ctx.run_stage`` (``methods.context``);
3. evaluates the reference and the final policy greedily on the eval tasks, and with
   ``control`` trains and evaluates the equal-compute SFT control (``methods.report``);
4. writes ``results.json`` (schema and builder in ``dapo_bench.results``).

What the task decides (its spec, ``tasks/*.yaml``): the default model (``default_model``), the
training split, the eval tasks and the preset used when no ``--model`` is given (``train:``).

Not covered: online methods mixing several training tasks; resuming a run under another config.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dapo_bench import dist
from dapo_bench.config import load_config, to_dict
from dapo_bench.errors import UserError
from dapo_bench.io import atomic_write_json, check_out_dir, check_run_id, read_json
from dapo_bench.methods import METHODS
from dapo_bench.methods.context import RunContext
from dapo_bench.nodes import check_shared_dir
from dapo_bench.training.sft import CONTROL_BATCH_SIZE, CONTROL_LR


@dataclass(frozen=True)
class RunOptions:
    """Options every method shares (the ``dapo-bench train`` flags).

    model: reference policy (dir or hub id; default: the training task's ``default_model``);
    task: training task ``name`` or ``name:split``; eval_tasks: tasks the result is evaluated on
    (default: the task spec's ``train.eval_tasks``, else the task itself); eval_limit: first N
    problems of each eval task; eval_max_new_tokens: greedy eval cap (None = each task's own);
    backend: generator backend (``GENERATORS``: hf | vllm); gen_batch_size: rows per generation
    batch; deepspeed: none | zero0..zero3, offload, bf16, micro_batch (items per forward/backward,
    0 = whole batches; memory only, not part of the run id): the training engine
    (``EngineConfig``, :meth:`engine_config`); budget_flops: the FLOP budget of training; control: also train/evaluate
    the equal-compute SFT control; control_lr / control_batch_size: its SFT settings; seed;
    out: parent dir of run dirs; run_id: run dir name (default: method-task-seed); data_dir:
    benchmark files for file-backed tasks; quiet: plain log lines; checkpoint_every: save a
    training stage every this many steps (optimizer steps; GRPO/PPO: online steps), so a killed
    stage resumes there (0 = off; ``training.checkpoint``).
    """

    model: str | None = None
    task: str = "arith"
    eval_tasks: tuple[str, ...] = ()
    eval_limit: int | None = None
    eval_max_new_tokens: int | None = None
    backend: str = "hf"
    gen_batch_size: int = 256
    deepspeed: str = "none"
    offload: bool = False
    bf16: bool = False
    micro_batch: int = 0
    budget_flops: float | None = None
    control: bool = True
    control_lr: float = CONTROL_LR
    control_batch_size: int = CONTROL_BATCH_SIZE
    seed: int = 0
    out: str = "runs"
    run_id: str | None = None
    data_dir: str | None = None
    quiet: bool = False
    checkpoint_every: int = 0

    def __post_init__(self) -> None:
        ce = self.checkpoint_every
        if isinstance(ce, bool) or not isinstance(ce, int) or ce < 0:
            raise UserError(f"--checkpoint-every must be an integer >= 0 (0 = off), got {ce!r}")

    def engine_config(self) -> Any:
        """The run's training engine settings (``training.engine.EngineConfig``)."""
        from dapo_bench.training.engine import EngineConfig

        return EngineConfig(self.deepspeed, self.offload, self.bf16, self.micro_batch)


@dataclass(frozen=True)
class MethodSpec:
    name: str
    fn: Callable[[RunContext, Any], MethodOutput]
    config_cls: type
    presets: dict[str, dict]
    flags: dict[str, str] = field(default_factory=dict)  # CLI flag name -> config field


@dataclass
class MethodOutput:
    """What a method returns: the final policy dir and what to report."""

    model_dir: str
    history: list[dict] = field(default_factory=list)
    iterations: list[dict] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # e.g. {"critic": {...}}


def register_method(name: str, *, config: type, presets: dict[str, dict], help: str,
                    flags: dict[str, str] | None = None) -> Callable:
    """Decorator: register ``fn(ctx, cfg) -> MethodOutput`` as training method ``name``."""
    if "default" not in presets:
        raise ValueError(f"method {name}: presets need a 'default' entry")

    def deco(fn: Callable) -> Callable:
        METHODS.add(name, MethodSpec(name, fn, config, presets, dict(flags or {})), help=help)
        return fn

    return deco


def flag_overrides(method: str, flags: dict[str, Any]) -> list[str]:
    """``--set`` overrides for the method-specific flags given (None = not given); a flag of
    another method is a UserError naming the methods that take it."""
    spec: MethodSpec = METHODS.get(method)
    out = []
    for flag, value in flags.items():
        if value is None:
            continue
        if flag not in spec.flags:
            takers = [e.name for e in METHODS if flag in e.obj.flags]
            cli = "--" + flag.replace("_", "-")
            raise UserError(f"{cli} is not a {method} option (methods that take it: "
                            f"{', '.join(takers) or 'none'}); use --set FIELD=VALUE")
        out.append(f"{spec.flags[flag]}={value}")
    return out


def task_spec(opts: RunOptions) -> Any:
    from dapo_bench.tasks import TASKS

    return TASKS.get(opts.task.partition(":")[0])


def resolve_config(spec: MethodSpec, opts: RunOptions, preset: str | None,
                   yaml_path: str | None, overrides: list[str]) -> tuple[str, Any]:
    """(preset, config): no preset named -> the task's preset when no --model is given."""
    if preset is None:
        tp = task_spec(opts).train.preset
        preset = tp if opts.model is None and tp in spec.presets else "default"
    if preset not in spec.presets:
        raise UserError(f"method {spec.name}: unknown preset {preset!r} "
                        f"(presets: {', '.join(sorted(spec.presets))})")
    return preset, load_config(spec.config_cls, yaml_path, overrides, base=spec.presets[preset])


def resolve_options(method: str, opts: RunOptions) -> RunOptions:
    """``opts`` with the model, eval tasks and run id filled in, every name checked."""
    from dapo_bench.generation.base import GENERATORS
    from dapo_bench.tasks import TASKS
    from dapo_bench.tasks.spec import default_model

    spec = task_spec(opts)
    model = opts.model or default_model(spec)
    if model is None:
        raise UserError(f"--model is required for task {spec.name} (its spec names no "
                        f"default_model)")
    GENERATORS.entry(opts.backend)
    try:
        opts.engine_config()
    except ValueError as e:
        raise UserError(f"--{e}") from None
    eval_tasks = opts.eval_tasks or spec.train.eval_tasks or (spec.name,)
    for t in eval_tasks:
        TASKS.entry(t)
    if opts.eval_limit is not None and opts.eval_limit < 1:
        raise UserError(f"--eval-limit must be >= 1, got {opts.eval_limit}")
    if opts.budget_flops is not None and opts.budget_flops <= 0:
        raise UserError(f"--budget-flops must be > 0, got {opts.budget_flops:g}")
    if opts.control_batch_size < 1:
        raise UserError(f"--control-batch-size must be >= 1, got {opts.control_batch_size}")
    if not opts.control_lr > 0:
        raise UserError(f"--control-lr must be > 0, got {opts.control_lr:g}")
    return dataclasses.replace(opts, model=model, eval_tasks=tuple(eval_tasks))


def run_training(
    method: str,
    opts: RunOptions = RunOptions(),
    *,
    preset: str | None = None,
    config_yaml: str | None = None,
    overrides: list[str] | tuple[str, ...] = (),
) -> dict:
    """Train with ``method``, evaluate, write ``results.json``; returns the results dict."""
    from dapo_bench.methods.data import check_training_data
    from dapo_bench.methods.report import train_results
    from dapo_bench.models import count_params, load_policy

    spec: MethodSpec = METHODS.get(method)
    preset, cfg = resolve_config(spec, opts, preset, config_yaml, list(overrides))
    opts = resolve_options(method, opts)
    if opts.run_id is not None:
        check_run_id(opts.run_id)
    check_out_dir(opts.out)
    saved = {"method": method, "preset": preset, "options": to_dict(opts), "config": to_dict(cfg)}
    if opts.run_id is None:  # a function of the settings: rerunning the command resumes
        opts = dataclasses.replace(opts, run_id=default_run_id(method, opts, saved))
        saved["options"]["run_id"] = opts.run_id
    train_data = check_training_data(opts)  # train and test never meet (a UserError if they do)
    ref_model, _ = load_policy(opts.model)  # a bad model dir fails before anything is written
    n_params = count_params(ref_model)
    del ref_model
    run_dir = Path(opts.out) / opts.run_id
    if dist.is_main():
        _claim_run_dir(run_dir, saved, spec)
    check_shared_dir(run_dir)  # every node sees this folder, or every rank stops here
    t0 = time.perf_counter()
    ctx = RunContext(run_dir, opts, n_params, method)
    ctx.log(f"run dir {run_dir} (method {method}, preset {preset})")
    try:
        out = spec.fn(ctx, cfg)
        results = train_results(ctx, spec, saved, out, t0, train_data)
    finally:
        ctx.close()
    return results


# options that change nothing a run computes: a resumed run may differ in them (micro_batch
# changes memory, not the update: the same run to float rounding; checkpoints change nothing)
COSMETIC = ("quiet", "out", "run_id", "micro_batch", "checkpoint_every")
# options of the evaluation only: not part of the run id; a resumed run may extend them (more
# eval tasks, a larger --eval-limit) without redoing generation or training
EVAL_OPTIONS = ("eval_tasks", "eval_limit", "eval_max_new_tokens")


def identity(saved: dict) -> dict:
    """What a run dir's training depends on: its saved config minus the cosmetic and the
    eval-only options."""
    out = _jsonable(saved)
    for k in (*COSMETIC, *EVAL_OPTIONS):
        out["options"].pop(k, None)
    return out


def default_run_id(method: str, opts: RunOptions, saved: dict) -> str:
    """``<method>-<task>-<hash8 of the settings>``: the same command gives the same run dir."""
    from dapo_bench.provenance import settings_run_id

    return settings_run_id(f"{method}-{opts.task.replace(':', '-')}", identity(saved))


def _claim_run_dir(run_dir: Path, saved: dict, spec: MethodSpec) -> None:
    """Write ``config.json``, or check that the run dir holds a run of the same config (and
    eval options that only extend the evaluation already made there)."""
    cfg_path = run_dir / "config.json"
    # the config binds once the run dir holds work: a run rejected right after claiming it
    # (config.json alone) does not block the corrected command
    if cfg_path.is_file() and any(p.name != "config.json" for p in run_dir.iterdir()):
        old = read_json(cfg_path)
        diff = _first_difference(identity(old), identity(saved))
        if diff:
            raise UserError(f"{cfg_path}: this run dir holds a run with another config "
                            f"({_flag_of(diff, spec)} differs: {_at(old, diff)} -> "
                            f"{_at(saved, diff)}); pass another --run-id or remove the directory")
        if (run_dir / "eval").is_dir():
            _check_eval_extends(cfg_path, old["options"], _jsonable(saved["options"]))
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(cfg_path, saved)


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
        return "--" + rest.replace("_", "-")
    if head == "config":
        flags = {v: k for k, v in spec.flags.items()}
        return "--" + flags[rest].replace("_", "-") if rest in flags else f"--set {rest}"
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


def train_stage(ctx: RunContext, work: Callable[[], dict], out_dir: Path) -> MethodOutput:
    """Run ``work`` as the resumable stage ``train`` (on every rank); it saves the policy to
    ``out_dir`` and returns info with a ``history`` list (kept in the stage marker, so a
    resumed run has it)."""
    info = ctx.run_stage("train", work, every_rank=True)
    return MethodOutput(str(out_dir), history=info.get("history", []),
                        extra={"train_info": {k: v for k, v in info.items() if k != "history"}})
