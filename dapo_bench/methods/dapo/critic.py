"""DAPO's critic: a value model (``training.value.ValueModel``) and a sigmoid, V(s) in (0, 1).

Trained with soft-label binary cross-entropy on Monte Carlo labels (the fraction of a state's
completions the verifier accepts), through the one training loop. BCE rather than MSE: its
gradient w.r.t. the logit is ``V - y``, i.e. MSE's gradient with the factor 1/(V(1-V)) >= 4 (no
vanishing at saturation). The state's value is read from the hidden state of its LAST token.

Calibration on held-out states: Brier score (mean (V - y)^2 against the soft label), expected
calibration error over equal-width bins, and the reliability bins themselves.

Not covered: value heads on several positions (one per state), LoRA.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from dapo_bench.training.batches import encode_pairs
from dapo_bench.training.engine import ONE_PROCESS, EngineConfig, OptimConfig, make_engine
from dapo_bench.training.loop import LossOut, shuffled_batches, steps_for, train_loop
from dapo_bench.training.value import ValueModel


def soft_bce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean soft-label BCE: -(y log sigmoid(z) + (1 - y) log(1 - sigmoid(z)))."""
    return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


def _encode(tokenizer: Any, texts: Sequence[tuple[str, str]], max_length: int):
    return encode_pairs(tokenizer, [p for p, _ in texts], [r for _, r in texts],
                        max_length=max_length)


@torch.no_grad()
def score_values(
    vm: ValueModel,
    tokenizer: Any,
    texts: Sequence[tuple[str, str]],
    *,
    batch_size: int = 128,
    max_length: int = 1024,
    on_tokens: Callable[[int], None] | None = None,
) -> list[float]:
    """V(prompt + prefix) for each ``(prompt, prefix)``; ``on_tokens`` gets tokens processed."""
    vm.eval()
    out: list[float] = []
    # sort by length so that batches pad little; restore the order at the end
    order = sorted(range(len(texts)), key=lambda i: len(texts[i][0]) + len(texts[i][1]))
    vals = [0.0] * len(texts)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        b = _encode(tokenizer, [texts[i] for i in idx], max_length)
        v = torch.sigmoid(vm(b.input_ids, b.attention_mask)).tolist()
        for i, x in zip(idx, v):
            vals[i] = float(x)
        if on_tokens:
            on_tokens(b.n_tokens)
    out.extend(vals)
    return out


@dataclass(frozen=True)
class CriticConfig:
    """Critic settings.

    model: backbone to start from ("" = the current pi_ref); optim: the optimiser (optim.lr:
    paper 5e-6 for 7B models); epochs: passes over the labelled states (paper: 1); batch_size:
    states per step; heldout_frac: fraction of PROBLEMS whose states are kept out of training
    and used for the calibration report; bins: reliability bins for ECE; max_length: token cap.
    step_labels: also train on (s + first step of each MC completion, that completion's reward):
    one-sample labels of exactly the V(s + a_i) that stage B asks for (see ``critic_examples``).
    """

    model: str = ""
    epochs: float = 1.0
    batch_size: int = 32
    heldout_frac: float = 0.1
    bins: int = 10
    max_length: int = 1024
    step_labels: bool = False
    optim: OptimConfig = field(default_factory=lambda: OptimConfig(lr=5e-6))


def critic_examples(
    mc_rows: Sequence[dict], prompts: dict[str, str], *, step_labels: bool = False
) -> list[tuple[str, str, float, str, bool]]:
    """Critic data ``(prompt, prefix, label, problem_id, is_mc_state)`` from ``mc.jsonl`` rows.

    Every MC-labelled state gives ``(prefix, value)`` (its m-sample label). With
    ``step_labels`` each of its completions whose first step does not end the response also
    gives ``(prefix + first step, reward)``: a one-sample Monte Carlo label of V(s + a_i), the
    value stage B scores (a terminal step is valued by its reward there, so it is skipped).
    Does NOT deduplicate: a repeated step adds another sample of the same value.
    """
    from dapo_bench.methods.dapo.advantages import candidates_from_completions

    out = []
    for r in mc_rows:
        prompt = prompts[r["key"]]
        out.append((prompt, r["prefix"], float(r["value"]), r["problem_id"], True))
        if not step_labels:
            continue
        for c in r["completions"]:
            cand = candidates_from_completions([c])
            if cand and not cand[0].terminal:
                out.append((prompt, r["prefix"] + cand[0].text, float(c["reward"]),
                            r["problem_id"], False))
    return out


def train_critic(
    vm: ValueModel,
    tokenizer: Any,
    data: Sequence[tuple[str, str, float]],
    cfg: CriticConfig,
    *,
    seed: int = 0,
    engine_cfg: EngineConfig = ONE_PROCESS,
    ledger: Any = None,
    stage: str = "critic",
) -> list[dict]:
    """Soft-label BCE on ``(prompt, prefix, label)``; returns the loss history."""
    torch.manual_seed(seed)
    engine = make_engine(vm, cfg.optim, engine_cfg)

    def loss_fn(rows: list[tuple[str, str, float]]) -> LossOut:
        b = _encode(tokenizer, [(p, s) for p, s, _ in rows], cfg.max_length)
        logits = vm(b.input_ids.to(vm.device), b.attention_mask.to(vm.device))
        labels = torch.tensor([y for *_, y in rows], device=logits.device)
        return LossOut(soft_bce(logits, labels), len(rows), b.n_tokens)

    stats = train_loop(
        engine,
        lambda epoch: [[data[i] for i in b]
                       for b in shuffled_batches(len(data), cfg.batch_size, seed + epoch)],
        loss_fn, total_steps=steps_for(cfg.epochs, len(data), cfg.batch_size, whole_batches=False),
        ledger=ledger, stage=stage,
    )
    return stats.history


def calibration(preds: Sequence[float], labels: Sequence[float], bins: int = 10) -> dict:
    """Brier score, ECE and reliability bins of predictions against (soft) labels.

    ECE = sum over bins of (bin size / N) * |mean prediction - mean label|; bins are equal-width
    on [0, 1] by prediction. Empty bins are listed with n = 0.
    """
    n = len(preds)
    if n == 0:
        return {"n": 0, "brier": None, "ece": None, "bins": []}
    brier = sum((p - y) ** 2 for p, y in zip(preds, labels)) / n
    # Brier of the constant predictor (the label mean): a baseline the critic should beat
    mean_y = sum(labels) / n
    brier_const = sum((mean_y - y) ** 2 for y in labels) / n
    table = []
    ece = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        idx = [i for i, p in enumerate(preds) if lo <= p < hi or (b == bins - 1 and p == 1.0)]
        if not idx:
            table.append({"lo": lo, "hi": hi, "n": 0, "mean_pred": None, "mean_label": None})
            continue
        mp = sum(preds[i] for i in idx) / len(idx)
        ml = sum(labels[i] for i in idx) / len(idx)
        ece += len(idx) / n * abs(mp - ml)
        table.append({"lo": lo, "hi": hi, "n": len(idx), "mean_pred": mp, "mean_label": ml})
    return {"n": n, "brier": brier, "brier_constant": brier_const, "ece": ece, "bins": table}
