"""Policy-gradient pieces of the online baselines (GRPO, PPO), as small pure functions.

Three plug-points, each a registry of typed callables (in the manner of verl's ``core_algos``):

- ``ADVANTAGE_ESTIMATORS``: ``grpo`` (outcome reward, normalised within the group of samples of
  one prompt) and ``gae`` (generalised advantage estimation from a critic's values).
- ``KL_ESTIMATORS``: per-token estimates of KL(pi_theta || pi_ref) from the two log-probs:
  ``k1`` (log-ratio), ``k2`` (half squared log-ratio), ``k3`` (the non-negative, low-variance
  ``exp(ref - logp) - (ref - logp) - 1`` that GRPO uses).
- ``LOSS_AGGREGATIONS``: how a [B, L] per-token loss becomes a scalar, named plainly:
  ``token-mean`` (every response token weighs the same), ``seq-mean-token-sum`` (sum over a
  response's tokens, mean over responses), ``seq-mean-token-mean`` (mean over a response's
  tokens, then over responses: the original GRPO/PPO-for-LLM choice).

Tensors are [B, L] and aligned with ``training.batches.token_logprobs``: column i holds the value
for token i; ``mask`` is 1 on response tokens (prompt and padding are 0, anywhere in the row).
Token-level rewards hold the outcome reward on a response's last token and 0 elsewhere.

Not covered: process (per-step) rewards for GRPO, entropy bonuses, dual-clip PPO. Several
ranks: the training loop weights each rank's aggregated loss by its share (tokens for
``token-mean``, responses otherwise), see :func:`agg_weight`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from dapo_bench.registry import Registry


@dataclass(frozen=True)
class AdvantageInputs:
    """What an advantage estimator may use; estimators ignore the fields they do not need."""

    token_rewards: torch.Tensor  # [B, L], outcome reward on the last response token
    mask: torch.Tensor  # [B, L], 1 on response tokens
    values: torch.Tensor | None = None  # [B, L], critic value V(s_i) before token i (gae)
    group: Sequence | None = None  # [B], samples with the same id share a prompt (grpo)
    gamma: float = 1.0
    lam: float = 0.95
    eps: float = 1e-6
    norm_by_std: bool = True  # grpo: divide by the group's std (False: mean-centred only)


# (inputs) -> (advantages [B, L], returns [B, L]); both zero outside the mask.
AdvantageFn = Callable[[AdvantageInputs], "tuple[torch.Tensor, torch.Tensor]"]
# (logp, ref_logp) -> per-token KL estimate [B, L]
KLFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
# (per-token loss [B, L], mask [B, L]) -> scalar
AggFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

ADVANTAGE_ESTIMATORS: Registry[AdvantageFn] = Registry("policy-gradient advantage estimator")
KL_ESTIMATORS: Registry[KLFn] = Registry("KL estimator")
LOSS_AGGREGATIONS: Registry[AggFn] = Registry("loss aggregation")


# ----------------------------------------------------------------------------- aggregation
@LOSS_AGGREGATIONS.register("token-mean", help="sum over all response tokens / their count")
def token_mean(loss: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(loss.dtype)
    return (loss * m).sum() / m.sum().clamp(min=1.0)


@LOSS_AGGREGATIONS.register("seq-mean-token-sum", help="sum over a response, mean over responses")
def seq_mean_token_sum(loss: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(loss.dtype)
    return (loss * m).sum(dim=1).mean()


@LOSS_AGGREGATIONS.register("seq-mean-token-mean", help="mean over a response, mean over responses")
def seq_mean_token_mean(loss: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.to(loss.dtype)
    return ((loss * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)).mean()


def agg_weight(mask: torch.Tensor, mode: str) -> float:
    """What an aggregation averages over: response tokens (token-mean) or responses (others)."""
    return float(mask.sum()) if mode == "token-mean" else float(mask.size(0))


def aggregate(loss: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    """Reduce a [B, L] per-token loss with the aggregation registered as ``mode``."""
    return LOSS_AGGREGATIONS.get(mode)(loss, mask)


# ----------------------------------------------------------------------------- KL
@KL_ESTIMATORS.register("k1", help="log pi - log pi_ref (unbiased, can be negative)")
def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    return logp - ref_logp


@KL_ESTIMATORS.register("k2", help="0.5 * (log pi - log pi_ref)^2")
def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    return 0.5 * (logp - ref_logp) ** 2


@KL_ESTIMATORS.register("k3", help="exp(ref - logp) - (ref - logp) - 1 (>= 0; GRPO's)")
def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    d = (ref_logp - logp).clamp(-20.0, 20.0)
    return torch.exp(d) - d - 1.0


# ----------------------------------------------------------------------------- advantages
@ADVANTAGE_ESTIMATORS.register("grpo", help="outcome reward normalised within its prompt's group")
def grpo_advantage(inp: AdvantageInputs) -> tuple[torch.Tensor, torch.Tensor]:
    """A_i = (r_i - mean(group)) / (std(group) + eps), the same for every token of response i.

    ``std`` is the unbiased sample std (torch's default, as in the GRPO reference code); a group
    of one sample gets mean 0 and std 1. Returns are the raw outcome rewards broadcast.
    """
    if inp.group is None:
        raise ValueError("grpo advantages need the group id of every sample")
    mask = inp.mask.to(inp.token_rewards.dtype)
    scores = (inp.token_rewards * mask).sum(dim=1)
    adv = torch.zeros_like(scores)
    groups: dict = {}
    for i, g in enumerate(inp.group):
        groups.setdefault(g, []).append(i)
    for idx in groups.values():
        s = scores[idx]
        mean = s.mean()
        std = s.std() if len(idx) > 1 else torch.ones((), dtype=s.dtype)
        adv[idx] = (s - mean) / (std + inp.eps) if inp.norm_by_std else s - mean
    return adv[:, None] * mask, scores[:, None] * mask


@ADVANTAGE_ESTIMATORS.register("gae", help="generalised advantage estimation (gamma, lambda)")
def gae_advantage(inp: AdvantageInputs) -> tuple[torch.Tensor, torch.Tensor]:
    """delta_t = r_t + gamma V_{t+1} - V_t; A_t = delta_t + gamma lambda A_{t+1}; R_t = A_t + V_t.

    t runs over the response tokens of a row only (masked positions are skipped, so a left or
    right offset of the response does not matter); past the last token V = 0 and A = 0.
    """
    if inp.values is None:
        raise ValueError("gae advantages need the critic's values")
    mask = inp.mask.to(inp.token_rewards.dtype)
    values = inp.values.detach() * mask
    rewards = inp.token_rewards * mask
    bsz, length = rewards.shape
    adv = torch.zeros_like(rewards)
    next_v = torch.zeros(bsz, dtype=rewards.dtype)
    next_a = torch.zeros(bsz, dtype=rewards.dtype)
    for t in reversed(range(length)):
        m = mask[:, t]
        delta = rewards[:, t] + inp.gamma * next_v - values[:, t]
        a = delta + inp.gamma * inp.lam * next_a
        adv[:, t] = a * m
        next_v = torch.where(m > 0, values[:, t], next_v)
        next_a = torch.where(m > 0, a, next_a)
    return adv, (adv + values) * mask


def compute_advantages(name: str, inp: AdvantageInputs) -> tuple[torch.Tensor, torch.Tensor]:
    return ADVANTAGE_ESTIMATORS.get(name)(inp)


def masked_whiten(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """(x - mean) / std over the masked entries (PPO's advantage normalisation); 0 elsewhere."""
    m = mask.to(x.dtype)
    n = m.sum().clamp(min=1.0)
    mean = (x * m).sum() / n
    var = (((x - mean) * m) ** 2).sum() / n
    return (x - mean) * torch.rsqrt(var + eps) * m


def outcome_token_rewards(scores: Sequence[float], mask: torch.Tensor) -> torch.Tensor:
    """[B, L] rewards: ``scores[i]`` on the last response token of row i, 0 elsewhere."""
    out = torch.zeros(mask.shape, dtype=torch.float32)
    pos = torch.arange(mask.size(1)).expand_as(mask)
    last = torch.where(mask > 0, pos, torch.full_like(pos, -1)).max(dim=1).values
    for i, (s, j) in enumerate(zip(scores, last.tolist())):
        if j >= 0:
            out[i, j] = float(s)
    return out


# ----------------------------------------------------------------------------- losses
@dataclass
class PolicyLossOut:
    loss: torch.Tensor  # the scalar to minimise: pg loss + kl_coef * kl
    pg_loss: float
    kl: float  # aggregated KL estimate to pi_ref (0 when no ref log-probs)
    clip_frac: float  # fraction of response tokens whose ratio was clipped
    approx_kl_old: float  # mean of (old_logp - logp): drift from the sampling policy


def clipped_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.2,
    agg: str = "token-mean",
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    kl_kind: str = "k3",
) -> PolicyLossOut:
    """PPO's clipped surrogate, plus ``kl_coef * KL(pi || pi_ref)`` as a loss term.

    per token: max(-A r, -A clip(r, 1 - clip_low, 1 + clip_high)), r = exp(logp - old_logp);
    then the KL estimate ``kl_kind`` per token; both reduced with the aggregation ``agg``.
    """
    ratio = torch.exp((logp - old_logp).clamp(-20.0, 20.0))
    pg1 = -advantages * ratio
    pg2 = -advantages * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    per_tok = torch.maximum(pg1, pg2)
    pg = aggregate(per_tok, mask, agg)
    m = mask.to(logp.dtype)
    n = m.sum().clamp(min=1.0)
    clip_frac = float(((pg2 > pg1).to(logp.dtype) * m).sum() / n)
    approx = float(((old_logp - logp).detach() * m).sum() / n)
    loss = pg
    kl_val = 0.0
    if ref_logp is not None and kl_coef:
        kl = aggregate(KL_ESTIMATORS.get(kl_kind)(logp, ref_logp), mask, agg)
        loss = pg + kl_coef * kl
        kl_val = float(kl.detach())
    return PolicyLossOut(loss, float(pg.detach()), kl_val, clip_frac, approx)


def clipped_value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: float = 0.2,
    agg: str = "token-mean",
) -> torch.Tensor:
    """0.5 * max((V - R)^2, (clip(V, V_old +- clip) - R)^2), reduced with ``agg``."""
    clipped = old_values + (values - old_values).clamp(-clip, clip)
    per_tok = 0.5 * torch.maximum((values - returns) ** 2, (clipped - returns) ** 2)
    return aggregate(per_tok, mask, agg)


def shaped_rewards(
    token_rewards: torch.Tensor,
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    mask: torch.Tensor,
    kl_coef: float,
    kl_kind: str = "k1",
) -> torch.Tensor:
    """PPO's in-reward KL penalty: r_t - kl_coef * KL_t on every response token."""
    kl = KL_ESTIMATORS.get(kl_kind)(logp, ref_logp)
    return (token_rewards - kl_coef * kl) * mask.to(token_rewards.dtype)
