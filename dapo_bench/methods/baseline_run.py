"""What the baseline methods share at the run level (``RunContext`` side).

- :func:`arith_toy`: the preset chosen when none is named (``toy`` for arith).
- :func:`with_run_optim`: a method's optimiser settings with the run's ``--deepspeed`` engine.
- :func:`train_stage`: the resumable ``train`` stage whose info carries the history.
- :func:`run_online`: the driver of GRPO and PPO (a fresh generator whose model is trained).

Not covered: the method interface itself (``methods.base``) and the losses (``training``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dapo_bench.methods.base import MethodOutput
from dapo_bench.training.baseline_common import OnlinePolicy
from dapo_bench.training.common import OptimConfig, save_policy


def train_stage(ctx: Any, work: Callable[[], dict], out_dir: Path) -> MethodOutput:
    """Run ``work`` as the resumable stage ``train`` (on every rank); it saves the policy to
    ``out_dir`` and returns info with a ``history`` list (kept in the stage marker, so a
    resumed run has it)."""
    info = ctx.run_stage("train", work, trains=True)
    return MethodOutput(str(out_dir), history=info.get("history", []),
                        extra={"train_info": {k: v for k, v in info.items() if k != "history"}})


def arith_toy(opts: Any) -> str:
    """Preset chosen when none is named: ``toy`` for the embedded arith task, else ``default``."""
    return "toy" if opts.task.split(":")[0] == "arith" else "default"


def with_run_optim(ctx: Any, optim: OptimConfig) -> OptimConfig:
    """The method's optimiser settings with the run's engine (``--deepspeed``)."""
    return OptimConfig(**{**optim.__dict__, "deepspeed": ctx.opts.deepspeed})


def check_online_config(cfg: Any) -> None:
    """Unknown names in a GRPO/PPO config raise UserError before any work starts."""
    from dapo_bench.errors import UserError
    from dapo_bench.training.policy_gradient import KL_ESTIMATORS, LOSS_AGGREGATIONS

    LOSS_AGGREGATIONS.get(cfg.loss_agg)
    KL_ESTIMATORS.get(cfg.kl_kind)
    if getattr(cfg, "kl_mode", "reward") not in ("reward", "loss"):
        raise UserError(f"kl_mode: expected reward|loss, got {cfg.kl_mode!r}")
    for name in ("ppo_epochs", "minibatch_size", "max_new_tokens"):
        if getattr(cfg, name) < 1:
            raise UserError(f"{name}: must be >= 1, got {getattr(cfg, name)}")


def run_online(ctx: Any, cfg: Any, train_fn, max_steps: int) -> MethodOutput:
    """Shared driver of GRPO and PPO: one resumable ``train`` stage, policy saved to
    ``<run>/policy``; the per-step history is kept in the stage marker."""
    from dapo_bench.methods.data import Scorer, load_train_problems, load_train_task

    check_online_config(cfg)
    from dapo_bench.errors import UserError
    from dapo_bench.training import dist

    if dist.world_size() > 1:
        raise UserError(f"{ctx.method}: online methods run as one process (they generate inside "
                        f"the training stage); launch without torchrun/deepspeed")
    out_dir = ctx.run_dir / "policy"
    cfg = dataclasses.replace(cfg, optim=with_run_optim(ctx, cfg.optim))

    def work() -> dict:
        problems = load_train_problems(ctx)
        scorer = Scorer(load_train_task(ctx))
        opts = {"batch_size": ctx.opts.gen_batch_size} if ctx.opts.backend == "hf" else {}
        policy = OnlinePolicy.load(ctx.opts.backend, ctx.opts.model,
                                   ctx.run_dir / "policy_sync", **opts)
        try:
            with ctx.progress(f"{ctx.method} steps", max_steps) as advance:
                def log(row: dict) -> None:
                    advance(1)
                    if row["step"] % 10 == 0 or row["step"] == 1:
                        ctx.log(f"{ctx.method} step {row['step']}: reward {row['reward']:.3f}, "
                                f"kl {row['kl']:.4f}, {row['flops']:.3g} FLOPs")

                history = train_fn(policy, problems, cfg, ledger=ctx.ledger, score=scorer,
                                   stage="train", seed=ctx.opts.seed, on_log=log)
            save_policy(policy.model, policy.tokenizer, out_dir)
        finally:
            scorer.close()
            policy.close()
        return {"steps": len(history), "history": history,
                "stopped": "budget" if ctx.ledger.exhausted() else "max_steps"}

    return train_stage(ctx, work, out_dir)
