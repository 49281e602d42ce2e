"""The run-level driver of the online methods (GRPO, PPO): one resumable ``train`` stage.

The stage loads the training problems and their verifier, makes a fresh generator of the run's
backend (never one shared with eval) whose weights the method trains (``OnlinePolicy``), runs
the method's ``train_*`` function, and saves the policy to ``<run>/policy``; the per-step
history is kept in the stage marker, so a resumed run still reports it.

Several ranks: the stage runs on every rank; each samples its share of every step's prompts
with its own generator and trains data parallel (``training.online``).

Not covered: ZeRO-3 (the generator samples from whole weights).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar

from dapo_bench.errors import UserError
from dapo_bench.generation.base import SamplingParams
from dapo_bench.methods.base import MethodOutput, train_stage
from dapo_bench.methods.context import RunContext, Sampled
from dapo_bench.methods.scorer import Scorer
from dapo_bench.training.online import OnlinePolicy
from dapo_bench.training.rollouts import TrainProblem


class OnlineConfig(Protocol):
    """The fields of an online method's config (``GRPOConfig``, ``PPOConfig``: frozen
    dataclasses, hence read-only here) that this driver reads directly; the step counts it checks
    through ``getattr`` by name, and ``kl_mode`` (PPO's alone) only where the config has it."""

    __dataclass_fields__: ClassVar[dict[str, Any]]  # a dataclass: ``dataclasses.replace`` takes it

    @property
    def loss_agg(self) -> str: ...
    @property
    def kl_kind(self) -> str: ...
    @property
    def max_steps(self) -> int: ...


C = TypeVar("C", bound=OnlineConfig)


def check_online_config(cfg: OnlineConfig) -> None:
    """Unknown names in a GRPO/PPO config raise UserError before any work starts."""
    from dapo_bench.training.policy_gradient import KL_ESTIMATORS, LOSS_AGGREGATIONS

    LOSS_AGGREGATIONS.get(cfg.loss_agg)
    KL_ESTIMATORS.get(cfg.kl_kind)
    if (mode := getattr(cfg, "kl_mode", "reward")) not in ("reward", "loss"):
        raise UserError(f"kl_mode: expected reward|loss, got {mode!r}")
    for name in ("ppo_epochs", "minibatch_size", "max_new_tokens", "max_steps"):
        if getattr(cfg, name) < 1:
            raise UserError(f"{name}: must be >= 1, got {getattr(cfg, name)}")


def run_online(ctx: RunContext, cfg: C, train_fn: Callable[..., list[dict]]) -> MethodOutput:
    """Run ``train_fn(policy, problems, cfg, ...)`` as the run's ``train`` stage."""
    from dapo_bench.methods.context import new_generator, step_counter
    from dapo_bench.methods.data import load_train_problems, load_train_task
    from dapo_bench.methods.scorer import Scorer
    from dapo_bench.models import save_policy
    from dapo_bench.training import budget

    check_online_config(cfg)
    if ctx.engine_cfg.deepspeed == "zero3":
        raise UserError(f"{ctx.method}: --deepspeed zero3 partitions the weights the online "
                        f"generator samples from; use zero0-zero2 or the torch engine")
    out_dir = ctx.run_dir / "policy"
    nominal = cfg.max_steps  # with a FLOP target the budget, not max_steps, ends training
    cfg = dataclasses.replace(cfg, max_steps=budget.steps(ctx.ledger, nominal))

    def work() -> dict:
        problems = load_train_problems(ctx)
        scorer = Scorer(load_train_task(ctx))
        policy = OnlinePolicy(new_generator(ctx.opts, ctx.reference), ctx.reference,
                              ctx.run_dir / "policy_sync")
        try:
            with ctx.progress(f"{ctx.method} steps", nominal, unit="steps") as advance:
                report = step_counter(advance)

                def log(row: dict) -> None:
                    report(row["step"])
                    if row["step"] % 10 == 0 or row["step"] == 1:
                        ctx.log(f"{ctx.method} step {row['step']}: reward {row['reward']:.3f}, "
                                f"kl {row['kl']:.4f}, {row['flops']:.3g} FLOPs")

                history = train_fn(policy, problems, cfg, scope=ctx.scope("train"), score=scorer,
                                   seed=ctx.opts.seed, engine_cfg=ctx.engine_cfg,
                                   on_log=log, watch=_told(ctx, scorer, problems))
            save_policy(policy.model, policy.tokenizer, out_dir)
            ctx.count("train", {k: sum(h[k] for h in history)
                                for k in ("rows", "context_cut", "response_cut")})
            ctx.count("train", {k: v for k in ("infra_errors",)
                                if (v := sum(h.get(k, 0) for h in history))})
        finally:
            scorer.close()
            policy.close()
        return {"steps": len(history), "history": history,
                "responses_sampled": sum(h["rows"] for h in history),
                "stopped": "budget" if ctx.ledger.exhausted() else "max_steps"}

    return train_stage(ctx, work, out_dir)


def _told(ctx: RunContext, scorer: Scorer, problems: list[TrainProblem]
          ) -> Callable[[OnlinePolicy, int, int, SamplingParams], None]:
    """The online loop's ``watch``: each step's sampling, told to the run's hooks
    (``RunContext.sampled``; with ``--canaries`` they sample the step's canaries from the same
    weights, before the update)."""
    from dapo_bench.methods.data import load_train_problems

    def watch(policy: OnlinePolicy, step: int, n_prompts: int, params: SamplingParams) -> None:
        ctx.sampled(Sampled("train", policy.generator, scorer, len(problems), params.n, params,
                            lambda task: load_train_problems(ctx, task=task), step, n_prompts))

    return watch
