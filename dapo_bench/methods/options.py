"""The options every training method shares (``dapo-bench train``'s flags): :class:`RunOptions`.

On the methods' floor, so that ``RunContext.opts`` and every method and stage can name the
type they read; how the options are resolved and checked before a run writes anything
(the model, the eval tasks, every name and number) is ``run.options``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dapo_bench.errors import UserError
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
