"""``dpo``: offline Direct Preference Optimization on (correct, wrong) pairs of the same rollouts.

Stage ``rollouts`` (shared with RFT): the reference policy samples ``samples_per_prompt``
responses per problem, scored by the verifier. Stage ``train``: pairs each problem's distinct
correct responses with its wrong ones (``max_pairs_per_prompt``), computes the reference
log-probs once (cached, charged as inference), then minimises the DPO loss
``-log sigmoid(beta * (log-ratio(chosen) - log-ratio(rejected)))`` (log-ratio = summed log pi -
log pi_ref of the response; optional label smoothing). What it optimises: the margin by which
the policy, relative to pi_ref, prefers verified-correct over wrong responses of the same prompt.

With ``--budget-flops`` (a target, ``training.budget``), sampling walks through the split until it
has spent ``rollout_frac`` of the budget, and training runs as many epochs as it takes to spend
the rest.

Not covered: online/iterative DPO, SFT-on-chosen regularisation (RPO), length normalisation.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from dapo_bench.methods.base import MethodOutput, register_method, train_on_pairs
from dapo_bench.methods.context import RunContext
from dapo_bench.methods.data import OfflineSampling, as_groups, rollout_stage
from dapo_bench.models import Policy
from dapo_bench.training import budget
from dapo_bench.training.batches import pack_pairs, sequence_logprobs
from dapo_bench.training.engine import ONE_PROCESS, EngineConfig, OptimConfig, make_engine
from dapo_bench.training.loop import LoopStats, LossOut, shuffled_batches, steps_for, train_loop
from dapo_bench.training.scope import Scope

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


@dataclass
class DPOLossOut:
    loss: torch.Tensor  # scalar, mean over pairs
    chosen_reward: torch.Tensor  # [P], beta * (log pi - log pi_ref) of the chosen response
    rejected_reward: torch.Tensor  # [P]
    accuracy: float  # fraction of pairs whose chosen reward exceeds the rejected one


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    *,
    beta: float = 0.1,
    label_smoothing: float = 0.0,
) -> DPOLossOut:
    """The DPO loss over a batch of pairs; every input is a [P] tensor of summed log-probs."""
    chosen = beta * (policy_chosen - ref_chosen)
    rejected = beta * (policy_rejected - ref_rejected)
    h = chosen - rejected
    losses = -(1.0 - label_smoothing) * F.logsigmoid(h) - label_smoothing * F.logsigmoid(-h)
    acc = float((chosen > rejected).float().mean()) if h.numel() else 0.0
    return DPOLossOut(losses.mean(), chosen.detach(), rejected.detach(), acc)


@dataclass(frozen=True)
class Pair:
    """A prompt's (chosen, rejected) responses, as token ids (what was sampled)."""

    prompt: Sequence[int]
    chosen: Sequence[int]
    rejected: Sequence[int]


def build_pairs(
    groups: Iterable[tuple[Sequence[int], Sequence[Sequence[int]], Sequence[bool]]],
    *,
    max_pairs_per_prompt: int = 4,
    seed: int = 0,
) -> list[Pair]:
    """(prompt, responses, passed) groups -> up to ``max_pairs_per_prompt`` pairs per prompt.

    Duplicate responses count once. Correct and wrong responses are shuffled (seeded) and paired
    round-robin, so every distinct response is used before any is reused. A prompt whose samples
    are all correct or all wrong gives no pair.
    """
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for prompt, responses, passed in groups:
        good = list(dict.fromkeys(r for r, p in zip(responses, passed) if p))
        bad = list(dict.fromkeys(r for r, p in zip(responses, passed) if not p))
        if not good or not bad:
            continue
        rng.shuffle(good)
        rng.shuffle(bad)
        n = min(max_pairs_per_prompt, max(len(good), len(bad)))
        for k in range(n):
            pairs.append(Pair(prompt, good[k % len(good)], bad[k % len(bad)]))
    return pairs


@dataclass(frozen=True)
class DPOConfig(OfflineSampling):
    """DPO settings.

    The sampling stage's (``OfflineSampling``: n_problems, samples_per_prompt, temperature,
    top_p, max_new_tokens, rollout_frac); max_pairs_per_prompt: (correct, wrong) pairs per
    problem; beta: inverse temperature of the implicit reward (0.1); label_smoothing: conservative-DPO
    epsilon (0 = plain DPO); epochs, batch_size (pairs per step), max_length: training;
    optim.lr: learning rate.
    """

    max_pairs_per_prompt: int = 4
    beta: float = 0.1
    label_smoothing: float = 0.0
    epochs: float = 1.0
    batch_size: int = 32
    max_length: int = 2048
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=5e-7))


PRESETS: dict[str, dict] = {
    "default": {},
    "toy": {
        "n_problems": 1000, "samples_per_prompt": 4, "max_new_tokens": 128, "max_length": 256,
        "epochs": 2.0, "batch_size": 32, "optim": {"lr": 1e-5},
    },
}


def _encode(tok, pairs: list[Pair], max_length: int):
    """One batch of ids: the chosen responses (rows 0..P-1), then the rejected (P..2P-1)."""
    prompts = [p.prompt for p in pairs] * 2
    resps = [p.chosen for p in pairs] + [p.rejected for p in pairs]
    return pack_pairs(prompts, resps, pad_id=tok.pad_token_id, max_length=max_length)


@torch.no_grad()
def reference_logprobs(ref, tok, pairs: list[Pair], cfg: DPOConfig, scope: Scope,
                       micro_batch: int = 0) -> torch.Tensor:
    """[P, 2] summed reference log-probs (chosen, rejected), charged as inference; in chunks
    of ``micro_batch`` pairs when set (the logits of a chunk are what a pass holds)."""
    ref.eval()
    out = torch.zeros(len(pairs), 2)
    step = micro_batch or cfg.batch_size
    for s in range(0, len(pairs), step):
        chunk = pairs[s : s + step]
        b = _encode(tok, chunk, cfg.max_length)
        lp = sequence_logprobs(ref, b.to(ref.device)).float().cpu()
        out[s : s + len(chunk), 0] = lp[: len(chunk)]
        out[s : s + len(chunk), 1] = lp[len(chunk) :]
        scope.charge_inf(b.n_tokens)
    return out


def train_dpo(model: PreTrainedModel, tok: PreTrainedTokenizerBase, pairs: list[Pair],
              cfg: DPOConfig, *, scope: Scope, seed: int = 0,
              engine_cfg: EngineConfig = ONE_PROCESS,
              on_log: Callable[[dict], None] | None = None) -> LoopStats:
    """Train ``model`` in place on ``pairs``; pi_ref = ``model`` as it is on entry. Returns
    the loop's stats (history, counts)."""
    torch.manual_seed(seed)
    ref_lp = reference_logprobs(model, tok, pairs, cfg, scope, engine_cfg.micro_batch)
    engine = make_engine(model, cfg.optim, engine_cfg)

    def loss_fn(idx: list[int]) -> LossOut:
        b = _encode(tok, [pairs[i] for i in idx], cfg.max_length).to(model.device)
        lp = sequence_logprobs(model, b)
        r = ref_lp[idx].to(lp.device)
        out = dpo_loss(lp[: len(idx)], lp[len(idx) :], r[:, 0], r[:, 1],
                       beta=cfg.beta, label_smoothing=cfg.label_smoothing)
        return LossOut(out.loss, len(idx), b.n_tokens, {
            "pair_acc": out.accuracy, "chosen_reward": float(out.chosen_reward.mean()),
            "rejected_reward": float(out.rejected_reward.mean())}, counts=b.cuts)

    total = steps_for(cfg.epochs, len(pairs), cfg.batch_size, whole_batches=False)
    return train_loop(
        engine, lambda epoch: shuffled_batches(len(pairs), cfg.batch_size, seed + epoch),
        loss_fn, total_steps=total, scope=scope,
        on_log=lambda st: on_log and on_log(st.history[-1]),
    )


@register_method(
    "dpo", config=DPOConfig, presets=PRESETS,
    help="DPO: offline, (correct, wrong) pairs from the same rollouts, beta configurable",
)
def run_dpo(ctx: RunContext, cfg: DPOConfig) -> MethodOutput:
    groups, prompts = rollout_stage(ctx, cfg)

    def train(policy: Policy, pairs: list[Pair]) -> LoopStats:
        run_cfg = dataclasses.replace(cfg, epochs=budget.epochs(ctx.ledger, cfg.epochs))
        return train_dpo(policy.model, policy.tokenizer, pairs, run_cfg,
                         scope=ctx.scope("train"), seed=ctx.opts.seed, engine_cfg=ctx.engine_cfg,
                         on_log=lambda r: ctx.log(f"dpo step {r['step']}: loss {r['loss']:.4f}, "
                                                  f"pair acc {r['pair_acc']:.3f}"))

    return train_on_pairs(
        ctx, len(groups),
        lambda: build_pairs(as_groups(groups, prompts),
                            max_pairs_per_prompt=cfg.max_pairs_per_prompt, seed=ctx.opts.seed),
        train, "dpo: no (correct, wrong) pair to train on; the policy is unchanged")
