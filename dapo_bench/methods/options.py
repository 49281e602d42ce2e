"""The options every training method shares (``dapo-bench train``'s flags): :class:`RunOptions`.

On the methods' floor, so that ``RunContext.opts`` and every method and stage can name the
type they read; how the options are resolved and checked before a run writes anything
(the model, the eval tasks, every name and number) is ``run.resolve``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dapo_bench.config import flag, option, options_table
from dapo_bench.errors import UserError
from dapo_bench.telemetry import REPORT_TO_HELP
from dapo_bench.training.control import CONTROL_BATCH_SIZE, CONTROL_LR

if TYPE_CHECKING:
    from dapo_bench.training.engine import EngineConfig

__all__ = ["MAX_NEW_TOKENS_HELP", "RunOptions", "flag", "option", "options_table"]

# 0 (or unset) means "each task's own max_new_tokens"; the help of eval's and train's flags says so
MAX_NEW_TOKENS_HELP = "cap on generated tokens; 0 or unset = each task's own (tasks/*.yaml)"


@dataclass(frozen=True)
class RunOptions:
    """Options every method shares. Each field is declared once, here, with its help: it is
    a ``dapo-bench train`` flag (``commands/train.py`` builds the flags from these fields), and
    docs/training.md's options table is rendered from them (``config.options_table``;
    tests/methods/test_options.py keeps the two equal). Options of the evaluation only
    (``run.rundir.EVAL_OPTIONS``) and cosmetic ones (``COSMETIC``) are not part of the run id.
    """

    model: str | None = option(
        None, "reference policy dir or hub id (default: the training task's default_model; "
        "arith: the shipped toy policy)", metavar="DIR|ID")
    task: str = option("arith", "training task NAME or NAME:SPLIT (a training set, or a "
                       "task's training split: train and test never meet)",
                       metavar="NAME[:SPLIT]")
    eval_tasks: tuple[str, ...] = option(
        (), "eval tasks, comma-separated or repeated (default: the task's own, e.g. arith -> "
        "arith,arith_ood)", metavar="NAME[,NAME...]")
    eval_limit: int | None = option(None, "first N problems of each eval task (eval's --limit)",
                                    metavar="N")
    eval_max_new_tokens: int | None = option(None, "greedy eval " + MAX_NEW_TOKENS_HELP,
                                                metavar="N")
    eval_serve: str | None = option(
        None, "evaluate each policy through a server this shell command starts and stops: "
        "{model} = the policy's directory, {port} = a free loopback port, {rank} = the rank "
        "(e.g. 'vllm serve {model} --port {port}'); the openai backend's completions API, the "
        "prompt rendered here (docs/tasks.md)", metavar="CMD")
    backend: str = option("hf", "generation backend: hf | vllm (not openai: training needs the "
                          "sampled token ids; --eval-serve evaluates through a server)")
    gen_batch_size: int = option(256, "rows per generation batch (hf; the unit of a sampling "
                                 "stage's progress)", metavar="N")
    deepspeed: str = option("none", "training engine: none | zero0..zero3")
    offload: bool = option(False, "ZeRO CPU offload of optimizer state")
    bf16: bool = option(False, "DeepSpeed bf16 mixed precision (GPU)")
    micro_batch: int = option(
        0, "items per forward/backward pass; a larger batch accumulates gradients (same "
        "update, less memory; 0 = the whole batch; not with --deepspeed)", metavar="N")
    budget_flops: float | None = option(None, "stop training when the ledger reaches these FLOPs",
                                        metavar="F")
    control: bool = option(True, "also train and evaluate the equal-compute SFT control")
    control_lr: float = option(CONTROL_LR, "the control's SFT learning rate", metavar="F")
    control_batch_size: int = option(CONTROL_BATCH_SIZE, "the control's SFT pairs per step",
                                     metavar="N")
    seed: int = option(0, "seed of sampling, data order and init", metavar="N")
    out: str = option("runs", "parent directory of run dirs", metavar="DIR")
    run_id: str | None = option(None, "run dir name (default: method-task-hash of the "
                                "settings; rerun with the same id to resume)", metavar="ID")
    data_dir: str | None = option(None, "benchmark files for file tasks", metavar="DIR")
    quiet: bool = option(False, "plain log lines, no progress bars")
    threads: int | None = option(
        None, "CPU torch threads when no GPU, at most torch's own count (default: the training "
        "task's threads when --model is not given, e.g. 1 for arith's tiny policy; else 2)",
        metavar="N")
    checkpoint_every: int = option(
        0, "save a training stage every K steps (optimizer steps; GRPO/PPO: online steps); a "
        "rerun resumes a killed stage there (0 = off: it restarts)", metavar="K")
    canaries: float = option(
        0.0, "share F of impossible items sampled beside the training problems, never trained "
        "on; a reward on one is a cheat event (0 = none)", metavar="F")
    stop_on_cheat: int = option(0, "stop the run (exit 3, files kept) after K cheat events "
                                "(0 = never)", metavar="K")
    report_to: str = option("none", REPORT_TO_HELP)

    def __post_init__(self) -> None:
        ce = self.checkpoint_every
        if isinstance(ce, bool) or not isinstance(ce, int) or ce < 0:
            raise UserError(f"--checkpoint-every must be an integer >= 0 (0 = off), got {ce!r}")
        if not 0.0 <= self.canaries < 1.0:
            raise UserError(f"--canaries must be a fraction in [0, 1), got {self.canaries!r}")
        if self.stop_on_cheat < 0 or (self.stop_on_cheat and not self.canaries):
            raise UserError(f"--stop-on-cheat {self.stop_on_cheat}: needs --canaries F > 0 "
                            f"and a count >= 1 (0 = never stop)")

    def engine_config(self) -> EngineConfig:
        """The run's training engine settings (``training.engine.EngineConfig``)."""
        from dapo_bench.training.engine import EngineConfig

        return EngineConfig(self.deepspeed, self.offload, self.bf16, self.micro_batch)
