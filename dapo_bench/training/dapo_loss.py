"""DAPO's advantages and actor objective (Liu et al., arXiv 2412.18279), as plain functions.

Advantages. In state s, the M candidate next steps a_i are the first steps of the state's M
completions. Each is valued: a step that ends the response (the completion has no further step
and stopped on EOS) by its reward, any other by the critic, V(s + a_i). Then
``A(s, a_i) = v_i - mean_j v_j`` (the mean over all M samples, an estimate of V(s)). Duplicate
actions are merged (same text, same value); a state whose advantage spread (max - min) is under
``min_spread`` is dropped, since it carries no preference.

Actor loss, per action::

    0.5 * (A(s, a) / beta - (log pi_theta(a|s) - log pi_ref(a|s)))^2

with log pi(a|s) the SUM of the step's token log-probs (a terminal step includes the EOS token:
stopping is part of the action). The regression target A/beta is the optimal log-ratio of the
KL-regularised objective. Reference log-probs are computed once and cached.

Not covered: token-level (rather than step-level) advantages, importance weighting of the
off-policy actions, any clipping of the log-ratio.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from dapo_bench.training.rollouts import split_steps


@dataclass(frozen=True)
class Candidate:
    """A candidate next step: its text, whether it ends the response, its reward if it does."""

    text: str
    terminal: bool
    reward: float | None = None


def candidates_from_completions(completions: Sequence[dict]) -> list[Candidate]:
    """First step of each completion (``{text, reward, finish_reason}``); empty ones skipped.

    A completion that is a single step and stopped (not truncated by length) ends the response:
    its step is terminal and carries the completion's reward.
    """
    out = []
    for c in completions:
        steps = split_steps(c["text"])
        if not steps:
            continue
        terminal = len(steps) == 1 and not steps[0].endswith("\n") and c["finish_reason"] == "stop"
        out.append(Candidate(steps[0], terminal, float(c["reward"]) if terminal else None))
    return out


def state_advantages(
    candidates: Sequence[Candidate], values: Sequence[float | None], min_spread: float = 0.1
) -> list[dict] | None:
    """Unique actions of a state with their value and advantage, or None if the state is dropped.

    ``values[i]`` is the critic's V(s + a_i) for a non-terminal candidate (ignored for terminal
    ones, which use their reward). Returns ``[{text, eos, value, adv}]`` in first-seen order.
    """
    if not candidates:
        return None
    vals = [c.reward if c.terminal else float(v) for c, v in zip(candidates, values)]
    base = sum(vals) / len(vals)
    unique: dict[tuple[str, bool], dict] = {}
    for c, v in zip(candidates, vals):
        unique.setdefault((c.text, c.terminal), {
            "text": c.text, "eos": c.terminal, "value": v, "adv": v - base,
        })
    acts = list(unique.values())
    advs = [a["adv"] for a in acts]
    if len(acts) < 2 or max(advs) - min(advs) < min_spread:
        return None
    return acts


def dapo_actor_loss(
    logp: torch.Tensor, ref_logp: torch.Tensor, adv: torch.Tensor, beta: float
) -> tuple[torch.Tensor, dict]:
    """Mean over actions of 0.5 * (A/beta - (logp - ref_logp))^2, plus logging statistics.

    Statistics: ``sign_agree`` = fraction of actions with A != 0 whose log-ratio has A's sign
    (a zero log-ratio counts as disagreement); ``abs_log_ratio`` = mean |logp - ref_logp|.
    """
    ratio = logp - ref_logp
    loss = 0.5 * (adv / beta - ratio).pow(2).mean()
    with torch.no_grad():
        nz = adv != 0
        agree = ((torch.sign(ratio) == torch.sign(adv)) & nz).sum().item()
        stats = {
            "loss": float(loss.detach()),
            "sign_agree": agree / max(int(nz.sum().item()), 1),
            "abs_log_ratio": float(ratio.abs().mean()),
        }
    return loss, stats


def batches_by_state(groups: Sequence[Sequence[Any]], max_actions: int) -> list[list[int]]:
    """Pack whole groups (the actions of one state) into batches of at most ``max_actions``.

    A group larger than ``max_actions`` gets a batch of its own: a state is never split.
    Returns lists of group indices, in order.
    """
    out: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for gi, g in enumerate(groups):
        if cur and size + len(g) > max_actions:
            out.append(cur)
            cur, size = [], 0
        cur.append(gi)
        size += len(g)
    if cur:
        out.append(cur)
    return out
