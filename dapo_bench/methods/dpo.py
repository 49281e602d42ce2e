"""``dpo``: offline Direct Preference Optimization on (correct, wrong) pairs of the same rollouts.

Stage ``rollouts`` (shared with RFT): the reference policy samples ``samples_per_prompt``
responses per problem, scored by the verifier. Stage ``train``: pairs each problem's distinct
correct responses with its wrong ones (``max_pairs_per_prompt``), computes the reference
log-probs once (cached, charged as inference), then minimises the DPO loss
``-log sigmoid(beta * (log-ratio(chosen) - log-ratio(rejected)))`` (log-ratio = summed log pi -
log pi_ref of the response; optional label smoothing). What it optimises: the margin by which
the policy, relative to pi_ref, prefers verified-correct over wrong responses of the same prompt.

With ``--budget-flops``, sampling stops at ``rollout_frac`` of the budget and training when the
whole budget is spent.

Not covered: online/iterative DPO, SFT-on-chosen regularisation (RPO), length normalisation.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any

import torch

from dapo_bench.ledger import Ledger
from dapo_bench.methods.base import MethodOutput, register_method
from dapo_bench.methods.baseline_run import arith_toy, train_stage, with_run_optim
from dapo_bench.methods.rft import as_groups, rollout_stage
from dapo_bench.training.common import (
    OptimConfig,
    encode_pairs,
    load_policy,
    make_engine,
    save_policy,
    sequence_logprobs,
)
from dapo_bench.training.dpo_loss import Pair, build_pairs, dpo_loss


@dataclass(frozen=True)
class DPOConfig:
    """DPO settings.

    n_problems, samples_per_prompt, temperature, top_p, max_new_tokens, rollout_frac: the
    sampling stage (as in RFT); max_pairs_per_prompt: (correct, wrong) pairs per problem;
    beta: inverse temperature of the implicit reward (0.1); label_smoothing: conservative-DPO
    epsilon (0 = plain DPO); epochs, batch_size (pairs per step), max_length: training;
    optim.lr: learning rate.
    """

    n_problems: int | None = None
    samples_per_prompt: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 1024
    rollout_frac: float = 0.5
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
    """One batch: the chosen responses (rows 0..P-1), then the rejected ones (P..2P-1)."""
    prompts = [p.prompt for p in pairs] * 2
    resps = [p.chosen for p in pairs] + [p.rejected for p in pairs]
    return encode_pairs(tok, prompts, resps, max_length=max_length, add_eos=True)


@torch.no_grad()
def reference_logprobs(ref, tok, pairs: list[Pair], cfg: DPOConfig, ledger: Ledger,
                       stage: str) -> torch.Tensor:
    """[P, 2] summed reference log-probs (chosen, rejected), charged as inference."""
    ref.eval()
    out = torch.zeros(len(pairs), 2)
    for s in range(0, len(pairs), cfg.batch_size):
        chunk = pairs[s : s + cfg.batch_size]
        b = _encode(tok, chunk, cfg.max_length)
        lp = sequence_logprobs(ref, b)
        out[s : s + len(chunk), 0] = lp[: len(chunk)]
        out[s : s + len(chunk), 1] = lp[len(chunk) :]
        ledger.add_inf(stage, b.n_tokens)
    return out


def train_dpo(model, tok, pairs: list[Pair], cfg: DPOConfig, *, ledger: Ledger,
              stage: str = "train", seed: int = 0, on_log=None) -> list[dict]:
    """Train ``model`` in place on ``pairs``; pi_ref = ``model`` as it is on entry."""
    torch.manual_seed(seed)
    ref_lp = reference_logprobs(model, tok, pairs, cfg, ledger, stage)
    engine = make_engine(model, cfg.optim)
    model.train()
    total = math.ceil(cfg.epochs * len(pairs) / cfg.batch_size)
    history: list[dict] = []
    window: list[tuple[float, float]] = []
    step, epoch, t0 = 0, 0, time.perf_counter()
    while step < total and not ledger.exhausted():
        order = list(range(len(pairs)))
        random.Random(seed + epoch).shuffle(order)
        for s in range(0, len(order), cfg.batch_size):
            if step >= total or ledger.exhausted():
                break
            idx = order[s : s + cfg.batch_size]
            b = _encode(tok, [pairs[i] for i in idx], cfg.max_length)
            lp = sequence_logprobs(model, b)
            r = ref_lp[idx]
            out = dpo_loss(lp[: len(idx)], lp[len(idx) :], r[:, 0], r[:, 1],
                           beta=cfg.beta, label_smoothing=cfg.label_smoothing)
            engine.step(out.loss)
            ledger.add_train(stage, b.n_tokens)
            step += 1
            window.append((float(out.loss.detach()), out.accuracy))
            if step % 20 == 0 or step == total:
                row = {"step": step, "epochs": round(step * cfg.batch_size / len(pairs), 3),
                       "loss": sum(x for x, _ in window) / len(window),
                       "pair_acc": sum(a for _, a in window) / len(window),
                       "flops": ledger.total_flops,
                       "seconds": round(time.perf_counter() - t0, 2)}
                history.append(row)
                window.clear()
                if on_log:
                    on_log(row)
        epoch += 1
    model.eval()
    return history


@register_method(
    "dpo", config=DPOConfig, presets=PRESETS, default_preset=arith_toy,
    help="DPO: offline, (correct, wrong) pairs from the same rollouts, beta configurable",
)
def run_dpo(ctx: Any, cfg: DPOConfig) -> MethodOutput:
    groups = rollout_stage(ctx, cfg)
    out_dir = ctx.run_dir / "policy"
    cfg = dataclasses.replace(cfg, optim=with_run_optim(ctx, cfg.optim))

    def work() -> dict:
        pairs = build_pairs(as_groups(groups), max_pairs_per_prompt=cfg.max_pairs_per_prompt,
                            seed=ctx.opts.seed)
        model, tok = load_policy(ctx.opts.model)
        history: list[dict] = []
        if pairs:
            history = train_dpo(model, tok, pairs, cfg, ledger=ctx.ledger, stage="train",
                                seed=ctx.opts.seed,
                                on_log=lambda r: ctx.log(f"dpo step {r['step']}: loss "
                                                         f"{r['loss']:.4f}, pair acc "
                                                         f"{r['pair_acc']:.3f}"))
        else:
            ctx.log("dpo: no (correct, wrong) pair to train on; the policy is unchanged")
        save_policy(model, tok, out_dir)
        return {"pairs": len(pairs), "history": history}

    return train_stage(ctx, work, out_dir)
