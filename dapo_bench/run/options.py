"""The options of a training run (``dapo-bench train``'s flags) and how they are resolved.

:class:`RunOptions` holds what every method shares; :func:`resolve_config` turns a method's
preset, YAML file and ``key=value`` overrides into its config; :func:`resolve_options` fills in
the model, eval tasks and checks every name and number, all BEFORE anything is written.
What the task decides (its spec, ``task_specs/*.yaml``): the default model (``default_model``),
the training split, the eval tasks and the preset used when no ``--model`` is given
(``train:``).

Not covered: writing anything (``run.rundir``), running a method (``run.train``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from dapo_bench.config import load_config
from dapo_bench.errors import UserError
from dapo_bench.methods.base import MethodSpec
from dapo_bench.telemetry import check_report_to
from dapo_bench.training.sft import CONTROL_BATCH_SIZE, CONTROL_LR


@dataclass(frozen=True)
class RunOptions:
    """Options every method shares (the ``dapo-bench train`` flags).

    model: reference policy (dir or hub id; default: the training task's ``default_model``);
    task: training task ``name`` or ``name:split``; eval_tasks: tasks the result is evaluated on
    (default: the task spec's ``train.eval_tasks``, else the task itself); eval_limit: first N
    problems of each eval task; eval_max_new_tokens: greedy eval cap (None = each task's own);
    eval_serve: evaluate each policy through a server this command line starts
    (``generation.launched``: ``{model}``, ``{port}``, ``{rank}``) with the openai backend's
    completions API, the prompt rendered here as in process (None = in process, with
    ``backend``); backend: generator backend (``GENERATORS``: hf | vllm; openai is refused:
    it gives no token ids); gen_batch_size: rows per generation batch; deepspeed: none | zero0..zero3, offload, bf16, micro_batch (items per forward/backward,
    0 = whole batches; memory only, not part of the run id): the training engine
    (``EngineConfig``, :meth:`engine_config`); budget_flops: the FLOP budget of training; control: also train/evaluate
    the equal-compute SFT control; control_lr / control_batch_size: its SFT settings; seed;
    out: parent dir of run dirs; run_id: run dir name (default: method-task-seed); data_dir:
    benchmark files for file-backed tasks; quiet: plain log lines; checkpoint_every: save a
    training stage every this many steps (optimizer steps; GRPO/PPO: online steps), so a killed
    stage resumes there (0 = off; ``training.checkpoint``); canaries: the share of impossible
    items sampled beside the training problems (0 = none; ``methods.canaries``); stop_on_cheat:
    stop the run after this many rewards on canaries (0 = never); report_to: none | tensorboard |
    wandb, where the run's scalars go while it runs (``dapo_bench.telemetry``; not part of the
    run id).
    """

    model: str | None = None
    task: str = "arith"
    eval_tasks: tuple[str, ...] = ()
    eval_limit: int | None = None
    eval_max_new_tokens: int | None = None
    eval_serve: str | None = None
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
    canaries: float = 0.0
    stop_on_cheat: int = 0
    report_to: str = "none"

    def __post_init__(self) -> None:
        ce = self.checkpoint_every
        if isinstance(ce, bool) or not isinstance(ce, int) or ce < 0:
            raise UserError(f"--checkpoint-every must be an integer >= 0 (0 = off), got {ce!r}")
        if not 0.0 <= self.canaries < 1.0:
            raise UserError(f"--canaries must be a fraction in [0, 1), got {self.canaries!r}")
        if self.stop_on_cheat < 0 or (self.stop_on_cheat and not self.canaries):
            raise UserError(f"--stop-on-cheat {self.stop_on_cheat}: needs --canaries F > 0 "
                            f"and a count >= 1 (0 = never stop)")

    def engine_config(self) -> Any:
        """The run's training engine settings (``training.engine.EngineConfig``)."""
        from dapo_bench.training.engine import EngineConfig

        return EngineConfig(self.deepspeed, self.offload, self.bf16, self.micro_batch)


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
