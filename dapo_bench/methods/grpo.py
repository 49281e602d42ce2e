"""``grpo``: Group Relative Policy Optimization (Shao et al. 2024), online, outcome reward.

Each step samples ``samples_per_prompt`` (G) responses for each of ``prompts_per_step`` prompts
from the current policy, scores them with the verifier, and sets every token's advantage to the
response's reward normalised within its group (``grpo`` estimator: (r - mean) / (std + eps)).
The actor minimises PPO's clipped surrogate plus ``kl_coef`` * KL(pi || pi_ref) (``k3``
estimator by default) with the per-token losses reduced by ``loss_agg`` (``token-mean``,
``seq-mean-token-sum`` or ``seq-mean-token-mean``). pi_ref is the starting policy, frozen.

Compute ledger (stage ``train``): sampling and old/ref log-prob passes as inference, actor
updates as training. The loop stops at ``max_steps`` or when the ledger reaches the budget.

Not covered: dynamic sampling / filtering of all-correct groups, entropy bonus, process rewards,
several processes; this is the paper's GRPO baseline, not ByteDance's DAPO variant of it.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from dapo_bench.generation.base import SamplingParams
from dapo_bench.ledger import Ledger
from dapo_bench.methods.base import MethodOutput, register_method
from dapo_bench.training.baseline_common import (
    OnlinePolicy,
    Score,
    chunked_logprobs,
    groups_to_batch,
    minibatches,
    sample_groups,
    shuffled_cycle,
    slice_rows,
)
from dapo_bench.training.common import OptimConfig, make_engine, save_policy, token_logprobs
from dapo_bench.training.policy_gradient import (
    AdvantageInputs,
    clipped_policy_loss,
    compute_advantages,
    outcome_token_rewards,
)


@dataclass(frozen=True)
class GRPOConfig:
    """GRPO settings (defaults: the paper's baseline for 7-8B models on MATH).

    prompts_per_step, samples_per_prompt: rollout batch = prompts x G samples (64 x 16);
    temperature, top_p, max_new_tokens: sampling of the rollouts; kl_coef: weight of the KL
    term to pi_ref (0.01); kl_kind: KL estimator (k1|k2|k3); clip_low/clip_high: ratio clip
    range [1 - low, 1 + high]; loss_agg: token-mean | seq-mean-token-sum | seq-mean-token-mean;
    norm_by_std: divide group-centred rewards by the group std; ppo_epochs: passes over each
    rollout batch; minibatch_size: responses per optimizer step; max_steps: rollout steps (the
    FLOP budget may stop earlier); optim.lr: actor learning rate (1e-6).
    """

    prompts_per_step: int = 64
    samples_per_prompt: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    kl_coef: float = 0.01
    kl_kind: str = "k3"
    clip_low: float = 0.2
    clip_high: float = 0.2
    loss_agg: str = "seq-mean-token-mean"
    norm_by_std: bool = True
    ppo_epochs: int = 1
    minibatch_size: int = 256
    max_steps: int = 500
    max_length: int = 2048
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=1e-6))


PRESETS: dict[str, dict] = {
    "default": {},
    "toy": {
        "prompts_per_step": 16, "samples_per_prompt": 8, "max_new_tokens": 128,
        "minibatch_size": 64, "max_steps": 400, "max_length": 256,
        "optim": {"lr": 2e-5},
    },
}


def sampling_params(cfg: Any, n: int, seed: int) -> SamplingParams:
    return SamplingParams(n=n, temperature=cfg.temperature, top_p=cfg.top_p,
                          max_new_tokens=cfg.max_new_tokens, seed=seed)


def train_grpo(
    policy: OnlinePolicy,
    problems: list,
    cfg: GRPOConfig,
    *,
    ledger: Ledger,
    score: Score,
    stage: str = "train",
    seed: int = 0,
    on_log=None,
) -> list[dict]:
    """Train ``policy.model`` in place, sampling from its current weights; per-step logs."""
    model, tok = policy.model, policy.tokenizer
    ref = copy.deepcopy(model).eval()
    for p in ref.parameters():
        p.requires_grad_(False)
    engine = make_engine(model, cfg.optim)
    stream = shuffled_cycle(problems, seed)
    history: list[dict] = []
    t0 = time.perf_counter()
    for step in range(cfg.max_steps):
        if ledger.exhausted():
            break
        model.eval()
        policy.sync()
        batch_problems = [next(stream) for _ in range(cfg.prompts_per_step)]
        groups = sample_groups(
            policy.generator, batch_problems, cfg.samples_per_prompt, score,
            sampling_params(cfg, cfg.samples_per_prompt, seed * 100003 + step),
            ledger=ledger, stage=stage, chunk_size=cfg.prompts_per_step,
        )
        rb = groups_to_batch(tok, groups, cfg.max_length)
        mask = rb.batch.response_mask
        rewards = outcome_token_rewards(rb.rewards, mask)
        adv, _ = compute_advantages("grpo", AdvantageInputs(
            rewards, mask, group=rb.group, norm_by_std=cfg.norm_by_std))
        n = len(rb.rewards)
        on_policy = cfg.ppo_epochs == 1 and n <= cfg.minibatch_size
        old = None if on_policy else chunked_logprobs(model, rb, ledger=ledger, stage=stage)
        ref_lp = None
        if cfg.kl_coef:
            ref_lp = chunked_logprobs(ref, rb, ledger=ledger, stage=stage)
        model.train()
        stats = _update_actor(model, engine, rb, adv, (old, ref_lp), cfg, ledger,
                              (stage, seed, step))
        policy.mark_updated()
        row = {
            "step": step + 1,
            "reward": sum(rb.rewards) / max(n, 1),
            "response_tokens": float(mask.sum()) / max(n, 1),
            "flops": ledger.total_flops,
            "seconds": round(time.perf_counter() - t0, 2),
            **stats,
        }
        history.append(row)
        if on_log:
            on_log(row)
    model.eval()
    return history


def _update_actor(model, engine, rb, adv, old_ref, cfg, ledger: Ledger, where) -> dict:
    """``ppo_epochs`` passes of clipped-surrogate minibatch steps; mean stats of the steps."""
    old, ref_lp = old_ref
    stage, seed, step = where
    mask = rb.batch.response_mask
    sums = {"pg_loss": 0.0, "kl": 0.0, "clip_frac": 0.0}
    k = 0
    for epoch in range(cfg.ppo_epochs):
        for idx in minibatches(mask.size(0), cfg.minibatch_size, seed + 7919 * step + epoch):
            if ledger.exhausted():
                break
            mb = rb.rows(idx)
            logp = token_logprobs(model, mb)
            old_mb = logp.detach() if old is None else slice_rows(old, idx)
            out = clipped_policy_loss(
                logp, old_mb, slice_rows(adv, idx), mb.response_mask,
                clip_low=cfg.clip_low, clip_high=cfg.clip_high, agg=cfg.loss_agg,
                ref_logp=None if ref_lp is None else slice_rows(ref_lp, idx),
                kl_coef=cfg.kl_coef, kl_kind=cfg.kl_kind,
            )
            engine.step(out.loss)
            ledger.add_train(stage, mb.n_tokens)
            sums["pg_loss"] += out.pg_loss
            sums["kl"] += out.kl
            sums["clip_frac"] += out.clip_frac
            k += 1
    return {key: v / max(k, 1) for key, v in sums.items()}


def arith_toy(opts: Any) -> str:
    """Preset chosen when none is named: ``toy`` for the embedded arith task, else ``default``."""
    return "toy" if opts.task.split(":")[0] == "arith" else "default"


def with_run_optim(ctx: Any, optim: OptimConfig) -> OptimConfig:
    """The method's optimiser settings with the run's engine (``--deepspeed``)."""
    return OptimConfig(**{**optim.__dict__, "deepspeed": ctx.opts.deepspeed})


def run_online(ctx: Any, cfg: Any, train_fn, max_steps: int) -> MethodOutput:
    """Shared driver of GRPO and PPO: one resumable ``train`` stage, policy saved to
    ``<run>/policy``; the per-step history is kept in the stage marker."""
    from dapo_bench.methods.data import Scorer, load_train_problems, load_train_task

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

    info = ctx.run_stage("train", work)
    return MethodOutput(str(out_dir), history=info["history"],
                        extra={"train_info": {k: v for k, v in info.items() if k != "history"}})


@register_method(
    "grpo", config=GRPOConfig, presets=PRESETS, default_preset=arith_toy,
    help="GRPO: online, G samples per prompt, group-normalised advantages, clipped ratio, "
    "KL to pi_ref",
)
def run_grpo(ctx: Any, cfg: GRPOConfig) -> MethodOutput:
    return run_online(ctx, cfg, train_grpo, cfg.max_steps)
