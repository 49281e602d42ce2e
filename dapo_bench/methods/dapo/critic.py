"""DAPO's critic: a value model (``training.value.ValueModel``) and a sigmoid, V(s) in (0, 1).

Trained with soft-label binary cross-entropy on Monte Carlo labels (the fraction of a state's
completions the verifier accepts), through the one training loop: its data are
``rows.CriticExample`` records (state ids, label, problem, MC state or step label) that
:func:`critic_examples` makes from the ``mc.jsonl`` rows (``rows.McRow``). BCE rather than
MSE: its gradient w.r.t. the logit is ``V - y``, i.e. MSE's gradient with the factor
1/(V(1-V)) >= 4 (no vanishing at saturation). The state's value is read from the hidden state
of its LAST token.

Skill and calibration on held-out states (``calibration``): the Brier score (mean (V - y)^2
against the soft label), the Brier score of the constant predictor (the held-out label mean),
the Brier skill score 1 - Brier / Brier_const (0: no better than a constant, 1: perfect,
negative: worse), the expected calibration error over equal-width prediction bins, and the
reliability bins themselves.

Not covered: value heads on several positions (one per state), LoRA.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
import torch.nn.functional as F

from dapo_bench.methods.dapo.config import CriticConfig
from dapo_bench.methods.dapo.rows import CriticExample, McRow
from dapo_bench.training.batches import PairBatch, pack_pairs
from dapo_bench.training.engine import ONE_PROCESS, EngineConfig, make_engine
from dapo_bench.training.loop import LoopStats, LossOut, shuffled_batches, steps_for, train_loop
from dapo_bench.training.rollouts import StepSplitter
from dapo_bench.training.scope import Scope
from dapo_bench.training.value import ValueModel


def soft_bce(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean soft-label BCE: -(y log sigmoid(z) + (1 - y) log(1 - sigmoid(z)))."""
    return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


def _encode(pad_id: int, contexts: Sequence[Sequence[int]], max_length: int):
    """States as a batch: context ids only (the value is read at the last token); a state over
    ``max_length`` keeps its END (``context_cut`` counted)."""
    return pack_pairs(contexts, [[] for _ in contexts], pad_id=pad_id, max_length=max_length)


@torch.no_grad()
def score_values(
    vm: ValueModel,
    pad_id: int,
    contexts: Sequence[Sequence[int]],
    *,
    batch_size: int = 128,
    max_length: int = 1024,
    on_batch: Callable[[PairBatch], None] | None = None,
) -> list[float]:
    """V(s) of each state (its token ids); ``on_batch`` gets every ``PairBatch`` scored (for
    the ledger's tokens and the truncation counts)."""
    vm.eval()
    # sort by length so that batches pad little; restore the order at the end
    order = sorted(range(len(contexts)), key=lambda i: len(contexts[i]))
    vals = [0.0] * len(contexts)
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        b = _encode(pad_id, [contexts[i] for i in idx], max_length).to(vm.device)
        v = torch.sigmoid(vm(b.input_ids, b.attention_mask)).tolist()
        for i, x in zip(idx, v):
            vals[i] = float(x)
        if on_batch:
            on_batch(b)
    return vals


def critic_examples(
    mc_rows: Sequence[McRow], prompts: Mapping[str, Sequence[int]], splitter: StepSplitter, *,
    step_labels: bool = False,
) -> list[CriticExample]:
    """The critic's data from ``mc.jsonl`` rows; ``prompts`` maps a state's key to its prompt
    ids.

    Every MC-labelled state gives ``(prompt + prefix ids, value)`` (its m-sample label,
    ``mc_state``). With ``step_labels`` each of its completions whose first step does not end
    the response also gives ``(state + first step ids, reward)``: a one-sample Monte Carlo
    label of V(s + a_i), the value stage B scores (a terminal step is valued by its reward
    there, so it is skipped). Does NOT deduplicate: a repeated step adds another sample of the
    same value.
    """
    from dapo_bench.methods.dapo.advantages import candidates_from_completions

    out = []
    for r in mc_rows:
        if r.value is None:  # every completion was an infrastructure error: no label
            continue
        state = tuple(prompts[r.key]) + r.prefix_ids
        out.append(CriticExample(state, float(r.value), r.problem_id, True))
        if not step_labels:
            continue
        for c in r.completions:
            cand = candidates_from_completions([c], splitter)
            if cand and not cand[0].terminal:
                out.append(CriticExample(state + cand[0].ids, float(c.reward), r.problem_id,
                                         False))
    return out


def train_critic(
    vm: ValueModel,
    pad_id: int,
    data: Sequence[CriticExample],
    cfg: CriticConfig,
    *,
    seed: int = 0,
    engine_cfg: EngineConfig = ONE_PROCESS,
    scope: Scope = Scope("critic"),
) -> LoopStats:
    """Soft-label BCE on each example's (state ids, label); returns the loop's stats (history,
    counts)."""
    torch.manual_seed(seed)
    engine = make_engine(vm, cfg.optim, engine_cfg)

    def loss_fn(rows: list[CriticExample]) -> LossOut:
        b = _encode(pad_id, [x.ids for x in rows], cfg.max_length).to(vm.device)
        logits = vm(b.input_ids, b.attention_mask)
        labels = torch.tensor([x.label for x in rows], device=logits.device)
        return LossOut(soft_bce(logits, labels), len(rows), b.n_tokens, counts=b.cuts)

    return train_loop(
        engine,
        lambda epoch: [[data[i] for i in b]
                       for b in shuffled_batches(len(data), cfg.batch_size, seed + epoch)],
        loss_fn, total_steps=steps_for(cfg.epochs, len(data), cfg.batch_size, whole_batches=False),
        scope=scope, cost=lambda x: min(len(x.ids), cfg.max_length), weight=lambda x: 1,
    )


def calibration(preds: Sequence[float], labels: Sequence[float], bins: int = 10) -> dict:
    """Skill and calibration of predictions against (soft) labels: ``brier``,
    ``brier_constant`` (the label mean as the prediction), ``brier_skill`` (1 - brier /
    brier_constant; None when the labels are constant), ``ece`` and the reliability ``bins``.

    ECE = sum over bins of (bin size / N) * |mean prediction - mean label|; ``bins``
    equal-width bins on [0, 1] by prediction (1.0 falls in the last); empty bins are listed
    with n = 0. ``binning`` names the scheme in the result.
    """
    n = len(preds)
    if n == 0:
        return {"n": 0, "brier": None, "brier_constant": None, "brier_skill": None,
                "ece": None, "binning": _binning(bins), "bins": []}
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
    skill = None if brier_const == 0 else 1.0 - brier / brier_const
    return {"n": n, "brier": brier, "brier_constant": brier_const, "brier_skill": skill,
            "ece": ece, "binning": _binning(bins), "bins": table}


def _binning(bins: int) -> str:
    return f"{bins} equal-width bins of the prediction on [0, 1], weighted by bin size"


def describe_skill(cal: dict) -> str:
    """One line: ``held-out n=.., Brier .. vs constant .. (skill ..), ECE .. (10 bins)``."""
    if not cal.get("n"):
        return "no held-out states (heldout_frac 0 or too few problems)"
    skill = cal.get("brier_skill")
    return (f"held-out states {cal['n']}: Brier {cal['brier']:.4f} vs constant "
            f"{cal['brier_constant']:.4f} (skill {'-' if skill is None else f'{skill:+.3f}'}), "
            f"ECE {cal['ece']:.4f} ({len(cal['bins'])} equal-width bins)")
