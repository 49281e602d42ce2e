"""DAPO's critic: an LM backbone with a scalar head and a sigmoid, V(s) in (0, 1).

Trained with soft-label binary cross-entropy on Monte Carlo labels (the fraction of a state's
completions the verifier accepts). BCE rather than MSE: its gradient w.r.t. the logit is
``V - y``, i.e. MSE's gradient with the factor 1/(V(1-V)) >= 4 (no vanishing at saturation).
The state's value is read from the hidden state of its LAST token (the sequence is right-padded,
so that is position ``attention_mask.sum() - 1``).

Calibration on held-out states: Brier score (mean (V - y)^2 against the soft label), expected
calibration error over equal-width bins, and the reliability bins themselves.

Saved as ``<dir>/backbone`` (a transformers model directory, loadable on its own) plus
``<dir>/value_head.pt``. Not covered: value heads on several positions (one per state), LoRA.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from dapo_bench.training.common import OptimConfig, encode_pairs, make_engine, save_policy


class ValueModel(torch.nn.Module):
    """``backbone`` (a transformers base model) + ``Linear(hidden, 1)``; forward gives logits."""

    def __init__(self, backbone: Any, hidden_size: int):
        super().__init__()
        self.backbone = backbone
        self.head = torch.nn.Linear(hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    @classmethod
    def from_causal_lm(cls, lm: Any) -> ValueModel:
        """Take the transformer body of a causal LM (its ``base_model``); drop the LM head."""
        return cls(lm.base_model, lm.config.hidden_size)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        hidden = self.backbone(input_ids=input_ids, attention_mask=attention_mask)[0]
        last = attention_mask.sum(dim=1) - 1
        h = hidden[torch.arange(hidden.size(0)), last]
        return self.head(h.float()).squeeze(-1)

    def save(self, tokenizer: Any, out_dir: str | Path) -> Path:
        """Backbone and head, full weights under ZeRO-3 too; with several ranks every rank
        calls it (gathers are collectives) and rank 0 writes."""
        from dapo_bench.training import dist

        out = Path(out_dir)
        with dist.gathered(self.head):
            head = {k: v.detach().clone() for k, v in self.head.state_dict().items()}
        save_policy(self.backbone, tokenizer, out / "backbone")
        if dist.is_main():
            torch.save(head, out / "value_head.pt")
        dist.barrier()
        return out

    @classmethod
    def load(cls, path: str | Path) -> tuple[ValueModel, Any]:
        from transformers import AutoModel, AutoTokenizer

        path = Path(path)
        backbone = AutoModel.from_pretrained(path / "backbone")
        tok = AutoTokenizer.from_pretrained(path / "backbone")
        vm = cls(backbone, backbone.config.hidden_size)
        vm.head.load_state_dict(torch.load(path / "value_head.pt", weights_only=True))
        return vm.eval(), tok


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

    model: backbone to start from ("" = the current pi_ref); lr: AdamW learning rate (paper:
    5e-6 for 7B models); epochs: passes over the labelled states (paper: 1); batch_size: states
    per step; heldout_frac: fraction of PROBLEMS whose states are kept out of training and used
    for the calibration report; bins: reliability bins for ECE; max_length: token cap.
    step_labels: also train on (s + first step of each MC completion, that completion's reward):
    one-sample labels of exactly the V(s + a_i) that stage B asks for (see ``critic_examples``).
    """

    model: str = ""
    lr: float = 5e-6
    epochs: float = 1.0
    batch_size: int = 32
    heldout_frac: float = 0.1
    bins: int = 10
    max_length: int = 1024
    weight_decay: float = 0.0
    step_labels: bool = False


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
    from dapo_bench.training.dapo_loss import candidates_from_completions

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
    optim: OptimConfig | None = None,
    on_step: Callable[[int, float, int], None] | None = None,
) -> list[dict]:
    """Soft-label BCE on ``(prompt, prefix, label)``; returns a loss history.

    ``on_step(step, loss, tokens)`` is called after every optimizer step.
    """
    torch.manual_seed(seed)
    base = optim or OptimConfig()
    engine = make_engine(vm, OptimConfig(**{**base.__dict__, "lr": cfg.lr,
                                            "weight_decay": cfg.weight_decay}))
    vm.train()
    total = max(1, math.ceil(cfg.epochs * len(data) / cfg.batch_size))
    history, losses, step, epoch = [], [], 0, 0
    while step < total:
        order = list(range(len(data)))
        random.Random(seed + epoch).shuffle(order)
        for start in range(0, len(order), cfg.batch_size):
            if step >= total:
                break
            rows = [data[i] for i in order[start : start + cfg.batch_size]]
            b = _encode(tokenizer, [(p, s) for p, s, _ in rows], cfg.max_length)
            loss = soft_bce(vm(b.input_ids, b.attention_mask), torch.tensor([y for *_, y in rows]))
            engine.step(loss)
            step += 1
            losses.append(float(loss.detach()))
            if on_step:
                on_step(step, losses[-1], b.n_tokens)
            if step % 20 == 0 or step == total:
                history.append({"step": step, "loss": sum(losses) / len(losses)})
                losses.clear()
        epoch += 1
    vm.eval()
    return history


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
