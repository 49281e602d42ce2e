"""``ppo``: Proximal Policy Optimization with a learned critic (the RLHF recipe), online.

Each step samples one response for each of ``rollout_batch`` prompts from the current policy
and scores it with the verifier (reward on the last token). The reward is shaped per token by
``-kl_coef * (log pi - log pi_ref)`` (``kl_mode="reward"``, the InstructGPT/OpenRLHF choice) or
the KL goes into the actor loss (``kl_mode="loss"``). A critic (the policy's transformer body,
copied, plus a zero-initialised linear head; ``training.value.ValueModel``) gives V(s_t) for the
state before each response token; advantages are GAE (gamma 1, lambda 0.95), whitened over the
batch. The actor minimises the clipped surrogate; the critic the clipped value loss against the
GAE returns; both for ``ppo_epochs`` passes of minibatches. pi_ref is the starting policy, frozen.

Compute ledger (stage ``train``): sampling, old/ref log-prob and value passes as inference,
actor and critic updates as training. The critic is as large as the policy, so its tokens are
charged at the policy's parameter count.

Not covered: a critic separate from the policy's architecture, value-head warm-up, reward
models (the reward is the verifier's), entropy bonus, adaptive KL control.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

from dapo_bench.methods.base import MethodOutput, register_method
from dapo_bench.methods.context import RunContext
from dapo_bench.methods.online_stage import run_online
from dapo_bench.training.batches import PairBatch, token_logprobs
from dapo_bench.training.engine import OptimConfig, make_engine
from dapo_bench.training.loop import LossOut
from dapo_bench.training.online import (
    OnlinePolicy,
    OnlineRun,
    RolloutBatch,
    chunked_logprobs,
    frozen_copy,
    online_trainer,
    slice_rows,
    update_passes,
)
from dapo_bench.training.policy_gradient import (
    AdvantageInputs,
    agg_weight,
    clipped_policy_loss,
    clipped_value_loss,
    compute_advantages,
    masked_whiten,
    outcome_token_rewards,
    shaped_rewards,
)
from dapo_bench.training.value import ValueModel


@dataclass(frozen=True)
class PPOConfig:
    """PPO settings (defaults: the paper's baseline for 7-8B models on MATH).

    rollout_batch: prompts per step, one sample each (1024); temperature (1.0), top_p,
    max_new_tokens: sampling; kl_coef: KL to pi_ref (0.01); kl_mode: "reward" (shaped reward)
    or "loss" (actor loss term); kl_kind: KL estimator (k1|k2|k3); gamma, lam: GAE (1, 0.95);
    clip: ratio clip; value_clip: critic clip; loss_agg: token-mean | seq-mean-token-sum |
    seq-mean-token-mean; whiten: normalise advantages over the batch; ppo_epochs, minibatch_size:
    update passes and responses per optimizer step; max_steps: rollout steps (the FLOP budget may
    stop earlier); optim.lr: actor lr (5e-7); critic_lr: critic lr (9e-6).
    """

    rollout_batch: int = 1024
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    kl_coef: float = 0.01
    kl_mode: str = "reward"
    kl_kind: str = "k1"
    gamma: float = 1.0
    lam: float = 0.95
    clip: float = 0.2
    value_clip: float = 0.2
    loss_agg: str = "token-mean"
    whiten: bool = True
    ppo_epochs: int = 1
    minibatch_size: int = 256
    max_steps: int = 500
    max_length: int = 2048
    critic_lr: float = 9e-6
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=5e-7))


PRESETS: dict[str, dict] = {
    "default": {},
    "toy": {
        "rollout_batch": 128, "max_new_tokens": 128, "minibatch_size": 64, "max_steps": 400,
        "max_length": 256, "ppo_epochs": 1, "critic_lr": 1e-3, "optim": {"lr": 2e-5},
    },
}


def token_values(critic: ValueModel, batch: PairBatch) -> torch.Tensor:
    """[B, L] values aligned with ``token_logprobs``: column i = V(state before token i), i.e.
    the head applied to the hidden state of token i - 1; 0 outside the response."""
    v = critic.hidden_values(batch.input_ids, batch.attention_mask)
    out = torch.zeros_like(v)
    out[:, 1:] = v[:, :-1]
    return out * batch.response_mask


@online_trainer
def train_ppo(policy: OnlinePolicy, problems: list, cfg: PPOConfig,
              run: OnlineRun) -> list[dict]:
    """Train ``policy.model`` in place and a critic beside it; returns per-step logs."""
    model = policy.model
    ref = frozen_copy(model)
    critic = ValueModel.from_causal_lm(copy.deepcopy(model))
    engines = {"actor": make_engine(model, cfg.optim, run.engine_cfg),
               "critic": make_engine(critic, OptimConfig(**{**cfg.optim.__dict__,
                                                            "lr": cfg.critic_lr}), run.engine_cfg)}
    scope, seed = run.scope, run.seed

    def update(rb: RolloutBatch, step: int) -> dict:
        mask = rb.batch.response_mask
        old = chunked_logprobs(model, rb, scope=scope)
        ref_lp = chunked_logprobs(ref, rb, scope=scope) if cfg.kl_coef else old
        with torch.no_grad():
            critic.eval()
            old_v = token_values(critic, rb.batch)
            scope.charge_ranks(rb.batch.n_tokens)
        rewards = outcome_token_rewards(rb.rewards, mask)
        if cfg.kl_mode == "reward" and cfg.kl_coef:
            rewards = shaped_rewards(rewards, old, ref_lp, mask, cfg.kl_coef, cfg.kl_kind)
        adv, returns = compute_advantages("gae", AdvantageInputs(
            rewards, mask, values=old_v, gamma=cfg.gamma, lam=cfg.lam))
        if cfg.whiten:
            adv = masked_whiten(adv, mask)

        def loss_fn(idx: list[int]) -> LossOut:
            mb = rb.rows(idx)
            m = mb.response_mask
            in_loss = cfg.kl_mode == "loss"
            out = clipped_policy_loss(
                token_logprobs(model, mb), slice_rows(old, idx), slice_rows(adv, idx), m,
                clip_low=cfg.clip, clip_high=cfg.clip, agg=cfg.loss_agg,
                ref_logp=slice_rows(ref_lp, idx) if in_loss else None,
                kl_coef=cfg.kl_coef if in_loss else 0.0, kl_kind=cfg.kl_kind,
            )
            vloss = clipped_value_loss(
                token_values(critic, mb), slice_rows(old_v, idx), slice_rows(returns, idx), m,
                clip=cfg.value_clip, agg=cfg.loss_agg,
            )
            # both updates process the minibatch: the actor's and the critic's tokens
            return LossOut({"actor": out.loss, "critic": vloss}, agg_weight(m, cfg.loss_agg),
                           2 * mb.n_tokens, {"pg_loss": out.pg_loss, "kl": out.kl,
                                             "clip_frac": out.clip_frac,
                                             "value_loss": float(vloss.detach())})

        means = update_passes(engines, rb, loss_fn, cfg, scope=scope, seed=seed, step=step)
        return {k: means.get(k, 0.0) for k in ("pg_loss", "kl", "clip_frac", "value_loss")}

    return run.loop(policy, problems, cfg, n_prompts=cfg.rollout_batch, n_samples=1,
                    update=update, engines=engines)


@register_method(
    "ppo", config=PPOConfig, presets=PRESETS,
    help="PPO: online, critic trained alongside, GAE (gamma 1, lambda 0.95), clipped ratio, "
    "KL to pi_ref",
)
def run_ppo(ctx: RunContext, cfg: PPOConfig) -> MethodOutput:
    return run_online(ctx, cfg, train_ppo)
