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
several ranks; this is the paper's GRPO baseline, not ByteDance's DAPO variant of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dapo_bench.methods.base import MethodOutput, register_method
from dapo_bench.methods.context import RunContext
from dapo_bench.methods.online_stage import run_online
from dapo_bench.training.batches import token_logprobs
from dapo_bench.training.engine import OptimConfig, make_engine
from dapo_bench.training.loop import LossOut
from dapo_bench.training.online import (
    OnlinePolicy,
    OnlineRun,
    RolloutBatch,
    chunked_logprobs,
    frozen_copy,
    global_rows,
    online_trainer,
    slice_rows,
    update_passes,
)
from dapo_bench.training.policy_gradient import (
    AdvantageInputs,
    agg_weight,
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


@online_trainer
def train_grpo(policy: OnlinePolicy, problems: list, cfg: GRPOConfig,
               run: OnlineRun) -> list[dict]:
    """Train ``policy.model`` in place, sampling from its current weights; per-step logs."""
    model = policy.model
    ref = frozen_copy(model)
    engine = make_engine(model, cfg.optim, run.engine_cfg)
    scope, seed = run.scope, run.seed

    def update(rb: RolloutBatch, step: int) -> dict:
        mask = rb.batch.response_mask
        adv, _ = compute_advantages("grpo", AdvantageInputs(
            outcome_token_rewards(rb.rewards, mask), mask, group=rb.group,
            norm_by_std=cfg.norm_by_std))
        on_policy = cfg.ppo_epochs == 1 and global_rows(rb) <= cfg.minibatch_size
        old = None if on_policy else chunked_logprobs(model, rb, scope=scope)
        ref_lp = chunked_logprobs(ref, rb, scope=scope) if cfg.kl_coef else None

        def loss_fn(idx: list[int]) -> LossOut:
            mb = rb.rows(idx)
            logp = token_logprobs(model, mb)
            out = clipped_policy_loss(
                logp, logp.detach() if old is None else slice_rows(old, idx),
                slice_rows(adv, idx), mb.response_mask, clip_low=cfg.clip_low,
                clip_high=cfg.clip_high, agg=cfg.loss_agg,
                ref_logp=None if ref_lp is None else slice_rows(ref_lp, idx),
                kl_coef=cfg.kl_coef, kl_kind=cfg.kl_kind,
            )
            return LossOut(out.loss, agg_weight(mb.response_mask, cfg.loss_agg), mb.n_tokens,
                           {"pg_loss": out.pg_loss, "kl": out.kl, "clip_frac": out.clip_frac})

        means = update_passes(engine, rb, loss_fn, cfg, scope=scope, seed=seed, step=step)
        return {k: means.get(k, 0.0) for k in ("pg_loss", "kl", "clip_frac")}

    return run.loop(policy, problems, cfg, n_prompts=cfg.prompts_per_step,
                    n_samples=cfg.samples_per_prompt, update=update, engines={"": engine})


@register_method(
    "grpo", config=GRPOConfig, presets=PRESETS,
    help="GRPO: online, G samples per prompt, group-normalised advantages, clipped ratio, "
    "KL to pi_ref",
)
def run_grpo(ctx: RunContext, cfg: GRPOConfig) -> MethodOutput:
    return run_online(ctx, cfg, train_grpo)
