"""``rft``: rejection-sampling fine-tuning (Yuan et al. 2023) on the policy's own correct samples.

Stage ``rollouts`` (``methods.data.rollout_stage``, shared with DPO): the reference policy
samples ``samples_per_prompt`` responses per training problem and the verifier scores them
(``<run>/rollouts.jsonl``). Stage ``train``: plain SFT (``dapo_bench.training.sft``) on up to ``max_per_prompt``
distinct verified-correct responses per problem. What it optimises: the likelihood of the
policy's own successful solutions, i.e. a filtered behaviour-cloning step.

With ``--budget-flops`` (a target, ``training.budget``), sampling walks through the split until it
has spent ``rollout_frac`` of the budget, and training runs as many epochs as it takes to spend
the rest.

Not covered: several rounds of sampling (iterated RFT), sampling from other models, dedup by
equation content (distinct texts only).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from dapo_bench.methods.base import MethodOutput, register_method, train_on_pairs
from dapo_bench.methods.context import RunContext
from dapo_bench.methods.data import OfflineSampling, as_groups, rollout_stage
from dapo_bench.training import budget
from dapo_bench.training.engine import OptimConfig
from dapo_bench.training.sft import SFTConfig, train_sft

P = TypeVar("P", bound=Hashable)  # a prompt (text or ids)
R = TypeVar("R", bound=Hashable)  # a response (text or ids)


@dataclass(frozen=True)
class RFTConfig(OfflineSampling):
    """RFT settings: the sampling stage's (``OfflineSampling``: n_problems, samples_per_prompt,
    temperature, top_p, max_new_tokens, rollout_frac); max_per_prompt: distinct correct
    responses kept per problem; sft: the fine-tuning settings (epochs, batch_size, optim.lr, ...).
    """

    max_per_prompt: int = 4
    sft: SFTConfig = field(default_factory=lambda: SFTConfig(
        epochs=3.0, batch_size=64, max_length=2048, optim=OptimConfig(lr=1e-5)))


PRESETS: dict[str, dict] = {
    "default": {},
    "toy": {
        "n_problems": 1000, "samples_per_prompt": 4, "max_new_tokens": 128,
        "sft": {"epochs": 3.0, "batch_size": 64, "max_length": 256, "optim": {"lr": 1e-4}},
    },
}


def select_correct(
    groups: Iterable[tuple[P, Sequence[R], Sequence[bool]]],
    *,
    max_per_prompt: int = 4,
) -> list[tuple[P, R]]:
    """RFT's data: up to ``max_per_prompt`` distinct verified-correct responses per prompt
    (responses as text or as id tuples: any hashable)."""
    out: list[tuple[P, R]] = []
    for prompt, responses, passed in groups:
        good = list(dict.fromkeys(r for r, p in zip(responses, passed) if p))
        out.extend((prompt, r) for r in good[:max_per_prompt])
    return out


@register_method(
    "rft", config=RFTConfig, presets=PRESETS,
    help="RFT: fine-tune on the policy's own verified-correct samples",
)
def run_rft(ctx: RunContext, cfg: RFTConfig) -> MethodOutput:
    groups, prompts = rollout_stage(ctx, cfg)
    sft_cfg = dataclasses.replace(cfg.sft, seed=ctx.opts.seed,
                                  epochs=budget.epochs(ctx.ledger, cfg.sft.epochs))
    return train_on_pairs(
        ctx, len(groups),
        lambda: select_correct(as_groups(groups, prompts), max_per_prompt=cfg.max_per_prompt),
        lambda policy, pairs: train_sft(policy.model, policy.tokenizer, pairs, sft_cfg,
                                        scope=ctx.scope("train"), engine_cfg=ctx.engine_cfg),
        "rft: no correct sample to train on; the policy is unchanged")
