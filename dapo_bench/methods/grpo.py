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

import time
from dataclasses import dataclass, field
from typing import Any

from dapo_bench.generation.base import SamplingParams
from dapo_bench.ledger import Ledger
from dapo_bench.methods.base import MethodOutput, register_method
from dapo_bench.methods.baseline_run import arith_toy, run_online
from dapo_bench.training.baseline_common import (
    OnlinePolicy,
    Score,
    chunked_logprobs,
    frozen_copy,
    minibatches,
    sample_step,
    shuffled_cycle,
    slice_rows,
    step_log,
)
from dapo_bench.training.common import OptimConfig, make_engine, token_logprobs
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
    model = policy.model
    ref = frozen_copy(model)
    engine = make_engine(model, cfg.optim)
    stream = shuffled_cycle(problems, seed)
    history: list[dict] = []
    t0 = time.perf_counter()
    for step in range(cfg.max_steps):
        if ledger.exhausted():
            break
        rb = sample_step(policy, stream, cfg.prompts_per_step, cfg.samples_per_prompt, score,
                         sampling_params(cfg, cfg.samples_per_prompt, seed * 100003 + step),
                         ledger=ledger, stage=stage, max_length=cfg.max_length)
        mask = rb.batch.response_mask
        rewards = outcome_token_rewards(rb.rewards, mask)
        adv, _ = compute_advantages("grpo", AdvantageInputs(
            rewards, mask, group=rb.group, norm_by_std=cfg.norm_by_std))
        on_policy = cfg.ppo_epochs == 1 and len(rb.rewards) <= cfg.minibatch_size
        old = None if on_policy else chunked_logprobs(model, rb, ledger=ledger, stage=stage)
        ref_lp = None
        if cfg.kl_coef:
            ref_lp = chunked_logprobs(ref, rb, ledger=ledger, stage=stage)
        model.train()
        stats = _update_actor(model, engine, rb, adv, (old, ref_lp), cfg, ledger,
                              (stage, seed, step))
        policy.mark_updated()
        history.append(step_log(step, rb, ledger, t0, stats))
        if on_log:
            on_log(history[-1])
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


@register_method(
    "grpo", config=GRPOConfig, presets=PRESETS, default_preset=arith_toy,
    help="GRPO: online, G samples per prompt, group-normalised advantages, clipped ratio, "
    "KL to pi_ref",
)
def run_grpo(ctx: Any, cfg: GRPOConfig) -> MethodOutput:
    return run_online(ctx, cfg, train_grpo, cfg.max_steps)
