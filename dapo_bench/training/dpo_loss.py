"""DPO's loss and the (chosen, rejected) pairs it trains on, as pure functions.

Loss (Rafailov et al. 2023), with log-probs summed over a response's tokens::

    h = beta * ((log pi(y_w|x) - log pi_ref(y_w|x)) - (log pi(y_l|x) - log pi_ref(y_l|x)))
    loss = -(1 - eps) * log sigmoid(h) - eps * log sigmoid(-h)

``eps`` is conservative-DPO label smoothing (0 = plain DPO). Pairs come from the same rollouts
that RFT filters: for each prompt, verified-correct responses are chosen and wrong ones rejected.

Not covered: IPO/KTO variants, length normalisation of the log-probs, and pairs from
preference labels other than the verifier's pass/fail.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F


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
    prompt: str
    chosen: str
    rejected: str


def build_pairs(
    groups: Iterable[tuple[str, Sequence[str], Sequence[bool]]],
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


def select_correct(
    groups: Iterable[tuple[str, Sequence[str], Sequence[bool]]],
    *,
    max_per_prompt: int = 4,
) -> list[tuple[str, str]]:
    """RFT's data: up to ``max_per_prompt`` distinct verified-correct responses per prompt."""
    out: list[tuple[str, str]] = []
    for prompt, responses, passed in groups:
        good = list(dict.fromkeys(r for r, p in zip(responses, passed) if p))
        out.extend((prompt, r) for r in good[:max_per_prompt])
    return out
