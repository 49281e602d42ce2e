"""How the options of a training run (``dapo-bench train``'s flags) are resolved.

:class:`RunOptions` (``methods.options``, the floor the methods read it from) holds what every
method shares; :func:`resolve_config` turns a method's
preset, YAML file and ``key=value`` overrides into its config; :func:`resolve_options` fills in
the model, eval tasks and checks every name and number, all BEFORE anything is written.
What the task decides (its spec, ``task_specs/*.yaml``): the default model (``default_model``),
the training split, the eval tasks and the preset used when no ``--model`` is given
(``train:``).

Not covered: writing anything (``run.rundir``), running a method (``run.train``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dapo_bench.config import load_config
from dapo_bench.errors import UserError
from dapo_bench.methods.base import MethodSpec
from dapo_bench.methods.options import RunOptions
from dapo_bench.telemetry import check_report_to

__all__ = ["RunOptions", "resolve_config", "resolve_options", "task_spec"]


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
    if not GENERATORS.get(opts.backend).token_ids:
        raise UserError(f"--backend {opts.backend}: training trains on the token ids it samples, "
                        f"and this backend returns text only; use --backend hf or vllm (--eval-serve "
                        f"CMD evaluates each policy through a server it starts)")
    check_report_to(opts.report_to)
    if opts.eval_serve is not None:
        from dapo_bench.generation.launched import check_serve_cmd

        check_serve_cmd(opts.eval_serve)
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
